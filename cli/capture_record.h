// Between the probes' Profile and the store's plain CaptureRecord: `artune probe`
// stores with it, `artune captures` reads back with ProfileFromJson.
#pragma once

#include <string>

#include "artune/db/store.h"
#include "artune/probes/profile.h"

namespace artune::cli {

// The record for one finished capture: the profile's JSON (without a capture id:
// the store assigns it), its backend, duration and lost events, and one method row
// per method and direction. `process` is what was traced ("" for pcap).
db::CaptureRecord CaptureRecordFromProfile(const probes::Profile& profile,
                                           const std::string& process);

}  // namespace artune::cli
