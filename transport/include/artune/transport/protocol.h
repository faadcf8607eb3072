// Protocol selection: which wire protocol carries each slice of a message. Pure
// arithmetic over a Config, shared by the engine, `artune config explain` and the
// stats, so the three can never disagree.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "artune/transport/config.h"

namespace artune::transport {

enum class Protocol : uint8_t {
  kEager = 0,              // one slice copied into one eager buffer, two-sided send
  kCoalescedEager = 1,     // several small slices packed in order into one eager buffer
  kRendezvousRead = 2,     // sender announces (addr, key, len); receiver reads; FIN
  kChunkedRendezvous = 3,  // rendezvous read cut into chunk_size pieces, pipelined
};
inline constexpr int kProtocolCount = 4;

std::string_view ProtocolName(Protocol protocol);         // "eager", "coalesced-eager", ...
std::string_view ProtocolDescription(Protocol protocol);  // one line, for explain

// The protocol one slice of `size` bytes gets on its own: kEager when
// size <= eager_threshold, kRendezvousRead when it fits one chunk, else
// kChunkedRendezvous. (Coalescing is decided per message, see PlanMessage.)
Protocol ChooseSliceProtocol(uint64_t size, const Config& config);

// Eager slices packed into one eager buffer, in message order.
struct EagerPacket {
  std::vector<uint32_t> slice_indices;   // indices into the message's slices
  uint64_t payload_bytes = 0;            // sum of their sizes, <= EagerBufferBytes - header
  Protocol protocol = Protocol::kEager;  // kCoalescedEager when it holds > 1 slice
};

// One slice moved by rendezvous.
struct RendezvousTransfer {
  uint32_t slice_index = 0;
  uint64_t bytes = 0;
  uint64_t chunk_bytes = 0;  // == bytes for kRendezvousRead
  uint32_t chunk_count = 1;
  Protocol protocol = Protocol::kRendezvousRead;
};

// How one message (a list of slices) travels. Consecutive eager slices are packed
// greedily, in order, while the packet stays within coalesce_limit; a slice that
// would overflow starts a new packet. Every slice appears exactly once.
struct MessagePlan {
  std::vector<EagerPacket> eager_packets;
  std::vector<RendezvousTransfer> rendezvous;
};
MessagePlan PlanMessage(std::span<const uint64_t> slice_sizes, const Config& config);
// The same plan written into `plan`, reusing the room of its vectors: a sender
// that plans every message into one MessagePlan allocates nothing per message of
// a shape it has sent before.
void PlanMessage(std::span<const uint64_t> slice_sizes, const Config& config, MessagePlan& plan);

// Offsets and lengths of the chunks of a rendezvous transfer of `total` bytes.
struct ChunkRange {
  uint64_t offset = 0;
  uint64_t length = 0;
};
std::vector<ChunkRange> ChunkRanges(uint64_t total, uint64_t chunk_size);

// Log2 size bucket used by all stats: bucket b holds sizes in [2^b, 2^(b+1)),
// bucket 0 also holds size 0.
int Log2Bucket(uint64_t size);
inline constexpr int kLog2BucketCount = 48;

}  // namespace artune::transport
