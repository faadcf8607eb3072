#include "view_parts.h"

#include <algorithm>
#include <cstdio>

#include "artune/probes/profile.h"
#include "views.h"

namespace artune::dashboard {

Style SizeStyle(uint64_t size) {
  switch (probes::ClassifySize(size)) {
    case probes::SizeClass::kEmpty:
      return Style::kDim;
    case probes::SizeClass::kSmall:
      return Style::kSmall;
    case probes::SizeClass::kMedium:
      return Style::kMedium;
    case probes::SizeClass::kLarge:
      return Style::kLarge;
  }
  return Style::kNormal;
}

std::string KeepEnd(std::string_view text, size_t width) {
  if (text.size() <= width) return std::string(text);
  if (width <= 2) return std::string(text.substr(text.size() - width));
  return ".." + std::string(text.substr(text.size() - (width - 2)));
}

std::string AlignRight(std::string_view text, size_t width) {
  if (text.size() >= width) return std::string(text.substr(text.size() - width));
  return std::string(width - text.size(), ' ') + std::string(text);
}

std::string AlignLeft(std::string_view text, size_t width) {
  if (text.size() >= width) return std::string(text.substr(0, width));
  return std::string(text) + std::string(width - text.size(), ' ');
}

std::string FormatSeconds(double seconds) {
  char text[32];
  const long long total = static_cast<long long>(seconds + 0.5);
  if (total < 60) {
    std::snprintf(text, sizeof text, "%lld s", total);
  } else if (total < 3600) {
    std::snprintf(text, sizeof text, "%lldm %02llds", total / 60, total % 60);
  } else {
    std::snprintf(text, sizeof text, "%lldh %02lldm", total / 3600, total / 60 % 60);
  }
  return text;
}

std::string FormatBytesPerSecond(double bytes_per_s) {
  char text[32];
  if (bytes_per_s < 1024) {
    std::snprintf(text, sizeof text, "%.0f B/s", bytes_per_s);
  } else if (bytes_per_s < 1024.0 * 1024) {
    std::snprintf(text, sizeof text, "%.1f KiB/s", bytes_per_s / 1024);
  } else if (bytes_per_s < 1024.0 * 1024 * 1024) {
    std::snprintf(text, sizeof text, "%.1f MiB/s", bytes_per_s / (1024.0 * 1024));
  } else {
    std::snprintf(text, sizeof text, "%.2f GiB/s", bytes_per_s / (1024.0 * 1024 * 1024));
  }
  return text;
}

std::string FormatCount(double value) {
  char text[32];
  if (value < 1000) {
    if (value == static_cast<double>(static_cast<uint64_t>(value))) {
      std::snprintf(text, sizeof text, "%llu", static_cast<unsigned long long>(value));
    } else {
      std::snprintf(text, sizeof text, "%.1f", value);
    }
  } else if (value < 1e6) {
    std::snprintf(text, sizeof text, "%.1f k", value / 1e3);
  } else if (value < 1e9) {
    std::snprintf(text, sizeof text, "%.1f M", value / 1e6);
  } else {
    std::snprintf(text, sizeof text, "%.1f G", value / 1e9);
  }
  return text;
}

std::string BucketLabel(uint64_t lower_bound) {
  static constexpr const char* kSuffixes[] = {"", "K", "M", "G", "T", "P"};
  int suffix = 0;
  while (lower_bound >= 1024 && lower_bound % 1024 == 0 && suffix < 5) {
    lower_bound /= 1024;
    ++suffix;
  }
  return std::to_string(lower_bound) + kSuffixes[suffix];
}

void DrawHistogram(Canvas& canvas, int top, int left, int width, int height,
                   const std::string& title, const Buckets& buckets) {
  if (height < 1 || width < 20) return;
  // Every bucket from the smallest to the largest non-empty one.
  Buckets span;
  for (const auto& [bound, count] : buckets) {
    if (count == 0) continue;
    if (!span.empty()) {
      uint64_t next = span.back().first == 0 ? 1 : span.back().first * 2;
      while (next < bound && next != 0) {
        span.emplace_back(next, 0);
        next *= 2;
      }
    }
    span.emplace_back(bound, count);
  }
  const size_t rows = static_cast<size_t>(height - 1);
  // Too tall: leave the empty buckets out first (the labels still say the sizes).
  if (span.size() > rows)
    std::erase_if(span, [](const auto& bucket) { return bucket.second == 0; });
  size_t first = 0;
  if (span.size() > rows) {
    uint64_t best_total = 0;
    for (size_t start = 0; start + rows <= span.size(); ++start) {
      uint64_t total = 0;
      for (size_t i = start; i < start + rows; ++i) total += span[i].second;
      if (total > best_total) {
        best_total = total;
        first = start;
      }
    }
  }
  const size_t shown = std::min(rows, span.size());
  std::string heading = title;
  if (span.size() > shown) {
    heading += " (" + std::to_string(span.size() - shown) + " buckets not shown)";
  }
  canvas.Put(top, left, AlignLeft(heading, static_cast<size_t>(width)), Style::kHeader);
  if (span.empty()) {
    canvas.Put(top + 1, left, "  (none yet)", Style::kDim);
    return;
  }
  uint64_t max_count = 1;
  for (size_t i = first; i < first + shown; ++i) max_count = std::max(max_count, span[i].second);
  constexpr int kLabelWidth = 5;
  constexpr int kCountWidth = 8;
  const int bar_width = width - kLabelWidth - kCountWidth - 2;
  for (size_t i = 0; i < shown; ++i) {
    const auto& [bound, count] = span[first + i];
    const int row = top + 1 + static_cast<int>(i);
    canvas.Put(row, left, AlignRight(BucketLabel(bound), kLabelWidth), SizeStyle(bound));
    const int length =
        count == 0
            ? 0
            : std::max(1, static_cast<int>(count * static_cast<uint64_t>(bar_width) / max_count));
    canvas.Fill(row, left + kLabelWidth + 1, length, '#', SizeStyle(bound));
    canvas.Put(row, left + width - kCountWidth, AlignRight(FormatCount(count), kCountWidth));
  }
}

}  // namespace artune::dashboard
