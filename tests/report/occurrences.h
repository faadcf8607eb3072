// Shared by the report tests: how often a piece of markup stands in a page.
#pragma once

#include <cstddef>
#include <string>

namespace artune::report {

// Occurrences of needle in text, overlapping ones included.
inline size_t Count(const std::string& text, const std::string& needle) {
  size_t count = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) {
    ++count;
  }
  return count;
}

}  // namespace artune::report
