// ProgressLine (cli/progress.h) writing into a temporary file instead of a
// terminal: what it draws, when it stays silent, and how it cuts long lines.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "progress.h"

namespace artune::cli {
namespace {

class ProgressLineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    out_ = std::tmpfile();
    ASSERT_NE(out_, nullptr);
  }
  void TearDown() override { std::fclose(out_); }

  std::string Written() {
    std::fflush(out_);
    std::rewind(out_);
    std::string text;
    char buffer[512];
    size_t n = 0;
    while ((n = std::fread(buffer, 1, sizeof buffer, out_)) > 0) text.append(buffer, n);
    std::fseek(out_, 0, SEEK_END);
    return text;
  }

  std::FILE* out_ = nullptr;
};

// An interval no test run reaches, so "within the interval" is certain.
constexpr std::chrono::hours kNever{24};

TEST_F(ProgressLineTest, DrawsOneLineInPlaceAndClearsIt) {
  {
    ProgressLine progress({.draw = true, .verbose = false, .min_interval = kNever}, out_);
    EXPECT_TRUE(progress.drawing());
    progress.Update("trial 1/4");
    EXPECT_EQ(Written(), "\rtrial 1/4\033[K");
    progress.Update("trial 2/4");  // within the interval: skipped
    EXPECT_EQ(Written(), "\rtrial 1/4\033[K");
    progress.Clear();
    EXPECT_EQ(Written(), "\rtrial 1/4\033[K\r\033[K");
    progress.Update("trial 3/4");  // after a clear: drawn at once
    EXPECT_EQ(Written(), "\rtrial 1/4\033[K\r\033[K\rtrial 3/4\033[K");
  }
  // The destructor clears the line it left.
  EXPECT_EQ(Written(), "\rtrial 1/4\033[K\r\033[K\rtrial 3/4\033[K\r\033[K");
}

TEST_F(ProgressLineTest, ZeroIntervalDrawsEveryUpdate) {
  ProgressLine progress({.draw = true, .verbose = false, .min_interval = {}}, out_);
  progress.Update("a");
  progress.Update("b");
  EXPECT_EQ(Written(), "\ra\033[K\rb\033[K");
}

TEST_F(ProgressLineTest, SilentWhenNotDrawingAndDetailsOnlyWhenVerbose) {
  {
    ProgressLine progress({.draw = false, .verbose = false}, out_);
    progress.Update("trial 1/4");
    progress.Detail("trial 1 done");
    progress.Clear();
  }
  EXPECT_EQ(Written(), "");
  {
    // Verbose without a terminal: the detail lines, no status line.
    ProgressLine progress({.draw = false, .verbose = true}, out_);
    progress.Update("trial 1/4");
    progress.Detail("trial 1 done");
  }
  EXPECT_EQ(Written(), "trial 1 done\n");
}

TEST_F(ProgressLineTest, DetailClearsTheStatusLineAndRedrawsIt) {
  ProgressLine progress({.draw = true, .verbose = true, .min_interval = kNever}, out_);
  progress.Update("measuring");
  progress.Detail("server 127.0.0.1:5000");
  EXPECT_EQ(Written(), "\rmeasuring\033[K\r\033[Kserver 127.0.0.1:5000\n\rmeasuring\033[K");
}

TEST_F(ProgressLineTest, CutsLongLinesToTheWidthWithoutSplittingCharacters) {
  // Not a terminal: 80 columns assumed, 79 used.
  ProgressLine progress({.draw = true, .verbose = false, .min_interval = {}}, out_);
  progress.Update(std::string(200, 'x'));
  EXPECT_EQ(Written(), "\r" + std::string(79, 'x') + "\033[K");
  std::string wide;
  for (int i = 0; i < 100; ++i) wide += "µ";
  progress.Update(wide);
  std::string expected;
  for (int i = 0; i < 79; ++i) expected += "µ";
  EXPECT_EQ(Written(), "\r" + std::string(79, 'x') + "\033[K\r" + expected + "\033[K");
}

TEST_F(ProgressLineTest, ContextFollowsQuietAndVerbose) {
  Context context;
  context.globals.verbose = true;
  context.globals.quiet = true;
  ProgressLine quiet(context);
  EXPECT_FALSE(quiet.drawing());
  EXPECT_FALSE(quiet.verbose());
  context.globals.quiet = false;
  ProgressLine verbose(context);
  EXPECT_TRUE(verbose.verbose());
}

TEST(FormatDuration, ReadsNaturally) {
  EXPECT_EQ(FormatDuration(0.44), "0.4s");
  EXPECT_EQ(FormatDuration(12.2), "12s");
  EXPECT_EQ(FormatDuration(185), "3m05s");
  EXPECT_EQ(FormatDuration(7260), "2h01m");
  EXPECT_EQ(FormatDuration(-5), "0.0s");
}

TEST(ProgressBar, FillsInProportion) {
  EXPECT_EQ(ProgressBar(0.5, 10), "[#####.....] 50%");
  EXPECT_EQ(ProgressBar(0, 4), "[....] 0%");
  EXPECT_EQ(ProgressBar(2, 4), "[####] 100%");
}

}  // namespace
}  // namespace artune::cli
