// The knob table (one row per Config field) and everything derived from it:
// parsing, formatting, validation, TOML output.
#include "artune/transport/knobs.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <limits>
#include <sstream>
#include <type_traits>
#include <vector>

#include "artune/base/text.h"
#include "artune/transport/config.h"

namespace artune::transport {
namespace {

constexpr uint64_t kKiB = 1024;
constexpr uint64_t kMiB = 1024 * kKiB;
constexpr uint64_t kGiB = 1024 * kMiB;

// Typed accessors generated from a member pointer, so each row names its field once.
template <auto Member>
uint64_t ReadField(const Config& config) {
  return static_cast<uint64_t>(config.*Member);
}
template <auto Member>
void WriteField(Config& config, uint64_t value) {
  using Field = std::remove_cvref_t<decltype(Config{}.*Member)>;
  config.*Member = static_cast<Field>(value);
}

// Choice names in the order of the enum's values (FabricKind, PollingMode).
constexpr std::array<std::string_view, 4> kFabricChoices = {"tcp", "verbs", "auto", "shm"};
constexpr std::array<std::string_view, 3> kPollingChoices = {"busy", "event", "adaptive"};
constexpr std::array<std::string_view, 2> kHandlerInlineChoices = {"auto", "off"};
static_assert(static_cast<int>(HandlerInline::kAuto) == 0 &&
              static_cast<int>(HandlerInline::kOff) == 1);
static_assert(static_cast<int>(FabricKind::kTcp) == 0 &&
              static_cast<int>(FabricKind::kVerbs) == 1 &&
              static_cast<int>(FabricKind::kAuto) == 2 && static_cast<int>(FabricKind::kShm) == 3);
static_assert(static_cast<int>(PollingMode::kBusy) == 0 &&
              static_cast<int>(PollingMode::kEvent) == 1 &&
              static_cast<int>(PollingMode::kAdaptive) == 2);

// The table. Ranges are what real hardware and the tuner can use: eager buffers up
// to 1 MiB (past that a copy costs more than a read), chunks 4 KiB (a page) to
// 64 MiB, at most 64 chunk reads in flight (a QP's outstanding-read limit is lower
// still on most NICs, the fabric clamps), and at most an hour per call.
const std::array<Knob, 19> kKnobs = {{
    {"eager_threshold",
     "ARTUNE_EAGER_THRESHOLD",
     KnobType::kBytes,
     "bytes",
     "Slices up to this size are copied into registered buffers and sent eagerly; larger ones "
     "use rendezvous (the receiver reads them)",
     0,
     1 * kMiB,
     {},
     &ReadField<&Config::eager_threshold>,
     &WriteField<&Config::eager_threshold>,
     true},
    {"chunk_size",
     "ARTUNE_CHUNK_SIZE",
     KnobType::kBytes,
     "bytes",
     "Rendezvous reads larger than this are cut into chunks of this size",
     4 * kKiB,
     64 * kMiB,
     {},
     &ReadField<&Config::chunk_size>,
     &WriteField<&Config::chunk_size>,
     true},
    {"pipeline_depth",
     "ARTUNE_PIPELINE_DEPTH",
     KnobType::kCount,
     "chunks",
     "Chunk reads in flight at once for one rendezvous transfer",
     1,
     64,
     {},
     &ReadField<&Config::pipeline_depth>,
     &WriteField<&Config::pipeline_depth>,
     true},
    {"coalesce_limit",
     "ARTUNE_COALESCE_LIMIT",
     KnobType::kBytes,
     "bytes",
     "Bytes of small slices packed into one eager buffer before it is sent (0: no coalescing)",
     0,
     1 * kMiB,
     {},
     &ReadField<&Config::coalesce_limit>,
     &WriteField<&Config::coalesce_limit>,
     true},
    {"max_outstanding",
     "ARTUNE_MAX_OUTSTANDING",
     KnobType::kCount,
     "calls",
     "Calls in flight per connection; further calls wait for a slot",
     1,
     4096,
     {},
     &ReadField<&Config::max_outstanding>,
     &WriteField<&Config::max_outstanding>,
     true},
    {"eager_buffer_count",
     "ARTUNE_EAGER_BUFFER_COUNT",
     KnobType::kCount,
     "buffers",
     "Pre-registered eager receive buffers per connection (also the send credits)",
     2,
     4096,
     {},
     &ReadField<&Config::eager_buffer_count>,
     &WriteField<&Config::eager_buffer_count>,
     true},
    {"fabric", "ARTUNE_FABRIC", KnobType::kEnum, "",
     "Payload fabric: tcp sockets, verbs (RDMA), shm (shared memory, peers on this host), or auto "
     "(shm to a server on this host, else verbs when a device is usable, else tcp)",
     0, kFabricChoices.size() - 1, kFabricChoices, &ReadField<&Config::fabric>,
     &WriteField<&Config::fabric>, false},
    {"polling", "ARTUNE_POLLING", KnobType::kEnum, "",
     "Completion progress: busy (spin, lowest latency, a core per side), event (sleep until "
     "notified) or adaptive (spin poll_spin_us after activity, then sleep; sleeps at once "
     "while the host has no core to spare)",
     0, kPollingChoices.size() - 1, kPollingChoices, &ReadField<&Config::polling>,
     &WriteField<&Config::polling>, true},
    {"poll_spin_us",
     "ARTUNE_POLL_SPIN_US",
     KnobType::kCount,
     "us",
     "polling = adaptive: microseconds a waiting thread spins after the last activity "
     "before it sleeps",
     0,
     100'000,
     {},
     &ReadField<&Config::poll_spin_us>,
     &WriteField<&Config::poll_spin_us>,
     true},
    {"timeout_ms",
     "ARTUNE_TIMEOUT_MS",
     KnobType::kMilliseconds,
     "ms",
     "Default per-call deadline; a call may set its own",
     1,
     3'600'000,
     {},
     &ReadField<&Config::timeout_ms>,
     &WriteField<&Config::timeout_ms>,
     true},
    {"handler_inline", "ARTUNE_HANDLER_INLINE", KnobType::kEnum, "",
     "Server: auto runs handlers registered as non-blocking on the progress thread (no "
     "hand-off per call); off runs every handler on a worker thread",
     0, kHandlerInlineChoices.size() - 1, kHandlerInlineChoices,
     &ReadField<&Config::handler_inline>, &WriteField<&Config::handler_inline>, true},
    {"idle_timeout_ms",
     "ARTUNE_IDLE_TIMEOUT_MS",
     KnobType::kMilliseconds,
     "ms",
     "Server: a data connection idle (no call, nothing received) this long is closed; its "
     "client reconnects on its next call",
     100,
     86'400'000,
     {},
     &ReadField<&Config::idle_timeout_ms>,
     &WriteField<&Config::idle_timeout_ms>,
     false},
    {"verbs_device",
     "ARTUNE_VERBS_DEVICE",
     KnobType::kCount,
     "device",
     "Verbs device: 0 = auto (first with an ACTIVE port), N = the N-th of `artune devices`",
     0,
     64,
     {},
     &ReadField<&Config::verbs_device>,
     &WriteField<&Config::verbs_device>,
     false},
    {"verbs_port",
     "ARTUNE_VERBS_PORT",
     KnobType::kCount,
     "port",
     "Verbs port: 0 = the port the connection's IP address resolves to, else that port",
     0,
     255,
     {},
     &ReadField<&Config::verbs_port>,
     &WriteField<&Config::verbs_port>,
     false},
    {"verbs_gid_index",
     "ARTUNE_VERBS_GID_INDEX",
     KnobType::kCount,
     "index",
     "GID table index; 256 = auto (the GID of the connection's IP address, RoCEv2 when present)",
     0,
     kVerbsGidAuto,
     {},
     &ReadField<&Config::verbs_gid_index>,
     &WriteField<&Config::verbs_gid_index>,
     false},
    {"verbs_mtu",
     "ARTUNE_VERBS_MTU",
     KnobType::kBytes,
     "bytes",
     "Verbs path MTU: 256, 512, 1024, 2048 or 4096 (0 = the port's active MTU)",
     0,
     4096,
     {},
     &ReadField<&Config::verbs_mtu>,
     &WriteField<&Config::verbs_mtu>,
     false},
    {"verbs_inline_size",
     "ARTUNE_VERBS_INLINE_SIZE",
     KnobType::kBytes,
     "bytes",
     "Verbs sends up to this size go inline in the work request (clamped to the device)",
     0,
     1024,
     {},
     &ReadField<&Config::verbs_inline_size>,
     &WriteField<&Config::verbs_inline_size>,
     false},
    {"verbs_qp_timeout",
     "ARTUNE_VERBS_QP_TIMEOUT",
     KnobType::kCount,
     "exponent",
     "Verbs QP ACK timeout 4.096us * 2^n (14 = 67 ms; Soft-RoCE under emulation needs ~17)",
     0,
     31,
     {},
     &ReadField<&Config::verbs_qp_timeout>,
     &WriteField<&Config::verbs_qp_timeout>,
     false},
    {"verbs_retry_count",
     "ARTUNE_VERBS_RETRY_COUNT",
     KnobType::kCount,
     "retries",
     "Verbs retransmissions before an operation fails with a retry-exceeded error",
     0,
     7,
     {},
     &ReadField<&Config::verbs_retry_count>,
     &WriteField<&Config::verbs_retry_count>,
     false},
}};

std::string KnownKnobNames() {
  std::string names;
  for (const Knob& knob : kKnobs) {
    if (!names.empty()) names += ", ";
    names += knob.name;
  }
  return names;
}

Status ValueError(const Knob& knob, std::string_view text, std::string_view problem) {
  std::string message = std::string(knob.name) + ": value '" + std::string(text) + "' " +
                        std::string(problem) + "; allowed ";
  if (knob.type == KnobType::kEnum) {
    message += "one of " + FormatKnobRange(knob);
  } else {
    message += FormatKnobRange(knob);
    if (!knob.unit.empty()) message += " " + std::string(knob.unit);
  }
  return Status::InvalidArgument(std::move(message));
}

// Multiplier of a unit suffix for `type`, or nullopt when the suffix is not allowed.
std::optional<uint64_t> UnitMultiplier(KnobType type, const std::string& suffix) {
  if (suffix.empty()) return 1;
  if (type == KnobType::kBytes) {
    if (suffix == "b") return 1;
    if (suffix == "k" || suffix == "kb" || suffix == "kib") return kKiB;
    if (suffix == "m" || suffix == "mb" || suffix == "mib") return kMiB;
    if (suffix == "g" || suffix == "gb" || suffix == "gib") return kGiB;
  }
  if (type == KnobType::kMilliseconds) {
    if (suffix == "ms") return 1;
    if (suffix == "s") return 1000;
  }
  return std::nullopt;
}

std::string_view SuffixHelp(KnobType type) {
  switch (type) {
    case KnobType::kBytes:
      return "a size such as 4096, 16KiB or 1MiB";
    case KnobType::kMilliseconds:
      return "a duration such as 500, 500ms or 10s";
    default:
      return "a non-negative integer";
  }
}

}  // namespace

std::string_view KnobTypeName(KnobType type) {
  switch (type) {
    case KnobType::kBytes:
      return "bytes";
    case KnobType::kCount:
      return "count";
    case KnobType::kMilliseconds:
      return "milliseconds";
    case KnobType::kEnum:
      return "enum";
  }
  return "unknown";
}

std::span<const Knob> Knobs() { return kKnobs; }

const Knob* FindKnob(std::string_view name) {
  for (const Knob& knob : kKnobs) {
    if (knob.name == name) return &knob;
  }
  return nullptr;
}

const Knob* FindKnobByEnvName(std::string_view env_name) {
  for (const Knob& knob : kKnobs) {
    if (knob.env_name == env_name) return &knob;
  }
  return nullptr;
}

const Knob* NearestKnob(std::string_view name) {
  constexpr size_t kMaxDistance = 3;
  const std::string lowered = Lower(name);
  const Knob* best = nullptr;
  size_t best_distance = kMaxDistance + 1;
  for (const Knob& knob : kKnobs) {
    // Levenshtein distance, one row at a time.
    std::vector<size_t> row(knob.name.size() + 1);
    for (size_t j = 0; j < row.size(); ++j) row[j] = j;
    for (size_t i = 1; i <= lowered.size(); ++i) {
      size_t diagonal = row[0];
      row[0] = i;
      for (size_t j = 1; j <= knob.name.size(); ++j) {
        const size_t substitution = diagonal + (lowered[i - 1] == knob.name[j - 1] ? 0 : 1);
        diagonal = row[j];
        row[j] = std::min({row[j] + 1, row[j - 1] + 1, substitution});
      }
    }
    if (row.back() < best_distance) {
      best_distance = row.back();
      best = &knob;
    }
  }
  return best;
}

Result<uint64_t> ParseKnobValue(const Knob& knob, std::string_view raw_text) {
  const std::string_view text = Trim(raw_text);
  if (knob.type == KnobType::kEnum) {
    const std::string lowered = Lower(text);
    for (size_t i = 0; i < knob.choices.size(); ++i) {
      if (knob.choices[i] == lowered) return static_cast<uint64_t>(i);
    }
    return ValueError(knob, raw_text, "is not a known choice");
  }
  if (!text.empty() && text.front() == '-') {
    return ValueError(knob, raw_text, "is out of range (negative)");
  }
  uint64_t number = 0;
  const char* begin = text.data();
  const char* end = text.data() + text.size();
  const auto [stop, error] = std::from_chars(begin, end, number);
  if (stop == begin) {
    return ValueError(knob, raw_text, "is not " + std::string(SuffixHelp(knob.type)));
  }
  if (error == std::errc::result_out_of_range) {
    return ValueError(knob, raw_text, "is out of range (too large)");
  }
  const std::string suffix = Lower(Trim(std::string_view(stop, end - stop)));
  const std::optional<uint64_t> multiplier = UnitMultiplier(knob.type, suffix);
  if (!multiplier) {
    return ValueError(
        knob, raw_text,
        "has an unknown unit '" + suffix + "'; expected " + std::string(SuffixHelp(knob.type)));
  }
  if (number > std::numeric_limits<uint64_t>::max() / *multiplier) {
    return ValueError(knob, raw_text, "is out of range (too large)");
  }
  const uint64_t value = number * *multiplier;
  if (value < knob.min_value || value > knob.max_value) {
    std::string problem = "is out of range";
    if (*multiplier != 1) problem += " (" + std::to_string(value) + ")";
    return ValueError(knob, raw_text, problem);
  }
  return value;
}

Status SetKnob(Config& config, std::string_view name, std::string_view text) {
  const Knob* knob = FindKnob(name);
  if (knob == nullptr) {
    std::string message = "unknown knob '" + std::string(name) + "'";
    if (const Knob* nearest = NearestKnob(name)) {
      message += " (did you mean " + std::string(nearest->name) + "?)";
    }
    return Status::InvalidArgument(message + "; known knobs: " + KnownKnobNames());
  }
  ARTUNE_ASSIGN_OR_RETURN(const uint64_t value, ParseKnobValue(*knob, text));
  knob->set(config, value);
  return Status::Ok();
}

std::string FormatKnobValue(const Knob& knob, uint64_t value) {
  switch (knob.type) {
    case KnobType::kEnum:
      if (value < knob.choices.size()) return std::string(knob.choices[value]);
      return "invalid(" + std::to_string(value) + ")";
    case KnobType::kBytes:
      return FormatBytes(value);
    case KnobType::kCount:
    case KnobType::kMilliseconds:
      return std::to_string(value);
  }
  return std::to_string(value);
}

std::string FormatBytes(uint64_t bytes) {
  if (bytes != 0) {
    if (bytes % kGiB == 0) return std::to_string(bytes / kGiB) + "GiB";
    if (bytes % kMiB == 0) return std::to_string(bytes / kMiB) + "MiB";
    if (bytes % kKiB == 0) return std::to_string(bytes / kKiB) + "KiB";
  }
  return std::to_string(bytes);
}

std::string FormatKnob(const Config& config, std::string_view name) {
  const Knob* knob = FindKnob(name);
  if (knob == nullptr) return "";
  return FormatKnobValue(*knob, knob->get(config));
}

std::string FormatKnobRange(const Knob& knob) {
  if (knob.type == KnobType::kEnum) {
    std::string choices;
    for (std::string_view choice : knob.choices) {
      if (!choices.empty()) choices += "|";
      choices += choice;
    }
    return choices;
  }
  return FormatKnobValue(knob, knob.min_value) + " .. " + FormatKnobValue(knob, knob.max_value);
}

std::map<std::string, std::string> ConfigToMap(const Config& config) {
  std::map<std::string, std::string> values;
  for (const Knob& knob : kKnobs) {
    values.emplace(std::string(knob.name), FormatKnobValue(knob, knob.get(config)));
  }
  return values;
}

std::string ToToml(const Config& config) {
  std::ostringstream out;
  out << "# artune embedded transport configuration.\n"
         "# Every key is optional; a missing key keeps its default. Each key can be\n"
         "# overridden by the environment variable named in its comment.\n";
  for (const Knob& knob : kKnobs) {
    const uint64_t value = knob.get(config);
    out << "\n# " << knob.doc << ".\n";
    out << "# " << KnobTypeName(knob.type) << ", allowed " << FormatKnobRange(knob);
    if (!knob.unit.empty()) out << " " << knob.unit;
    out << "; default " << FormatKnobValue(knob, knob.DefaultValue()) << "; env " << knob.env_name
        << "\n";
    // Counts and durations are TOML integers; sizes and enums are strings so that a
    // reader sees "16KiB" rather than 16384.
    if (knob.type == KnobType::kCount || knob.type == KnobType::kMilliseconds) {
      out << knob.name << " = " << value << "\n";
    } else {
      out << knob.name << " = \"" << FormatKnobValue(knob, value) << "\"\n";
    }
  }
  return out.str();
}

uint64_t EagerBufferBytes(const Config& config) {
  return std::max(config.eager_threshold, config.coalesce_limit) + kEagerPacketHeaderBytes;
}

// Cross-knob rules, decided here and nowhere else:
//  * chunk_size may be smaller than eager_threshold: then every rendezvous slice is
//    chunked and the plain rendezvous-read range is empty. That is a legitimate
//    point of the tuner's grid, so it is not an error.
//  * the eager pool of one connection (eager_buffer_count * EagerBufferBytes) must
//    stay within kMaxEagerPoolBytes, since both ends pin it per connection.
Status ValidateConfig(const Config& config) {
  for (const Knob& knob : kKnobs) {
    const uint64_t value = knob.get(config);
    if (value < knob.min_value || value > knob.max_value) {
      return ValueError(knob, FormatKnobValue(knob, value), "is out of range");
    }
  }
  if (config.verbs_mtu != 0 &&
      (config.verbs_mtu < 256 || (config.verbs_mtu & (config.verbs_mtu - 1)) != 0)) {
    return Status::InvalidArgument("verbs_mtu: value '" + std::to_string(config.verbs_mtu) +
                                   "' is not a verbs MTU; allowed 0 (active MTU), 256, 512, "
                                   "1024, 2048 or 4096");
  }
  const uint64_t pool_bytes = uint64_t{config.eager_buffer_count} * EagerBufferBytes(config);
  if (pool_bytes > kMaxEagerPoolBytes) {
    return Status::InvalidArgument(
        "eager_buffer_count " + std::to_string(config.eager_buffer_count) + " x eager buffer of " +
        std::to_string(EagerBufferBytes(config)) +
        " bytes (max(eager_threshold, coalesce_limit) + " +
        std::to_string(kEagerPacketHeaderBytes) + " header) = " + std::to_string(pool_bytes) +
        " bytes of registered memory per connection, more than the allowed " +
        std::to_string(kMaxEagerPoolBytes) +
        "; lower eager_buffer_count, eager_threshold or coalesce_limit");
  }
  return Status::Ok();
}

}  // namespace artune::transport
