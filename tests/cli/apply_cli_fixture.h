// The fixture of the apply_cli_tests binary: runs the built artune binary (ARTUNE_BINARY)
// as a user would, with a private config home and store in a fresh directory, and
// captures its exit code, stdout and stderr.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "../temp_dir.h"

namespace artune_cli_test {

namespace fs = std::filesystem;
using nlohmann::json;

struct Outcome {
  int exit_code = -1;
  std::string out;  // stdout
  std::string err;  // stderr
};

inline std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream contents;
  contents << in.rdbuf();
  return contents.str();
}

class ApplyCliTest : public ::testing::Test {
 protected:
  // A private config home and store; no ARTUNE_* variable from the caller leaks in.
  std::string Environment() const {
    return "env -u ARTUNE_CONFIG -u ARTUNE_DB -u ARTUNE_EAGER_THRESHOLD -u ARTUNE_CHUNK_SIZE "
           "-u ARTUNE_FABRIC XDG_CONFIG_HOME=" +
           dir_ + " ";
  }
  Outcome Run(const std::string& args, const std::string& extra_env = "") const {
    Outcome outcome;
    const std::string err_path = dir_ + "/stderr.txt";
    const std::string command = Environment() + extra_env + " " + ARTUNE_BINARY + " --db " +
                                StorePath() + " " + args + " 2>" + err_path;
    FILE* pipe = popen(command.c_str(), "r");
    if (pipe == nullptr) return outcome;
    char buffer[4096];
    size_t n;
    while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0) outcome.out.append(buffer, n);
    const int status = pclose(pipe);
    outcome.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    outcome.err = ReadAll(err_path);
    return outcome;
  }
  std::string DefaultPath() const { return dir_ + "/artune/transport.toml"; }

  // The knob entry of `artune config show --json`.
  json ShownKnob(const std::string& name, const std::string& extra_env = "") const {
    const Outcome shown = Run("config show --json", extra_env);
    EXPECT_EQ(shown.exit_code, 0) << shown.err;
    const json document = json::parse(shown.out);  // outlives the loop over its knobs
    for (const json& knob : document.at("knobs")) {
      if (knob.at("name") == name) return knob;
    }
    ADD_FAILURE() << "config show has no knob " << name;
    return json();
  }

  std::string StorePath() const { return dir_ + "/test.db"; }

  const artune::test_support::TempDir temp_{"artune-apply-cli"};
  const std::string dir_ = temp_.path();
};

}  // namespace artune_cli_test
