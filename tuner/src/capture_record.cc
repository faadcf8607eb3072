#include "artune/tuner/capture_record.h"

#include <algorithm>
#include <vector>

#include "artune/base/time.h"
#include "artune/db/record_json.h"
#include "artune/probes/http2_decoder.h"
#include "artune/probes/profile_output.h"

namespace artune::tuner {

db::CaptureRecord CaptureRecordFromProfile(
    const probes::Profile& profile, const std::string& process,
    std::optional<std::chrono::system_clock::time_point> started_at) {
  db::CaptureRecord record;
  if (started_at) record.started_at = Iso8601Utc(*started_at);
  record.backend = profile.backend;
  record.process = process;
  record.duration_s = profile.duration_s;
  record.lost_events = profile.lost_events;
  // The id is the row's, not part of the stored document: `captures show` sets it
  // from the row when it reads the profile back.
  probes::Profile without_id = profile;
  without_id.capture_id.reset();
  record.profile_json = probes::ProfileToJson(without_id, -1);
  for (const probes::MethodProfile& method : profile.methods) {
    db::CaptureMethodRow row;
    row.method = method.method;
    row.direction = probes::MessageDirectionName(method.direction);
    row.messages = method.messages;
    row.bytes = method.bytes;
    row.scheme = probes::PayloadSchemeName(method.scheme);
    row.small = method.classes.small.count;
    row.medium = method.classes.medium.count;
    row.large = method.classes.large.count;
    record.methods.push_back(std::move(row));
  }
  return record;
}

CaptureTotals SummarizeCapture(const db::CaptureRecord& capture) {
  CaptureTotals totals;
  std::vector<std::string> names;
  for (const db::CaptureMethodRow& row : capture.methods) {
    totals.messages += row.messages;
    totals.bytes += row.bytes;
    if (std::find(names.begin(), names.end(), row.method) == names.end()) {
      names.push_back(row.method);
    }
  }
  totals.methods = names.size();
  return totals;
}

nlohmann::ordered_json CaptureSummaryJson(const db::CaptureRecord& capture) {
  const CaptureTotals totals = SummarizeCapture(capture);
  nlohmann::ordered_json j;
  j["id"] = capture.id;
  j["started_at"] = capture.started_at;
  j["backend"] = capture.backend;
  j["process"] = capture.process;
  j["duration_s"] = capture.duration_s;
  j["lost_events"] = capture.lost_events;
  j["messages"] = totals.messages;
  j["bytes"] = totals.bytes;
  j["methods"] = nlohmann::ordered_json::array();
  for (const db::CaptureMethodRow& row : capture.methods) {
    j["methods"].push_back(db::CaptureMethodJson<nlohmann::ordered_json>(row));
  }
  return j;
}

}  // namespace artune::tuner
