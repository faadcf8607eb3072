// The transport's config as text, for `artune config show` and `config explain`:
// every knob of the knob table with its value and where it came from, and which
// protocol serves each slice size under a config (transport/protocol_ranges.h, the
// code the transport runs); for `artune apply config`, a config's changes; for
// `artune devices`, the verbs devices the verbs_device knob picks from.
// Prints to the stream given; no errors.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "artune/transport/config.h"
#include "artune/transport/config_loader.h"
#include "artune/transport/devices.h"
#include "artune/tuner/config_emit.h"

namespace artune::report {

// The config file in force, then a row per knob: value, unit, source, range, doc;
// the knobs fixed at start-up starred.
void PrintConfigShow(const transport::LoadedConfig& loaded, std::ostream& out);

// The protocol of each slice size range, then one example slice of each size with
// its protocol, chunks and pipeline rounds.
void PrintConfigExplain(const transport::Config& config, std::ostream& out);

// A row per knob: the value in force (its column titled `in_force_label`), its
// source, the new value and whether it changes; then how many change.
void PrintKnobChanges(const std::vector<tuner::KnobChange>& changes,
                      const std::string& in_force_label, std::ostream& out);

// Per device: its name, verbs_device number and node GUID; per port: state, link
// layer and MTUs; per GID: index, GID, type and netdev.
void PrintVerbsDevices(const std::vector<transport::VerbsDevice>& devices, std::ostream& out);

}  // namespace artune::report
