// Killed peers: a server that shuts down or is SIGKILLed mid-call, and a client
// process SIGKILLed mid-call. Calls fail with kUnavailable (never hang) and the
// server keeps serving its other clients. Peer processes are this test binary
// re-executed with a helper test selected (they skip unless ARTUNE_FAILURE_HELPER
// is set; ARTUNE_FAILURE_FABRIC names the fabric). Parameterised on the fabric: on
// verbs a killed peer's kernel tears its queue pairs down, so the survivor sees a
// disconnect or flushed work requests.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <condition_variable>
#include <cstdlib>
#include <future>
#include <mutex>
#include <thread>

#include "engine_test_util.h"

namespace artune::transport {
namespace {

using testing::MakePayload;
using testing::Views;

// A handler that blocks until released, and tells when it was entered.
struct Gate {
  std::mutex mutex;
  std::condition_variable changed;
  int entered = 0;
  bool open = false;

  Handler MakeHandler() {
    return [this](const Message&, ResponseWriter&) {
      std::unique_lock lock(mutex);
      ++entered;
      changed.notify_all();
      changed.wait(lock, [this] { return open; });
      return Status::Ok();
    };
  }
  bool WaitEntered(int count) {
    std::unique_lock lock(mutex);
    return changed.wait_for(lock, std::chrono::seconds(20), [&] { return entered >= count; });
  }
  void Open() {
    std::lock_guard lock(mutex);
    open = true;
    changed.notify_all();
  }
};

pid_t SpawnHelper(const std::string& test, const std::string& argument, FabricKind fabric) {
  // Everything the child needs is built before fork: between fork and exec a
  // multi-threaded process may only make async-signal-safe calls.
  const std::string filter = "--gtest_filter=FailureHelper." + test;
  const std::string variable = "ARTUNE_FAILURE_HELPER=" + argument;
  const std::string fabric_variable = "ARTUNE_FAILURE_FABRIC=" + testing::FabricName({fabric, 0});
  std::vector<char*> environment;
  for (char** entry = environ; *entry != nullptr; ++entry) environment.push_back(*entry);
  environment.push_back(const_cast<char*>(variable.c_str()));
  environment.push_back(const_cast<char*>(fabric_variable.c_str()));
  environment.push_back(nullptr);
  char* const argv[] = {const_cast<char*>("transport_tests"), const_cast<char*>(filter.c_str()),
                        nullptr};
  pid_t pid = ::fork();
  if (pid == 0) {
    ::execve("/proc/self/exe", argv, environment.data());
    ::_exit(127);
  }
  return pid;
}

// --- helpers run in a child process --------------------------------------------

FabricKind HelperFabric() {
  const char* name = std::getenv("ARTUNE_FAILURE_FABRIC");
  const std::string value = name != nullptr ? name : "tcp";
  return value == "verbs" ? FabricKind::kVerbs
         : value == "shm" ? FabricKind::kShm
                          : FabricKind::kTcp;
}

TEST(FailureHelper, ClientCallsAndHangs) {
  const char* address = std::getenv("ARTUNE_FAILURE_HELPER");
  if (address == nullptr) GTEST_SKIP() << "helper process only";
  auto client = Client::Connect(testing::TestConfig(HelperFabric()), address);
  ASSERT_TRUE(client.ok());
  auto payload = MakePayload({10, 3 * 1024 * 1024}, 1);
  auto views = Views(payload);
  (void)(*client)->Call("block", views);  // the parent kills this process meanwhile
}

TEST(FailureHelper, ServeUntilKilled) {
  const char* pipe_fd = std::getenv("ARTUNE_FAILURE_HELPER");
  if (pipe_fd == nullptr) GTEST_SKIP() << "helper process only";
  auto server = Server::Start(testing::TestConfig(HelperFabric()),
                              testing::TestListenAddress(HelperFabric()));
  ASSERT_TRUE(server.ok());
  Gate gate;
  (*server)->RegisterHandler("block", gate.MakeHandler());
  const std::string address = (*server)->address() + "\n";
  const int fd = std::atoi(pipe_fd);
  ASSERT_EQ(::write(fd, address.data(), address.size()), static_cast<ssize_t>(address.size()));
  gate.WaitEntered(1);
  std::this_thread::sleep_for(std::chrono::seconds(60));  // killed long before this
}

// --- the tests ------------------------------------------------------------------

class FailureTest : public ::testing::TestWithParam<FabricKind> {
 protected:
  void SetUp() override { ARTUNE_SKIP_UNLESS_FABRIC_USABLE(GetParam()); }
  Config TestConfig() const { return testing::TestConfig(GetParam()); }
  std::string ListenAddress() const { return testing::TestListenAddress(GetParam()); }
};

TEST_P(FailureTest, ServerShutdownFailsCallsInFlight) {
  auto server = Server::Start(TestConfig(), ListenAddress());
  ASSERT_TRUE(server.ok());
  Gate gate;
  (*server)->RegisterHandler("block", gate.MakeHandler());
  auto client = Client::Connect(TestConfig(), (*server)->address());
  ASSERT_TRUE(client.ok());
  auto payload = MakePayload({10, 600 * 1024}, 2);
  auto views = Views(payload);
  std::promise<Result<Message>> answered;
  (*client)->CallAsync("block", views, {},
                       [&](Result<Message> result) { answered.set_value(std::move(result)); });
  ASSERT_TRUE(gate.WaitEntered(1));
  std::thread shutdown([&] { (*server)->Shutdown(); });
  std::future<Result<Message>> future = answered.get_future();
  ASSERT_EQ(future.wait_for(std::chrono::seconds(20)), std::future_status::ready);
  Result<Message> result = future.get();
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), ErrorCode::kUnavailable) << result.status().ToString();
  gate.Open();
  shutdown.join();
  // Later calls fail at once, too.
  Result<Message> after = (*client)->Call("block", views);
  ASSERT_FALSE(after.ok());
  EXPECT_EQ(after.status().code(), ErrorCode::kUnavailable);
}

TEST_P(FailureTest, KilledServerProcessFailsCalls) {
  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);
  pid_t child = SpawnHelper("ServeUntilKilled", std::to_string(pipe_fds[1]), GetParam());
  ::close(pipe_fds[1]);
  std::string address;
  char c = 0;
  while (::read(pipe_fds[0], &c, 1) == 1 && c != '\n') address.push_back(c);
  ::close(pipe_fds[0]);
  ASSERT_FALSE(address.empty()) << "the helper server did not start";
  auto client = Client::Connect(TestConfig(), address);
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  auto payload = MakePayload({10, 2 * 1024 * 1024}, 3);
  auto views = Views(payload);
  std::promise<Result<Message>> answered;
  (*client)->CallAsync("block", views, {},
                       [&](Result<Message> result) { answered.set_value(std::move(result)); });
  ::kill(child, SIGKILL);
  int status = 0;
  ::waitpid(child, &status, 0);
  std::future<Result<Message>> future = answered.get_future();
  ASSERT_EQ(future.wait_for(std::chrono::seconds(20)), std::future_status::ready);
  Result<Message> result = future.get();
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), ErrorCode::kUnavailable) << result.status().ToString();
}

TEST_P(FailureTest, KilledClientProcessLeavesServerServing) {
  auto server = Server::Start(TestConfig(), ListenAddress());
  ASSERT_TRUE(server.ok());
  testing::RegisterTestHandlers(**server);
  Gate gate;
  (*server)->RegisterHandler("block", gate.MakeHandler());
  pid_t child = SpawnHelper("ClientCallsAndHangs", (*server)->address(), GetParam());
  ASSERT_TRUE(gate.WaitEntered(1)) << "the helper client never called";
  ::kill(child, SIGKILL);
  int status = 0;
  ::waitpid(child, &status, 0);
  // The dead client's connection is dropped; the handler's late answer goes nowhere.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while ((*server)->stats().connections_dropped < 1 &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::yield();
  }
  EXPECT_GE((*server)->stats().connections_dropped, 1u);
  gate.Open();
  auto client = Client::Connect(TestConfig(), (*server)->address());
  ASSERT_TRUE(client.ok());
  auto payload = MakePayload({10, 300 * 1024}, 4);
  auto views = Views(payload);
  Result<Message> response = (*client)->Call("echo", views);
  ASSERT_TRUE(response.ok()) << response.status().ToString();
  EXPECT_TRUE(testing::SameSlices(*response, payload));
}

INSTANTIATE_TEST_SUITE_P(Fabrics, FailureTest, ::testing::ValuesIn(testing::TestFabrics()),
                         testing::FabricName);

}  // namespace
}  // namespace artune::transport
