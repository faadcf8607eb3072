// The watcher's link to the world: the watched servers' control planes and the A/B
// peer.
#include <chrono>
#include <memory>
#include <vector>

#include "artune/transport/credentials.h"
#include "artune/watch/watcher.h"

namespace artune::watch {
namespace {

constexpr std::chrono::seconds kControlDeadline{5};

class LiveLink final : public WatchedLink {
 public:
  LiveLink(LiveLinkOptions options, transport::Credentials credentials)
      : options_(std::move(options)), credentials_(std::move(credentials)) {}

  Result<transport::Stats> ReadCounters() override {
    std::vector<transport::Stats> readings;
    for (const std::string& server : options_.servers) {
      auto stats = transport::QueryServerStats(server, kControlDeadline, credentials_);
      if (!stats.ok()) return stats.status().WithContext("reading the counters of " + server);
      readings.push_back(*stats);
    }
    return SumStats(readings);
  }

  // The handshake returns the server's config (its values win for both ends).
  Result<transport::Config> ConfigInForce() override {
    const std::string& server = options_.servers.front();
    auto client = transport::Client::Connect(transport::Config{}, server, credentials_);
    if (!client.ok())
      return client.status().WithContext("reading the config in force at " + server);
    return (*client)->config();
  }

  // Every server is reached before any is changed: the relays of a job are on
  // several hosts, and one that cannot be reached must not leave the others running
  // a config it does not (each link's protocols are its server's).
  Status Push(const transport::Config& config) override {
    std::vector<std::unique_ptr<transport::Client>> clients;
    for (const std::string& server : options_.servers) {
      auto client = transport::Client::Connect(transport::Config{}, server, credentials_);
      if (!client.ok()) {
        return client.status().WithContext("pushing to " + server + " (nothing was changed)");
      }
      clients.push_back(std::move(*client));
    }
    for (size_t i = 0; i < clients.size(); ++i) {
      ARTUNE_RETURN_IF_ERROR(
          clients[i]->Reconfigure(config).WithContext("pushing to " + options_.servers[i]));
    }
    return Status::Ok();
  }

  Result<tuner::PairedCompareResult> Compare(const transport::Config& baseline,
                                             const transport::Config& tuned,
                                             const tuner::Workload& workload) override {
    tuner::PairedCompareOptions compare;
    compare.repeats = options_.ab_repeats;
    compare.peer = options_.ab_peer;
    compare.replay.inflight = options_.inflight;
    compare.replay.warmup_rounds = 1;
    compare.replay.rounds = 1;
    compare.replay.min_duration_s = options_.ab_duration_s;
    // Each side keeps the A/B peer's start-time knobs (the link's fabric): only the
    // live knobs are compared, as they are all a push can change.
    return tuner::RunPairedCompare({"in force", "the config in force", baseline},
                                   {"candidate", "the predicted config", tuned}, workload, compare);
  }

 private:
  LiveLinkOptions options_;
  transport::Credentials credentials_;
};

}  // namespace

Result<std::unique_ptr<WatchedLink>> OpenLiveLink(const LiveLinkOptions& options) {
  if (options.servers.empty()) {
    return Status::InvalidArgument("--server: name at least one relay or serve to watch");
  }
  if (options.ab_peer.empty()) {
    return Status::InvalidArgument(
        "--ab-peer: name the `artune serve` at the far end of the watched link, where a "
        "predicted config is measured against the one in force before it is pushed");
  }
  ARTUNE_ASSIGN_OR_RETURN(transport::Credentials credentials,
                          transport::CredentialsFromEnvironment());
  return std::unique_ptr<WatchedLink>(new LiveLink(options, std::move(credentials)));
}

}  // namespace artune::watch
