// The knob table: every field of Config (config.h) declared once, with its name,
// type, default, range, unit, one-line doc and environment name. The TOML loader
// (config_loader.h), the environment overrides, the CLI's --set flags,
// `artune config show`, the tuner's search space and the store's config columns are
// all driven by this table, so a new knob is one new row in knobs.cc.
//
// Threading: the table is immutable static data; every function here is pure and
// safe to call from any thread.
//
// Value syntax accepted by SetKnob (and therefore by TOML strings, ARTUNE_* variables
// and --set):
//   bytes         "4096", "4096B", "16K", "16KB", "16KiB", "1M", "1MiB", "1G", "1GiB"
//                 (case-insensitive; K, KB and KiB all mean 1024 — transport sizes are
//                 powers of two, as in UCX's memunits)
//   count         "64"
//   milliseconds  "10000", "10000ms", "10s"
//   enum          one of the knob's choices by name, e.g. "tcp", "verbs", "auto"
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "artune/status.h"
#include "artune/transport/config.h"

namespace artune::transport {

// Per-packet header budget of one eager buffer: the engine's packet header (fixed
// part plus one descriptor per packed slice, for up to kMaxSlicesPerEagerPacket
// slices) must fit in this many bytes. An eager buffer is
// max(eager_threshold, coalesce_limit) + kEagerPacketHeaderBytes (EagerBufferBytes).
inline constexpr uint64_t kEagerPacketHeaderBytes = 1024;

// PlanMessage never packs more slices than this into one eager packet, so the
// per-slice descriptors always fit in kEagerPacketHeaderBytes (zero-length slices
// cost no payload, so without a cap a packet could hold any number of them).
inline constexpr uint32_t kMaxSlicesPerEagerPacket = 64;

// Upper bound on the registered eager memory of one connection
// (eager_buffer_count * EagerBufferBytes); ValidateConfig rejects configs above it,
// because every connection pins this much memory on both ends.
inline constexpr uint64_t kMaxEagerPoolBytes = uint64_t{1} << 30;  // 1 GiB

enum class KnobType {
  kBytes,         // an unsigned size in bytes; accepts unit suffixes
  kCount,         // an unsigned count
  kMilliseconds,  // an unsigned duration in milliseconds; accepts ms / s suffixes
  kEnum,          // one of `choices`; stored as the index of the choice
};

std::string_view KnobTypeName(KnobType type);  // "bytes", "count", "milliseconds", "enum"

// One row of the table. Numeric knobs are read and written as uint64_t through
// get/set; enum knobs as the index of their choice (the enum's underlying value,
// which equals the position in `choices`).
struct Knob {
  std::string_view name;      // snake_case; also the TOML key
  std::string_view env_name;  // "ARTUNE_" + upper-case name
  KnobType type;
  std::string_view unit;  // "bytes", "chunks", "calls", "buffers", "ms", "" for enums
  std::string_view doc;   // one line
  uint64_t min_value;     // inclusive; for enums 0
  uint64_t max_value;     // inclusive; for enums choices.size() - 1
  std::span<const std::string_view> choices;  // enum knobs only
  uint64_t (*get)(const Config& config);
  void (*set)(Config& config, uint64_t value);  // value already range-checked
  // True when a running transport takes a new value at once (Server::Reconfigure,
  // Client::Reconfigure, `artune apply config --live`). False for what is fixed when
  // a transport starts: the fabric and the verbs device, port, GID and QP
  // attributes. A running side keeps its own value of those (each side's are its
  // own, never negotiated); a new value needs a restart.
  bool live;

  uint64_t DefaultValue() const { return get(Config{}); }
};

// Every knob, in a stable order (the order of Config's fields).
std::span<const Knob> Knobs();

// The knob named `name` (snake_case), or nullptr.
const Knob* FindKnob(std::string_view name);
// The knob whose environment name is `env_name` ("ARTUNE_EAGER_THRESHOLD"), or nullptr.
const Knob* FindKnobByEnvName(std::string_view env_name);

// The knob whose name is closest to a misspelt `name` (edit distance at most 3), for
// "did you mean" hints; nullptr when nothing is close.
const Knob* NearestKnob(std::string_view name);

// Parses `text` per the knob's type and checks its range. The error
// (kInvalidArgument) names the knob, the text and the allowed range or choices.
Result<uint64_t> ParseKnobValue(const Knob& knob, std::string_view text);

// Parses `text` and stores it into `config`. Errors: unknown knob name (the message
// lists the known ones), or any ParseKnobValue error. On error `config` is unchanged.
Status SetKnob(Config& config, std::string_view name, std::string_view text);

// A knob's value as text that SetKnob accepts back: bytes with the largest exact
// binary unit ("16KiB", "512KiB", "1MiB", "1000"), counts and ms as plain numbers,
// enums by name.
std::string FormatKnobValue(const Knob& knob, uint64_t value);
// A byte count with the largest exact binary unit: "0", "1000", "16KiB", "3MiB", "1GiB".
std::string FormatBytes(uint64_t bytes);
// FormatKnobValue of the knob's value in `config`; "" for an unknown name.
std::string FormatKnob(const Config& config, std::string_view name);
// "0 .. 1MiB", "1 .. 64", "tcp|verbs|auto".
std::string FormatKnobRange(const Knob& knob);

// Every knob's FormatKnob text, keyed by name (the store's config columns).
std::map<std::string, std::string> ConfigToMap(const Config& config);

// A commented TOML document (one key per knob, doc / range / environment name in a
// comment above it) that the loader reads back into the same Config.
std::string ToToml(const Config& config);

}  // namespace artune::transport
