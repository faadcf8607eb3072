// The one name table of each typed state in store.h. The words are the store's
// stored text (and JSON's), fixed since the schema that introduced them: renaming
// one would make older stores unreadable.
#include <array>
#include <utility>

#include "artune/db/store.h"

namespace artune::db {
namespace {

constexpr std::array<std::pair<TrialStatus, std::string_view>, 3> kTrialStatusNames = {{
    {TrialStatus::kOk, "ok"},
    {TrialStatus::kInvalid, "invalid"},
    {TrialStatus::kFailed, "failed"},
}};

constexpr std::array<std::pair<Verdict, std::string_view>, 4> kVerdictNames = {{
    {Verdict::kBeatsDefault, "beats_default"},
    {Verdict::kWithinNoise, "within_noise"},
    {Verdict::kDefaultIsBest, "default_is_best"},
    {Verdict::kNoValidTrial, "no_valid_trial"},
}};

constexpr std::array<std::pair<LinkStatus, std::string_view>, 2> kLinkStatusNames = {{
    {LinkStatus::kOk, "ok"},
    {LinkStatus::kFailed, "failed"},
}};

constexpr std::array<std::pair<WatchAction, std::string_view>, 5> kWatchActionNames = {{
    {WatchAction::kBaseline, "baseline"},
    {WatchAction::kKeep, "keep"},
    {WatchAction::kHold, "hold"},
    {WatchAction::kPush, "push"},
    {WatchAction::kRollBack, "roll_back"},
}};

template <typename State, size_t N>
std::string_view NameOf(const std::array<std::pair<State, std::string_view>, N>& names,
                        State state) {
  for (const auto& [value, name] : names) {
    if (value == state) return name;
  }
  return "?";  // unreachable while every enumerator has a row
}

template <typename State, size_t N>
std::optional<State> StateNamed(const std::array<std::pair<State, std::string_view>, N>& names,
                                std::string_view text) {
  for (const auto& [value, name] : names) {
    if (name == text) return value;
  }
  return std::nullopt;
}

}  // namespace

std::string_view TrialStatusName(TrialStatus status) { return NameOf(kTrialStatusNames, status); }

std::optional<TrialStatus> ParseTrialStatus(std::string_view text) {
  return StateNamed(kTrialStatusNames, text);
}

std::string_view VerdictName(Verdict verdict) { return NameOf(kVerdictNames, verdict); }

std::optional<Verdict> ParseVerdict(std::string_view text) {
  return StateNamed(kVerdictNames, text);
}

std::string_view LinkStatusName(LinkStatus status) { return NameOf(kLinkStatusNames, status); }

std::optional<LinkStatus> ParseLinkStatus(std::string_view text) {
  return StateNamed(kLinkStatusNames, text);
}

std::string_view WatchActionName(WatchAction action) { return NameOf(kWatchActionNames, action); }

std::optional<WatchAction> ParseWatchAction(std::string_view text) {
  return StateNamed(kWatchActionNames, text);
}

}  // namespace artune::db
