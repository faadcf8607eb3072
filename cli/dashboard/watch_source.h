// Reads the watch view's records (`artune watch`'s stored decisions, newest first)
// from the store, once a poll, so the view follows a running `artune watch run`.
// Like HomeSource it reads committed rows only (WAL), never blocks the watcher's
// writes, and turns a missing store into the panel's text rather than an error.
//
// Threading: UI thread only.
#pragma once

#include <string>

#include "store_follower.h"
#include "views.h"

namespace artune::dashboard {

class WatchSource {
 public:
  // `rows`: how many of the newest decisions to read (the view shows what fits).
  WatchSource(std::string database_path, int rows);
  ~WatchSource();
  WatchPanel Poll();

 private:
  StoreFollower store_;
  int rows_;
};

}  // namespace artune::dashboard
