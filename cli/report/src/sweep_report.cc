#include "artune/report/sweep_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

#include "artune/report/html.h"
#include "artune/report/svg.h"
#include "artune/transport/knobs.h"
#include "artune/tuner/goal.h"
#include "artune/tuner/sweep_choice.h"
#include "run_facts.h"

namespace artune::report {
namespace {

constexpr const char* kRowKnob = "eager_threshold";
constexpr const char* kColumnKnob = "chunk_size";

bool Usable(const db::TrialRecord& trial) {
  return trial.status == db::TrialStatus::kOk && trial.validated;
}

// The sweep's stored goal; text the store never writes reads as min, as before.
tuner::ObjectiveGoal Goal(const db::SweepRecord& sweep) {
  return tuner::ParseGoal(sweep.goal).value_or(tuner::ObjectiveGoal::kMin);
}

// The values a knob took, in the knob's own order (bytes by size, enums by
// declaration); text the knob table cannot parse goes last, in text order.
std::vector<std::string> AxisValues(const std::vector<db::TrialRecord>& trials,
                                    const std::string& knob) {
  std::set<std::string> values;
  for (const auto& trial : trials) {
    const auto found = trial.knobs.find(knob);
    if (found != trial.knobs.end()) values.insert(found->second);
  }
  const transport::Knob* definition = transport::FindKnob(knob);
  std::vector<std::pair<std::pair<bool, uint64_t>, std::string>> keyed;
  for (const std::string& value : values) {
    std::pair<bool, uint64_t> key{true, 0};
    if (definition != nullptr) {
      if (auto parsed = transport::ParseKnobValue(*definition, value); parsed.ok()) {
        key = {false, *parsed};
      }
    }
    keyed.push_back({key, value});
  }
  std::sort(keyed.begin(), keyed.end());
  std::vector<std::string> ordered;
  for (auto& [key, value] : keyed) ordered.push_back(std::move(value));
  return ordered;
}

std::string KnobValueOr(const db::TrialRecord& trial, const std::string& knob,
                        const std::string& missing) {
  const auto found = trial.knobs.find(knob);
  return found == trial.knobs.end() ? missing : found->second;
}

// "a=1, b=2" of every knob except the two on the axes.
std::string OtherKnobs(const db::TrialRecord& trial, const HeatmapAxes& axes) {
  std::string out;
  for (const auto& [name, value] : trial.knobs) {
    if (name == axes.row || name == axes.column) continue;
    if (!out.empty()) out += ", ";
    out += name + "=" + value;
  }
  return out;
}

std::string KnobList(const std::map<std::string, std::string>& knobs) {
  std::string out;
  for (const auto& [name, value] : knobs) {
    if (!out.empty()) out += ", ";
    out += name + "=" + value;
  }
  return out;
}

std::string Metric(const db::TrialRecord& trial, const std::string& name) {
  const auto found = trial.metrics.find(name);
  return found == trial.metrics.end() ? "" : FormatNumber(found->second);
}

std::string Seconds(double seconds) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.1f s", seconds);
  return buffer;
}

std::string ObjectiveLabel(const db::SweepRecord& sweep) {
  return sweep.objective +
         (Goal(sweep) == tuner::ObjectiveGoal::kMax ? " (higher is better)" : " (lower is better)");
}

// The metric columns worth a column: those any trial has, in a fixed order first.
std::vector<std::string> MetricColumns(const std::vector<db::TrialRecord>& trials) {
  std::set<std::string> present;
  for (const auto& trial : trials) {
    for (const auto& [name, value] : trial.metrics) present.insert(name);
  }
  std::vector<std::string> columns;
  for (const char* name : {"p50_us", "p99_us", "mean_us", "bandwidth_mbps", "rpcs_per_s"}) {
    if (present.erase(name) > 0) columns.push_back(name);
  }
  columns.insert(columns.end(), present.begin(), present.end());
  return columns;
}

std::vector<std::string> KnobColumns(const std::vector<db::TrialRecord>& trials) {
  std::set<std::string> names;
  for (const auto& trial : trials) {
    for (const auto& [name, value] : trial.knobs) names.insert(name);
  }
  return {names.begin(), names.end()};
}

const db::TrialRecord* FindDefault(const db::SweepRecord& sweep,
                                   const std::vector<db::TrialRecord>& trials) {
  if (sweep.default_knobs.empty()) return nullptr;
  for (const auto& trial : trials) {
    if (db::TrialKnobKey(trial.knobs) == sweep.default_knobs) return &trial;
  }
  return nullptr;
}

// The stored verdict in words (the report's own phrasing of the store's values).
std::string VerdictSentence(const db::SweepRecord& sweep) {
  if (!sweep.verdict) {
    return sweep.finished_at.empty() ? "Not decided yet: the sweep has not finished."
                                     : "Not stored: this sweep ran before artune kept verdicts.";
  }
  switch (sweep.verdict->verdict) {
    case db::Verdict::kBeatsDefault:
      return "The chosen config beats the defaults beyond noise (the 95% interval of its paired "
             "speedups over the defaults, or their 95% confidence intervals).";
    case db::Verdict::kWithinNoise:
      return "Within noise: the chosen config does not beat the defaults beyond noise (the 95% "
             "interval of its paired speedups, or their 95% confidence intervals), so the "
             "difference may be chance.";
    case db::Verdict::kDefaultIsBest:
      return "The defaults are the best config measured: nothing beats them.";
    case db::Verdict::kNoValidTrial:
      return "No trial validated: there is nothing to compare with the defaults.";
  }
  return std::string(db::VerdictName(sweep.verdict->verdict));
}

std::string VerdictFact(const db::SweepRecord& sweep) {
  return sweep.verdict ? std::string(db::VerdictName(sweep.verdict->verdict))
                       : (sweep.finished_at.empty() ? "not decided yet" : "not stored");
}

void AddSummary(HtmlDocument& document, const db::SweepRecord& sweep,
                const std::vector<db::TrialRecord>& trials) {
  std::map<std::string, int> by_status;  // by name: the counts print in that order
  for (const auto& trial : trials) ++by_status[std::string(db::TrialStatusName(trial.status))];
  std::string counts = std::to_string(trials.size()) + " trials";
  for (const auto& [status, count] : by_status) {
    counts += ", " + std::to_string(count) + " " + status;
  }
  document.AddFacts(RunFacts(sweep, {{"host", sweep.host},
                                     {"peer", sweep.peer},
                                     {"fabric", sweep.fabric},
                                     {"objective", ObjectiveLabel(sweep)},
                                     {"strategy", sweep.strategy},
                                     {"workload", sweep.workload},
                                     {"search space", sweep.search_space},
                                     {"trials", counts},
                                     {"verdict", VerdictFact(sweep)}}));
}

bool SameTrial(const std::optional<db::TrialRecord>& a, const db::TrialRecord& b) {
  return a && a->id == b.id;
}

// "Chosen: <knobs>, <objective> against <default> with the defaults (+x%)."
std::string ChosenSentence(const db::SweepRecord& sweep, const db::TrialRecord& chosen,
                           const db::TrialRecord* default_trial) {
  std::string sentence = "Chosen: " + KnobList(chosen.knobs) + ", " + sweep.objective + " " +
                         FormatNumber(chosen.objective);
  if (default_trial != nullptr && Usable(*default_trial)) {
    const double base = default_trial->objective;
    sentence += " against " + FormatNumber(base) + " with the defaults";
    if (base != 0 && std::isfinite(base)) {
      const double change = 100.0 * (chosen.objective - base) / std::fabs(base);
      char buffer[64];
      std::snprintf(buffer, sizeof buffer, " (%+.1f%%)", change);
      sentence += buffer;
    }
    sentence += ".";
  } else if (default_trial != nullptr) {
    sentence += "; the defaults' trial was " +
                std::string(db::TrialStatusName(default_trial->status)) + ".";
  } else {
    sentence += "; the defaults (" +
                (sweep.default_knobs.empty() ? "unknown" : sweep.default_knobs) +
                ") were not measured in this sweep.";
  }
  return sentence + " `artune apply config --sweep " + std::to_string(sweep.id) +
         "` writes this config.";
}

// The verdict with the chosen config and the defaults measured again at the end.
std::string VerdictParagraph(const db::SweepRecord& sweep) {
  const std::optional<db::TrialRecord> again =
      sweep.verdict ? sweep.verdict->default_remeasured : std::nullopt;
  const std::optional<db::TrialRecord> chosen_again =
      sweep.verdict ? sweep.verdict->best_remeasured : std::nullopt;
  const auto interval = [&](const db::TrialRecord& trial) {
    return sweep.objective + " " + FormatNumber(trial.objective) + " (95% CI " +
           FormatNumber(trial.ci_low) + " .. " + FormatNumber(trial.ci_high) + ")";
  };
  const auto failure = [](const db::TrialRecord& trial) {
    return std::string(db::TrialStatusName(trial.status)) +
           (trial.error.empty() ? "" : " (" + trial.error + ")") + ".";
  };
  const bool chosen_again_ok = chosen_again && chosen_again->status == db::TrialStatus::kOk;
  std::string judged = "Verdict: " + VerdictSentence(sweep);
  if (chosen_again_ok && again && again->status == db::TrialStatus::kOk) {
    judged += " Measured again together after the search, the chosen config gave " +
              interval(*chosen_again) + " and the defaults gave " + interval(*again) + ".";
    return judged;
  }
  if (chosen_again_ok) {
    judged +=
        " Measured again after the search, the chosen config gave " + interval(*chosen_again) + ".";
  } else if (chosen_again) {
    judged += " The chosen config measured again after the search: " + failure(*chosen_again);
  }
  if (again && again->status == db::TrialStatus::kOk) {
    judged += " Measured again after the search, warm like the trials, the defaults gave " +
              interval(*again) + ".";
  } else if (again) {
    judged += " The defaults measured again after the search: " + failure(*again);
  }
  return judged;
}

// The chosen config, the default, the search's best trial when it is another, and
// the re-measurements, one row each (the chosen one highlighted).
Table ChosenTable(const db::SweepRecord& sweep, const std::vector<db::TrialRecord>& trials,
                  const db::TrialRecord& chosen,
                  const std::optional<db::TrialRecord>& search_best) {
  Table table;
  table.header = {"", "knobs", "objective", "95% CI", "samples"};
  table.numeric = {false, false, true, true, true};
  const std::vector<std::string> metrics = MetricColumns(trials);
  for (const auto& name : metrics) {
    table.header.push_back(name);
    table.numeric.push_back(true);
  }
  const auto row = [&](const std::string& label, const db::TrialRecord& trial) {
    std::vector<std::string> cells = {
        label, KnobList(trial.knobs), FormatNumber(trial.objective),
        FormatNumber(trial.ci_low) + " .. " + FormatNumber(trial.ci_high),
        std::to_string(trial.samples)};
    for (const auto& name : metrics) cells.push_back(Metric(trial, name));
    return cells;
  };
  table.rows.push_back(row("chosen", chosen));
  table.highlighted_row = 0;
  const db::TrialRecord* default_trial = FindDefault(sweep, trials);
  if (default_trial != nullptr) table.rows.push_back(row("default", *default_trial));
  if (search_best && search_best->id != chosen.id) {
    table.rows.push_back(row("search's best", *search_best));
  }
  const std::optional<db::TrialRecord> chosen_again =
      sweep.verdict ? sweep.verdict->best_remeasured : std::nullopt;
  const std::optional<db::TrialRecord> again =
      sweep.verdict ? sweep.verdict->default_remeasured : std::nullopt;
  for (const auto& [label, measured] :
       {std::pair{"chosen, again", &chosen_again}, std::pair{"default, again", &again}}) {
    if (!*measured) continue;
    std::vector<std::string> cells = row(label, **measured);
    if ((*measured)->status == db::TrialStatus::kFailed)
      cells[2] = cells[3] = "-";  // it measured nothing
    table.rows.push_back(std::move(cells));
  }
  return table;
}

void AddChosen(HtmlDocument& document, const db::SweepRecord& sweep,
               const std::vector<db::TrialRecord>& trials,
               const std::optional<db::TrialRecord>& chosen,
               const std::optional<db::TrialRecord>& search_best) {
  document.BeginSection("Chosen config vs default");
  if (!chosen) {
    document.AddParagraph("No trial finished ok and validated: there is no config to choose.");
    document.EndSection();
    return;
  }
  document.AddParagraph(ChosenSentence(sweep, *chosen, FindDefault(sweep, trials)));
  // The final round may choose another finalist than the search's best trial.
  if (search_best && search_best->id != chosen->id) {
    document.AddParagraph("The search's best trial was " + KnobList(search_best->knobs) + ", " +
                          sweep.objective + " " + FormatNumber(search_best->objective) +
                          "; the sweep's final re-measurement chose the config above over it.");
  }
  document.AddParagraph(VerdictParagraph(sweep));
  document.AddTable(ChosenTable(sweep, trials, *chosen, search_best));
  document.EndSection();
}

void AddHeatmap(HtmlDocument& document, const db::SweepRecord& sweep,
                const std::vector<db::TrialRecord>& trials,
                const std::optional<db::TrialRecord>& chosen,
                const std::optional<db::TrialRecord>& search_best) {
  const HeatmapAxes axes = ChooseHeatmapAxes(trials);
  if (axes.row.empty()) return;
  document.BeginSection("Heatmap");
  Heatmap heatmap;
  heatmap.title = ObjectiveLabel(sweep);
  heatmap.row_axis = axes.row;
  heatmap.column_axis = axes.column.empty() ? "(one column)" : axes.column;
  heatmap.value_name = sweep.objective;
  heatmap.lower_is_better = Goal(sweep) == tuner::ObjectiveGoal::kMin;
  heatmap.row_labels = AxisValues(trials, axes.row);
  heatmap.column_labels =
      axes.column.empty() ? std::vector<std::string>{"-"} : AxisValues(trials, axes.column);
  heatmap.cells.assign(heatmap.row_labels.size(),
                       std::vector<HeatmapCell>(heatmap.column_labels.size()));
  const auto index_of = [](const std::vector<std::string>& labels, const std::string& value) {
    return static_cast<size_t>(std::find(labels.begin(), labels.end(), value) - labels.begin());
  };
  for (const auto& trial : trials) {
    const size_t r = index_of(heatmap.row_labels, KnobValueOr(trial, axes.row, ""));
    const size_t c = axes.column.empty()
                         ? 0
                         : index_of(heatmap.column_labels, KnobValueOr(trial, axes.column, ""));
    if (r >= heatmap.row_labels.size() || c >= heatmap.column_labels.size()) continue;
    HeatmapCell& cell = heatmap.cells[r][c];
    const std::string others = OtherKnobs(trial, axes);
    if (!Usable(trial)) {
      if (!cell.value) {
        cell.tooltip = std::string(db::TrialStatusName(trial.status)) +
                       (trial.error.empty() ? "" : ": " + trial.error) +
                       (others.empty() ? "" : " (" + others + ")");
      }
      continue;
    }
    if (cell.value && !tuner::Better(Goal(sweep), trial.objective, *cell.value)) continue;
    cell.value = trial.objective;
    cell.text = FormatNumber(trial.objective);
    cell.tooltip = sweep.objective + " " + FormatNumber(trial.objective) + " (95% CI " +
                   FormatNumber(trial.ci_low) + " .. " + FormatNumber(trial.ci_high) + ", " +
                   std::to_string(trial.samples) + " samples" +
                   (others.empty() ? "" : "; " + others) + ")";
    if (SameTrial(chosen, trial)) {
      heatmap.marked = std::make_pair(r, c);
      cell.tooltip += " — chosen";
    } else if (SameTrial(search_best, trial)) {
      cell.tooltip += " — search's best, not chosen";
    }
  }
  document.AddMarkup(HeatmapSvg(heatmap));
  document.AddParagraph(
      "Darker is better; the chosen config (the one `artune apply config --sweep " +
      std::to_string(sweep.id) +
      "` writes) is outlined and starred. Hover a cell for its numbers; hatched cells have no "
      "valid measurement.");
  document.EndSection();
}

void AddTrials(HtmlDocument& document, const std::vector<db::TrialRecord>& trials,
               const std::optional<db::TrialRecord>& chosen) {
  document.BeginSection("Trials");
  if (trials.empty()) {
    document.AddParagraph("No trial has been stored for this sweep yet.");
    document.EndSection();
    return;
  }
  const std::vector<std::string> knobs = KnobColumns(trials);
  const std::vector<std::string> metrics = MetricColumns(trials);
  Table table;
  table.header = {"#"};
  table.numeric = {true};
  for (const auto& name : knobs) {
    table.header.push_back(name);
    table.numeric.push_back(false);
  }
  for (const char* name :
       {"status", "objective", "95% CI", "samples", "remeasured", "validated", "duration"}) {
    table.header.push_back(name);
    table.numeric.push_back(std::string(name) != "status" && std::string(name) != "validated");
  }
  for (const auto& name : metrics) {
    table.header.push_back(name);
    table.numeric.push_back(true);
  }
  table.header.push_back("error");
  table.numeric.push_back(false);
  for (size_t i = 0; i < trials.size(); ++i) {
    const auto& trial = trials[i];
    std::vector<std::string> cells = {std::to_string(trial.id)};
    for (const auto& name : knobs) cells.push_back(KnobValueOr(trial, name, "-"));
    cells.push_back(std::string(db::TrialStatusName(trial.status)));
    // A failed trial measured nothing: its zeros are not numbers to read.
    const bool measured = trial.status != db::TrialStatus::kFailed;
    cells.push_back(measured ? FormatNumber(trial.objective) : "-");
    cells.push_back(measured ? FormatNumber(trial.ci_low) + " .. " + FormatNumber(trial.ci_high)
                             : "-");
    cells.push_back(std::to_string(trial.samples));
    cells.push_back(std::to_string(trial.remeasured));
    cells.push_back(trial.validated ? "yes" : "NO");
    cells.push_back(Seconds(trial.duration_s));
    for (const auto& name : metrics) cells.push_back(Metric(trial, name));
    cells.push_back(trial.error);
    table.rows.push_back(std::move(cells));
    if (SameTrial(chosen, trial)) table.highlighted_row = i;
  }
  document.AddTable(table);
  document.EndSection();
}

}  // namespace

HeatmapAxes ChooseHeatmapAxes(const std::vector<db::TrialRecord>& trials) {
  const std::vector<std::string> knobs = KnobColumns(trials);
  const auto has = [&](const std::string& name) {
    return std::find(knobs.begin(), knobs.end(), name) != knobs.end();
  };
  HeatmapAxes axes;
  std::vector<std::string> rest;
  for (const auto& name : knobs) {
    if (name != kRowKnob && name != kColumnKnob) rest.push_back(name);
  }
  size_t next = 0;
  axes.row = has(kRowKnob) ? kRowKnob : (next < rest.size() ? rest[next++] : "");
  if (has(kColumnKnob) && axes.row != kColumnKnob) {
    axes.column = kColumnKnob;
  } else if (next < rest.size()) {
    axes.column = rest[next++];
  }
  if (axes.row.empty() && !axes.column.empty()) std::swap(axes.row, axes.column);
  return axes;
}

std::string SweepReportHtml(const db::SweepRecord& sweep,
                            const std::vector<db::TrialRecord>& trials,
                            const std::optional<db::TrialRecord>& best) {
  // The config the sweep chose (what `artune apply config --sweep` writes).
  const std::optional<db::TrialRecord> chosen = tuner::ChosenAmong(sweep, trials, best);
  HtmlDocument document("artune sweep " + std::to_string(sweep.id));
  document.AddHeading(1, "artune sweep " + std::to_string(sweep.id));
  AddSummary(document, sweep, trials);
  AddChosen(document, sweep, trials, chosen, best);
  AddHeatmap(document, sweep, trials, chosen, best);
  AddTrials(document, trials, chosen);
  return document.Finish();
}

}  // namespace artune::report
