// How a stored link model prints, shared by `artune model list|show` and
// `artune results --models|--model ID` (one style for both): the table of its
// points per protocol group, and the listing of stored models (its JSON is the
// model room's: artune/model/model_json.h). Pure over the records; writes to
// std::cout.
#pragma once

#include <string>
#include <string_view>

#include "artune/db/store.h"
#include "stored_list.h"

namespace artune::cli {

// A heading line, then one table per protocol group (protocol, chunk size and
// depth, polling): a row per size, a column per calls in flight, the median time
// per call in microseconds and the spread over its samples.
void PrintLinkModel(const db::LinkModelRecord& model);

// "37 %": a fraction as a whole percentage.
std::string PercentText(double fraction);

// The stored models, newest first, for PrintStoredListing; `show_one` is the
// command that shows one in full, for the footer ("model show ID" or
// "results --model ID").
StoredListing<db::LinkModelRecord> LinkModelListing(std::string_view show_one);

}  // namespace artune::cli
