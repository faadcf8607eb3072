// Shared by the dashboard's tests over a real store file (the sources, the cluster
// panel): each test gets a fresh directory of its own and the store's path in it.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

namespace artune::dashboard {

// path_: "store.db" in a directory named after the test and this process (tests of
// several builds may run at once), made empty before the test and removed after it.
class StoreFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const ::testing::TestInfo* test = ::testing::UnitTest::GetInstance()->current_test_info();
    directory_ = std::filesystem::temp_directory_path() /
                 ("artune_dashboard_" + std::string(test->test_suite_name()) + "_" +
                  std::to_string(getpid()) + "_" + test->name());
    std::filesystem::remove_all(directory_);
    std::filesystem::create_directories(directory_);
    path_ = (directory_ / "store.db").string();
  }
  void TearDown() override { std::filesystem::remove_all(directory_); }

  std::filesystem::path directory_;
  std::string path_;
};

}  // namespace artune::dashboard
