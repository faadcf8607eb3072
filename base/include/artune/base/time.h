// Wall-clock time as the store and the JSON output write it.
#pragma once

#include <chrono>
#include <string>

namespace artune {

// "2026-11-27T06:40:12.345Z": UTC, millisecond precision, sortable as text.
std::string Iso8601Utc(std::chrono::system_clock::time_point time);
std::string NowIso8601Utc();

}  // namespace artune
