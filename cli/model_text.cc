#include "model_text.h"

#include <iomanip>
#include <iostream>
#include <map>
#include <set>
#include <sstream>

#include "artune/model/model_json.h"
#include "artune/report/model_report.h"
#include "artune/transport/knobs.h"
#include "format.h"

namespace artune::cli {
namespace {

std::string Micros(double seconds) {
  std::ostringstream out;
  const double us = seconds * 1e6;
  out << std::fixed << std::setprecision(us < 100 ? 1 : 0) << us;
  return out.str();
}

}  // namespace

std::string PercentText(double fraction) {
  return std::to_string(static_cast<int>(fraction * 100 + 0.5)) + " %";
}

// One table per protocol group: a row per size, per inflight the median and spread.
void PrintLinkModel(const db::LinkModelRecord& model) {
  std::cout << "Link model " << model.id << ": " << model.fabric << " to " << model.peer << " from "
            << model.host << ", " << model.rounds << " interleaved rounds in "
            << FormatNumber(model.duration_s, 1) << " s (" << model.created_at << ")\n";
  std::set<std::string> pollings;
  for (const auto& point : model.points) pollings.insert(point.polling);
  std::cout << "Polling modes measured:";
  for (const std::string& polling : pollings) std::cout << " " << polling;
  // A measure leaves busy polling out on a host without a core free beside its
  // spinning threads (model::BusyPollingSkipReason): say so where the model is shown.
  if (!pollings.empty() && !pollings.contains("busy")) {
    std::cout << " (not busy: predict cannot cost busy-polling configs with this model)";
  }
  std::cout << "\n";
  std::map<std::string, std::vector<const db::LinkModelPointRow*>> groups;
  std::set<uint32_t> inflights;
  for (const auto& point : model.points) {
    groups[report::LinkModelGroupLabel(point) + ", " + point.polling].push_back(&point);
    inflights.insert(point.inflight);
  }
  for (const auto& [group, points] : groups) {
    std::cout << "\n" << group << " (us per call, median [spread over rounds])\n";
    std::vector<std::string> header = {"SIZE"};
    for (uint32_t calls : inflights) header.push_back("x" + std::to_string(calls));
    std::vector<std::vector<std::string>> rows = {header};
    std::map<uint64_t, std::map<uint32_t, const db::LinkModelPointRow*>> by_size;
    for (const auto* point : points) by_size[point->size][point->inflight] = point;
    for (const auto& [size, cells] : by_size) {
      std::vector<std::string> row = {transport::FormatBytes(size)};
      for (uint32_t calls : inflights) {
        auto cell = cells.find(calls);
        if (cell == cells.end()) {
          row.push_back("-");
          continue;
        }
        const auto& p = *cell->second;
        const double spread = p.median_s > 0 ? (p.high_s - p.low_s) / p.median_s : 0;
        row.push_back(Micros(p.median_s) + " [" + PercentText(spread) + "]");
      }
      rows.push_back(std::move(row));
    }
    PrintTable(rows, std::vector<bool>(header.size(), true), std::cout);
  }
}

StoredListing<db::LinkModelRecord> LinkModelListing(std::string_view show_one) {
  return {
      .noun = "link_models",
      .table = "link_models",
      .command = "model",
      .kind = "link models",
      .recorder = "model measure",
      .list = [](db::Store& store, int limit) { return store.ListLinkModels(limit); },
      .json = [](const db::LinkModelRecord& record) { return model::LinkModelJson(record, false); },
      .header = {"ID", "CREATED", "FABRIC", "PEER", "POINTS", "ROUNDS", "SECONDS"},
      .right_aligned = {true, false, false, false, true, true, true},
      .row =
          [](const db::LinkModelRecord& record) {
            return std::vector<std::string>{std::to_string(record.id),
                                            ShortTime(record.created_at),
                                            record.fabric,
                                            record.peer,
                                            std::to_string(record.points.size()),
                                            std::to_string(record.rounds),
                                            FormatNumber(record.duration_s, 1)};
          },
      .show_one = show_one,
  };
}

}  // namespace artune::cli
