// The one name table of each typed state in store.h. The words are the store's
// stored text (and JSON's), fixed since the schema that introduced them: renaming
// one would make older stores unreadable.
#include <array>

#include "artune/base/enum_names.h"
#include "artune/db/store.h"

namespace artune::db {

constexpr std::array<EnumName<TrialStatus>, 3> kTrialStatusNames = {{
    {TrialStatus::kOk, "ok"},
    {TrialStatus::kInvalid, "invalid"},
    {TrialStatus::kFailed, "failed"},
}};

constexpr std::array<EnumName<Verdict>, 4> kVerdictNames = {{
    {Verdict::kBeatsDefault, "beats_default"},
    {Verdict::kWithinNoise, "within_noise"},
    {Verdict::kDefaultIsBest, "default_is_best"},
    {Verdict::kNoValidTrial, "no_valid_trial"},
}};

constexpr std::array<EnumName<LinkStatus>, 2> kLinkStatusNames = {{
    {LinkStatus::kOk, "ok"},
    {LinkStatus::kFailed, "failed"},
}};

constexpr std::array<EnumName<WatchAction>, 5> kWatchActionNames = {{
    {WatchAction::kBaseline, "baseline"},
    {WatchAction::kKeep, "keep"},
    {WatchAction::kHold, "hold"},
    {WatchAction::kPush, "push"},
    {WatchAction::kRollBack, "roll_back"},
}};

std::string_view TrialStatusName(TrialStatus status) { return NameOf(kTrialStatusNames, status); }

std::optional<TrialStatus> ParseTrialStatus(std::string_view text) {
  return ValueNamed(kTrialStatusNames, text);
}

std::string_view VerdictName(Verdict verdict) { return NameOf(kVerdictNames, verdict); }

std::optional<Verdict> ParseVerdict(std::string_view text) {
  return ValueNamed(kVerdictNames, text);
}

std::string_view LinkStatusName(LinkStatus status) { return NameOf(kLinkStatusNames, status); }

std::optional<LinkStatus> ParseLinkStatus(std::string_view text) {
  return ValueNamed(kLinkStatusNames, text);
}

std::string_view WatchActionName(WatchAction action) { return NameOf(kWatchActionNames, action); }

std::optional<WatchAction> ParseWatchAction(std::string_view text) {
  return ValueNamed(kWatchActionNames, text);
}

}  // namespace artune::db
