// Shell completions generated from the CLI11 command tree, so they can never drift
// from the real command line: bash, zsh and fish scripts are all emitted from the
// same walk over the tree.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "artune/status.h"

namespace artune::cli {

struct CompletionOption {
  std::vector<std::string> long_names;   // without the leading "--"
  std::vector<std::string> short_names;  // without the leading "-"
  bool takes_value = false;
  std::string description;
};

struct CompletionNode {
  std::string name;
  std::string description;
  std::vector<CompletionOption> options;
  std::vector<CompletionNode> children;
};

CompletionNode CompletionTree(const CLI::App& app);

// Supported shells: "bash", "zsh", "fish". kInvalidArgument for any other name.
Result<std::string> GenerateCompletionScript(const CLI::App& app, std::string_view shell);

}  // namespace artune::cli
