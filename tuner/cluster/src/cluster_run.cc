// The cluster run (cluster_run.h) on every rank.
//
// Auth: servers off loopback need a token. Rank 0 makes a fresh one per run and
// broadcasts it over MPI (the launcher's channel, which the job already trusts);
// each rank keeps it in a 0600 file of its private scratch directory for the
// transport to read (ARTUNE_TOKEN_FILE), so no token file is shared or copied.
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

#include "artune/cluster/cluster_run.h"

#include "artune/cluster/cluster_model.h"
#include "artune/cluster/cluster_wire.h"
#include "artune/cluster/mpi_world.h"
#include "artune/cluster/pair_schedule.h"
#include "artune/cluster/scratch_dir.h"
#include "artune/db/store.h"
#include "artune/model/measure.h"
#include "artune/model/model_json.h"
#include "artune/transport/config_loader.h"
#include "artune/transport/credentials.h"
#include "artune/transport/knobs.h"
#include "artune/tuner/bench_servers.h"
#include "artune/tuner/bench_transport.h"
#include "artune/tuner/link_device.h"
#include "artune/tuner/sweep.h"

namespace artune::cluster {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr int kLinkTag = 15;
// How often rank 0 looks for a finished link while its own is being measured.
constexpr auto kPollInterval = std::chrono::milliseconds(5);
constexpr const char* kConfigPrefix = "config.";
// A/B needs pairs for a paired verdict (tuner::kMinPairsForVerdict): one per round.
constexpr uint32_t kAbFinalRounds = 6;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// What every rank needs to run the same cluster run: rank 0 decides it (from the
// command line, or from the store for --resume) and broadcasts it.
struct RunSetup {
  int64_t cluster_id = 0;
  std::string pairs;
  std::string measurement;
  std::map<std::string, std::string> parameters;  // ClusterParameters
  std::set<std::pair<uint32_t, uint32_t>> done;   // (client, server) stored ok
  std::string capture;                            // EncodeCapture text; "" for a scheme
  std::string token;
};

std::string EncodeSetup(const Result<RunSetup>& setup) {
  if (!setup.ok()) {
    return json{{"error", setup.status().message()},
                {"code", static_cast<int>(setup.status().code())}}
        .dump();
  }
  json done = json::array();
  for (const auto& [client, server] : setup->done) done.push_back({client, server});
  return json{{"cluster_id", setup->cluster_id},
              {"pairs", setup->pairs},
              {"measurement", setup->measurement},
              {"parameters", setup->parameters},
              {"done", done},
              {"capture", setup->capture},
              {"token", setup->token}}
      .dump();
}

Result<RunSetup> DecodeSetup(const std::string& text) {
  try {
    const json j = json::parse(text);
    if (j.contains("error")) {
      return Status(static_cast<ErrorCode>(j.at("code").get<int>()),
                    "rank 0 could not start the cluster run: " + j.at("error").get<std::string>());
    }
    RunSetup setup;
    setup.cluster_id = j.at("cluster_id").get<int64_t>();
    setup.pairs = j.at("pairs").get<std::string>();
    setup.measurement = j.at("measurement").get<std::string>();
    setup.parameters = j.at("parameters").get<std::map<std::string, std::string>>();
    for (const json& link : j.at("done")) {
      setup.done.emplace(link.at(0).get<uint32_t>(), link.at(1).get<uint32_t>());
    }
    setup.capture = j.at("capture").get<std::string>();
    setup.token = j.at("token").get<std::string>();
    return setup;
  } catch (const std::exception& error) {
    return Status::Corruption(std::string("the cluster run's setup from rank 0 is malformed: ") +
                              error.what());
  }
}

// The plan and base config as cluster parameters: tuner::SweepParameters plus what
// a sweep keeps in its own columns, the schedule's seed, and every knob of the
// base config ("config.NAME").
std::map<std::string, std::string> ClusterParameters(const tuner::SweepPlan& plan,
                                                     const transport::Config& base,
                                                     uint64_t pairs_seed) {
  std::map<std::string, std::string> parameters = tuner::SweepParameters(plan);
  std::string axes;
  for (const std::string& axis : plan.axes) axes += (axes.empty() ? "" : " ") + axis;
  parameters["objective"] = plan.objective;
  parameters["strategy"] = plan.strategy;
  parameters["search_space"] = axes;
  parameters["workload"] =
      plan.capture_id != 0 ? "capture:" + std::to_string(plan.capture_id) : "scheme:" + plan.scheme;
  parameters["pairs_seed"] = std::to_string(pairs_seed);
  for (const auto& [name, value] : transport::ConfigToMap(base)) {
    parameters[kConfigPrefix + name] = value;
  }
  return parameters;
}

// --ab FILE: one two-value axis (base value, FILE's value) per knob FILE changes,
// for the "ab" strategy (tuner/strategy.h). kInvalidArgument for a file that
// changes nothing, or changes a knob a running transport cannot take.
Result<std::vector<std::string>> AbAxes(const std::string& path, const transport::Config& base) {
  std::ifstream file(path);
  if (!file) return Status::InvalidArgument("cannot read the --ab config " + path);
  std::stringstream text;
  text << file.rdbuf();
  transport::Config tuned = base;
  ARTUNE_RETURN_IF_ERROR(transport::ApplyToml(text.str(), path, tuned, nullptr));
  const auto before = transport::ConfigToMap(base);
  std::vector<std::string> axes;
  for (const auto& [name, value] : transport::ConfigToMap(tuned)) {
    if (before.at(name) == value) continue;
    const transport::Knob* knob = transport::FindKnob(name);
    if (knob == nullptr || !knob->live) {
      return Status::InvalidArgument("--ab config " + path + " sets " + name +
                                     ", which a running transport cannot change per trial: "
                                     "set it on every rank with --set instead");
    }
    axes.push_back(name + "=" + before.at(name) + "," + value);
  }
  if (axes.empty()) {
    return Status::InvalidArgument("--ab config " + path +
                                   " sets nothing the base config does not already have");
  }
  return axes;
}

// Rank 0: the new cluster run (stored), or the stored one --resume names.
Result<RunSetup> PrepareRun(const ClusterRunRequest& request, db::Store& store, int ranks) {
  RunSetup setup;
  setup.token = transport::NewToken();
  if (request.resume != 0) {
    ARTUNE_ASSIGN_OR_RETURN(db::ClusterRecord cluster, store.GetCluster(request.resume));
    if (cluster.ranks != static_cast<uint32_t>(ranks)) {
      return Status::InvalidArgument("cluster run " + std::to_string(cluster.id) + " ran on " +
                                     std::to_string(cluster.ranks) + " ranks, this job has " +
                                     std::to_string(ranks) + ": resume it with mpirun -np " +
                                     std::to_string(cluster.ranks));
    }
    setup.cluster_id = cluster.id;
    setup.pairs = cluster.pairs;
    setup.measurement = cluster.measurement;
    setup.parameters = cluster.parameters;
    ARTUNE_ASSIGN_OR_RETURN(std::vector<db::ClusterLinkRecord> links,
                            store.ListClusterLinks(cluster.id));
    // A failed link is measured again; its new result replaces it.
    for (const auto& link : links) {
      if (link.status == db::LinkStatus::kOk)
        setup.done.emplace(link.client_rank, link.server_rank);
    }
  } else {
    ARTUNE_ASSIGN_OR_RETURN(transport::LoadedConfig loaded, request.load_config());
    transport::Config base = loaded.config;
    if (!request.fabric.empty())
      ARTUNE_RETURN_IF_ERROR(transport::SetKnob(base, "fabric", request.fabric));
    tuner::SweepPlan plan = request.plan;
    setup.measurement = "sweep";
    const bool models = plan.strategy == tuner::kModelMeasurement;
    if (models && !request.ab_config.empty()) {
      return Status::InvalidArgument(
          "--ab and --strategy model are two measurements of a link: give one of them");
    }
    if (models) setup.measurement = tuner::kModelMeasurement;
    if (!request.ab_config.empty()) {
      ARTUNE_ASSIGN_OR_RETURN(plan.axes, AbAxes(request.ab_config, base));
      plan.strategy = "ab";
      if (!request.final_rounds_given) plan.final_rounds = kAbFinalRounds;
      setup.measurement = "ab";
    }
    // Checked here, once, before any rank measures.
    ARTUNE_ASSIGN_OR_RETURN(
        tuner::PairSchedule schedule,
        tuner::MakePairSchedule(request.pairs, static_cast<uint32_t>(ranks), request.pairs_seed));
    setup.pairs = schedule.spec;
    setup.parameters = ClusterParameters(plan, base, request.pairs_seed);
    if (models) {
      if (!(request.model_budget_s > 0)) {
        return Status::InvalidArgument("--model-budget must be a positive number of seconds");
      }
      // Checked here, once: a search space or workload the prediction cannot use.
      ARTUNE_RETURN_IF_ERROR(tuner::ParseSearchSpace(plan.axes).status());
      setup.parameters[tuner::kModelBudgetParameter] = std::to_string(request.model_budget_s);
    }
    db::ClusterRecord cluster;
    cluster.ranks = static_cast<uint32_t>(ranks);
    cluster.pairs = setup.pairs;
    cluster.measurement = setup.measurement;
    cluster.parameters = setup.parameters;
    ARTUNE_ASSIGN_OR_RETURN(setup.cluster_id, store.InsertCluster(cluster));
  }
  const std::string& workload = setup.parameters["workload"];
  if (workload.starts_with("capture:")) {
    ARTUNE_ASSIGN_OR_RETURN(db::CaptureRecord capture,
                            store.GetCapture(std::stoll(workload.substr(8))));
    setup.capture = EncodeCapture(capture);
  }
  return setup;
}

Status UseToken(const std::string& token, const std::string& dir) {
  const std::string path = dir + "/token";
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return Status::IoError("cannot create the token file " + path);
  const bool written = write(fd, token.data(), token.size()) == static_cast<ssize_t>(token.size());
  close(fd);
  if (!written) return Status::IoError("cannot write the token file " + path);
  setenv("ARTUNE_TOKEN_FILE", path.c_str(), 1);
  return Status::Ok();
}

// What a rank tells the others about itself (MPI_Allgather).
struct RankInfo {
  std::string host, address, device;
  std::string error;  // why this rank cannot take part: its links fail with it
};

// Everything a rank holds while the run goes on: its scratch store, its plan and
// config, its servers.
struct RankState {
  std::unique_ptr<db::Store> scratch;
  tuner::SweepPlan plan;
  transport::Config base;
  std::string measurement;  // "sweep" | "ab" | "model"
  double model_budget_s = tuner::kDefaultLinkModelBudget;
  int64_t capture_id = 0;  // the capture as rank 0's store numbers it
  std::unique_ptr<tuner::BenchTransport> transport;
  tuner::StartedServers servers;
  RankInfo info;
};

Status StartRank(const ClusterRunRequest& request, const RunSetup& setup,
                 std::optional<ScratchDir>& dir, RankState& state) {
  state.info.host = Hostname();
  Result<ScratchDir> made = ScratchDir::Make();
  if (!made.ok()) return made.status();
  dir.emplace(std::move(*made));
  ARTUNE_RETURN_IF_ERROR(UseToken(setup.token, dir->path()));
  ARTUNE_ASSIGN_OR_RETURN(state.scratch, db::Store::Open(dir->path() + "/scratch.db"));
  ARTUNE_ASSIGN_OR_RETURN(transport::LoadedConfig loaded, request.load_config());
  state.base = loaded.config;
  ARTUNE_RETURN_IF_ERROR(
      tuner::RestoreClusterPlan(setup.cluster_id, setup.parameters, state.plan, state.base));
  state.measurement = setup.measurement;
  if (auto budget = setup.parameters.find(tuner::kModelBudgetParameter);
      budget != setup.parameters.end()) {
    state.model_budget_s = std::stod(budget->second);
  }
  if (!setup.capture.empty()) {
    // The capture goes into the scratch store, where the sweep's workload loader
    // finds it under the scratch store's id.
    state.capture_id = state.plan.capture_id;
    ARTUNE_ASSIGN_OR_RETURN(db::CaptureRecord capture, DecodeCapture(setup.capture));
    ARTUNE_ASSIGN_OR_RETURN(state.plan.capture_id, state.scratch->InsertCapture(capture));
  }
  std::string host = request.listen;
  if (host.empty()) {
    ARTUNE_ASSIGN_OR_RETURN(host, tuner::ClusterListenHost(state.base));
  }
  state.transport = tuner::MakeArtuneBenchTransport(state.base);
  // Two servers: ps-throughput's parameter servers, as `artune serve` has them.
  ARTUNE_ASSIGN_OR_RETURN(
      state.servers, tuner::StartBenchServers({state.transport.get()}, "artune", 2, host + ":0"));
  state.info.address = state.servers.base;
  state.info.device = tuner::LinkDeviceName(state.transport->fabric(), state.base, host);
  return Status::Ok();
}

// The link model of a "model" run: measured against the server rank's first
// server (LinkModelOptions: the polling modes the space needs, the workload's calls
// in flight, the run's budget). The model or the reason it could not be measured.
Result<db::LinkModelRecord> MeasureModel(RankState& state, const RankInfo& server) {
  ARTUNE_ASSIGN_OR_RETURN(const tuner::Workload workload,
                          tuner::WorkloadOf(state.plan, *state.scratch));
  ARTUNE_ASSIGN_OR_RETURN(const tuner::SearchSpace space, tuner::ParseSearchSpace(state.plan.axes));
  model::MeasureOptions options = tuner::LinkModelOptions(
      space, state.base, model::PassInflight(state.plan, workload), state.model_budget_s);
  options.peer = server.address;
  ARTUNE_ASSIGN_OR_RETURN(const model::MeasureReport measured,
                          model::MeasureLinkModel(options, nullptr));
  return model::ToRecord(measured.model, measured.rounds, measured.duration_s);
}

// The client's side of one link: the measurement into the scratch store (or the
// link model), read back for rank 0. Never an error: what goes wrong makes a
// failed link.
LinkReport MeasureLink(RankState& state, const RankInfo& server, db::ClusterLinkRecord link) {
  const auto started = Clock::now();
  LinkReport report;
  link.status = db::LinkStatus::kFailed;
  auto fail = [&](const std::string& error) {
    report.link = link;
    report.link.error = error;
    report.seconds = SecondsSince(started);
    return report;
  };
  if (!state.info.error.empty())
    return fail("the client rank could not start: " + state.info.error);
  if (!server.error.empty()) return fail("the server rank could not start: " + server.error);
  if (state.measurement == tuner::kModelMeasurement) {
    Result<db::LinkModelRecord> model = MeasureModel(state, server);
    if (!model.ok()) return fail(model.status().message());
    report.model = std::move(*model);
    link.status = db::LinkStatus::kOk;
    report.link = link;
    report.seconds = SecondsSince(started);
    return report;
  }

  auto newest = [&]() -> int64_t {
    auto sweeps = state.scratch->ListSweeps(1);
    return sweeps.ok() && !sweeps->empty() ? sweeps->front().id : 0;
  };
  const int64_t before = newest();
  tuner::SweepPlan plan = state.plan;
  plan.peer = server.address;
  Status outcome_status = Status::Ok();
  Result<tuner::PreparedSweep> prepared =
      tuner::PrepareSweep(*state.scratch, plan, state.base, {}, false, nullptr);
  if (prepared.ok()) {
    outcome_status = tuner::RunPreparedSweep(*state.scratch, *prepared, nullptr).status();
    prepared->target.reset();  // close the connections before the next link
  } else {
    outcome_status = prepared.status();
  }
  // The sweep the attempt stored, even a failed one's (its finished trials).
  const int64_t sweep_id = newest();
  if (sweep_id != before) {
    Result<db::SweepRecord> sweep = state.scratch->GetSweep(sweep_id);
    Result<std::vector<db::TrialRecord>> trials = state.scratch->ListTrials(sweep_id);
    if (sweep.ok() && trials.ok()) {
      if (state.capture_id != 0) sweep->workload = "capture:" + std::to_string(state.capture_id);
      report.sweep = std::move(*sweep);
      report.trials = std::move(*trials);
    }
  }
  if (!outcome_status.ok()) return fail(outcome_status.message());
  link.status = db::LinkStatus::kOk;
  report.link = link;
  report.seconds = SecondsSince(started);
  return report;
}

// The MPI job this rank is part of, and the exit code it ends with when it must.
struct Job {
  MpiWorld& world;
  const std::function<int(const Status&)>& exit_code_for;
};

// For a rank that cannot go on while the others wait for it in MPI: ends the job.
[[noreturn]] void Abort(const Status& status, Job& job) {
  std::cerr << "artune: rank " << job.world.rank() << ": " << status.ToString()
            << "; aborting the job\n";
  job.world.Abort(job.exit_code_for(status));
}

// Rank 0 stores a link at once; a link it cannot store ends the job (the other
// ranks wait on it), keeping every link stored before.
void StoreOrAbort(db::Store& store, int64_t cluster_id, const LinkReport& report,
                  ClusterRunObserver& progress, Job& job) {
  Result<db::ClusterLinkRecord> stored = StoreLinkReport(store, cluster_id, report);
  if (!stored.ok()) {
    std::cerr << "artune: rank 0 cannot store link " << report.link.client_rank << "-"
              << report.link.server_rank << " of cluster run " << cluster_id << ": "
              << stored.status().ToString() << "; aborting the job (`--resume " << cluster_id
              << "` measures what is missing)\n";
    job.world.Abort(job.exit_code_for(stored.status()));
  }
  progress.Stored(report, *stored);
}

// Every rank's host, address, device and start error, in rank order.
Result<std::vector<RankInfo>> GatherRanks(MpiWorld& world, const RankInfo& info) {
  ARTUNE_ASSIGN_OR_RETURN(std::vector<std::string> gathered, world.AllGather(json{
                                                                 {"host", info.host},
                                                                 {"address", info.address},
                                                                 {"device", info.device},
                                                                 {"error",
                                                                  info.error}}.dump()));
  std::vector<RankInfo> ranks;
  for (const std::string& text : gathered) {
    const json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) return Status::Corruption("a rank sent a malformed address");
    ranks.push_back(
        {j.value("host", ""), j.value("address", ""), j.value("device", ""), j.value("error", "")});
  }
  return ranks;
}

// The link of `pair`, the p-th of round r, between the ranks it names.
db::ClusterLinkRecord LinkOf(size_t r, size_t p, const tuner::RankPair& pair,
                             const std::vector<RankInfo>& ranks) {
  db::ClusterLinkRecord link;
  link.round = static_cast<uint32_t>(r);
  link.pair = static_cast<uint32_t>(p);
  link.client_rank = pair.client;
  link.server_rank = pair.server;
  link.client_host = ranks[pair.client].host;
  link.client_device = ranks[pair.client].device;
  link.server_host = ranks[pair.server].host;
  link.server_device = ranks[pair.server].device;
  return link;
}

// Rank 0: every link of a round is stored as soon as it is finished, whoever
// measured it: its own (`own`, measuring) and the `expected` ones the others send.
void StoreRoundLinks(int expected, std::optional<std::future<LinkReport>>& own, db::Store& store,
                     int64_t cluster_id, ClusterRunObserver& progress, Job& job) {
  for (int received = 0; received < expected || own;) {
    if (own && own->wait_for(std::chrono::seconds(0)) == std::future_status::ready) {
      StoreOrAbort(store, cluster_id, own->get(), progress, job);
      own.reset();
      continue;
    }
    Result<std::optional<MpiWorld::Received>> arrived = job.world.TryReceiveAny(kLinkTag);
    if (!arrived.ok()) Abort(arrived.status(), job);
    if (!arrived->has_value()) {
      std::this_thread::sleep_for(kPollInterval);
      continue;
    }
    Result<LinkReport> report = DecodeLinkReport((*arrived)->text);
    if (!report.ok()) Abort(report.status(), job);
    StoreOrAbort(store, cluster_id, *report, progress, job);
    ++received;
  }
}

// Round r of the schedule: each rank measures the links it is the client of (rank
// 0 on a thread of its own) and rank 0 stores them all; then every rank waits for
// the others. `store` is rank 0's, nullptr on the others.
void RunRound(size_t r, const tuner::PairSchedule& schedule, const RunSetup& setup,
              const std::vector<RankInfo>& ranks, RankState& state, db::Store* store,
              ClusterRunObserver& progress, Job& job) {
  const bool root = job.world.rank() == 0;
  const auto round_started = Clock::now();
  int expected = 0;                            // links rank 0 receives this round
  std::optional<std::future<LinkReport>> own;  // rank 0's own link, measuring
  for (size_t p = 0; p < schedule.rounds[r].size(); ++p) {
    const tuner::RankPair& pair = schedule.rounds[r][p];
    if (setup.done.count({pair.client, pair.server})) {
      if (root) progress.Skipped();
      continue;
    }
    if (pair.client != 0) ++expected;
    if (static_cast<int>(pair.client) != job.world.rank()) continue;
    const db::ClusterLinkRecord link = LinkOf(r, p, pair, ranks);
    if (root) {
      // Measured on a thread of its own, so that rank 0 meanwhile stores the
      // links the others finish (MPI stays on this thread: MPI_THREAD_FUNNELED).
      own = std::async(std::launch::async, [&state, server = ranks[pair.server], link] {
        return MeasureLink(state, server, link);
      });
    } else if (Status sent = job.world.Send(
                   EncodeLinkReport(MeasureLink(state, ranks[pair.server], link)), 0, kLinkTag);
               !sent.ok()) {
      Abort(sent, job);
    }
  }
  if (root) {
    StoreRoundLinks(expected, own, *store, setup.cluster_id, progress, job);
    progress.RoundDone(r, SecondsSince(round_started));
  }
  if (Status synced = job.world.Barrier(); !synced.ok()) Abort(synced, job);
}

}  // namespace

Status RunCluster(const ClusterRunRequest& request, ClusterRunObserver& observer) {
  ARTUNE_ASSIGN_OR_RETURN(std::unique_ptr<MpiWorld> world, MpiWorld::Init());
  const bool root = world->rank() == 0;
  if (world->size() < 2) {
    return Status::InvalidArgument(
        "artune sweep --mpi needs at least 2 ranks: mpirun -np N --map-by node artune sweep "
        "--mpi ...");
  }
  // Rank 0 alone opens the store; its setup (or its error) reaches every rank.
  std::unique_ptr<db::Store> store;
  std::string setup_text;
  if (root) {
    Result<RunSetup> prepared = [&]() -> Result<RunSetup> {
      ARTUNE_ASSIGN_OR_RETURN(store, db::Store::Open(db::ResolveDatabasePath(request.db_path)));
      return PrepareRun(request, *store, world->size());
    }();
    setup_text = EncodeSetup(prepared);
  }
  ARTUNE_ASSIGN_OR_RETURN(setup_text, world->Broadcast(std::move(setup_text), 0));
  Result<RunSetup> decoded = DecodeSetup(setup_text);
  if (!decoded.ok()) return root ? decoded.status() : Status::Ok();  // rank 0 says why
  const RunSetup setup = std::move(*decoded);

  // Each rank starts; one that cannot still takes part, and its links fail. The
  // scratch directory is declared first so that it goes after the store and the
  // servers that use it.
  std::optional<ScratchDir> dir;
  RankState state;
  if (Status started = StartRank(request, setup, dir, state); !started.ok()) {
    state.info.error = started.ToString();
  }
  ARTUNE_ASSIGN_OR_RETURN(const std::vector<RankInfo> ranks, GatherRanks(*world, state.info));
  const uint64_t seed = std::stoull(setup.parameters.at("pairs_seed"));
  ARTUNE_ASSIGN_OR_RETURN(
      tuner::PairSchedule schedule,
      tuner::MakePairSchedule(setup.pairs, static_cast<uint32_t>(world->size()), seed));

  if (root) observer.Began(setup.cluster_id, setup.measurement, schedule, setup.done.size());
  Job job{*world, request.exit_code_for};
  for (size_t r = 0; r < schedule.rounds.size(); ++r) {
    RunRound(r, schedule, setup, ranks, state, store.get(), observer, job);
  }
  Status finished = Status::Ok();
  if (root) {
    finished = store->FinishCluster(setup.cluster_id);
    if (finished.ok()) finished = observer.Finished(*store);
  }
  // Servers stay up until every rank is done with them; every rank comes here
  // (an early return would leave the others in the barrier while it finalises).
  ARTUNE_RETURN_IF_ERROR(world->Barrier());
  return finished;
}

}  // namespace artune::cluster
