#include "watch_model.h"

#include <cmath>
#include <cstdio>

namespace artune::dashboard {
namespace {

constexpr std::string_view kRecheckPrefix = "re-check";

// "2026-11-27T16:40:12.345Z" -> "11-27 16:40:12".
std::string EventTime(const std::string& iso) {
  if (iso.size() < 19) return iso;
  return iso.substr(5, 5) + " " + iso.substr(11, 8);
}

std::string Percent(double fraction) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f%%", fraction * 100);
  return text;
}

Style ActionStyle(db::WatchAction action) {
  switch (action) {
    case db::WatchAction::kPush:
      return Style::kGood;
    case db::WatchAction::kRollBack:
      return Style::kError;
    case db::WatchAction::kHold:
      return Style::kWarn;
    case db::WatchAction::kBaseline:
      return Style::kDim;
    case db::WatchAction::kKeep:
      return Style::kNormal;
  }
  return Style::kNormal;
}

Style VerdictStyle(const std::string& verdict, bool change_is_first_over_second) {
  // The stored verdict judges the second config against the first; a roll-back's
  // change goes the other way.
  if (verdict == "faster") return change_is_first_over_second ? Style::kGood : Style::kWarn;
  if (verdict == "slower") return change_is_first_over_second ? Style::kWarn : Style::kGood;
  return Style::kNormal;
}

}  // namespace

std::string DescribeKnobChange(std::string_view from_key, std::string_view to_key) {
  if (from_key == to_key) return "";
  Result<std::map<std::string, std::string>> from = db::ParseTrialKnobKey(from_key);
  Result<std::map<std::string, std::string>> to = db::ParseTrialKnobKey(to_key);
  if (!from.ok() || !to.ok()) return std::string(from_key) + " -> " + std::string(to_key);
  std::string change;
  for (const auto& [name, value] : *to) {
    const auto before = from->find(name);
    const std::string old_value = before == from->end() ? "?" : before->second;
    if (old_value == value) continue;
    if (!change.empty()) change += ", ";
    change += name + " " + old_value + "->" + value;
  }
  return change;
}

WatchEventLine DescribeWatchEvent(const db::WatchEventRecord& event) {
  WatchEventLine line;
  line.id = event.id;
  line.time = EventTime(event.at);
  line.servers = event.servers;
  line.action = std::string(db::WatchActionName(event.action));
  line.action_style = ActionStyle(event.action);
  line.reason = event.reason;
  line.predicted = "-";
  line.measured = "-";
  const bool recheck = event.reason.starts_with(kRecheckPrefix);
  if (!event.candidate_knobs.empty()) {
    line.change = DescribeKnobChange(event.in_force_knobs, event.candidate_knobs);
    if (!recheck) line.predicted = Percent(event.predicted_margin);
  }
  if (event.pairs > 0 && event.paired_median > 0 && std::isfinite(event.paired_median)) {
    // first/second = t1/t2. The change second-over-first saves 1 - t2/t1; a
    // roll-back (re-check with a candidate) goes from the second back to the
    // first and saves 1 - t1/t2.
    const bool rolls_back = recheck && !event.candidate_knobs.empty();
    const double saving = rolls_back ? 1 - event.paired_median : 1 - 1 / event.paired_median;
    line.measured = Percent(saving);
    line.measured_style = VerdictStyle(event.verdict, !rolls_back);
  }
  return line;
}

}  // namespace artune::dashboard
