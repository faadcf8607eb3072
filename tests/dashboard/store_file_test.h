// Shared by the dashboard's tests over a real store file (the sources, the cluster
// panel): each test gets a fresh directory of its own and the store's path in it.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "../temp_dir.h"

namespace artune::dashboard {

// path_: "store.db" in a fresh directory, removed after the test.
class StoreFileTest : public ::testing::Test {
 protected:
  const test_support::TempDir directory_{"artune-dashboard"};
  const std::string path_ = directory_.File("store.db");
};

}  // namespace artune::dashboard
