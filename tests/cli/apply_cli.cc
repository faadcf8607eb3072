// `artune apply config`, `artune apply compare` and `artune workload` as a user runs them: bad
// values refused with the reason and nothing written; the file written where the transport reads it
// and reported by `artune config show` as the source; env and json formats; a live apply to a
// running `artune serve` changing which protocol the server uses, seen in its stats over the
// control plane; the built-in workload's summary; a default-vs-tuned comparison.
//
// (Named apply_cli.cc, not *_test.cc: tests/CMakeLists.txt would otherwise build
// every tests/cli/*_test.cc into a cli_tests binary against a library that does not
// exist. Registered in tests/cli/CMakeLists.txt.)
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "apply_cli_fixture.h"
#include "artune/transport/protocol.h"
#include "artune/transport/transport.h"

namespace {

using namespace artune_cli_test;

TEST_F(ApplyCliTest, RefusesBadValuesWithTheReasonAndWritesNothing) {
  const struct {
    const char* args;
    const char* reason;
  } cases[] = {
      {"--set chunk_size=1KiB", "out of range"},
      {"--set fabric=infiniband", "not a known choice"},
      {"--set eager_treshold=4KiB", "did you mean eager_threshold"},
      {"--set eager_threshold", "is not NAME=VALUE"},
      {"--set eager_threshold=1MiB --set eager_buffer_count=4096", "eager"},
  };
  for (const auto& c : cases) {
    const Outcome o = Run(std::string("apply config ") + c.args);
    EXPECT_EQ(o.exit_code, 2) << c.args << ": " << o.err;
    EXPECT_NE(o.err.find(c.reason), std::string::npos) << c.args << ": " << o.err;
    EXPECT_FALSE(fs::exists(DefaultPath())) << c.args;
  }
}

TEST_F(ApplyCliTest, WritesTheDefaultPathAndConfigShowReportsTheFile) {
  Outcome o = Run("apply config --set eager_threshold=4KiB --set chunk_size=1MiB --json");
  ASSERT_EQ(o.exit_code, 0) << o.err;
  json report = json::parse(o.out);
  EXPECT_EQ(report.at("path"), DefaultPath());
  EXPECT_EQ(report.at("written"), true);
  EXPECT_TRUE(report.at("in_force_file").is_null());
  size_t changed = 0;
  for (const json& change : report.at("changes")) {
    if (!change.at("changed").get<bool>()) continue;
    ++changed;
    EXPECT_EQ(change.at("source"), "default");
  }
  EXPECT_EQ(changed, 2u);
  ASSERT_TRUE(fs::exists(DefaultPath()));
  EXPECT_NE(ReadAll(DefaultPath()).find("written by `artune apply config`"), std::string::npos);

  json knob = ShownKnob("eager_threshold");
  EXPECT_EQ(knob.at("value"), 4096);
  EXPECT_EQ(knob.at("source"), "file");
  EXPECT_EQ(knob.at("source_detail").get<std::string>().rfind(DefaultPath() + ":", 0), 0u);
  EXPECT_EQ(ShownKnob("chunk_size").at("value"), 1 << 20);

  // A second apply diffs against the file now in force and keeps the first change.
  o = Run("apply config --set pipeline_depth=8 --json");
  ASSERT_EQ(o.exit_code, 0) << o.err;
  report = json::parse(o.out);
  EXPECT_EQ(report.at("in_force_file"), DefaultPath());
  for (const json& change : report.at("changes")) {
    if (change.at("name") == "eager_threshold") {
      EXPECT_EQ(change.at("current"), "4KiB");
      EXPECT_EQ(change.at("new"), "4KiB");
      EXPECT_EQ(change.at("source").get<std::string>().rfind("file " + DefaultPath(), 0), 0u);
    }
    if (change.at("name") == "pipeline_depth") {
      EXPECT_TRUE(change.at("changed").get<bool>());
    }
  }
  EXPECT_EQ(ShownKnob("pipeline_depth").at("value"), 8);
  EXPECT_EQ(ShownKnob("eager_threshold").at("value"), 4096);
}

TEST_F(ApplyCliTest, ArtuneConfigNamesTheFileAndEnvironmentShadowsAreWarned) {
  const std::string path = dir_ + "/elsewhere/tuned.toml";
  Outcome o = Run("apply config --set chunk_size=2MiB", "ARTUNE_CONFIG=" + path);
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_TRUE(fs::exists(path));
  EXPECT_FALSE(fs::exists(DefaultPath()));
  EXPECT_NE(o.out.find("wrote " + path), std::string::npos) << o.out;
  EXPECT_EQ(ShownKnob("chunk_size", "ARTUNE_CONFIG=" + path).at("value"), 2 << 20);

  // An ARTUNE_<KNOB> variable still beats the file: apply says so.
  o = Run("apply config --set eager_threshold=2KiB", "ARTUNE_EAGER_THRESHOLD=8KiB");
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_NE(o.err.find("ARTUNE_EAGER_THRESHOLD in the environment overrides eager_threshold"),
            std::string::npos)
      << o.err;
}

TEST_F(ApplyCliTest, EnvAndJsonFormatsGoToStdoutAndWriteNoFile) {
  Outcome o = Run("apply config --set eager_threshold=8KiB --format env");
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_NE(o.out.find("export ARTUNE_EAGER_THRESHOLD=8KiB\n"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("export ARTUNE_CHUNK_SIZE=512KiB\n"), std::string::npos) << o.out;
  EXPECT_NE(o.err.find("changed"), std::string::npos) << "the diff goes to stderr: " << o.err;
  EXPECT_FALSE(fs::exists(DefaultPath()));

  o = Run("apply config --set polling=busy --format json");
  ASSERT_EQ(o.exit_code, 0) << o.err;
  const json config = json::parse(o.out);
  EXPECT_EQ(config.at("polling"), "busy");
  EXPECT_EQ(config.at("eager_threshold"), 16384);
  EXPECT_FALSE(fs::exists(DefaultPath()));

  // --output writes the chosen format to the file; env text round-trips through sh.
  const std::string env_file = dir_ + "/tuned.env";
  o = Run("apply config --set eager_threshold=8KiB --format env --output " + env_file);
  ASSERT_EQ(o.exit_code, 0) << o.err;
  const Outcome shown =
      Run("config show --json", "sh -c '. " + env_file + " && exec \"$0\" \"$@\"' ");
  ASSERT_EQ(shown.exit_code, 0) << shown.err;
  bool found = false;
  const json document = json::parse(shown.out);
  for (const json& knob : document.at("knobs")) {
    if (knob.at("name") != "eager_threshold") continue;
    found = true;
    EXPECT_EQ(knob.at("value"), 8192);
    EXPECT_EQ(knob.at("source"), "env");
  }
  EXPECT_TRUE(found);
  // Which knobs a running transport can take live is part of the listing.
  for (const json& knob : document.at("knobs")) {
    const std::string name = knob.at("name");
    EXPECT_EQ(knob.at("live"),
              !(name == "fabric" || name == "idle_timeout_ms" || name.starts_with("verbs_")))
        << name;
  }
}

TEST_F(ApplyCliTest, WithoutASweepOrSetItSaysWhatToDo) {
  const Outcome o = Run("apply config");
  EXPECT_NE(o.exit_code, 0);
  EXPECT_NE(o.err.find("artune sweep"), std::string::npos) << o.err;
  EXPECT_FALSE(fs::exists(DefaultPath()));
}

// A child process with its stdout on a pipe; SIGTERMed and reaped on destruction.
class Child {
 public:
  explicit Child(const std::vector<std::string>& argv) {
    int fds[2];
    if (pipe(fds) != 0) return;
    pid_ = fork();
    if (pid_ == 0) {
      dup2(fds[1], STDOUT_FILENO);
      close(fds[0]);
      close(fds[1]);
      std::vector<char*> args;
      for (const std::string& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
      args.push_back(nullptr);
      execv(args[0], args.data());
      _exit(127);
    }
    close(fds[1]);
    out_ = fdopen(fds[0], "r");
  }
  ~Child() {
    if (pid_ > 0) {
      kill(pid_, SIGTERM);
      int status = 0;
      waitpid(pid_, &status, 0);
    }
    if (out_ != nullptr) fclose(out_);
  }
  // One line of stdout (blocks until it comes or the child exits).
  std::string ReadLine() {
    std::string line;
    if (out_ == nullptr) return line;
    int c;
    while ((c = fgetc(out_)) != EOF && c != '\n') line.push_back(static_cast<char>(c));
    return line;
  }

 private:
  pid_t pid_ = -1;
  FILE* out_ = nullptr;
};

uint64_t SlicesOfSize(const artune::transport::Stats& stats, artune::transport::Protocol protocol,
                      uint64_t bytes) {
  return stats.by_protocol[static_cast<int>(protocol)]
      .slices_by_bucket[artune::transport::Log2Bucket(bytes)];
}

TEST_F(ApplyCliTest, LiveApplyChangesProtocolSelectionInTheServersStats) {
  using artune::transport::Protocol;
  Child serve({ARTUNE_BINARY, "serve", "--listen", "127.0.0.1:0", "--transport", "artune",
               "--servers", "1", "--json", "--set", "fabric=tcp"});
  const std::string line = serve.ReadLine();
  ASSERT_FALSE(line.empty()) << "artune serve printed nothing";
  const std::string address = json::parse(line).at("servers").at(0).at("address");

  artune::transport::Config client_config;
  client_config.fabric = artune::transport::FabricKind::kTcp;
  auto client = artune::transport::Client::Connect(client_config, address);
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  ASSERT_EQ((*client)->config().eager_threshold, 16u * 1024);  // the default

  // 32 KiB slices: rendezvous under the default 16 KiB eager threshold.
  constexpr uint64_t kSliceBytes = 32 * 1024;
  std::vector<std::byte> data(kSliceBytes, std::byte{7});
  const artune::transport::ConstSlice slices[] = {{data.data(), data.size()}};
  auto echo_calls = [&](int count) {
    for (int i = 0; i < count; ++i) {
      auto reply = (*client)->Call("artune.bench/echo", slices);
      ASSERT_TRUE(reply.ok()) << reply.status().ToString();
      ASSERT_EQ(reply->total_bytes(), kSliceBytes);
    }
  };
  echo_calls(5);
  auto before = (*client)->ServerStats();
  ASSERT_TRUE(before.ok()) << before.status().ToString();
  EXPECT_GT(SlicesOfSize(*before, Protocol::kRendezvousRead, kSliceBytes), 0u);
  EXPECT_EQ(SlicesOfSize(*before, Protocol::kEager, kSliceBytes), 0u);

  // Push eager_threshold = 64 KiB to the running server.
  const Outcome o = Run("apply config --live " + address + " --set eager_threshold=64KiB --json");
  ASSERT_EQ(o.exit_code, 0) << o.err;
  const json report = json::parse(o.out);
  EXPECT_EQ(report.at("target"), "live");
  EXPECT_EQ(report.at("config").at("eager_threshold"), "64KiB");
  EXPECT_FALSE(fs::exists(DefaultPath())) << "a live apply writes no file";

  echo_calls(5);
  auto after = (*client)->ServerStats();
  ASSERT_TRUE(after.ok()) << after.status().ToString();
  // New messages of the same size now go eagerly; the server counted them.
  EXPECT_GE(SlicesOfSize(*after, Protocol::kEager, kSliceBytes), 5u);
  EXPECT_EQ((*client)->config().eager_threshold, 64u * 1024);

  // A value the knob table refuses never reaches the server.
  const Outcome bad = Run("apply config --live " + address + " --set chunk_size=1KiB");
  EXPECT_EQ(bad.exit_code, 2) << bad.err;
  EXPECT_NE(bad.err.find("out of range"), std::string::npos) << bad.err;

  // Nor does a knob a running server cannot change: the error says how instead.
  const Outcome start_only = Run("apply config --live " + address + " --set verbs_mtu=1024");
  EXPECT_EQ(start_only.exit_code, 2) << start_only.err;
  EXPECT_NE(start_only.err.find("restart"), std::string::npos) << start_only.err;
  EXPECT_NE(start_only.err.find("verbs_mtu=1024 --output"), std::string::npos) << start_only.err;
}

TEST_F(ApplyCliTest, WorkloadRunsAValidatedTensorFlowLikeStep) {
  const Outcome o = Run("workload --steps 2 --duration 0 --scale 0.02 --workers 2 --ps 2 --json");
  ASSERT_EQ(o.exit_code, 0) << o.err;
  const json summary = json::parse(o.out);
  EXPECT_EQ(summary.at("validated"), true);
  EXPECT_EQ(summary.at("steps"), 4);  // 2 workers x 2 steps
  EXPECT_EQ(summary.at("variables"), 267);
  EXPECT_EQ(summary.at("recv_tensor_calls"), 4 * 267);
  EXPECT_EQ(summary.at("tensor_bytes"), 4 * summary.at("model_bytes").get<uint64_t>());
  EXPECT_EQ(summary.at("addresses").size(), 2u);
}

TEST_F(ApplyCliTest, CompareParksABusyPollingSideWhileTheOtherIsMeasured) {
  const std::string busy = dir_ + "/busy.toml";
  const std::string event = dir_ + "/event.toml";
  Outcome o = Run("apply config --set polling=busy --output " + busy);
  ASSERT_EQ(o.exit_code, 0) << o.err;
  o = Run("apply config --set polling=event --output " + event);
  ASSERT_EQ(o.exit_code, 0) << o.err;
  // The baseline sleeps in the kernel between messages (event polling; the default,
  // adaptive, spins while calls flow and would keep both cores busy on its own):
  // over loopback its work keeps about 1.3 of this machine's 2 cores busy, the
  // busy-polling side all of them. Were the tuned side's two spinning progress
  // threads left running during the baseline's measurements, those would count as
  // much CPU as the tuned side's own.
  o = Run("apply compare --scheme skew --fabric tcp --baseline " + event + " --tuned " + busy +
          " --repeats 2 --rounds 1 --duration 0.3 --inflight 1 --json");
  ASSERT_EQ(o.exit_code, 0) << o.err;
  const json result = json::parse(o.out);
  EXPECT_EQ(result.at("default").at("config").at("polling"), "event");
  EXPECT_EQ(result.at("tuned").at("config").at("polling"), "busy");
  const double baseline_cores = result.at("default").at("cpu_cores").get<double>();
  const double tuned_cores = result.at("tuned").at("cpu_cores").get<double>();
  // The comparison means something only when the busy side got the cores it
  // spins on; under -j2 another test holds one of this machine's two.
  if (tuned_cores < 1.5) {
    GTEST_SKIP() << "the machine was busy: the busy-polling side got " << tuned_cores
                 << " cores of 2, so CPU shares cannot tell parking from contention";
  }
  EXPECT_LT(baseline_cores, 0.85 * tuned_cores)
      << "the busy side spun during the baseline's measurements";
}

TEST_F(ApplyCliTest, CompareRunsDefaultAndTunedSideBySide) {
  Outcome o = Run("apply config --set eager_threshold=64KiB --set chunk_size=1MiB");
  ASSERT_EQ(o.exit_code, 0) << o.err;
  o =
      Run("apply compare --scheme skew --fabric tcp --repeats 1 --rounds 1 --warmup-rounds 0 "
          "--json");
  ASSERT_EQ(o.exit_code, 0) << o.err;
  const json result = json::parse(o.out);
  EXPECT_EQ(result.at("default").at("config").at("eager_threshold"), "16KiB");
  EXPECT_EQ(result.at("tuned").at("config").at("eager_threshold"), "64KiB");
  EXPECT_EQ(result.at("tuned").at("source"), "file " + DefaultPath());
  for (const char* side : {"default", "tuned"}) {
    EXPECT_EQ(result.at(side).at("validated"), true) << side;
    EXPECT_EQ(result.at(side).at("fabric"), "tcp") << side;
    EXPECT_GT(result.at(side).at("calls").get<uint64_t>(), 0u) << side;
    EXPECT_GT(result.at(side).at("workload_ms").get<double>(), 0) << side;
  }
  EXPECT_GT(result.at("speedup").get<double>(), 0);
}

// Over the real link: both sides measured against a running `artune serve`, each
// side's config pushed live to both ends before its turn. With one repeat the
// tuned side runs last, so the peer is left with its eager threshold, and a new
// client's handshake agrees on it.
TEST_F(ApplyCliTest, CompareAtAPeerPushesEachSidesConfigToIt) {
  Child serve({ARTUNE_BINARY, "serve", "--listen", "127.0.0.1:0", "--transport", "artune",
               "--servers", "1", "--json", "--set", "fabric=tcp"});
  const std::string line = serve.ReadLine();
  ASSERT_FALSE(line.empty()) << "artune serve printed nothing";
  const json listening = json::parse(line);
  const std::string base = listening.at("base");
  const std::string address = listening.at("servers").at(0).at("address");

  Outcome o = Run("apply config --set eager_threshold=64KiB --set chunk_size=1MiB");
  ASSERT_EQ(o.exit_code, 0) << o.err;
  o = Run("apply compare --peer " + base +
          " --scheme skew --fabric tcp --repeats 1 --rounds 1 --warmup-rounds 0 --duration 0 "
          "--json");
  ASSERT_EQ(o.exit_code, 0) << o.err;
  const json result = json::parse(o.out);
  EXPECT_EQ(result.at("peer"), base);
  for (const char* side : {"default", "tuned"}) {
    EXPECT_EQ(result.at(side).at("validated"), true) << side;
    EXPECT_EQ(result.at(side).at("fabric"), "tcp") << side;
    EXPECT_GT(result.at(side).at("calls").get<uint64_t>(), 0u) << side;
  }

  artune::transport::Config client_config;
  client_config.fabric = artune::transport::FabricKind::kTcp;
  auto client = artune::transport::Client::Connect(client_config, address);
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  EXPECT_EQ((*client)->config().eager_threshold, 64u * 1024)
      << "the tuned side's eager threshold never reached the peer";
}

// One connection cannot carry two configs that differ in what is fixed when a
// transport starts: refused before anything is measured, with what to do.
TEST_F(ApplyCliTest, CompareAtAPeerRefusesConfigsThatDifferInStartTimeKnobs) {
  Outcome o = Run("apply config --set verbs_mtu=1024");
  ASSERT_EQ(o.exit_code, 0) << o.err;
  o = Run("apply compare --peer 127.0.0.1:1 --scheme skew --repeats 1 --json");
  EXPECT_EQ(o.exit_code, 2) << o.out << o.err;
  EXPECT_NE(o.err.find("verbs_mtu"), std::string::npos) << o.err;
  EXPECT_NE(o.err.find("without --peer"), std::string::npos) << o.err;
}

}  // namespace
