// The home view: where things stand in the store (the newest sweeps, captures,
// bench runs and cluster runs), so that `artune dashboard` with no flags shows something useful and
// says how to open the live views.
#include <algorithm>
#include <cstdio>

#include "artune/probes/profile_output.h"
#include "view_parts.h"
#include "views.h"

namespace artune::dashboard {
namespace {

// "2026-11-25T16:40:12.345Z" -> "2026-11-25 16:40".
std::string ShortTime(const std::string& iso) {
  if (iso.size() < 16) return iso;
  return iso.substr(0, 10) + " " + iso.substr(11, 5);
}

int64_t RowsOf(const HomePanel& home, const std::string& table) {
  const auto found = home.row_counts.find(table);
  return found == home.row_counts.end() ? 0 : found->second;
}

std::string SweepState(const db::SweepRecord& sweep) {
  if (sweep.finished_at.empty()) return "unfinished";
  if (!sweep.verdict) return "finished";
  switch (sweep.verdict->verdict) {
    case db::Verdict::kBeatsDefault:
      return "beats default";
    case db::Verdict::kWithinNoise:
      return "within noise";
    case db::Verdict::kDefaultIsBest:
      return "default best";
    case db::Verdict::kNoValidTrial:
      return "no valid trial";
  }
  return std::string(db::VerdictName(sweep.verdict->verdict));
}

Style SweepStyle(const db::SweepRecord& sweep) {
  if (sweep.finished_at.empty()) return Style::kWarn;
  if (sweep.verdict && sweep.verdict->best_beats_default()) return Style::kGood;
  return Style::kNormal;
}

// A section title with the table's total, then up to `rows` lines; returns the
// row after the section.
int SectionTitle(Canvas& canvas, int row, const std::string& title, int64_t total, size_t shown) {
  std::string text = title + " (" + std::to_string(total) + ")";
  if (static_cast<int64_t>(shown) < total) text += ", newest " + std::to_string(shown);
  canvas.Put(row, 1, text, Style::kHeader);
  return row + 1;
}

// One cluster run: its line, then its outliers, as many as `rows` allow; returns
// the row after it.
int DrawClusterLine(const ClusterLine& cluster, Canvas& canvas, int row, int rows) {
  char line[256];
  const db::ClusterRecord& record = cluster.record;
  std::snprintf(line, sizeof line, "  %5lld  %-16s  %3u ranks %-9s %-6s %zu/%zu  ",
                static_cast<long long>(record.id), ShortTime(record.created_at).c_str(),
                record.ranks, KeepEnd(record.pairs, 9).c_str(), record.measurement.c_str(),
                cluster.usable, cluster.links);
  const int col = canvas.Put(row, 0, line);
  const size_t room = static_cast<size_t>(std::max(1, canvas.width() - col - 1));
  std::string text;
  Style style = Style::kNormal;
  if (!cluster.error.empty()) {
    text = "unreadable: " + cluster.error;
    style = Style::kWarn;
  } else if (cluster.best.empty()) {
    text = "no " + std::string(cluster.predicted ? "prediction" : "winner") + ": " +
           cluster.none_reason;
    style = Style::kDim;
  } else if (cluster.predicted) {
    std::snprintf(line, sizeof line, "predicted %s, %.3g ms (%+.1f %%)", cluster.best.c_str(),
                  cluster.best_ms, -cluster.margin * 100);
    text = line;
    style = cluster.margin > 0 ? Style::kGood : Style::kNormal;
  } else {
    text = "winner " + cluster.best;
    style = Style::kGood;
  }
  if (record.finished_at.empty()) text = "unfinished, " + text;
  // The start says what it is ("predicted ..."): cut the end when it does not fit.
  if (text.size() > room) text = text.substr(0, room - 1) + "~";
  canvas.Put(row++, col, text, style);
  for (size_t i = 0; i < cluster.outliers.size() && row < rows; ++i) {
    canvas.Put(
        row++, 9,
        KeepEnd("! outlier " + cluster.outliers[i], static_cast<size_t>(canvas.width() - 10)),
        Style::kWarn);
  }
  return row;
}

// The home view's tables, each from `row` within `per_section` rows; each returns
// the row after it.
int DrawSweeps(const HomePanel& home, Canvas& canvas, int row, int per_section) {
  char line[256];
  row = SectionTitle(canvas, row, "Sweeps", RowsOf(home, "sweeps"),
                     std::min<size_t>(home.sweeps.size(), static_cast<size_t>(per_section)));
  if (home.sweeps.empty()) canvas.Put(row++, 3, "none yet: artune sweep", Style::kDim);
  for (size_t i = 0; i < home.sweeps.size() && static_cast<int>(i) < per_section; ++i) {
    const db::SweepRecord& sweep = home.sweeps[i];
    std::snprintf(line, sizeof line, "  %5lld  %-16s  %-5s %-14s %-16s ",
                  static_cast<long long>(sweep.id), ShortTime(sweep.created_at).c_str(),
                  sweep.fabric.c_str(), sweep.objective.c_str(),
                  KeepEnd(sweep.workload, 16).c_str());
    const int col = canvas.Put(row, 0, line);
    canvas.Put(row++, col, SweepState(sweep), SweepStyle(sweep));
  }
  return row;
}

int DrawCaptures(const HomePanel& home, Canvas& canvas, int row, int per_section) {
  char line[256];
  row = SectionTitle(canvas, row, "Captures", RowsOf(home, "captures"),
                     std::min<size_t>(home.captures.size(), static_cast<size_t>(per_section)));
  if (home.captures.empty()) canvas.Put(row++, 3, "none yet: artune probe", Style::kDim);
  for (size_t i = 0; i < home.captures.size() && static_cast<int>(i) < per_section; ++i) {
    const db::CaptureRecord& capture = home.captures[i];
    uint64_t messages = 0, bytes = 0;
    for (const db::CaptureMethodRow& method : capture.methods) {
      messages += method.messages;
      bytes += method.bytes;
    }
    std::snprintf(line, sizeof line, "  %5lld  %-16s  %-5s %-14s %9s msgs %10s",
                  static_cast<long long>(capture.id), ShortTime(capture.started_at).c_str(),
                  capture.backend.c_str(), KeepEnd(capture.process, 14).c_str(),
                  FormatCount(static_cast<double>(messages)).c_str(),
                  probes::FormatBytes(bytes).c_str());
    canvas.Put(row++, 0, line);
  }
  return row;
}

int DrawBenchRuns(const HomePanel& home, Canvas& canvas, int row, int per_section) {
  char line[256];
  row = SectionTitle(canvas, row, "Bench runs", RowsOf(home, "bench_runs"),
                     std::min<size_t>(home.runs.size(), static_cast<size_t>(per_section)));
  if (home.runs.empty()) canvas.Put(row++, 3, "none yet: artune bench", Style::kDim);
  for (size_t i = 0; i < home.runs.size() && static_cast<int>(i) < per_section; ++i) {
    const db::BenchRun& run = home.runs[i];
    const std::string transport =
        run.fabric.empty() ? run.transport : run.transport + "/" + run.fabric;
    std::string figure;
    if (run.benchmark == "latency") {
      std::snprintf(line, sizeof line, "p50 %.1f us", run.latency.p50_us);
      figure = line;
    } else if (run.benchmark == "bandwidth") {
      figure = FormatBytesPerSecond(run.bandwidth_mbps * 1e6);
    } else {
      figure = FormatCount(run.rpcs_per_s) + " RPC/s";
    }
    std::snprintf(line, sizeof line, "  %5lld  %-16s  %-12s %-10s %-8s %s%s",
                  static_cast<long long>(run.id), ShortTime(run.started_at).c_str(),
                  transport.c_str(), run.benchmark.c_str(), run.scheme.c_str(), figure.c_str(),
                  run.validated ? "" : "  NOT VALIDATED");
    canvas.Put(row++, 0, line, run.validated ? Style::kNormal : Style::kWarn);
  }
  return row;
}

}  // namespace

void DrawHomeView(const HomePanel& home, Canvas& canvas) {
  const int width = canvas.width();
  canvas.Put(1, 1, KeepEnd("store " + home.store_path, static_cast<size_t>(width - 2)),
             Style::kHeader);
  int row = 2;
  if (!home.error.empty()) {
    canvas.Put(row++, 1, KeepEnd(home.error, static_cast<size_t>(width - 2)), Style::kWarn);
  }
  // Space left for the four tables, with their titles and the two hint lines.
  const int available = canvas.height() - 1 - row - 4 - 3;
  const int per_section = std::max(1, available / 4);

  row = DrawSweeps(home, canvas, row, per_section);
  row = DrawCaptures(home, canvas, row, per_section);
  row = DrawBenchRuns(home, canvas, row, per_section);
  row = SectionTitle(canvas, row, "Cluster runs", RowsOf(home, "clusters"),
                     std::min<size_t>(home.clusters.size(), static_cast<size_t>(per_section)));
  if (home.clusters.empty()) canvas.Put(row++, 3, "none yet: artune sweep --mpi", Style::kDim);
  const int cluster_end = row + per_section;
  for (size_t i = 0; i < home.clusters.size() && row < cluster_end; ++i) {
    row = DrawClusterLine(home.clusters[i], canvas, row, cluster_end);
  }

  const int hints = std::max(row + 1, canvas.height() - 4);
  canvas.Put(hints, 1, "Live views:", Style::kDim);
  canvas.Put(hints + 1, 3, "2 follows the newest sweep;  artune dashboard --exec -- CMD | --pcap",
             Style::kDim);
  canvas.Put(hints + 2, 3, "--iface lo --port N for traffic;  --server HOST:PORT for transport",
             Style::kDim);
}

}  // namespace artune::dashboard
