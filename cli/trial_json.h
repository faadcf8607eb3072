// The JSON shape of a stored sweep trial, shared by `artune sweep --json` and
// `artune results --sweep ID --json` so scripts read one shape from both.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "artune/db/store.h"

namespace artune::cli {

// {knob name: value} in the store's (sorted) order.
nlohmann::ordered_json KnobsJson(const std::map<std::string, std::string>& knobs);

// id, knobs, status, objective, ci_low, ci_high, samples, remeasured, validated,
// error, duration_s, metrics.
nlohmann::ordered_json TrialJson(const db::TrialRecord& trial);

}  // namespace artune::cli
