// "A transport under benchmark": the small interface the TF-gRPC-Bench runners
// (benchmark.h) drive, with one implementation per transport:
//   artune  the embedded transport (transport.h): payload buffers live in the
//           client's registered allocator, so they go out zero-copy;
//   grpc    stock gRPC C++ over HTTP/2 with the generic API: the payload is a
//           multi-slice grpc::ByteBuffer, one slice per buffer, the way TensorFlow
//           sends tensors; the server is an async generic service.
//
// Both serve the same methods (BenchMethod): echo returns the request, ack
// returns an Ack (checksum.h) of what was received, count the same without the
// checksum. Every reply is validated by the
// channel against the payload before the call is reported done.
//
// Lifetimes: a PreparedPayload belongs to the channel that made it and must outlive
// every call that uses it; a channel must outlive its calls' completions (the
// runners wait for all of them). A BenchServer serves until Shutdown() or
// destruction.
//
// Threading: channels are thread-safe (many calls in flight from many threads);
// completion callbacks run on transport threads, must not block, and may run
// concurrently with each other.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "artune/status.h"
#include "artune/transport/config.h"
#include "artune/tuner/payload.h"

namespace artune::tuner {

// kCount: as kAck without the server's checksum (checksum.h).
enum class BenchMethod : uint8_t { kEcho, kAck, kCount };

// Method names on the wire. artune: handler names; grpc: full method paths.
inline constexpr std::string_view kArtuneEchoMethod = "artune.bench/echo";
inline constexpr std::string_view kArtuneAckMethod = "artune.bench/ack";
inline constexpr std::string_view kArtuneCountMethod = "artune.bench/count";
inline constexpr std::string_view kGrpcEchoMethod = "/artune.bench.Bench/Echo";
inline constexpr std::string_view kGrpcAckMethod = "/artune.bench.Bench/Ack";
inline constexpr std::string_view kGrpcCountMethod = "/artune.bench.Bench/Count";

// Checks a reply to `method` against the payload that was sent (checksum.h).
Status ValidateBenchReply(BenchMethod method, std::span<const std::span<const std::byte>> reply,
                          const Payload& payload);

// A payload made ready for repeated sending over one channel (copied into
// registered memory, or wrapped in slices). Immutable; shareable by concurrent calls.
class PreparedPayload {
 public:
  virtual ~PreparedPayload() = default;
  virtual const Payload& payload() const = 0;
};

// The outcome of one call: ok, a transport error, or kCorruption when the reply
// failed validation.
using CallDone = std::function<void(Status)>;

class BenchChannel {
 public:
  virtual ~BenchChannel() = default;
  // `payload` must outlive the returned object.
  virtual Result<std::unique_ptr<PreparedPayload>> Prepare(const Payload& payload) = 0;
  // Blocks until the reply arrived and was validated. The cheapest round trip the
  // transport offers (the latency benchmark uses it).
  virtual Status Call(BenchMethod method, const PreparedPayload& payload) = 0;
  // Starts a call; `done` runs exactly once with the validated outcome.
  virtual void CallAsync(BenchMethod method, const PreparedPayload& payload, CallDone done) = 0;
  // Pushes `config` to both ends through the control plane: calls started after it
  // returns use it, calls in flight finish under the old values (the sweep's trials).
  // kUnsupported for a transport without live reconfiguration (grpc); the
  // transport's errors otherwise (kInvalidArgument for a config a side refuses).
  virtual Status Reconfigure(const transport::Config& config) {
    (void)config;
    return Status::Unsupported("this transport cannot be reconfigured live");
  }
  // The config both ends agreed on (artune), as knob text; empty for grpc.
  virtual std::map<std::string, std::string> AgreedConfig() const { return {}; }
};

class BenchServer {
 public:
  virtual ~BenchServer() = default;
  // "host:port" with the real port.
  virtual std::string address() const = 0;
  // Where the payload flows when it is not `address` (artune: the fabric's data
  // listener, e.g. "host:port" for tcp); "" when it is.
  virtual std::string data_endpoint() const { return ""; }
  // artune with fabric = auto: its same-host shared-memory listener; "" when none.
  virtual std::string local_endpoint() const { return ""; }
  // Stops serving; in-flight calls fail. Idempotent.
  virtual void Shutdown() = 0;
};

// A transport under benchmark: starts servers and opens channels.
class BenchTransport {
 public:
  virtual ~BenchTransport() = default;
  virtual std::string_view name() const = 0;  // "artune" | "grpc"
  // Serves echo and ack on `listen_address` ("host:port", port 0 picks a free one).
  virtual Result<std::unique_ptr<BenchServer>> StartServer(const std::string& listen_address) = 0;
  // Opens one client connection of its own (never shared with other channels, so
  // N channels are N connections).
  virtual Result<std::unique_ptr<BenchChannel>> Connect(const std::string& server_address) = 0;
  // Every effective setting of this transport, as text (stored with each run):
  // after a Connect, what the server agreed to (a server keeps its own live
  // knobs for its connections, so against a peer they may differ from the
  // config this transport was made with).
  virtual std::map<std::string, std::string> EffectiveConfig() const = 0;
  // "tcp" / "verbs" for artune (after a Connect or StartServer), "" for grpc.
  virtual std::string fabric() const = 0;
};

// The embedded transport with `config` (already validated by the knob loader).
std::unique_ptr<BenchTransport> MakeArtuneBenchTransport(const transport::Config& config);

struct GrpcBenchOptions {
  // Server completion-queue threads (each polls its own queue).
  int server_threads = 2;
  // Per-call deadline.
  std::chrono::milliseconds timeout{10000};
};
std::unique_ptr<BenchTransport> MakeGrpcBenchTransport(const GrpcBenchOptions& options = {});

// Stock gRPC as the benchmarks' servers and clients use it: `threads`
// completion-queue threads per server, and the per-call timeout of `config` (the
// embedded transport's), so both transports give up on a call alike.
std::unique_ptr<BenchTransport> MakeGrpcServerTransport(int threads,
                                                        const transport::Config& config);

// "artune" or "grpc" (config used only by artune).
Result<std::unique_ptr<BenchTransport>> MakeBenchTransport(std::string_view name,
                                                           const transport::Config& config);

// The ports of one `artune serve` host: server i of a transport listens on
// base_port + 2*i (artune) and base_port + 2*i + 1 (grpc). `address` is
// "host:base_port".
Result<std::string> ServerAddressFor(std::string_view transport_name, const std::string& address,
                                     int server_index);

}  // namespace artune::tuner
