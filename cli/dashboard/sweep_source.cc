#include "sweep_source.h"

#include <algorithm>
#include <charconv>
#include <sstream>

#include "artune/tuner/search_space.h"

namespace artune::dashboard {

Result<SweepSelector> ParseSweepSelector(const std::string& text) {
  if (text == "latest") return SweepSelector{};
  int64_t id = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), id);
  if (error != std::errc() || end != text.data() + text.size() || id <= 0) {
    return Status::InvalidArgument("--sweep " + text +
                                   ": give a sweep id (see `artune sweep list`) or 'latest'");
  }
  return SweepSelector{id};
}

std::optional<SearchAxis> ParseSearchAxis(std::string_view spec) {
  // The sweep's own parser, so the dashboard plans exactly the values the sweep
  // measures. Per axis rather than tuner::ParseSearchSpace: one axis this build
  // cannot read (a knob since dropped) leaves the others shown, and no axes at all
  // must not turn into the default search space.
  Result<tuner::KnobAxis> parsed = tuner::ParseKnobAxis(spec);
  if (!parsed.ok()) return std::nullopt;
  SearchAxis axis;
  axis.knob = std::string(parsed->name());
  for (size_t index = 0; index < parsed->values.size(); ++index) {
    axis.values.push_back(parsed->ValueText(index));
  }
  return axis;
}

namespace {

SweepTrial TrialOf(const db::TrialRecord& record) {
  SweepTrial trial;
  trial.knobs = record.knobs;
  trial.config = record.config;
  trial.status = record.status;
  trial.validated = record.validated;
  trial.objective = record.objective;
  trial.ci_low = record.ci_low;
  trial.ci_high = record.ci_high;
  trial.duration_s = record.duration_s;
  trial.error = record.error;
  return trial;
}

}  // namespace

SweepInput SweepInputFromRecords(const db::SweepRecord& sweep,
                                 const std::vector<db::TrialRecord>& trials) {
  SweepInput input;
  input.id = sweep.id;
  input.created_at = sweep.created_at;
  input.finished_at = sweep.finished_at;
  input.objective = sweep.objective;
  input.goal = sweep.goal;
  input.strategy = sweep.strategy;
  input.workload = sweep.workload;
  input.peer = sweep.peer;
  input.fabric = sweep.fabric;
  // The stored search space is the canonical axis specs joined by ' '. A grid
  // sweep measures every point; an adaptive one stops early, so only the axes
  // are known.
  std::istringstream words(sweep.search_space);
  uint64_t grid = 1;
  bool every_axis_known = true;
  for (std::string spec; words >> spec;) {
    std::optional<SearchAxis> axis = ParseSearchAxis(spec);
    if (!axis) {
      every_axis_known = false;
      continue;
    }
    grid *= axis->values.size();
    input.planned_axes[axis->knob] = std::move(axis->values);
  }
  if (sweep.strategy == "grid" && every_axis_known && !input.planned_axes.empty()) {
    input.planned_trials = grid;
  }
  for (const db::TrialRecord& record : trials) input.trials.push_back(TrialOf(record));
  if (sweep.verdict) {
    input.verdict = sweep.verdict->verdict;
    input.chosen_knobs = sweep.verdict->best_knobs;
    if (sweep.verdict->default_remeasured) {
      input.default_remeasured = TrialOf(*sweep.verdict->default_remeasured);
    }
    if (sweep.verdict->best_remeasured) {
      input.best_remeasured = TrialOf(*sweep.verdict->best_remeasured);
    }
  }
  return input;
}

SweepSource::SweepSource(std::string database_path, SweepSelector selector)
    : database_path_(std::move(database_path)), selector_(selector) {}

SweepSource::~SweepSource() = default;

SweepPanel SweepSource::Poll() {
  SweepPanel panel;
  panel.configured = true;
  panel.source = "store " + database_path_ + ", " +
                 (selector_.id ? "sweep " + std::to_string(*selector_.id) : "latest sweep");
  if (store_ == nullptr) {
    Result<std::unique_ptr<db::Store>> opened =
        db::Store::Open(database_path_, db::OpenMode::kExisting);
    if (!opened.ok()) {
      panel.error = opened.status().message();
      return panel;
    }
    store_ = std::move(*opened);
  }
  Result<db::SweepRecord> sweep = Status::NotFound("");
  if (selector_.id) {
    sweep = store_->GetSweep(*selector_.id);
  } else {
    Result<std::vector<db::SweepRecord>> newest = store_->ListSweeps(1);
    if (!newest.ok()) {
      sweep = newest.status();
    } else if (newest->empty()) {
      sweep =
          Status::NotFound("no sweep in the store yet; waiting for `artune sweep` to start one");
    } else {
      sweep = (*newest)[0];
    }
  }
  if (!sweep.ok()) {
    panel.error = sweep.status().message();
    return panel;
  }
  Result<std::vector<db::TrialRecord>> trials = store_->ListTrials(sweep->id);
  if (!trials.ok()) {
    panel.error = trials.status().message();
    return panel;
  }
  panel.summary = SummarizeSweep(SweepInputFromRecords(*sweep, *trials));
  panel.cluster = ClusterOf(sweep->id);
  return panel;
}

bool SweepSource::ClusterIsCurrent(int64_t cluster_id) {
  if (!cluster_ || cluster_->data.cluster.id != cluster_id) return false;
  // A run changes by whole links: one stored once finished, or a failed one that
  // --resume measured again and replaced (even after the run was marked finished).
  // Two cheap reads say whether the whole run (a sweep per link) must be read again.
  Result<db::ClusterRecord> cluster = store_->GetCluster(cluster_id);
  Result<std::vector<db::ClusterLinkRecord>> links = store_->ListClusterLinks(cluster_id);
  if (!cluster.ok() || !links.ok()) return false;
  const std::vector<db::ClusterLinkRecord>& known = cluster_->data.links;
  const auto same = [](const db::ClusterLinkRecord& a, const db::ClusterLinkRecord& b) {
    return a.round == b.round && a.pair == b.pair && a.status == b.status &&
           a.sweep_id == b.sweep_id && a.finished_at == b.finished_at;
  };
  return cluster->finished_at == cluster_->data.cluster.finished_at &&
         std::equal(links->begin(), links->end(), known.begin(), known.end(), same);
}

std::optional<ClusterPanel> SweepSource::ClusterOf(int64_t sweep_id) {
  auto known = cluster_of_sweep_.find(sweep_id);
  if (known == cluster_of_sweep_.end()) {
    Result<std::optional<int64_t>> found = tuner::FindClusterOfSweep(*store_, sweep_id);
    if (!found.ok() || !*found) return std::nullopt;
    known = cluster_of_sweep_.emplace(sweep_id, **found).first;
  }
  const int64_t cluster_id = known->second;
  if (!ClusterIsCurrent(cluster_id)) {
    Result<tuner::ClusterData> data = tuner::ReadClusterData(*store_, cluster_id);
    if (!data.ok()) return std::nullopt;
    cluster_.emplace();
    cluster_->data = std::move(*data);
    cluster_->analysis = tuner::AnalyzeCluster(cluster_->data.input);
  }
  return ClusterPanelForSweep(cluster_->data, cluster_->analysis, sweep_id);
}

}  // namespace artune::dashboard
