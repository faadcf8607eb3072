#include "artune/base/number_text.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace artune {

std::string FormatNumber(double value, int decimals) {
  if (std::isfinite(value) && value != 0 && std::fabs(value) < 1) {
    const int magnitude = static_cast<int>(std::floor(std::log10(std::fabs(value))));
    decimals = std::min(12, std::max(decimals, 2 - magnitude));
  }
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", decimals, value);
  return text;
}

}  // namespace artune
