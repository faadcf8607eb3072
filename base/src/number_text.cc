#include "artune/base/number_text.h"

#include <algorithm>
#include <cmath>
#include <cstdarg>
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

std::string Printf(const char* format, ...) {
  char text[128];
  va_list arguments;
  va_start(arguments, format);
  const int length = std::vsnprintf(text, sizeof text, format, arguments);
  va_end(arguments);
  if (length < 0) return "";
  if (static_cast<size_t>(length) < sizeof text)
    return std::string(text, static_cast<size_t>(length));
  std::string out(static_cast<size_t>(length), '\0');
  va_start(arguments, format);
  std::vsnprintf(out.data(), out.size() + 1, format, arguments);
  va_end(arguments);
  return out;
}

}  // namespace artune
