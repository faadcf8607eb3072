// The store a dashboard source reads, opened on first use and reopened after a
// failed read (the file may have been replaced, e.g. by a restore), so a view
// keeps following the store a running command writes.
//
// Threading: UI thread only (a db::Store is used from one thread at a time).
#pragma once

#include <initializer_list>
#include <memory>
#include <string>

#include "artune/db/store.h"

namespace artune::dashboard {

class StoreFollower {
 public:
  // `missing`: the panel's text when no store exists at `path` yet (which command
  // makes one); empty: the open error's own message.
  StoreFollower(std::string path, std::string missing);
  ~StoreFollower();

  const std::string& path() const { return path_; }

  // The open store, or nullptr with the panel's error text in `error`.
  db::Store* Get(std::string& error);

  // After a failed read: the first failing status's message into `error` and the
  // store closed, to be reopened on the next Get; false when every status is OK.
  bool Failed(std::initializer_list<Status> statuses, std::string& error);

 private:
  std::string path_;
  std::string missing_;
  std::unique_ptr<db::Store> store_;
};

}  // namespace artune::dashboard
