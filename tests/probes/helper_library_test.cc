// FindHelperLibrary (artune/base/helper_library.h): the search order the preload
// and redirect libraries are found by, and an error that names what was tried.
#include "artune/base/helper_library.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "../temp_dir.h"

namespace artune {
namespace {

constexpr const char* kVariable = "ARTUNE_HELPER_LIBRARY_TEST";

class HelperLibraryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    unsetenv(kVariable);  // the caller's value would be found first
  }
  void TearDown() override { unsetenv(kVariable); }
  std::string MakeFile(const std::string& name) {
    const std::string path = dir_ + "/" + name;
    std::ofstream(path) << "not really a library";
    return path;
  }
  HelperLibrary Library(const std::string& build_path) const {
    return {"libartune_no_such_helper.so", kVariable, "artune_no_such_helper", build_path};
  }

  const test_support::TempDir temp_{"artune-helper-library"};
  const std::string dir_ = temp_.path();
};

TEST_F(HelperLibraryTest, TheVariablesPathComesBeforeTheBuildTree) {
  const std::string named = MakeFile("named.so");
  const std::string built = MakeFile("built.so");
  setenv(kVariable, named.c_str(), 1);
  Result<std::string> found = FindHelperLibrary(Library(built));
  ASSERT_TRUE(found.ok()) << found.status().ToString();
  EXPECT_EQ(*found, named);
}

TEST_F(HelperLibraryTest, TheBuildTreeIsTheLastResort) {
  const std::string built = MakeFile("built.so");
  setenv(kVariable, (dir_ + "/missing.so").c_str(), 1);
  Result<std::string> found = FindHelperLibrary(Library(built));
  ASSERT_TRUE(found.ok()) << found.status().ToString();
  EXPECT_EQ(*found, built);
}

TEST_F(HelperLibraryTest, ARelativePathComesBackAbsolute) {
  MakeFile("relative.so");
  const std::filesystem::path before = std::filesystem::current_path();
  std::filesystem::current_path(dir_);
  Result<std::string> found = FindHelperLibrary(Library(""), "relative.so");
  std::filesystem::current_path(before);
  ASSERT_TRUE(found.ok()) << found.status().ToString();
  EXPECT_EQ(*found, dir_ + "/relative.so");
}

TEST_F(HelperLibraryTest, AnExplicitPathIsTheOnlyOneTried) {
  const std::string built = MakeFile("built.so");
  Result<std::string> found = FindHelperLibrary(Library(built), dir_ + "/missing.so");
  ASSERT_FALSE(found.ok());
  EXPECT_EQ(found.status().code(), ErrorCode::kNotFound);
  EXPECT_NE(found.status().message().find("(tried: " + dir_ + "/missing.so)"), std::string::npos)
      << found.status().message();
}

TEST_F(HelperLibraryTest, NotFoundNamesEveryPathTheTargetAndTheVariable) {
  setenv(kVariable, (dir_ + "/missing.so").c_str(), 1);
  Result<std::string> found = FindHelperLibrary(Library(dir_ + "/unbuilt.so"));
  ASSERT_FALSE(found.ok());
  EXPECT_EQ(found.status().code(), ErrorCode::kNotFound);
  const std::string message = found.status().message();
  EXPECT_EQ(
      message.rfind("libartune_no_such_helper.so not found (tried: " + dir_ + "/missing.so, ", 0),
      0u)
      << message;
  EXPECT_NE(message.find("/libartune_no_such_helper.so, "), std::string::npos) << message;
  EXPECT_NE(message.find("/lib/artune/libartune_no_such_helper.so, "), std::string::npos)
      << message;
  EXPECT_NE(message.find(dir_ + "/unbuilt.so): build the artune_no_such_helper target, or "
                                "point ARTUNE_HELPER_LIBRARY_TEST at the library"),
            std::string::npos)
      << message;
}

// The program's environment: ours first in LD_PRELOAD, the caller's preloads after
// it, the variable set once to the new value, every other variable kept.
TEST(EnvironmentWithPreload, PutsTheLibraryFirstAndSetsTheVariableOnce) {
  const char* old_preload = std::getenv("LD_PRELOAD");
  const std::string saved = old_preload == nullptr ? "" : old_preload;
  setenv("LD_PRELOAD", "/user/preload.so", 1);
  setenv(kVariable, "old", 1);
  setenv("ARTUNE_HELPER_LIBRARY_KEPT", "yes", 1);
  const std::vector<std::string> environment =
      EnvironmentWithPreload("/ours/helper.so", kVariable, "new");
  unsetenv(kVariable);
  unsetenv("ARTUNE_HELPER_LIBRARY_KEPT");
  if (old_preload == nullptr) {
    unsetenv("LD_PRELOAD");
  } else {
    setenv("LD_PRELOAD", saved.c_str(), 1);
  }
  const auto count = [&](const std::string& prefix) {
    return std::count_if(environment.begin(), environment.end(),
                         [&](const std::string& entry) { return entry.starts_with(prefix); });
  };
  EXPECT_EQ(count("LD_PRELOAD="), 1);
  EXPECT_EQ(count("LD_PRELOAD=/ours/helper.so:/user/preload.so"), 1);
  EXPECT_EQ(count(std::string(kVariable) + "="), 1);
  EXPECT_EQ(count(std::string(kVariable) + "=new"), 1);
  EXPECT_EQ(count("ARTUNE_HELPER_LIBRARY_KEPT=yes"), 1);
}

}  // namespace
}  // namespace artune
