// Between the probes' Profile and the store's plain CaptureRecord: `artune probe`
// stores with it, `artune captures` reads back with ProfileFromJson.
#pragma once

#include <chrono>
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

}  // namespace artune::tuner
