// Text formatting shared by the text views and the subcommands' human output
// (the CLI names these through cli/format.h).
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "artune/base/number_text.h"

namespace artune::report {

// "512 B", "9.8 KiB", "10.0 MiB", "1.50 GiB": sizes for reading, not for parsing
// back (the knob table's FormatBytes gives exact, parsable sizes).
std::string FormatHumanBytes(uint64_t bytes);

// FormatNumber (artune/base/number_text.h): numbers with three significant digits.
using artune::FormatNumber;

// "2024-05-01T12:34:56.789Z" -> "2024-05-01 12:34:56"; anything else unchanged.
std::string ShortTime(const std::string& iso8601);

// Prints rows as aligned columns, two spaces apart, each padded to its widest cell
// (UTF-8 aware: "µs" takes two columns; ANSI colour sequences take none). Columns flagged in
// `right_aligned` (numbers) are padded on the left; the last column is never padded on the right.
void PrintTable(const std::vector<std::vector<std::string>>& rows,
                const std::vector<bool>& right_aligned, std::ostream& out);

}  // namespace artune::report
