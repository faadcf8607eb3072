// The HTML report of one stored link model (`artune report --model ID`): where and
// how it was measured, then per polling mode and calls in flight a chart of the
// time of a call against the unit's size (log2 size axis, log time axis), one line
// per protocol group (eager, coalesced eager, rendezvous read, each chunked
// rendezvous chunk size and depth), and every point in a table.
#pragma once

#include <string>

#include "artune/db/store.h"

namespace artune::report {

// A group's label, as `artune model show` heads its tables: the protocol, then for
// chunked rendezvous "<chunk> depth <depth>" ("chunked-rendezvous 512KiB depth 4"),
// then for calls of several slices "(<n> slices per call)".
std::string LinkModelGroupLabel(const db::LinkModelPointRow& point);

// Charts in polling order busy, event, adaptive (a word this build does not know
// after them), calls in flight ascending; in a chart the groups in protocol order
// (eager, coalesced-eager, rendezvous-read, chunked-rendezvous by chunk size then
// depth). Every point's dot has a tooltip with its median, its fastest and slowest
// samples and their count. Every string from the record is escaped. Returns the
// whole document (html.h). Pure; thread-safe.
std::string LinkModelReportHtml(const db::LinkModelRecord& model);

}  // namespace artune::report
