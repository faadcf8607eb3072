// The HTML report of one stored capture (`artune report --capture ID`): the totals,
// a table of every method and direction, per method the message-size and
// iovec-size log2 histograms coloured by size class, the payload scheme and the
// tensors seen, the I/O flows, the connections and the decode errors.
#pragma once

#include <string>

#include "artune/db/store.h"
#include "artune/probes/profile.h"

namespace artune::report {

// `capture` gives the row's facts (id, time, process); `profile` is its profile
// read back with probes::ProfileFromJson. Every string from either is escaped.
// Returns the whole document (html.h). Pure; thread-safe.
std::string CaptureReportHtml(const db::CaptureRecord& capture, const probes::Profile& profile);

}  // namespace artune::report
