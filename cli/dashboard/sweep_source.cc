#include "sweep_source.h"

#include <charconv>
#include <sstream>

#include "artune/transport/knobs.h"

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
  const size_t equals = spec.find('=');
  if (equals == std::string_view::npos) return std::nullopt;
  SearchAxis axis;
  axis.knob = std::string(spec.substr(0, equals));
  const transport::Knob* knob = transport::FindKnob(axis.knob);
  if (knob == nullptr) return std::nullopt;
  const std::string_view values = spec.substr(equals + 1);
  const size_t dots = values.find("..");
  if (dots == std::string_view::npos) {
    // a,b,c
    size_t start = 0;
    while (start <= values.size()) {
      const size_t comma = std::min(values.find(',', start), values.size());
      Result<uint64_t> value =
          transport::ParseKnobValue(*knob, values.substr(start, comma - start));
      if (!value.ok()) return std::nullopt;
      axis.values.push_back(transport::FormatKnobValue(*knob, *value));
      start = comma + 1;
    }
    return axis;
  }
  // LO..HI:xF
  const size_t factor_at = values.find(":x", dots);
  if (factor_at == std::string_view::npos) return std::nullopt;
  Result<uint64_t> low = transport::ParseKnobValue(*knob, values.substr(0, dots));
  Result<uint64_t> high =
      transport::ParseKnobValue(*knob, values.substr(dots + 2, factor_at - dots - 2));
  uint64_t factor = 0;
  const std::string_view factor_text = values.substr(factor_at + 2);
  const auto [end, error] =
      std::from_chars(factor_text.data(), factor_text.data() + factor_text.size(), factor);
  if (!low.ok() || !high.ok() || error != std::errc() ||
      end != factor_text.data() + factor_text.size() || factor < 2 || *low == 0) {
    return std::nullopt;
  }
  for (uint64_t value = *low; value <= *high; value *= factor) {
    axis.values.push_back(transport::FormatKnobValue(*knob, value));
    if (value > *high / factor) break;
  }
  if (axis.values.empty()) return std::nullopt;
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
    if (sweep.verdict->default_remeasured) {
      input.default_remeasured = TrialOf(*sweep.verdict->default_remeasured);
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
  return panel;
}

}  // namespace artune::dashboard
