// The profile as JSON (the `--json` object, also what the store keeps) and as the
// aligned human table.
#pragma once

#include <string>

#include "artune/probes/profile.h"
#include "artune/status.h"

namespace artune::probes {

// One JSON object: backend, duration_s, capture_id (null until stored), errors
// {kind: count}, lost_events, connections_joined_midway, methods[] {method,
// direction, messages, bytes, min_size, max_size, median_size,
// message_size_histogram {"<log2 lower bound>": count}, iovec_size_histogram (only
// when iovecs were seen), classes {empty, small, medium, large: {count, bytes}},
// scheme, compressed_messages, rates [{second, messages, bytes}], tensors, inflight
// {samples, p50, p90, max, histogram {"<bucket>": count}} (request rows whose call
// starts were seen; absent means unknown and reads back as all zero)},
// connections[], io_flows[], backend_detail {}.
std::string ProfileToJson(const Profile& profile, int indent = 2);
// The inverse, for profiles read back from the store. kCorruption on bad JSON.
Result<Profile> ProfileFromJson(const std::string& json);

// "512 B", "4.0 KiB", "1.5 MiB", "2.0 GiB".
std::string FormatBytes(uint64_t bytes);
// The human table: a header line, one aligned row per method and direction (with
// INFLIGHT p50/max on request rows, "-" where unknown), then
// errors, lost events and a note when connections were joined midway.
std::string FormatProfileTable(const Profile& profile);

}  // namespace artune::probes
