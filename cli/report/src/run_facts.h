// The facts every report of a stored run opens with, so that a sweep, a cluster
// run and a model cluster run say them in the same words.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "artune/db/store.h"

namespace artune::report {

using Facts = std::vector<std::pair<std::string, std::string>>;

// When the run (a record with created_at and finished_at) was created and when it
// finished, or that it has not (yet); then `more`.
template <typename Run>
Facts RunFacts(const Run& run, const Facts& more) {
  Facts facts = {{"created (UTC)", run.created_at},
                 {"finished (UTC)", run.finished_at.empty()
                                        ? "not finished (running, or stopped before the end)"
                                        : run.finished_at}};
  facts.insert(facts.end(), more.begin(), more.end());
  return facts;
}

// A cluster run's times, its ranks and its pair schedule, then `more`.
inline Facts ClusterRunFacts(const db::ClusterRecord& cluster, const Facts& more) {
  Facts facts =
      RunFacts(cluster, {{"ranks", std::to_string(cluster.ranks)}, {"pairs", cluster.pairs}});
  facts.insert(facts.end(), more.begin(), more.end());
  return facts;
}

}  // namespace artune::report
