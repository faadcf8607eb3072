// A store path in a fresh temporary directory, removed with everything in it when
// the TempDb goes; for the sweep tests, which each open their own store.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <string>

namespace artune::tuner {

class TempDb {
 public:
  TempDb() {
    std::string pattern = "/tmp/artune-sweep-test-XXXXXX";
    if (mkdtemp(pattern.data()) == nullptr) ADD_FAILURE() << "mkdtemp";
    dir_ = pattern;
  }
  ~TempDb() {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
  TempDb(const TempDb&) = delete;
  TempDb& operator=(const TempDb&) = delete;
  std::string path() const { return dir_ + "/artune.db"; }

 private:
  std::string dir_;
};

}  // namespace artune::tuner
