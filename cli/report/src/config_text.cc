// The text of `artune config show` and `config explain` (config_text.h).
#include "artune/report/config_text.h"

#include <cstdint>
#include <string>
#include <vector>

#include "artune/report/text_table.h"
#include "artune/transport/knobs.h"
#include "artune/transport/protocol.h"
#include "artune/transport/protocol_ranges.h"

namespace artune::report {

using transport::FormatBytes;
using transport::Knob;

void PrintConfigShow(const transport::LoadedConfig& loaded, std::ostream& out) {
  const auto knobs = transport::Knobs();
  out << "config file: " << (loaded.file_path.empty() ? "(none)" : loaded.file_path) << "\n\n";
  std::vector<std::vector<std::string>> rows = {
      {"KNOB", "VALUE", "UNIT", "SOURCE", "RANGE", "DOC"}};
  for (size_t i = 0; i < knobs.size(); ++i) {
    const Knob& knob = knobs[i];
    rows.push_back({std::string(knob.name) + (knob.live ? "" : " *"),
                    transport::FormatKnobValue(knob, knob.get(loaded.config)),
                    std::string(knob.unit), loaded.sources[i].ToString(),
                    transport::FormatKnobRange(knob), std::string(knob.doc)});
  }
  PrintTable(rows, {}, out);
  out << "\n* set when the transport starts: a running server keeps its own value "
         "(`apply config --live` and sweep trials cannot change it)\n";
}

void PrintConfigExplain(const transport::Config& config, std::ostream& out) {
  const std::vector<transport::ProtocolRange> ranges = transport::ProtocolRanges(config);
  const std::vector<uint64_t> sizes = transport::ExampleSliceSizes(config);
  out << "Protocol per slice size under eager_threshold=" << FormatBytes(config.eager_threshold)
      << " chunk_size=" << FormatBytes(config.chunk_size)
      << " pipeline_depth=" << config.pipeline_depth
      << " coalesce_limit=" << FormatBytes(config.coalesce_limit) << "\n\n";
  std::vector<std::vector<std::string>> range_rows = {{"SLICE SIZE", "PROTOCOL", "HOW"}};
  for (const transport::ProtocolRange& row : ranges) {
    range_rows.push_back({transport::FormatProtocolRange(row),
                          std::string(transport::ProtocolName(row.protocol)), row.how});
  }
  PrintTable(range_rows, {}, out);

  out << "\nExamples (one slice of each size):\n\n";
  std::vector<std::vector<std::string>> example_rows = {
      {"SIZE", "BYTES", "PROTOCOL", "CHUNKS", "PIPELINE ROUNDS"}};
  for (uint64_t bytes : sizes) {
    const transport::SliceExample example = transport::ExplainSlice(bytes, config);
    example_rows.push_back({FormatBytes(bytes), std::to_string(bytes),
                            std::string(transport::ProtocolName(example.protocol)),
                            example.chunks == 0 ? "-" : std::to_string(example.chunks),
                            example.rounds == 0 ? "-" : std::to_string(example.rounds)});
  }
  PrintTable(example_rows, {}, out);
}

void PrintKnobChanges(const std::vector<tuner::KnobChange>& changes,
                      const std::string& in_force_label, std::ostream& out) {
  std::vector<std::vector<std::string>> rows = {{"KNOB", in_force_label, "SOURCE", "NEW", ""}};
  size_t changed = 0;
  for (const tuner::KnobChange& change : changes) {
    rows.push_back({change.name, change.current, change.current_source, change.proposed,
                    change.changed ? "changed" : ""});
    changed += change.changed ? 1 : 0;
  }
  PrintTable(rows, {}, out);
  out << changed << " of " << changes.size() << " knobs change\n";
}

void PrintVerbsDevices(const std::vector<transport::VerbsDevice>& devices, std::ostream& out) {
  for (const transport::VerbsDevice& device : devices) {
    out << device.name << "  (verbs_device=" << device.position << ", node GUID "
        << device.node_guid << ")\n";
    for (const transport::VerbsPort& port : device.ports) {
      out << "  port " << port.number << "  " << port.state << "  " << port.link_layer
          << "  active MTU " << port.active_mtu << " (max " << port.max_mtu << ")\n";
      for (const transport::VerbsGid& gid : port.gids) {
        out << "    GID[" << gid.index << "]  " << gid.gid;
        if (!gid.type.empty()) out << "  " << gid.type;
        if (!gid.netdev.empty()) out << "  " << gid.netdev;
        out << "\n";
      }
    }
  }
}

}  // namespace artune::report
