// The events every capture backend emits, whatever it watches (packets, syscalls,
// interposed calls): byte-stream segments per connection direction, and I/O calls
// with their full iovec length lists.
//
// A backend turns its raw observations into these events and hands them to an
// EventSink on the backend's run thread; the sink never sees packets, BPF records
// or shared-memory slots. Byte spans are only valid for the duration of the call:
// a sink that needs bytes later copies them (the decoders here do not, they stream).
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace artune::probes {

// One side of a TCP connection. IPv4 addresses use the first 4 bytes of `address`.
struct Endpoint {
  enum class Family : uint8_t { kIpv4 = 4, kIpv6 = 6 };
  Family family = Family::kIpv4;
  std::array<uint8_t, 16> address{};
  uint16_t port = 0;

  // From a kernel socket address: `family` AF_INET or AF_INET6, `address` 4 or 16
  // bytes in network order. IPv4-mapped IPv6 (::ffff:a.b.c.d, what a dual-stack
  // listener sees) becomes plain IPv4, as a packet capture would show it.
  static Endpoint FromSocketAddress(uint16_t family, const uint8_t* address, uint16_t port);

  // "127.0.0.1:50051" or "[::1]:50051".
  std::string ToString() const;
  auto operator<=>(const Endpoint&) const = default;
};

// One direction of a connection: bytes flow from `source` to `destination`.
struct FlowKey {
  Endpoint source;
  Endpoint destination;

  FlowKey Reversed() const { return {destination, source}; }
  std::string ToString() const;  // "127.0.0.1:40000 -> 127.0.0.1:50051"
  auto operator<=>(const FlowKey&) const = default;
};

// How the backend began observing a flow.
enum class FlowOrigin : uint8_t {
  kHandshake,  // from its first byte (TCP SYN seen, connect()/accept() seen)
  kMidStream,  // joined while data was already flowing: framing must be recovered
};

enum class FlowEnd : uint8_t {
  kFin,          // orderly close
  kReset,        // TCP RST
  kCaptureStop,  // the capture ended while the flow was open
};

// In-order bytes of one flow, without duplicates: the backend has already
// reassembled (pcap) or the kernel delivered them in order (syscalls).
struct StreamSegment {
  FlowKey flow;
  uint64_t timestamp_ns = 0;       // when the bytes were seen (CLOCK_REALTIME for pcap)
  std::span<const uint8_t> bytes;  // valid only during the callback
};

// The syscalls (or interposed libc calls) the ebpf and preload backends report.
enum class IoSyscall : uint8_t {
  kSendmsg,
  kRecvmsg,
  kWritev,
  kReadv,
  kSendto,
  kRecvfrom,
  kWrite,
  kRead,
};
const char* IoSyscallName(IoSyscall call);
bool IsSendSyscall(IoSyscall call);

// One completed I/O call on a socket.
struct IoCallEvent {
  // gRPC writes up to ~260 iovecs per sendmsg; the kernel caps at UIO_MAXIOV (1024).
  static constexpr size_t kMaxIovecs = 1024;

  IoSyscall syscall = IoSyscall::kSendmsg;
  uint32_t pid = 0;
  uint32_t tid = 0;
  int32_t fd = -1;
  // Direction of the bytes: source = local for sends, remote for receives.
  FlowKey flow;
  // Every iov_len of the call in order (one entry for write/read/sendto/recvfrom);
  // at most kMaxIovecs entries.
  std::vector<uint32_t> iovec_lengths;
  // Bytes actually transferred (the return value); negative: -errno.
  int64_t result = 0;
  uint64_t start_ns = 0;  // CLOCK_MONOTONIC at entry
  uint64_t end_ns = 0;    // at exit
};

// Receives the events of one backend run. Called on the backend's run thread only,
// so implementations need no locking. Calls for one flow come in order: OnFlowOpen,
// then any OnStreamBytes/OnStreamGap, then at most one OnFlowClose.
class EventSink {
 public:
  virtual ~EventSink() = default;
  virtual void OnFlowOpen(const FlowKey& flow, FlowOrigin origin, uint64_t timestamp_ns) = 0;
  virtual void OnStreamBytes(const StreamSegment& segment) = 0;
  // `missing_bytes` of the flow were lost (capture drop, a hole the reassembler gave
  // up on, a truncated packet); what follows is not contiguous with what came before.
  virtual void OnStreamGap(const FlowKey& flow, uint64_t missing_bytes, uint64_t timestamp_ns) = 0;
  virtual void OnFlowClose(const FlowKey& flow, FlowEnd end, uint64_t timestamp_ns) = 0;
  virtual void OnIoCall(const IoCallEvent& event) = 0;
};

}  // namespace artune::probes
