// Refusal lines are rate-limited (issue 26, 8: 5000 lines in 0.2 s).
#include <gmock/gmock.h>

#include "hostile_test_util.h"
#include "refusal_log.h"

namespace artune::transport {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(RefusalLog, WritesAFewLinesASecondThenSaysHowManyWereLeftOut) {
  RateLimitedLog::Clock::time_point now{std::chrono::hours(1)};
  std::vector<std::string> lines;
  {
    RateLimitedLog log(
        3, [&] { return now; }, [&](const std::string& line) { lines.push_back(line); });
    for (int i = 0; i < 100; ++i) log.Write("refused " + std::to_string(i));
    EXPECT_THAT(lines, ElementsAre("refused 0", "refused 1", "refused 2"));
    now += std::chrono::milliseconds(1500);
    log.Write("refused later");
    ASSERT_EQ(lines.size(), 5u);
    EXPECT_THAT(lines[3], HasSubstr("97 more refused"));
    EXPECT_EQ(lines[4], "refused later");
    for (int i = 0; i < 10; ++i) log.Write("again");
  }
  // Destroyed: the count of what was left out is not lost.
  ASSERT_EQ(lines.size(), 8u);
  EXPECT_THAT(lines.back(), HasSubstr("8 more refused"));
}

using RefusalFloodTest = HostileTest;

TEST_F(RefusalFloodTest, AFloodOfRefusedConnectionsWritesAFewLines) {
  constexpr int kAttempts = 300;
  const auto start = std::chrono::steady_clock::now();
  ::testing::internal::CaptureStderr();
  std::string bogus(wire::kDataTicketBytes, 'x');
  for (int i = 0; i < kAttempts; ++i) {
    int fd = ConnectRaw();
    SendHello(fd, &bogus);
    char byte = 0;
    (void)::recv(fd, &byte, 1, 0);  // the refusal closes it
    ::close(fd);
  }
  const std::string written = ::testing::internal::GetCapturedStderr();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  size_t lines = 0;
  for (char c : written) lines += c == '\n';
  // Per second: the limit, and one summary line.
  const auto allowed = static_cast<size_t>((seconds + 1) * (kRefusalLinesPerSecond + 1));
  EXPECT_LE(lines, allowed) << kAttempts << " refusals in " << seconds << " s wrote:\n"
                            << written.substr(0, 2000);
  EXPECT_THAT(written, HasSubstr("refused a data connection"));
  ExpectOthersStillServed();
}

}  // namespace
}  // namespace artune::transport
