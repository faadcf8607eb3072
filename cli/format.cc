#include "format.h"

#include <cstdio>

namespace artune::cli {

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

}  // namespace artune::cli
