// Between the probes' Profile and the store's plain CaptureRecord: `artune probe`
// stores with it, `artune captures` reads back with ProfileFromJson and lists the
// records with their totals (CaptureSummaryJson).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "artune/db/store.h"
#include "artune/probes/profile.h"

namespace artune::tuner {

// The record for one finished capture: the profile's JSON (without a capture id:
// the store assigns it), its backend, duration and lost events, and one method row
// per method and direction. `process` is what was traced ("" for pcap);
// `started_at` is when the capture began (not when it is stored); unset, the store
// stamps the record when it inserts it (fixtures).
db::CaptureRecord CaptureRecordFromProfile(
    const probes::Profile& profile, const std::string& process,
    std::optional<std::chrono::system_clock::time_point> started_at = std::nullopt);

// A capture's totals over its method rows.
struct CaptureTotals {
  uint64_t messages = 0;
  uint64_t bytes = 0;
  size_t methods = 0;  // distinct method names (both directions count once)
};
CaptureTotals SummarizeCapture(const db::CaptureRecord& capture);

// A stored capture in `artune captures --json`: id, started_at, backend, process,
// duration_s, lost_events, the totals (messages, bytes) and its method rows
// (db::CaptureMethodJson).
nlohmann::ordered_json CaptureSummaryJson(const db::CaptureRecord& capture);

}  // namespace artune::tuner
