#include "relay_wire.h"

#include <algorithm>
#include <cstring>
#include <map>

namespace artune::relay {
namespace {

constexpr uint8_t kWireVersion = 1;
constexpr size_t kDataHeadBytes = 4 + 8 * 3 + 4 + 4;
constexpr size_t kRunEntryBytes = 8;  // u32 length, u32 slice (0: literal)
constexpr size_t kMaxOpenString = 1024;

class Writer {
 public:
  void U8(uint8_t value) { bytes.push_back(std::byte{value}); }
  void U16(uint16_t value) { Raw(&value, sizeof value); }
  void U32(uint32_t value) { Raw(&value, sizeof value); }
  void U64(uint64_t value) { Raw(&value, sizeof value); }
  void String(const std::string& value) {
    U32(static_cast<uint32_t>(value.size()));
    Raw(value.data(), value.size());
  }
  void Raw(const void* data, size_t size) {
    const auto* begin = static_cast<const std::byte*>(data);
    bytes.insert(bytes.end(), begin, begin + size);
  }
  std::vector<std::byte> bytes;
};

// Little-endian like the writer (both ends are the same architecture family; the
// version byte guards the format).
class Reader {
 public:
  explicit Reader(transport::ConstSlice slice) : slice_(slice) {}
  bool Raw(void* out, size_t size) {
    if (slice_.size() - offset_ < size) return false;
    std::memcpy(out, slice_.data() + offset_, size);
    offset_ += size;
    return true;
  }
  template <typename T>
  bool Get(T& value) {
    return Raw(&value, sizeof value);
  }
  bool String(std::string& value) {
    uint32_t size = 0;
    if (!Get(size) || size > kMaxOpenString || slice_.size() - offset_ < size) return false;
    value.assign(reinterpret_cast<const char*>(slice_.data() + offset_), size);
    offset_ += size;
    return true;
  }
  size_t offset() const { return offset_; }
  size_t left() const { return slice_.size() - offset_; }

 private:
  transport::ConstSlice slice_;
  size_t offset_ = 0;
};

Status Malformed(std::string_view what) {
  return Status::ProtocolError("relay: malformed " + std::string(what) +
                               " request (a relay of another artune version?)");
}

}  // namespace

std::vector<std::byte> EncodeOpen(const OpenRequest& open) {
  Writer writer;
  writer.U8(kWireVersion);
  writer.U64(open.session);
  writer.U64(open.conn);
  writer.String(open.origin_address);
  writer.String(open.host);
  writer.U16(open.port);
  return std::move(writer.bytes);
}

Result<OpenRequest> DecodeOpen(const transport::Message& message) {
  if (message.slice_count() != 1) return Malformed("Open");
  Reader reader(message.slice(0));
  OpenRequest open;
  uint8_t version = 0;
  if (!reader.Get(version) || version != kWireVersion || !reader.Get(open.session) ||
      !reader.Get(open.conn) || !reader.String(open.origin_address) || !reader.String(open.host) ||
      !reader.Get(open.port) || reader.left() != 0) {
    return Malformed("Open");
  }
  return open;
}

namespace {

// A message's payload bytes in a chunk: its slice (1-based), how many, in how many
// runs, and where its first run starts in the chunk's bytes.
struct ChunkPayload {
  uint32_t slot = 0;
  size_t bytes = 0;
  size_t runs = 0;
  size_t offset = 0;
};

// What a chunk's runs add up to: each message's payload, the literal (framing)
// bytes and the run entries the head lists (a run over 2 GiB takes several).
struct ChunkPlan {
  std::map<uint64_t, ChunkPayload> messages;
  uint64_t literal = 0;
  size_t entries = 0;
};

Result<ChunkPlan> PlanChunk(const std::vector<ByteRun>& runs, size_t chunk_bytes) {
  ChunkPlan plan;
  uint64_t covered = 0;
  for (const ByteRun& run : runs) {
    plan.entries += (run.length + 0x7fffffff) / 0x80000000;
    if (run.message == 0) {
      plan.literal += run.length;
    } else {
      auto [it, added] = plan.messages.try_emplace(run.message);
      if (added) {
        it->second.slot = static_cast<uint32_t>(plan.messages.size());
        it->second.offset = covered;
      }
      it->second.bytes += run.length;
      ++it->second.runs;
    }
    covered += run.length;
  }
  if (covered != chunk_bytes) {
    return Status::InvalidArgument("relay: the runs cover " + std::to_string(covered) +
                                   " bytes of a " + std::to_string(chunk_bytes) + "-byte chunk");
  }
  return plan;
}

}  // namespace

Result<Chunk> BuildChunk(const DataHeader& header, std::span<const std::byte> bytes,
                         const std::vector<ByteRun>& runs, transport::Allocator& allocator,
                         size_t in_place_min) {
  ARTUNE_ASSIGN_OR_RETURN(ChunkPlan plan, PlanChunk(runs, bytes.size()));
  const std::map<uint64_t, ChunkPayload>& messages = plan.messages;
  const uint64_t literal = plan.literal;
  const size_t entries = plan.entries;
  Chunk chunk;
  Writer head;
  head.bytes.reserve(kDataHeadBytes + entries * kRunEntryBytes + literal);
  head.U8(kWireVersion);
  head.U8(static_cast<uint8_t>(header.toward));
  head.U8(header.flags);
  head.U8(0);
  head.U64(header.session);
  head.U64(header.conn);
  head.U64(header.seq);
  head.U32(static_cast<uint32_t>(entries));
  head.U32(static_cast<uint32_t>(literal));
  std::vector<size_t> filled(messages.size() + 1, 0);
  std::vector<std::vector<std::byte>> heap(messages.size() + 1);
  // Where each slice's bytes are: in place (a span of `bytes`), or gathered.
  std::vector<std::byte*> in_place(messages.size() + 1, nullptr);
  chunk.payloads.resize(messages.size() + 1);
  for (const auto& [message, payload] : messages) {
    if (in_place_min > 0 && payload.runs == 1 && payload.bytes >= in_place_min) {
      in_place[payload.slot] = const_cast<std::byte*>(bytes.data()) + payload.offset;
      chunk.in_place = true;
      continue;
    }
    auto buffer = allocator.Allocate(payload.bytes);
    if (buffer.ok()) {
      chunk.payloads[payload.slot] = std::move(*buffer);
    } else {
      heap[payload.slot].resize(payload.bytes);
    }
  }
  auto storage = [&](uint32_t slot) -> std::byte* {
    return chunk.payloads[slot] ? chunk.payloads[slot].data() : heap[slot].data();
  };
  size_t offset = 0;
  std::vector<std::byte> literal_bytes;
  literal_bytes.reserve(literal);
  for (const ByteRun& run : runs) {
    const uint32_t slot = run.message == 0 ? 0 : messages.at(run.message).slot;
    for (uint64_t left = run.length; left > 0;) {
      const auto piece = static_cast<uint32_t>(std::min<uint64_t>(left, 0x7fffffff));
      head.U32(piece);
      head.U32(slot);
      if (slot == 0) {
        literal_bytes.insert(literal_bytes.end(), bytes.begin() + offset,
                             bytes.begin() + offset + piece);
      } else if (in_place[slot] == nullptr) {
        std::memcpy(storage(slot) + filled[slot], bytes.data() + offset, piece);
      }
      if (slot != 0) filled[slot] += piece;
      offset += piece;
      left -= piece;
    }
  }
  head.Raw(literal_bytes.data(), literal_bytes.size());
  chunk.head = std::move(head.bytes);
  chunk.slices.push_back(chunk.head);
  // Payloads the allocator refused go from heap memory (the transport copies them).
  chunk.heap.reserve(chunk.payloads.size());
  for (size_t slot = 1; slot < chunk.payloads.size(); ++slot) {
    if (in_place[slot] != nullptr) {
      chunk.slices.emplace_back(in_place[slot], filled[slot]);
    } else if (chunk.payloads[slot]) {
      chunk.slices.emplace_back(chunk.payloads[slot].data(), filled[slot]);
    } else {
      chunk.heap.push_back(std::move(heap[slot]));
      chunk.slices.emplace_back(chunk.heap.back().data(), filled[slot]);
    }
  }
  return chunk;
}

Result<ChunkView> ViewChunk(const transport::Message& message) {
  if (message.slice_count() < 1) return Malformed("Data");
  Reader reader(message.slice(0));
  ChunkView view;
  uint8_t version = 0, toward = 0, reserved = 0;
  uint32_t entries = 0, literal = 0;
  if (!reader.Get(version) || version != kWireVersion || !reader.Get(toward) || toward > 1 ||
      !reader.Get(view.header.flags) || !reader.Get(reserved) || !reader.Get(view.header.session) ||
      !reader.Get(view.header.conn) || !reader.Get(view.header.seq) || !reader.Get(entries) ||
      !reader.Get(literal) || reader.left() / kRunEntryBytes < entries ||
      reader.left() - size_t{entries} * kRunEntryBytes != literal) {
    return Malformed("Data");
  }
  view.header.toward = static_cast<Toward>(toward);
  const std::byte* table = message.slice(0).data() + reader.offset();
  const std::byte* literal_bytes = table + size_t{entries} * kRunEntryBytes;
  std::vector<size_t> used(message.slice_count(), 0);
  view.pieces.reserve(entries);
  for (uint32_t i = 0; i < entries; ++i) {
    uint32_t length = 0, slot = 0;
    std::memcpy(&length, table + size_t{i} * kRunEntryBytes, 4);
    std::memcpy(&slot, table + size_t{i} * kRunEntryBytes + 4, 4);
    if (slot >= message.slice_count()) return Malformed("Data");
    const std::byte* source = slot == 0 ? literal_bytes : message.slice(slot).data();
    const size_t available = slot == 0 ? literal : message.slice(slot).size();
    if (available - used[slot] < length) return Malformed("Data");
    if (length > 0) view.pieces.emplace_back(source + used[slot], length);
    used[slot] += length;
    view.bytes += length;
  }
  if (used[0] != literal) return Malformed("Data");
  for (size_t i = 1; i < message.slice_count(); ++i) {
    if (used[i] != message.slice(i).size()) return Malformed("Data");
  }
  return view;
}

std::vector<std::byte> CopyFrom(const ChunkView& view, size_t skip) {
  std::vector<std::byte> bytes;
  bytes.reserve(view.bytes - std::min(skip, view.bytes));
  for (const transport::ConstSlice& piece : view.pieces) {
    if (skip >= piece.size()) {
      skip -= piece.size();
      continue;
    }
    bytes.insert(bytes.end(), piece.begin() + static_cast<ptrdiff_t>(skip), piece.end());
    skip = 0;
  }
  return bytes;
}

std::vector<transport::ConstSlice> PiecesFrom(const ChunkView& view, size_t skip) {
  std::vector<transport::ConstSlice> pieces;
  pieces.reserve(view.pieces.size());
  for (const transport::ConstSlice& piece : view.pieces) {
    if (skip >= piece.size()) {
      skip -= piece.size();
      continue;
    }
    pieces.push_back(piece.subspan(skip));
    skip = 0;
  }
  return pieces;
}

Result<DecodedChunk> DecodeChunk(const transport::Message& message) {
  ARTUNE_ASSIGN_OR_RETURN(ChunkView view, ViewChunk(message));
  return DecodedChunk{view.header, CopyFrom(view, 0)};
}

std::vector<std::byte> EncodeAck(const Ack& ack) {
  Writer writer;
  writer.U8(kWireVersion);
  writer.U8(static_cast<uint8_t>(ack.toward));
  writer.U64(ack.session);
  writer.U64(ack.conn);
  writer.U64(ack.written);
  return std::move(writer.bytes);
}

Result<Ack> DecodeAck(const transport::Message& message) {
  if (message.slice_count() != 1) return Malformed("Ack");
  Reader reader(message.slice(0));
  Ack ack;
  uint8_t version = 0, toward = 0;
  if (!reader.Get(version) || version != kWireVersion || !reader.Get(toward) || toward > 1 ||
      !reader.Get(ack.session) || !reader.Get(ack.conn) || !reader.Get(ack.written) ||
      reader.left() != 0) {
    return Malformed("Ack");
  }
  ack.toward = static_cast<Toward>(toward);
  return ack;
}

}  // namespace artune::relay
