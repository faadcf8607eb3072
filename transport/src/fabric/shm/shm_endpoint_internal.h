// Helpers shared by the shm endpoint's two files: shm_endpoint.cc (the rings,
// progress, teardown) and shm_reads.cc (offers, grants and reads).
#pragma once

#include <poll.h>

#include <cstddef>
#include <cstdint>

#include "fabric/shm/shm_ring.h"

namespace artune::transport::fabric::shm {

// A read copied by the owner goes out in fragments of at most this many bytes, and
// waits for at least kMinFragment of room (no dribbling of tiny records).
inline constexpr uint64_t kFragmentBytes = 256 * 1024;
inline constexpr uint64_t kMinFragment = 4096;

inline RecordHeader MakeRecord(RecordKind kind, uint64_t id, uint64_t length = 0) {
  RecordHeader header;
  header.kind = static_cast<uint32_t>(kind);
  header.id = id;
  header.length = length;
  return header;
}

// True once the peer process has exited (its pidfd is readable).
inline bool PeerExited(int pidfd) {
  if (pidfd < 0) return false;
  pollfd entry{pidfd, POLLIN, 0};
  return ::poll(&entry, 1, 0) > 0;
}

}  // namespace artune::transport::fabric::shm
