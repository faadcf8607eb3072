#include "artune/watch/watch_request.h"

#include <chrono>
#include <utility>

namespace artune::watch {

using nlohmann::ordered_json;

Result<WatcherOptions> MakeWatcherOptions(const WatchRequest& request) {
  WatcherOptions options;
  options.policy = request.policy;
  options.policy.min_gap = std::chrono::seconds(request.min_gap_s);
  ARTUNE_RETURN_IF_ERROR(ValidateWatchPolicy(options.policy));
  if (!(request.interval_s > 0)) return Status::InvalidArgument("--interval must be above 0");
  ARTUNE_ASSIGN_OR_RETURN(options.space, tuner::ParseSearchSpace(request.axes));
  options.replay_messages = request.replay_messages;
  options.inflight = request.link.inflight;
  options.dry_run = request.dry_run;
  for (const std::string& server : request.link.servers) {
    options.servers_text += (options.servers_text.empty() ? "" : ",") + server;
  }
  return options;
}

ordered_json WatchEventJson(const db::WatchEventRecord& event) {
  return {{"id", event.id},
          {"at", event.at},
          {"servers", event.servers},
          {"action", db::WatchActionName(event.action)},
          {"reason", event.reason},
          {"drift", event.drift},
          {"window_messages", event.window_slices},
          {"in_force", event.in_force_knobs},
          {"candidate", event.candidate_knobs},
          {"predicted_margin", event.predicted_margin},
          {"paired",
           {{"median", event.paired_median},
            {"low", event.paired_low},
            {"high", event.paired_high},
            {"pairs", event.pairs},
            {"verdict", event.verdict}}},
          {"profile", ordered_json::parse(event.profile_json.empty() ? "{}" : event.profile_json,
                                          nullptr, /*allow_exceptions=*/false)}};
}

}  // namespace artune::watch
