// Numbers as people read them, for every layer whose messages quote a measurement
// (the CLI's tables, the cluster room's reasons for its choice).
#pragma once

#include <string>

namespace artune {

// `value` with `decimals` after the point, but never fewer than three significant
// digits: a workload-time of 0.000376 s must not print as 0.00.
std::string FormatNumber(double value, int decimals);

// printf's formatting into a string of any length: Printf("%.1f s", seconds).
[[gnu::format(printf, 1, 2)]] std::string Printf(const char* format, ...);

}  // namespace artune
