// Text formatting shared by the subcommands' human output.
#pragma once

#include <cstdint>
#include <string>

namespace artune::cli {

// "512 B", "9.8 KiB", "10.0 MiB", "1.50 GiB": sizes for reading, not for parsing
// back (the knob table's FormatBytes gives exact, parsable sizes).
std::string FormatHumanBytes(uint64_t bytes);

}  // namespace artune::cli
