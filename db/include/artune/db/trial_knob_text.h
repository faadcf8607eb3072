// A trial knob key (TrialKnobKey's "chunk_size=64KiB;eager_threshold=4KiB") as
// text for people: its name=value pairs joined by `separator` ("chunk_size=64KiB,
// eager_threshold=4KiB"); a key that does not parse is shown as it is.
#pragma once

#include <string>
#include <string_view>

#include "artune/db/store.h"

namespace artune::db {

inline std::string TrialKnobText(const std::string& key, std::string_view separator) {
  const auto knobs = ParseTrialKnobKey(key);
  if (!knobs.ok()) return key;
  std::string text;
  for (const auto& [name, value] : *knobs) {
    if (!text.empty()) text += separator;
    text += name + "=" + value;
  }
  return text;
}

}  // namespace artune::db
