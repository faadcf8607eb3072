// The profile: what the traffic looks like, per gRPC method and direction and per
// connection, as plain structs (the store and the tuner read these; JSON in and out
// through profile_output.h).
//
// Classification rules (also in probes/README.md, tested in profile_test.cc):
// * log2 histograms: a size s > 0 falls in the bucket whose lower bound is the
//   largest power of two <= s; size 0 in bucket 0.
// * classes (TF-gRPC-Bench): small [1 B, 1 KiB), medium [1 KiB, 1 MiB),
//   large [1 MiB, inf); empty messages (0 B) are counted apart.
// * payload scheme of a method+direction, from its message sizes:
//     none     no messages;
//     uniform  max <= 1.25 x min (one message is uniform);
//     skew     otherwise, if mean >= 2 x median (a few large messages carry the
//              bytes: a long right tail);
//     random   otherwise (sizes spread without such a tail).
//   The median comes from a deterministic reservoir of up to kSizeSamples sizes
//   (exact below that count); min, max and mean are exact.
// * rates: messages and bytes per whole second since the first message of the
//   capture, at most kMaxRateBuckets seconds (later seconds fold into the last).
// * call concurrency (MethodProfile::inflight, request rows only): a call is in
//   flight on its connection from its first request message (GrpcMessage::
//   call_start; the decoder reports no HEADERS event, and a gRPC request always
//   carries a message) until the decoder reports its end (OnCallEnd): the response
//   side's END_STREAM (trailers), RST_STREAM from either side, or either side of
//   the connection ending. At each call start the calls in flight on that
//   connection, the starting call included (a lone call counts 1), are one sample
//   of the call's method. Calls whose end is never seen (a gap lost the
//   END_STREAM) end with their connection; until then at most
//   kMaxInflightCallsPerConnection calls are tracked per connection, the oldest
//   (lowest stream id: clients open streams in increasing order) dropped first:
//   the decoder itself tracks no more streams than that (DecoderLimits::
//   max_open_streams), so no real concurrency is cut. Order is the decoder's: with
//   pcap, capture order; with the syscall backends, the order their records are
//   decoded (a record published late can shift the samples near it by a call or
//   two).
//   p50, p90 (nearest rank) and max are exact: the builder counts every value
//   (at most kMaxInflightCallsPerConnection distinct ones). The stored histogram
//   is smaller: 1..64 exact, above that log2 buckets named by their upper bound
//   (128 holds 65..128, 256 holds 129..256, ...).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "artune/probes/event.h"
#include "artune/probes/http2_decoder.h"

namespace artune::probes {

inline constexpr uint64_t kSmallLimit = 1024;          // small: [1, 1 KiB)
inline constexpr uint64_t kMediumLimit = 1024 * 1024;  // medium: [1 KiB, 1 MiB)
inline constexpr size_t kSizeSamples = 65536;
inline constexpr size_t kMaxRateBuckets = 86400;
inline constexpr size_t kMaxTensorKinds = 64;
inline constexpr uint32_t kInflightExactUpTo = 64;
inline constexpr size_t kMaxInflightCallsPerConnection = 1024;

enum class SizeClass : uint8_t { kEmpty, kSmall, kMedium, kLarge };
SizeClass ClassifySize(uint64_t size);

enum class PayloadScheme : uint8_t { kNone, kUniform, kRandom, kSkew };
const char* PayloadSchemeName(PayloadScheme scheme);
// The rule above, on exact min/max/mean and a median.
PayloadScheme ClassifyScheme(uint64_t count, uint64_t min, uint64_t max, double mean,
                             double median);

// Log2 histogram: bucket lower bound in bytes -> count.
struct Log2Histogram {
  std::map<uint64_t, uint64_t> buckets;
  static uint64_t BucketOf(uint64_t size);
  void Add(uint64_t size, uint64_t count = 1) { buckets[BucketOf(size)] += count; }
  uint64_t Total() const;
};

struct ClassCount {
  uint64_t count = 0;
  uint64_t bytes = 0;
};

struct SizeClasses {
  ClassCount empty, small, medium, large;
  void Add(uint64_t size);
};

struct RateBucket {
  uint64_t second = 0;  // since the first message of the capture
  uint64_t messages = 0;
  uint64_t bytes = 0;
};

// Calls in flight on the connection when a call of a method started (the rule
// above). All zero means unknown: no call start was seen, a response row, or a
// profile stored before the field existed.
struct CallConcurrency {
  uint64_t samples = 0;                    // call starts seen
  std::map<uint32_t, uint64_t> histogram;  // bucket (see BucketOf) -> call starts
  uint32_t p50 = 0;
  uint32_t p90 = 0;
  uint32_t max = 0;  // exact

  // 1..64: the count itself; above: the next power of two (the bucket's upper bound).
  static uint32_t BucketOf(uint32_t inflight);
  // Nearest rank over `counts` (value -> samples): the smallest value whose
  // cumulative count reaches q x all samples (at least the first); 0 when empty.
  static uint32_t Percentile(const std::map<uint32_t, uint64_t>& counts, double q);
  // From exact counts (value -> samples): every field.
  static CallConcurrency FromCounts(const std::map<uint32_t, uint64_t>& counts);
};

struct MethodProfile {
  std::string method;  // gRPC :path, or "unknown"
  MessageDirection direction = MessageDirection::kRequest;
  uint64_t messages = 0;
  uint64_t bytes = 0;  // gRPC message payload bytes (5-byte headers excluded)
  uint64_t compressed_messages = 0;
  uint64_t min_size = 0;
  uint64_t max_size = 0;
  double median_size = 0;
  Log2Histogram message_sizes;
  // Sizes of the send iovecs that carried this method's frames (ebpf with --decode,
  // preload with bytes): an iovec belongs to the frame holding its first byte.
  Log2Histogram iovec_sizes;
  SizeClasses classes;
  PayloadScheme scheme = PayloadScheme::kNone;
  std::vector<RateBucket> rates;
  // Tensors of RecvTensor responses: "DT_FLOAT[256,1024]" -> count.
  std::map<std::string, uint64_t> tensors;
  // Calls of the connection in flight when a call of this method started: on the
  // request row only (the response row leaves it unknown, all zero).
  CallConcurrency inflight;
};

struct ConnectionProfile {
  uint64_t id = 0;
  std::string client;  // "127.0.0.1:40000"; client/server by the decoder's role
  std::string server;
  bool roles_known = false;  // from the preface or HPACK, not only the port hint
  bool joined_midway = false;
  uint64_t data_frames = 0;
  uint64_t data_bytes = 0;
  uint64_t unattributed_data_bytes = 0;
  uint64_t request_messages = 0, request_bytes = 0;
  uint64_t response_messages = 0, response_bytes = 0;
  Log2Histogram request_sizes, response_sizes;
};

// I/O calls of one flow (ebpf, preload).
struct IoFlowProfile {
  std::string flow;  // "local -> remote" for sends, "remote -> local" for receives
  bool send = true;
  uint64_t calls = 0;
  uint64_t bytes = 0;  // sum of successful results
  uint64_t failed_calls = 0;
  Log2Histogram iovec_sizes;
  Log2Histogram iovecs_per_call;
};

struct Profile {
  std::string backend;
  double duration_s = 0;
  std::optional<int64_t> capture_id;       // set once stored
  std::map<std::string, uint64_t> errors;  // decode error kind -> count (nonzero only)
  uint64_t lost_events = 0;
  uint64_t connections_joined_midway = 0;
  std::map<std::string, uint64_t> backend_detail;
  std::vector<MethodProfile> methods;  // sorted by method, then request before response
  std::vector<ConnectionProfile> connections;
  std::vector<IoFlowProfile> io_flows;
  // Send iovecs not attributed to a method: connection frames (preface, SETTINGS,
  // PING, WINDOW_UPDATE), streams whose method is unknown, and calls whose bytes
  // were not decoded (no byte copy, lost framing, non-gRPC traffic).
  Log2Histogram unattributed_iovec_sizes;
};

// Accumulates messages and I/O calls into a Profile. Not thread-safe (one backend
// run thread). Memory: per method+direction a bounded reservoir and rate buckets.
class ProfileBuilder {
 public:
  ProfileBuilder();
  ~ProfileBuilder();
  ProfileBuilder(const ProfileBuilder&) = delete;
  ProfileBuilder& operator=(const ProfileBuilder&) = delete;

  // A message with call_start also starts a call: it is sampled for concurrency.
  void AddMessage(const GrpcMessage& message);
  // The call (connection, stream) is no longer in flight (GrpcMessageObserver::
  // OnCallEnd); unknown calls are ignored.
  void EndCall(uint64_t connection_id, uint32_t stream_id);
  void AddIoCall(const IoCallEvent& event);
  // One send iovec attributed to `method` (a :path, never empty) and direction.
  void AddMethodIovec(std::string_view method, MessageDirection direction, uint64_t length);
  void AddUnattributedIovec(uint64_t length);
  // Connection facts known at the end (addresses, roles, decode stats).
  void SetConnection(const ConnectionProfile& connection);

  Profile Build(std::string backend, double duration_s, const DecodeErrorCounts& errors,
                uint64_t lost_events) const;

 private:
  void AddTensor(MethodProfile& method, const GrpcMessage& message);
  void CountConnectionMessage(const GrpcMessage& message);
  // Tracks the call on its connection and counts the calls in flight there.
  void StartCall(std::map<uint32_t, uint64_t>& inflight_counts, const GrpcMessage& message);

  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace artune::probes
