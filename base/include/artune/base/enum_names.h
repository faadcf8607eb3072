// One name table per enum: the value <-> text mapping written once and read both
// ways (the name of a value for output, the value of a name for parsing), instead
// of a switch to print and a chain of ifs to parse that must be kept in step.
//
// A table is a constexpr std::array of EnumName in the order the names are to be
// listed (NameList). Lookups are linear: the tables hold a handful of entries.
// Header only; no allocation except NameList's result. Thread-safe (pure).
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace artune {

template <typename Enum>
struct EnumName {
  Enum value;
  std::string_view name;
};

// The name of `value`, or `fallback` when the table lacks it (a value cast from an
// out-of-range integer).
template <typename Enum, size_t N>
constexpr std::string_view NameOf(const std::array<EnumName<Enum>, N>& table, Enum value,
                                  std::string_view fallback = "?") {
  for (const EnumName<Enum>& entry : table) {
    if (entry.value == value) return entry.name;
  }
  return fallback;
}

// The value named exactly `name` (case matters), or nullopt.
template <typename Enum, size_t N>
constexpr std::optional<Enum> ValueNamed(const std::array<EnumName<Enum>, N>& table,
                                         std::string_view name) {
  for (const EnumName<Enum>& entry : table) {
    if (entry.name == name) return entry.value;
  }
  return std::nullopt;
}

// The names joined for an error message: "a, b, c" (separator ", "), or
// "a, b or c" with last_separator " or ".
template <typename Enum, size_t N>
std::string NameList(const std::array<EnumName<Enum>, N>& table,
                     std::string_view last_separator = ", ") {
  std::string out;
  for (size_t i = 0; i < N; ++i) {
    if (i > 0) out += i + 1 == N ? last_separator : std::string_view(", ");
    out += table[i].name;
  }
  return out;
}

}  // namespace artune
