// artune config show | explain: the effective transport config (every knob with its
// value, source, range and doc) and which protocol serves each size range under it.
// Both are computed from the knob table and protocol.h, the same code the transport
// runs, so what is printed is what the transport does.
#include <iomanip>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "artune/transport/config_loader.h"
#include "artune/transport/knobs.h"
#include "artune/transport/protocol.h"
#include "artune/transport/protocol_ranges.h"
#include "artune/tuner/config_emit.h"
#include "command.h"
#include "format.h"
#include "knob_flags.h"

namespace artune::cli {
namespace {

using transport::Config;
using transport::FormatBytes;
using transport::Knob;
using transport::LoadedConfig;

struct ConfigOptions {
  KnobFlags knobs;
  bool json = false;
};

Status Show(const ConfigOptions& options) {
  ARTUNE_ASSIGN_OR_RETURN(const LoadedConfig loaded, LoadConfigFromFlags(options.knobs));
  const auto knobs = transport::Knobs();
  if (options.json) {
    std::cout << tuner::LoadedConfigJson(loaded).dump(2) << "\n";
    return Status::Ok();
  }
  std::cout << "config file: " << (loaded.file_path.empty() ? "(none)" : loaded.file_path)
            << "\n\n";
  std::vector<std::vector<std::string>> rows = {
      {"KNOB", "VALUE", "UNIT", "SOURCE", "RANGE", "DOC"}};
  for (size_t i = 0; i < knobs.size(); ++i) {
    const Knob& knob = knobs[i];
    rows.push_back({std::string(knob.name) + (knob.live ? "" : " *"),
                    transport::FormatKnobValue(knob, knob.get(loaded.config)),
                    std::string(knob.unit), loaded.sources[i].ToString(),
                    transport::FormatKnobRange(knob), std::string(knob.doc)});
  }
  PrintTable(rows, {}, std::cout);
  std::cout << "\n* set when the transport starts: a running server keeps its own value "
               "(`apply config --live` and sweep trials cannot change it)\n";
  return Status::Ok();
}

Status Explain(const ConfigOptions& options) {
  ARTUNE_ASSIGN_OR_RETURN(const LoadedConfig loaded, LoadConfigFromFlags(options.knobs));
  const Config& config = loaded.config;
  const std::vector<transport::ProtocolRange> ranges = transport::ProtocolRanges(config);
  const std::vector<uint64_t> sizes = transport::ExampleSliceSizes(config);

  if (options.json) {
    std::cout << tuner::ConfigExplainJson(config).dump(2) << "\n";
    return Status::Ok();
  }

  std::cout << "Protocol per slice size under eager_threshold="
            << FormatBytes(config.eager_threshold)
            << " chunk_size=" << FormatBytes(config.chunk_size)
            << " pipeline_depth=" << config.pipeline_depth
            << " coalesce_limit=" << FormatBytes(config.coalesce_limit) << "\n\n";
  std::vector<std::vector<std::string>> range_rows = {{"SLICE SIZE", "PROTOCOL", "HOW"}};
  for (const transport::ProtocolRange& row : ranges) {
    range_rows.push_back({transport::FormatProtocolRange(row),
                          std::string(transport::ProtocolName(row.protocol)), row.how});
  }
  PrintTable(range_rows, {}, std::cout);

  std::cout << "\nExamples (one slice of each size):\n\n";
  std::vector<std::vector<std::string>> example_rows = {
      {"SIZE", "BYTES", "PROTOCOL", "CHUNKS", "PIPELINE ROUNDS"}};
  for (uint64_t bytes : sizes) {
    const transport::SliceExample example = transport::ExplainSlice(bytes, config);
    example_rows.push_back({FormatBytes(bytes), std::to_string(bytes),
                            std::string(transport::ProtocolName(example.protocol)),
                            example.chunks == 0 ? "-" : std::to_string(example.chunks),
                            example.rounds == 0 ? "-" : std::to_string(example.rounds)});
  }
  PrintTable(example_rows, {}, std::cout);
  return Status::Ok();
}

CLI::App* AddConfigSubcommand(CLI::App& parent, Context& context, const std::string& name,
                              const std::string& description,
                              Status (*body)(const ConfigOptions&)) {
  auto options = std::make_shared<ConfigOptions>();
  CLI::App* command = parent.add_subcommand(name, description);
  AddKnobFlags(*command, options->knobs);
  command->add_flag("--json", options->json, "Print one JSON document instead of a table");
  command->callback(
      [&context, options, body] { RunCommand(context, [&] { return body(*options); }); });
  return command;
}

}  // namespace

void RegisterConfig(CLI::App& root, Context& context) {
  CLI::App* config =
      root.add_subcommand("config", "Show the embedded transport's effective config and protocols");
  config->require_subcommand(1);
  config->footer(
      "Values come from, in increasing precedence: defaults, the config file (--config, "
      "$ARTUNE_CONFIG or $XDG_CONFIG_HOME/artune/transport.toml), ARTUNE_<KNOB> environment "
      "variables, --set NAME=VALUE. A bad value exits with code 2.");
  AddConfigSubcommand(*config, context, "show",
                      "Every knob: value, unit, source (default, file, env, flag), allowed "
                      "range and doc",
                      &Show);
  AddConfigSubcommand(*config, context, "explain",
                      "Which protocol serves each slice size range under the effective config",
                      &Explain);
}

}  // namespace artune::cli
