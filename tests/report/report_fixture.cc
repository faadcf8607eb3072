// Writes known records into a store for the report CLI tests:
//   report_fixture DB capture   one capture (id 1) with an untrusted method name,
//                               iovec sizes, a tensor, decode errors
//   report_fixture DB sweep     one finished sweep (id 1): latency-p50 over
//                               eager_threshold {1,4,16,64}KiB x chunk_size
//                               {128KiB,512KiB,2MiB}; the best is 4KiB x 128KiB
//                               (41.5 us), the defaults 16KiB x 512KiB (55 us);
//                               64KiB x 2MiB invalid, 1KiB x 2MiB failed
//   report_fixture DB polling-sweep  one more: eager x chunk x polling, the best
//                               16KiB x 512KiB with busy polling
//   report_fixture DB cluster   a finished cluster run (tests/cli/cluster_fixture.h:
//                               WriteTwoModelCluster), after whatever the store holds
//   report_fixture DB model     a link model of shm measured from host "<lab>": eager
//                               and chunked-rendezvous (512KiB chunks, depth 4) under
//                               adaptive polling, 1 and 4 calls in flight; prints its id
#include <algorithm>
#include <iostream>
#include <string>
#include <utility>

#include "artune/db/store.h"
#include "artune/probes/profile.h"
#include "artune/tuner/capture_record.h"
#include "cluster_fixture.h"

namespace {

using namespace artune;

probes::MethodProfile Method(std::string name, probes::MessageDirection direction,
                             probes::PayloadScheme scheme) {
  probes::MethodProfile method;
  method.method = std::move(name);
  method.direction = direction;
  method.scheme = scheme;
  return method;
}

void AddMessages(probes::MethodProfile& method, uint64_t size, uint64_t count) {
  method.messages += count;
  method.bytes += size * count;
  method.message_sizes.Add(size, count);
  for (uint64_t i = 0; i < count; ++i) method.classes.Add(size);
  method.min_size = method.min_size == 0 ? size : std::min(method.min_size, size);
  method.max_size = std::max(method.max_size, size);
  method.median_size = static_cast<double>(size);
}

int WriteCapture(db::Store& store) {
  probes::Profile profile;
  profile.backend = "ebpf";
  profile.duration_s = 3.25;
  profile.errors = {{"grpc_frame_truncated", 3}};

  auto request = Method("/tensorflow.WorkerService/RecvTensor", probes::MessageDirection::kRequest,
                        probes::PayloadScheme::kUniform);
  AddMessages(request, 180, 40);
  auto response = Method("/tensorflow.WorkerService/RecvTensor",
                         probes::MessageDirection::kResponse, probes::PayloadScheme::kSkew);
  AddMessages(response, 600, 20);
  AddMessages(response, 64 * 1024, 12);
  AddMessages(response, 4 << 20, 8);
  response.iovec_sizes.Add(24, 40);
  response.iovec_sizes.Add(600, 20);
  response.iovec_sizes.Add(64 * 1024, 12);
  response.iovec_sizes.Add(4 << 20, 8);
  response.tensors = {{"DT_FLOAT[1024,1024]", 8}};
  auto hostile = Method("/evil.Service/<script>alert('pwned')</script>",
                        probes::MessageDirection::kRequest, probes::PayloadScheme::kUniform);
  AddMessages(hostile, 12, 2);
  profile.methods = {hostile, request, response};

  probes::ConnectionProfile connection;
  connection.id = 1;
  connection.client = "127.0.0.1:40000";
  connection.server = "127.0.0.1:50051";
  connection.roles_known = true;
  connection.request_messages = 42;
  connection.response_messages = 40;
  profile.connections = {connection};

  const db::CaptureRecord record = tuner::CaptureRecordFromProfile(profile, "python3 train.py");
  auto id = store.InsertCapture(record);
  if (!id.ok()) {
    std::cerr << "report_fixture: " << id.status().message() << "\n";
    return 1;
  }
  std::cout << "capture " << *id << "\n";
  return 0;
}

// The fields both fixture sweeps share: a finished grid sweep, lower is better.
db::SweepRecord FixtureSweep(std::string fabric, std::string objective, std::string workload) {
  db::SweepRecord sweep;
  sweep.host = "fixture-host";
  sweep.peer = "loopback";
  sweep.fabric = std::move(fabric);
  sweep.objective = std::move(objective);
  sweep.goal = "min";
  sweep.strategy = "grid";
  sweep.workload = std::move(workload);
  return sweep;
}

// Marks the sweep finished and prints its id; the process's exit code.
int FinishSweep(db::Store& store, int64_t sweep_id) {
  if (Status finished = store.FinishSweep(sweep_id); !finished.ok()) {
    std::cerr << "report_fixture: " << finished.message() << "\n";
    return 1;
  }
  std::cout << "sweep " << sweep_id << "\n";
  return 0;
}

int WriteSweep(db::Store& store) {
  db::SweepRecord sweep = FixtureSweep("tcp", "latency-p50", "scheme:skew");
  sweep.search_space = "eager_threshold=1KiB..64KiB:x4;chunk_size=128KiB..2MiB:x4";
  sweep.default_knobs = db::TrialKnobKey({{"chunk_size", "512KiB"}, {"eager_threshold", "16KiB"}});
  sweep.parameters = {{"repeats", "5"}};
  auto sweep_id = store.InsertSweep(sweep);
  if (!sweep_id.ok()) {
    std::cerr << "report_fixture: " << sweep_id.status().message() << "\n";
    return 1;
  }
  const std::vector<std::string> eager = {"1KiB", "4KiB", "16KiB", "64KiB"};
  const std::vector<std::string> chunk = {"128KiB", "512KiB", "2MiB"};
  // p50 latency in microseconds per (eager, chunk): lowest at 4KiB x 128KiB.
  const double p50[4][3] = {{48, 52, 0}, {41.5, 47, 58}, {50, 55, 61}, {63, 66, 0}};
  for (size_t e = 0; e < eager.size(); ++e) {
    for (size_t c = 0; c < chunk.size(); ++c) {
      db::TrialRecord trial;
      trial.sweep_id = *sweep_id;
      trial.knobs = {{"eager_threshold", eager[e]}, {"chunk_size", chunk[c]}};
      trial.samples = 5;
      trial.duration_s = 2.5;
      trial.validated = true;
      trial.status = db::TrialStatus::kOk;
      trial.objective = p50[e][c];
      if (e == 3 && c == 2) {
        trial.status = db::TrialStatus::kInvalid;
        trial.validated = false;
        trial.error = "payload checksum mismatch on reply 12";
        trial.objective = 0;
      } else if (e == 0 && c == 2) {
        trial.status = db::TrialStatus::kFailed;
        trial.validated = false;
        trial.error = "peer closed the connection <reset>";
        trial.objective = 0;
      } else {
        trial.ci_low = trial.objective * 0.97;
        trial.ci_high = trial.objective * 1.03;
        trial.metrics = {{"p50_us", trial.objective}, {"p99_us", trial.objective * 1.8}};
      }
      if (auto id = store.InsertTrial(trial); !id.ok()) {
        std::cerr << "report_fixture: " << id.status().message() << "\n";
        return 1;
      }
    }
  }
  // The default measured again at the end came out close to the winner (42 against
  // 41.5, intervals overlapping): the sweep's verdict is "within noise".
  db::SweepVerdict verdict;
  verdict.verdict = db::Verdict::kWithinNoise;
  verdict.best_knobs = db::TrialKnobKey({{"chunk_size", "128KiB"}, {"eager_threshold", "4KiB"}});
  verdict.decided_at = "2024-05-01T10:05:00.000Z";
  db::TrialRecord again;
  again.knobs = {{"chunk_size", "512KiB"}, {"eager_threshold", "16KiB"}};
  again.status = db::TrialStatus::kOk;
  again.validated = true;
  again.objective = 42;
  again.ci_low = 41;
  again.ci_high = 43;
  again.samples = 5;
  again.duration_s = 2.5;
  again.started_at = "2024-05-01T10:04:58.000Z";
  again.metrics = {{"p50_us", 42}, {"p99_us", 75.6}};
  verdict.default_remeasured = again;
  if (Status recorded = store.RecordSweepVerdict(*sweep_id, verdict); !recorded.ok()) {
    std::cerr << "report_fixture: " << recorded.message() << "\n";
    return 1;
  }
  return FinishSweep(store, *sweep_id);
}

// Three axes: eager_threshold x chunk_size x polling, every point measured, each
// faster than the one before, so busy polling is faster everywhere (the winner:
// 16KiB x 512KiB, busy).
int WritePollingSweep(db::Store& store) {
  db::SweepRecord sweep = FixtureSweep("verbs", "workload-time", "capture:1");
  sweep.search_space = "eager_threshold=4KiB,16KiB;chunk_size=128KiB,512KiB;polling=busy,event";
  sweep.default_knobs = db::TrialKnobKey(
      {{"chunk_size", "512KiB"}, {"eager_threshold", "16KiB"}, {"polling", "event"}});
  auto sweep_id = store.InsertSweep(sweep);
  if (!sweep_id.ok()) {
    std::cerr << "report_fixture: " << sweep_id.status().message() << "\n";
    return 1;
  }
  double seconds = 0.030;
  for (const char* polling : {"event", "busy"}) {
    for (const char* eager : {"4KiB", "16KiB"}) {
      for (const char* chunk : {"128KiB", "512KiB"}) {
        db::TrialRecord trial;
        trial.sweep_id = *sweep_id;
        trial.knobs = {{"eager_threshold", eager}, {"chunk_size", chunk}, {"polling", polling}};
        trial.samples = 3;
        trial.duration_s = 3;
        trial.validated = true;
        trial.status = db::TrialStatus::kOk;
        trial.objective = seconds;
        trial.ci_low = seconds * 0.97;
        trial.ci_high = seconds * 1.03;
        seconds -= 0.001;
        if (auto id = store.InsertTrial(trial); !id.ok()) {
          std::cerr << "report_fixture: " << id.status().message() << "\n";
          return 1;
        }
      }
    }
  }
  return FinishSweep(store, *sweep_id);
}

int WriteModel(db::Store& store) {
  db::LinkModelRecord model;
  model.host = "<lab>";
  model.peer = "loopback";
  model.fabric = "shm";
  model.rounds = 1;
  model.duration_s = 3.6;
  for (const uint32_t inflight : {1u, 4u}) {
    const double scale = inflight == 1 ? 1e-6 : 2e-6;
    for (const auto& [size, us] : {std::pair{1024ull, 20.0}, {65536ull, 45.0}}) {
      model.points.push_back({"eager", "adaptive", 0, 0, size, inflight, us * scale,
                              us * scale * 0.9, us * scale * 1.2, 2});
    }
    for (const auto& [size, us] : {std::pair{1ull << 20, 500.0}, {4ull << 20, 1800.0}}) {
      model.points.push_back({"chunked-rendezvous", "adaptive", 512 * 1024, 4, size, inflight,
                              us * scale, us * scale * 0.9, us * scale * 1.2, 2});
    }
  }
  auto id = store.InsertLinkModel(model);
  if (!id.ok()) {
    std::cerr << "report_fixture: " << id.status().message() << "\n";
    return 1;
  }
  std::cout << *id << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: report_fixture DB capture|sweep|polling-sweep|cluster|model\n";
    return 2;
  }
  auto store = db::Store::Open(argv[1]);
  if (!store.ok()) {
    std::cerr << "report_fixture: " << store.status().message() << "\n";
    return 1;
  }
  const std::string what = argv[2];
  if (what == "capture") return WriteCapture(**store);
  if (what == "sweep") return WriteSweep(**store);
  if (what == "polling-sweep") return WritePollingSweep(**store);
  if (what == "model") return WriteModel(**store);
  if (what == "cluster") {
    auto cluster = artune_cluster_test::WriteTwoModelCluster(**store);
    if (!cluster.ok()) {
      std::cerr << "report_fixture: " << cluster.status().message() << "\n";
      return 1;
    }
    std::cout << *cluster << "\n";
    return 0;
  }
  std::cerr << "report_fixture: unknown record kind " << what << "\n";
  return 2;
}
