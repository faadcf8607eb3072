// Drawing helpers shared by the views (internal to the dashboard library).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "canvas.h"

namespace artune::dashboard {

// The style of a size class (by a size or a bucket's lower bound).
Style SizeStyle(uint64_t size);

// `text` cut to `width` columns: the end is kept (method names differ at the end),
// with ".." in front when cut.
std::string KeepEnd(std::string_view text, size_t width);
// `text` right-aligned in `width` columns (cut on the left when longer).
std::string AlignRight(std::string_view text, size_t width);
std::string AlignLeft(std::string_view text, size_t width);
std::string FormatSeconds(double seconds);  // "45 s", "3m 05s", "2h 01m"
std::string FormatBytesPerSecond(double bytes_per_s);

// A log2 histogram as (bucket lower bound, count), lower bounds ascending.
using Buckets = std::vector<std::pair<uint64_t, uint64_t>>;

// Horizontal bars, one row per bucket, from the smallest non-empty bucket to the
// largest (empty buckets between them included). When they do not fit in
// `height - 1` rows, only the non-empty buckets are shown; when those do not fit
// either, the window of that many buckets holding the most counts, and the title
// says how many were left out. Bars are coloured by class.
void DrawHistogram(Canvas& canvas, int top, int left, int width, int height,
                   const std::string& title, const Buckets& buckets);

}  // namespace artune::dashboard
