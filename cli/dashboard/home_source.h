// Reads the home view's records (the newest sweeps, captures and bench runs) from
// the store. Like SweepSource it reads committed rows only (WAL), never blocks a
// writer, and turns a missing store into the panel's text rather than an error.
//
// Threading: UI thread only.
#pragma once

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
  StoreFollower store_;
  int rows_;
};

}  // namespace artune::dashboard
