#include "artune/watch/watch_policy.h"

#include <algorithm>

namespace artune::watch {
namespace {

constexpr std::chrono::hours kRateWindow{1};

std::string Seconds(WatchClock::duration d) {
  return std::to_string(std::chrono::ceil<std::chrono::seconds>(d).count()) + " s";
}

}  // namespace

Status ValidateWatchPolicy(const WatchPolicy& policy) {
  if (!(policy.drift_threshold > 0 && policy.drift_threshold <= 1)) {
    return Status::InvalidArgument("--drift " + std::to_string(policy.drift_threshold) +
                                   " must be above 0 and at most 1 (a share of the bytes)");
  }
  if (!(policy.min_margin >= 0 && policy.min_margin < 1)) {
    return Status::InvalidArgument("--min-margin " + std::to_string(policy.min_margin) +
                                   " must be at least 0 and below 1 (a share of the pass)");
  }
  if (policy.min_window_messages == 0) {
    return Status::InvalidArgument("--window-messages must be at least 1");
  }
  if (policy.max_changes_per_hour == 0) {
    return Status::InvalidArgument(
        "--max-changes-per-hour must be at least 1 (use --dry-run to never change anything)");
  }
  if (policy.min_gap.count() < 0) return Status::InvalidArgument("--min-gap must not be negative");
  return Status::Ok();
}

void ChangeLog::Record(WatchClock::time_point at) {
  while (!last_hour_.empty() && at - last_hour_.front() >= kRateWindow) last_hour_.pop_front();
  last_hour_.push_back(at);
  ++total_;
}

bool ChangeLog::MayChange(const WatchPolicy& policy, WatchClock::time_point now,
                          std::string* why) const {
  const auto first_in_hour = std::find_if(last_hour_.begin(), last_hour_.end(),
                                          [&](auto at) { return now - at < kRateWindow; });
  const auto in_hour = static_cast<size_t>(last_hour_.end() - first_in_hour);
  if (in_hour > 0 && now - last_hour_.back() < policy.min_gap) {
    if (why != nullptr) {
      *why = "the last change was " + Seconds(now - last_hour_.back()) + " ago (--min-gap " +
             std::to_string(policy.min_gap.count()) + " s): waiting " +
             Seconds(policy.min_gap - (now - last_hour_.back()));
    }
    return false;
  }
  if (in_hour >= policy.max_changes_per_hour) {
    if (why != nullptr) {
      *why = std::to_string(in_hour) + " changes within the hour (--max-changes-per-hour " +
             std::to_string(policy.max_changes_per_hour) + "): waiting " +
             Seconds(kRateWindow - (now - *first_in_hour));
    }
    return false;
  }
  return true;
}

}  // namespace artune::watch
