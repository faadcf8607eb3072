#include "artune/report/text_table.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace artune::report {

std::string ShortTime(const std::string& iso8601) {
  if (iso8601.size() < 19 || iso8601[10] != 'T') return iso8601;
  std::string text = iso8601.substr(0, 19);
  text[10] = ' ';
  return text;
}

std::string FormatHumanBytes(uint64_t bytes) {
  constexpr double kKiB = 1024.0;
  char text[32];
  if (bytes < 1024) {
    std::snprintf(text, sizeof text, "%llu B", static_cast<unsigned long long>(bytes));
  } else if (bytes < 1024ull * 1024) {
    std::snprintf(text, sizeof text, "%.1f KiB", static_cast<double>(bytes) / kKiB);
  } else if (bytes < 1024ull * 1024 * 1024) {
    std::snprintf(text, sizeof text, "%.1f MiB", static_cast<double>(bytes) / (kKiB * kKiB));
  } else {
    std::snprintf(text, sizeof text, "%.2f GiB", static_cast<double>(bytes) / (kKiB * kKiB * kKiB));
  }
  return text;
}

namespace {

// Terminal columns taken by UTF-8 text (each code point counted once); an ANSI
// SGR sequence (ESC [ ... m, a colour) takes none, so coloured cells align.
size_t DisplayWidth(const std::string& text) {
  size_t width = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\x1b' && i + 1 < text.size() && text[i + 1] == '[') {
      const size_t end = text.find('m', i);
      if (end != std::string::npos) {
        i = end;
        continue;
      }
    }
    if ((static_cast<unsigned char>(text[i]) & 0xC0) != 0x80) ++width;
  }
  return width;
}

}  // namespace

void PrintTable(const std::vector<std::vector<std::string>>& rows,
                const std::vector<bool>& right_aligned, std::ostream& out) {
  std::vector<size_t> widths;
  for (const auto& row : rows) {
    widths.resize(std::max(widths.size(), row.size()), 0);
    for (size_t i = 0; i < row.size(); ++i) {
      widths[i] = std::max(widths[i], DisplayWidth(row[i]));
    }
  }
  for (const auto& row : rows) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      const std::string padding(widths[i] - DisplayWidth(row[i]), ' ');
      const bool right = i < right_aligned.size() && right_aligned[i];
      const bool last = i + 1 == row.size();
      line += right ? padding + row[i] : (last ? row[i] : row[i] + padding);
      if (!last) line += "  ";
    }
    out << line << "\n";
  }
}

}  // namespace artune::report
