// The transport names its threads (thread_name.h), so per-thread tools (top -H,
// /proc/PID/task/TID/schedstat, perf) tell a progress thread from a handler.
#include <gmock/gmock.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include "engine_test_util.h"

namespace artune::transport {
namespace {

std::set<std::string> ThreadNamesOfThisProcess() {
  std::set<std::string> names;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream comm(task.path() / "comm");
    std::string name;
    if (std::getline(comm, name)) names.insert(name);
  }
  return names;
}

TEST(ThreadNames, AServerAndItsClientNameTheirThreads) {
  Config config = testing::TestConfig(FabricKind::kTcp);
  auto server = Server::Start(config, "127.0.0.1:0");
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  testing::RegisterTestHandlers(**server);
  auto client = Client::Connect(config, (*server)->address());
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  auto payload = testing::MakePayload({100}, 1);
  ASSERT_TRUE((*client)->Call("echo", testing::Views(payload)).ok());

  const std::set<std::string> names = ThreadNamesOfThisProcess();
  for (const char* expected : {"artune-tcp", "artune-timer", "artune-control", "artune-handler"}) {
    EXPECT_TRUE(names.contains(expected)) << "no thread named " << expected;
  }
}

}  // namespace
}  // namespace artune::transport
