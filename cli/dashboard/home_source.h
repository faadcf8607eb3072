// Reads the home view's records (the newest sweeps, captures, bench runs and
// cluster runs, a cluster run with its winner or its models' prediction) from the
// store. Like SweepSource it reads committed rows only (WAL), never blocks a
// writer, and turns a missing store into the panel's text rather than an error.
//
// Threading: UI thread only.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "store_follower.h"
#include "views.h"

namespace artune::dashboard {

class HomeSource {
 public:
  // `rows`: how many of each kind of record to read (the view shows what fits).
  HomeSource(std::string database_path, int rows);
  ~HomeSource();
  HomePanel Poll();

 private:
  // A finished cluster run is read (and predicted) once per finish; one still
  // running, every poll.
  ClusterLine LineOf(db::Store& store, const db::ClusterRecord& cluster);

  StoreFollower store_;
  int rows_;
  std::map<int64_t, ClusterLine> finished_clusters_;
};

}  // namespace artune::dashboard
