// Writes sweeps into a store for the dashboard's sweep tests, as `artune sweep`
// would: one sweep, then trials one by one (each its own transaction), then the
// finish mark.
//
//   sweep_fixture DB create               prints the new sweep's id
//   sweep_fixture DB trial ID EAGER CHUNK OBJECTIVE [STATUS]
//   sweep_fixture DB verdict ID VERDICT BEST_KEY DEFAULT_OBJECTIVE
//                                        the verdict and the default measured again
//   sweep_fixture DB finish ID
//   sweep_fixture DB cluster             a finished cluster run (tests/cli/cluster_fixture.h:
//                                        WriteTwoModelCluster); prints its id
//   sweep_fixture DB watch ACTION IN_FORCE_KEY CANDIDATE_KEY MARGIN MEDIAN REASON
//                                        one `artune watch` decision (CANDIDATE_KEY "-":
//                                        none; MEDIAN 0: not measured); prints its id
#include <cstdlib>
#include <iostream>
#include <string>

#include "artune/db/store.h"
#include "cluster_fixture.h"

namespace {

int Fail(const artune::Status& status) {
  std::cerr << "sweep_fixture: " << status.message() << "\n";
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace artune;
  if (argc < 3) {
    std::cerr << "usage: sweep_fixture DB create | trial ID EAGER CHUNK OBJECTIVE [STATUS] | "
                 "verdict ID VERDICT BEST_KEY DEFAULT_OBJECTIVE | finish ID | cluster | "
                 "watch ACTION IN_FORCE_KEY CANDIDATE_KEY MARGIN MEDIAN REASON\n";
    return 2;
  }
  auto store = db::Store::Open(argv[1]);
  if (!store.ok()) return Fail(store.status());
  const std::string action = argv[2];
  if (action == "create") {
    db::SweepRecord sweep;
    sweep.host = "fixture";
    sweep.peer = "loopback";
    sweep.fabric = "tcp";
    sweep.objective = "latency-p50";
    sweep.goal = "min";
    sweep.strategy = "grid";
    sweep.workload = "scheme:skew";
    sweep.search_space = "eager_threshold=256B..64KiB:x16 chunk_size=64KiB..1MiB:x16";
    sweep.base_config = {{"eager_threshold", "8KiB"}, {"chunk_size", "512KiB"}};
    sweep.parameters = {{"repeats", "3"}};
    auto id = (*store)->InsertSweep(sweep);
    if (!id.ok()) return Fail(id.status());
    std::cout << *id << "\n";
    return 0;
  }
  if (action == "trial" && argc >= 7) {
    db::TrialRecord trial;
    trial.sweep_id = std::atoll(argv[3]);
    trial.knobs = {{"eager_threshold", argv[4]}, {"chunk_size", argv[5]}};
    trial.objective = std::atof(argv[6]);
    const std::optional<db::TrialStatus> status = db::ParseTrialStatus(argc >= 8 ? argv[7] : "ok");
    if (!status) return Fail(Status::InvalidArgument(std::string("unknown status ") + argv[7]));
    trial.status = *status;
    trial.validated = trial.status == db::TrialStatus::kOk;
    if (trial.status != db::TrialStatus::kOk) trial.error = "fixture: a failed trial";
    trial.ci_low = trial.objective * 0.95;
    trial.ci_high = trial.objective * 1.05;
    trial.samples = 30;
    trial.duration_s = 5;
    trial.config = trial.knobs;
    trial.metrics = {{"p50_us", trial.objective}};
    auto id = (*store)->InsertTrial(trial);
    if (!id.ok()) return Fail(id.status());
    return 0;
  }
  if (action == "verdict" && argc >= 7) {
    db::SweepVerdict verdict;
    const std::optional<db::Verdict> parsed = db::ParseVerdict(argv[4]);
    if (!parsed) return Fail(Status::InvalidArgument(std::string("unknown verdict ") + argv[4]));
    verdict.verdict = *parsed;
    verdict.best_knobs = argv[5];
    db::TrialRecord again;
    again.knobs = {{"eager_threshold", "8KiB"}, {"chunk_size", "512KiB"}};
    again.status = db::TrialStatus::kOk;
    again.validated = true;
    again.objective = std::atof(argv[6]);
    again.ci_low = again.objective * 0.95;
    again.ci_high = again.objective * 1.05;
    again.samples = 30;
    verdict.default_remeasured = again;
    const artune::Status status = (*store)->RecordSweepVerdict(std::atoll(argv[3]), verdict);
    return status.ok() ? 0 : Fail(status);
  }
  if (action == "finish" && argc >= 4) {
    const artune::Status status = (*store)->FinishSweep(std::atoll(argv[3]));
    return status.ok() ? 0 : Fail(status);
  }
  if (action == "cluster") {
    auto id = artune_cluster_test::WriteTwoModelCluster(**store);
    if (!id.ok()) return Fail(id.status());
    std::cout << *id << "\n";
    return 0;
  }
  if (action == "watch" && argc >= 9) {
    db::WatchEventRecord event;
    event.servers = "127.0.0.1:7001";
    const std::optional<db::WatchAction> parsed = db::ParseWatchAction(argv[3]);
    if (!parsed) return Fail(Status::InvalidArgument(std::string("unknown action ") + argv[3]));
    event.action = *parsed;
    event.in_force_knobs = argv[4];
    if (std::string(argv[5]) != "-") event.candidate_knobs = argv[5];
    event.predicted_margin = std::atof(argv[6]);
    event.paired_median = std::atof(argv[7]);
    if (event.paired_median > 0) {
      event.paired_low = event.paired_median * 0.98;
      event.paired_high = event.paired_median * 1.02;
      event.pairs = 6;
      event.verdict = event.paired_median > 1 ? "faster" : "slower";
    }
    event.reason = argv[8];
    event.drift = 0.4;
    event.window_slices = 4096;
    auto id = (*store)->InsertWatchEvent(event);
    if (!id.ok()) return Fail(id.status());
    std::cout << *id << "\n";
    return 0;
  }
  std::cerr << "sweep_fixture: unknown action or missing arguments\n";
  return 2;
}
