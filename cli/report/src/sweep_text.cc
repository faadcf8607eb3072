// The text of `artune results --sweep ID` and `--sweeps` (sweep_text.h).
#include "artune/report/sweep_text.h"

#include <string>
#include <utility>
#include <vector>

#include "artune/report/text_table.h"
#include "artune/tuner/sweep_choice.h"

namespace artune::report {
namespace {

// The default measured again at the end and what the sweep concluded from it.
void PrintVerdict(const db::SweepRecord& sweep, std::ostream& out) {
  if (!sweep.verdict) {
    out << "Verdict  "
        << (sweep.finished_at.empty() ? "not decided yet (the sweep is unfinished)"
                                      : "not stored (the sweep ran before artune kept verdicts)")
        << "\n";
    return;
  }
  auto print_again = [&](const char* label, const std::optional<db::TrialRecord>& again,
                         const char* what) {
    if (!again) return;
    out << label << db::TrialKnobKey(again->knobs) << "  ";
    if (again->status == db::TrialStatus::kFailed) {
      out << "failed";
    } else {
      out << FormatNumber(again->objective, 2) << " [" << FormatNumber(again->ci_low, 2) << ", "
          << FormatNumber(again->ci_high, 2) << "]";
      if (again->status != db::TrialStatus::kOk || !again->validated) {
        out << " " << db::TrialStatusName(again->status);
      }
    }
    out << "  (" << what << (again->error.empty() ? "" : "; " + again->error) << ")\n";
  };
  if (sweep.verdict->final_rounds > 0) {
    // The final round: the finalists and the default, pooled over interleaved rounds.
    const uint32_t rounds = sweep.verdict->final_rounds;
    out << "Final    " << rounds << " interleaved round" << (rounds == 1 ? "" : "s")
        << " of the default and " << sweep.verdict->finalists.size()
        << " finalists; the chosen config is picked here\n";
    for (const db::FinalistRecord& finalist : sweep.verdict->finalists) {
      const std::string won = "faster than the default in " + std::to_string(finalist.rounds_won) +
                              " of " + std::to_string(rounds) + " rounds";
      print_again("         ", finalist.pooled, won.c_str());
    }
    print_again("         ", sweep.verdict->default_remeasured, "the default");
  } else {
    print_again("Again    ", sweep.verdict->best_remeasured,
                "the chosen config measured again after the search, just before the default");
    print_again("Again    ", sweep.verdict->default_remeasured,
                "the default measured again after the search");
  }
  out << "Verdict  " << tuner::VerdictText(sweep.verdict->verdict) << "\n";
}

// The lines above the trial table: what was swept, how, under which load.
void PrintSweepHeader(const tuner::SweepView& view, std::optional<int64_t> cluster_id,
                      std::ostream& out) {
  const db::SweepRecord& sweep = view.sweep;
  out << "Sweep " << sweep.id << "  " << sweep.objective << " (" << sweep.goal << "), "
      << sweep.strategy << ", " << sweep.workload << ", " << sweep.fabric << " to " << sweep.peer
      << ", " << view.trials.size() << " trials"
      << (sweep.finished_at.empty() ? " (unfinished: `artune sweep --resume " +
                                          std::to_string(sweep.id) + "` continues it)"
                                    : "")
      << "\n";
  out << "Search space  " << sweep.search_space << "\n";
  out << "Load          "
      << (sweep.background_load == 0
              ? std::string("none stated (`artune sweep --background-load N` measures beside N "
                            "CPU hogs)")
              : std::to_string(sweep.background_load) + " CPU hog" +
                    (sweep.background_load == 1 ? "" : "s") + " beside every measurement")
      << "\n";
  if (cluster_id) {
    out << "Cluster       this sweep measured one link of cluster " << *cluster_id
        << " (`artune results --cluster " << *cluster_id << "`)\n";
  }
  out << "\n";
}

// Whether the search's best trial is another than the chosen config: then it is
// named as such beside the chosen one.
bool SearchBestDiffers(const tuner::SweepView& view) {
  return view.search_best && (!view.best || view.best->id != view.search_best->id);
}

// Every trial, the chosen one, the search's best (when another) and the default noted.
void PrintTrialTable(const tuner::SweepView& view, std::ostream& out) {
  const std::optional<db::TrialRecord>& best = view.best;
  const std::optional<db::TrialRecord>& default_trial = view.default_trial;
  std::vector<std::vector<std::string>> rows = {
      {"ID", "KNOBS", "STATUS", "OBJECTIVE", "CI LOW", "CI HIGH", "N", "NOTE"}};
  for (const db::TrialRecord& trial : view.trials) {
    std::string note;
    const auto add = [&](const char* what) {
      note += (note.empty() ? "" : ", ") + std::string(what);
    };
    if (best && trial.id == best->id) add("chosen");
    if (SearchBestDiffers(view) && trial.id == view.search_best->id) add("search's best");
    if (default_trial && trial.id == default_trial->id) add("default");
    if (!trial.error.empty()) note += (note.empty() ? "" : "; ") + trial.error;
    rows.push_back({std::to_string(trial.id), db::TrialKnobKey(trial.knobs),
                    std::string(db::TrialStatusName(trial.status)),
                    FormatNumber(trial.objective, 2), FormatNumber(trial.ci_low, 2),
                    FormatNumber(trial.ci_high, 2), std::to_string(trial.samples), note});
  }
  PrintTable(rows, {true, false, false, true, true, true, true, false}, out);
  out << "\n";
}

// The chosen config, the search's best trial when it is another, and the default,
// each with its interval.
void PrintChosenAndDefault(const tuner::SweepView& view, std::ostream& out) {
  if (view.best) {
    const db::TrialRecord& best = *view.best;
    out << "Chosen   " << db::TrialKnobKey(best.knobs) << "  " << FormatNumber(best.objective, 2)
        << " [" << FormatNumber(best.ci_low, 2) << ", " << FormatNumber(best.ci_high, 2)
        << "]  (`artune apply config --sweep " << view.sweep.id << "` writes it)\n";
  } else {
    out << "Chosen   none (no trial validated)\n";
  }
  if (SearchBestDiffers(view)) {
    const db::TrialRecord& search_best = *view.search_best;
    out << "Search's best trial  " << db::TrialKnobKey(search_best.knobs) << "  "
        << FormatNumber(search_best.objective, 2) << " [" << FormatNumber(search_best.ci_low, 2)
        << ", " << FormatNumber(search_best.ci_high, 2)
        << "]  (not chosen: the final round judged the chosen config better)\n";
  }
  if (view.default_trial) {
    const db::TrialRecord& default_trial = *view.default_trial;
    out << "Default  " << db::TrialKnobKey(default_trial.knobs) << "  "
        << FormatNumber(default_trial.objective, 2) << " [" << FormatNumber(default_trial.ci_low, 2)
        << ", " << FormatNumber(default_trial.ci_high, 2) << "]\n";
  }
}

// The heatmap cell's text: the objective (* on the chosen config), or why there is none.
std::string HeatmapCellText(const db::TrialRecord* cell,
                            const std::optional<db::TrialRecord>& best) {
  if (cell == nullptr) return "-";
  if (cell->status == db::TrialStatus::kFailed) return "FAIL";
  if (cell->status == db::TrialStatus::kInvalid) return "BAD";
  return FormatNumber(cell->objective, 1) + (best && cell->id == best->id ? "*" : "");
}

// The text heatmap eager_threshold x chunk_size; the caller checks view.heatmap().
void PrintHeatmap(const tuner::SweepView& view, std::ostream& out) {
  out << "\n" << view.sweep.objective << " by eager_threshold (rows) x chunk_size (columns)";
  if (!view.held.empty()) {
    std::string at;
    for (const auto& [name, value] : view.held) {
      at += (at.empty() ? "" : ", ") + name + "=" + value;
    }
    out << " at the chosen config's " << at;
  }
  out << "; * chosen, - not measured, FAIL failed, BAD corrupted data\n";
  std::vector<std::vector<std::string>> grid;
  std::vector<std::string> header = {"eager \\ chunk"};
  for (const std::string& chunk : view.chunks) header.push_back(chunk);
  grid.push_back(header);
  for (const std::string& eager : view.eagers) {
    std::vector<std::string> row = {eager};
    for (const std::string& chunk : view.chunks) {
      row.push_back(
          HeatmapCellText(tuner::HeatmapCell(view.trials, view.best, eager, chunk), view.best));
    }
    grid.push_back(std::move(row));
  }
  std::vector<bool> right(grid.front().size(), true);
  right[0] = false;
  PrintTable(grid, right, out);
}

}  // namespace

void PrintSweepList(const std::vector<db::SweepRecord>& sweeps, std::ostream& out) {
  std::vector<std::vector<std::string>> rows = {
      {"ID", "CREATED", "OBJECTIVE", "STRATEGY", "WORKLOAD", "FABRIC", "PEER", "STATE", "VERDICT"}};
  for (const db::SweepRecord& sweep : sweeps) {
    rows.push_back({std::to_string(sweep.id), ShortTime(sweep.created_at), sweep.objective,
                    sweep.strategy, sweep.workload, sweep.fabric, sweep.peer,
                    sweep.finished_at.empty() ? "unfinished" : "finished",
                    sweep.verdict ? std::string(db::VerdictName(sweep.verdict->verdict)) : "-"});
  }
  PrintTable(rows, {true, false, false, false, false, false, false, false, false}, out);
}

void PrintSweepText(const tuner::SweepView& view, std::optional<int64_t> cluster_id,
                    std::ostream& out) {
  PrintSweepHeader(view, cluster_id, out);
  PrintTrialTable(view, out);
  PrintChosenAndDefault(view, out);
  PrintVerdict(view.sweep, out);
  if (view.heatmap()) PrintHeatmap(view, out);
}

}  // namespace artune::report
