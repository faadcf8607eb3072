// Text helpers for parsing flags, specs and config files, shared by every layer
// so that each one trims, lowers and splits alike.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace artune {

// `text` without leading and trailing white space (a view into `text`).
std::string_view Trim(std::string_view text);

// `text` with ASCII letters in lower case (names and flag values match case-blind).
std::string Lower(std::string_view text);

// The comma-separated parts of `text`, each trimmed; empty parts are kept (so a
// caller can reject "a,,b"), and "" gives one empty part.
std::vector<std::string> SplitComma(std::string_view text);

}  // namespace artune
