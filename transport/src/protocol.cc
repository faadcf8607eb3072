// Protocol selection: pure arithmetic over a Config (see protocol.h).
//
// Decisions this file makes (the engine, `artune config explain` and the stats all
// rely on them):
//  * Zero-length slices are eager (0 <= eager_threshold always). They are delivered
//    like any other slice: they take a slice descriptor in an eager packet and no
//    payload bytes.
//  * Coalescing walks the message's eager slices in message order; rendezvous slices
//    in between do not close the open packet (TensorFlow interleaves small header
//    slices with large tensor slices, and those headers should share a packet). A
//    packet's slice_indices are therefore increasing but not necessarily adjacent.
//  * A slice joins the open packet when the packet's payload plus the slice stays
//    within coalesce_limit and the packet holds fewer than kMaxSlicesPerEagerPacket
//    slices; otherwise it starts a new packet. A slice larger than coalesce_limit
//    (but within eager_threshold) therefore travels alone as kEager, and the packet
//    it opened accepts nothing more.
//  * coalesce_limit == 0 disables coalescing: every eager slice is its own packet
//    (zero-length ones included).
//  * Packets and transfers are listed in the order of their first slice.
#include "artune/transport/protocol.h"

#include <algorithm>
#include <bit>

#include "artune/transport/knobs.h"

namespace artune::transport {

std::string_view ProtocolName(Protocol protocol) {
  switch (protocol) {
    case Protocol::kEager:
      return "eager";
    case Protocol::kCoalescedEager:
      return "coalesced-eager";
    case Protocol::kRendezvousRead:
      return "rendezvous-read";
    case Protocol::kChunkedRendezvous:
      return "chunked-rendezvous";
  }
  return "unknown";
}

std::string_view ProtocolDescription(Protocol protocol) {
  switch (protocol) {
    case Protocol::kEager:
      return "copied into one pre-registered eager buffer and sent two-sided";
    case Protocol::kCoalescedEager:
      return "several small slices packed in order into one eager buffer, one send";
    case Protocol::kRendezvousRead:
      return "sender announces address, key and length; receiver reads it in one read; FIN";
    case Protocol::kChunkedRendezvous:
      return "rendezvous read cut into chunk_size pieces, pipeline_depth reads in flight";
  }
  return "unknown protocol";
}

Protocol ChooseSliceProtocol(uint64_t size, const Config& config) {
  if (size <= config.eager_threshold) return Protocol::kEager;
  if (size <= config.chunk_size) return Protocol::kRendezvousRead;
  return Protocol::kChunkedRendezvous;
}

MessagePlan PlanMessage(std::span<const uint64_t> slice_sizes, const Config& config) {
  MessagePlan plan;
  PlanMessage(slice_sizes, config, plan);
  return plan;
}

void PlanMessage(std::span<const uint64_t> slice_sizes, const Config& config, MessagePlan& plan) {
  plan.rendezvous.clear();
  // Packets in use; those past it keep their index vectors' room for later plans.
  size_t packets = 0;
  for (size_t i = 0; i < slice_sizes.size(); ++i) {
    const uint64_t size = slice_sizes[i];
    const uint32_t index = static_cast<uint32_t>(i);
    const Protocol protocol = ChooseSliceProtocol(size, config);
    if (protocol == Protocol::kEager) {
      EagerPacket* open = packets > 0 ? &plan.eager_packets[packets - 1] : nullptr;
      const bool fits = open != nullptr && config.coalesce_limit > 0 &&
                        open->payload_bytes + size <= config.coalesce_limit &&
                        open->slice_indices.size() < kMaxSlicesPerEagerPacket;
      if (fits) {
        open->slice_indices.push_back(index);
        open->payload_bytes += size;
        open->protocol = Protocol::kCoalescedEager;
      } else {
        if (packets == plan.eager_packets.size()) plan.eager_packets.emplace_back();
        EagerPacket& packet = plan.eager_packets[packets++];
        packet.slice_indices.clear();
        packet.slice_indices.push_back(index);
        packet.payload_bytes = size;
        packet.protocol = Protocol::kEager;
      }
      continue;
    }
    RendezvousTransfer transfer;
    transfer.slice_index = index;
    transfer.bytes = size;
    transfer.protocol = protocol;
    if (protocol == Protocol::kChunkedRendezvous) {
      transfer.chunk_bytes = config.chunk_size;
      transfer.chunk_count =
          static_cast<uint32_t>((size + config.chunk_size - 1) / config.chunk_size);
    } else {
      transfer.chunk_bytes = size;
      transfer.chunk_count = 1;
    }
    plan.rendezvous.push_back(transfer);
  }
  plan.eager_packets.resize(packets);
}

std::vector<ChunkRange> ChunkRanges(uint64_t total, uint64_t chunk_size) {
  std::vector<ChunkRange> ranges;
  if (total == 0) return ranges;
  if (chunk_size == 0 || chunk_size >= total) {
    ranges.push_back({0, total});
    return ranges;
  }
  ranges.reserve((total + chunk_size - 1) / chunk_size);
  for (uint64_t offset = 0; offset < total; offset += chunk_size) {
    ranges.push_back({offset, std::min(chunk_size, total - offset)});
  }
  return ranges;
}

int Log2Bucket(uint64_t size) {
  if (size <= 1) return 0;
  const int bucket = std::bit_width(size) - 1;
  return bucket < kLog2BucketCount ? bucket : kLog2BucketCount - 1;
}

}  // namespace artune::transport
