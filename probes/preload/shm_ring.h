// The shared-memory ring between libartune_preload.so (producers: every thread of
// the traced command and of its forked children) and the preload backend in artune
// (the one consumer). Header-only, shared by both sides, versioned by kRingVersion:
// the library and artune are built together, the check catches a stale library.
//
// Layout of the mapping: RingHeader (one page), then `capacity` data bytes (a power
// of two). artune seals the memfd against shrinking and growing (and further seals)
// before the command starts, so no process of the command can truncate it under
// the mappings (that was a SIGBUS in artune). Positions (head, tail) count bytes since the start
// and only grow; a position's offset in the data area is position & (capacity - 1).
//
// Producers reserve with a compare-and-swap on `head`, write their record, then
// publish it by storing its type last (release). A record never wraps: when it does
// not fit before the end, the producer reserves the rest of the lap as a padding
// record too. When the ring is full the producer drops the record and counts it in
// records_dropped; it never waits, so the traced program is never blocked by artune.
// The consumer reads records in order, waiting for the type of the record at `tail`
// to be published, zeroes what it consumed (so stale bytes of an earlier lap are
// never taken for a published record), then advances `tail` (release).
//
// A producer killed between reserving and publishing leaves a hole that is never
// published: the consumer then stops at it when the command has exited and reports
// the remaining bytes as abandoned.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace artune::probes::preload {

constexpr uint64_t kRingMagic = 0x61727475'6e657072ull;  // "artunepr"
constexpr uint32_t kRingVersion = 2;  // 2: the ring is an inherited memfd, not a name
constexpr size_t kRingHeaderBytes = 4096;
constexpr size_t kMaxIovecs = 1024;  // UIO_MAXIOV
// Bytes of transferred data per data record; a call's bytes span several records.
constexpr uint32_t kDataChunkBytes = 64 * 1024;

// Environment of the traced command: "fd:N", the ring's inherited memfd.
constexpr const char* kRingEnvironmentVariable = "ARTUNE_PRELOAD_RING";

struct RingHeader {
  uint64_t magic;
  uint32_t version;
  uint32_t capture_bytes;  // 1: also copy the transferred bytes (data records)
  uint64_t capacity;       // data bytes, a power of two
  uint64_t max_capture_bytes_per_call;
  alignas(64) uint64_t head;             // producers: next position to reserve
  alignas(64) uint64_t tail;             // consumer: next position to read
  alignas(64) uint64_t records_dropped;  // overruns: records that did not fit
  uint64_t bytes_dropped;
  uint64_t records_published;
  uint64_t untraced_fds;  // socket calls on fds beyond the library's fd table
};
static_assert(sizeof(RingHeader) <= kRingHeaderBytes);

enum class RecordType : uint32_t {
  kUnpublished = 0,  // reserved, being written (or a zeroed, consumed area)
  kCall = 1,
  kData = 2,
  kClose = 3,
  kPadding = 4,
};

struct RecordHeader {
  uint32_t size;  // of the whole record including this header, a multiple of 8
  uint32_t type;  // RecordType; stored last with release semantics
};

// A connection as the socket sees it, ports in host byte order; IPv4 addresses use
// the first 4 bytes. Same shape as the ebpf backend's.
struct Connection {
  uint8_t local_address[16];
  uint8_t remote_address[16];
  uint16_t local_port;
  uint16_t remote_port;
  uint16_t family;     // AF_INET or AF_INET6
  uint8_t from_start;  // 1: the library saw the connect()/accept() of this socket
  uint8_t reserved;
};

// Numbering matches artune::probes::IoSyscall.
enum class Call : uint32_t {
  kSendmsg = 0,
  kRecvmsg = 1,
  kWritev = 2,
  kReadv = 3,
  kSendto = 4,
  kRecvfrom = 5,
  kWrite = 6,
  kRead = 7,
};

struct CallRecord {
  RecordHeader header;
  uint32_t call;  // Call
  uint32_t pid;
  uint32_t tid;
  int32_t fd;
  uint32_t iovec_count;     // as passed (1 for the one-buffer calls)
  uint32_t iovec_recorded;  // lengths[] entries that follow (at most kMaxIovecs)
  int64_t result;           // bytes transferred, or -errno
  uint64_t start_ns;        // CLOCK_MONOTONIC
  uint64_t end_ns;
  uint64_t data_bytes_dropped;  // transferred bytes not copied (limit, ring full)
  Connection connection;
  // followed by iovec_recorded uint32_t lengths (CallLengths), then padding to 8
};

struct DataRecord {
  RecordHeader header;
  uint32_t call;
  uint32_t length;  // bytes in data[]
  uint64_t offset;  // of data[0] within the call's transferred bytes
  uint64_t end_ns;
  Connection connection;
  // followed by `length` bytes (DataBytes)
};

// The variable parts after the fixed headers (no flexible array members in ISO C++).
inline uint32_t* CallLengths(CallRecord* record) { return reinterpret_cast<uint32_t*>(record + 1); }
inline const uint32_t* CallLengths(const CallRecord* record) {
  return reinterpret_cast<const uint32_t*>(record + 1);
}
inline uint8_t* DataBytes(DataRecord* record) { return reinterpret_cast<uint8_t*>(record + 1); }
inline const uint8_t* DataBytes(const DataRecord* record) {
  return reinterpret_cast<const uint8_t*>(record + 1);
}

struct CloseRecord {
  RecordHeader header;
  uint32_t pid;
  int32_t fd;
  uint64_t timestamp_ns;
  Connection connection;
};

constexpr uint32_t AlignRecord(size_t bytes) {
  return static_cast<uint32_t>((bytes + 7) & ~size_t{7});
}

inline uint8_t* RingData(RingHeader* ring) {
  return reinterpret_cast<uint8_t*>(ring) + kRingHeaderBytes;
}

// True for a capacity this layout can use: a power of two that, with the header,
// is exactly the size of the mapping.
inline bool ValidRingCapacity(uint64_t capacity, uint64_t mapping_bytes) {
  return capacity >= 8 && (capacity & (capacity - 1)) == 0 && mapping_bytes >= kRingHeaderBytes &&
         capacity == mapping_bytes - kRingHeaderBytes;
}

// Producer side: reserves `size` bytes (AlignRecord'ed) and returns where to write
// the record, or nullptr when the ring is full (the drop is counted). `capacity` is
// the producer's own copy, checked with ValidRingCapacity when it mapped the ring:
// the header's may be overwritten by any process of the traced command. The caller
// fills the record and calls Publish.
inline uint8_t* Reserve(RingHeader* ring, uint64_t capacity, uint32_t size) {
  if (size > capacity / 2) {
    __atomic_add_fetch(&ring->records_dropped, 1, __ATOMIC_RELAXED);
    __atomic_add_fetch(&ring->bytes_dropped, size, __ATOMIC_RELAXED);
    return nullptr;
  }
  uint64_t head = __atomic_load_n(&ring->head, __ATOMIC_RELAXED);
  uint64_t padding = 0;
  while (true) {
    const uint64_t offset = head & (capacity - 1);
    padding = offset + size > capacity ? capacity - offset : 0;
    const uint64_t tail = __atomic_load_n(&ring->tail, __ATOMIC_ACQUIRE);
    if (head + padding + size - tail > capacity) {
      __atomic_add_fetch(&ring->records_dropped, 1, __ATOMIC_RELAXED);
      __atomic_add_fetch(&ring->bytes_dropped, size, __ATOMIC_RELAXED);
      return nullptr;
    }
    if (__atomic_compare_exchange_n(&ring->head, &head, head + padding + size, true,
                                    __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
      break;
    }
  }
  uint8_t* data = RingData(ring);
  if (padding > 0) {
    auto* pad = reinterpret_cast<RecordHeader*>(data + (head & (capacity - 1)));
    pad->size = static_cast<uint32_t>(padding);
    __atomic_store_n(&pad->type, static_cast<uint32_t>(RecordType::kPadding), __ATOMIC_RELEASE);
  }
  auto* record = reinterpret_cast<RecordHeader*>(data + ((head + padding) & (capacity - 1)));
  record->size = size;
  return reinterpret_cast<uint8_t*>(record);
}

inline void Publish(RingHeader* ring, uint8_t* record, RecordType type) {
  __atomic_add_fetch(&ring->records_published, 1, __ATOMIC_RELAXED);
  __atomic_store_n(&reinterpret_cast<RecordHeader*>(record)->type, static_cast<uint32_t>(type),
                   __ATOMIC_RELEASE);
}

}  // namespace artune::probes::preload
