// What a new user meets first (issue 23): bare `artune`, and the listings of a
// store that no command has written yet.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "apply_cli_fixture.h"
#include "artune/db/store.h"

namespace artune_cli_test {
namespace {

using FirstContactTest = ApplyCliTest;

TEST_F(FirstContactTest, BareArtuneListsTheCommandsWithTheUsageExitCode) {
  const Outcome bare = Run("");
  // Non-zero as git (1) and ip (255): a script that forgot the command is not told
  // it succeeded; 2 is artune's usage code.
  EXPECT_EQ(bare.exit_code, 2);
  EXPECT_EQ(bare.err.find("A subcommand is required"), std::string::npos) << bare.err;
  for (const char* command : {"sweep", "apply", "results", "captures", "probe", "dashboard"}) {
    EXPECT_NE(bare.out.find(std::string("\n  ") + command), std::string::npos)
        << command << " is not listed:\n"
        << bare.out;
  }
  EXPECT_EQ(bare.out, Run("--help").out);
}

TEST_F(FirstContactTest, ListingsOfAStoreNotMadeYetSayWhichCommandRecordsOne) {
  const struct {
    const char* args;
    const char* recorder;
  } listings[] = {{"captures", "`artune probe`"},
                  {"results", "`artune bench`"},
                  {"results --sweeps", "`artune sweep`"},
                  {"results --clusters", "`artune sweep --mpi`"}};
  for (const auto& listing : listings) {
    const Outcome listed = Run(listing.args);
    EXPECT_EQ(listed.exit_code, 0) << listing.args << ": " << listed.err;
    EXPECT_NE(listed.out.find(listing.recorder), std::string::npos)
        << listing.args << ": " << listed.out;
    EXPECT_EQ(listed.err, "") << listing.args;
  }
  // Listing reads: it makes no store.
  EXPECT_FALSE(fs::exists(StorePath()));
  // One record by id is still an error: there is no such record.
  EXPECT_NE(Run("results show 1").exit_code, 0);
  EXPECT_NE(Run("captures show 1").exit_code, 0);
}

TEST_F(FirstContactTest, JsonListingOfAStoreNotMadeYetIsTheEmptyStoresShape) {
  const char* const listings[] = {"captures --json", "results --json", "results --sweeps --json",
                                  "results --clusters --json"};
  std::vector<json> missing;
  for (const char* args : listings) {
    const Outcome listed = Run(args);
    EXPECT_EQ(listed.exit_code, 0) << args << ": " << listed.err;
    missing.push_back(json::parse(listed.out, nullptr, /*allow_exceptions=*/false));
  }
  ASSERT_TRUE(artune::db::Store::Open(StorePath()).ok());  // an empty store
  for (size_t i = 0; i < std::size(listings); ++i) {
    const Outcome listed = Run(listings[i]);
    ASSERT_EQ(listed.exit_code, 0) << listings[i] << ": " << listed.err;
    EXPECT_EQ(missing[i], json::parse(listed.out)) << listings[i];
  }
}

}  // namespace
}  // namespace artune_cli_test
