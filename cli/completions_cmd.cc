// artune completions SHELL: prints the completion script for bash, zsh or fish,
// generated from this very command tree (completions/ holds the same output, checked
// by a test).
#include <iostream>

#include "command.h"
#include "completions.h"

namespace artune::cli {

void RegisterCompletions(CLI::App& root, Context& context) {
  auto* command = root.add_subcommand(
      "completions", "Print a shell completion script (bash, zsh or fish) generated from the CLI");
  auto shell = std::make_shared<std::string>();
  command->add_option("shell", *shell, "bash, zsh or fish")
      ->required()
      ->check(CLI::IsMember({"bash", "zsh", "fish"}));
  command->footer(
      "Install: artune completions bash > /etc/bash_completion.d/artune\n"
      "         artune completions zsh > \"${fpath[1]}/_artune\"\n"
      "         artune completions fish > ~/.config/fish/completions/artune.fish");
  command->callback([&root, &context, shell] {
    RunCommand(context, [&]() -> Status {
      ARTUNE_ASSIGN_OR_RETURN(std::string script, GenerateCompletionScript(root, *shell));
      std::cout << script;
      return Status::Ok();
    });
  });
}

}  // namespace artune::cli
