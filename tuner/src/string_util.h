// The tuner's text helpers for parsing flags and specs (--scheme, --classes, --skew,
// --knob): one copy, so every parser trims and splits alike. The transport keeps its
// own (knobs.cc): it sits below the tuner and must not depend on it. Not named
// strings.h: with tuner/src on the include path, that name would stand in for the
// C library's <strings.h>, which <cstring> includes.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace artune::tuner {

// `text` without leading and trailing spaces and tabs.
std::string Trim(std::string_view text);

// `text` with ASCII letters in lower case (flag values are matched case-blind).
std::string Lower(std::string_view text);

// The comma-separated parts of `text`, each trimmed; empty parts are kept (so a
// caller can reject "a,,b"), and "" gives one empty part.
std::vector<std::string> SplitComma(std::string_view text);

}  // namespace artune::tuner
