// The registered-memory allocator: a bounded pool of fabric-registered blocks in
// power-of-two size classes, recycled through free lists so the hot path never
// registers memory (a verbs registration costs tens of microseconds). Blocks of
// 256 KiB and up ask for huge pages (a one-sided read pins one page per 2 MiB:
// process_vm_readv's pinning cost more than its copy); those below 2 MiB are cut
// from 2 MiB slabs, registered once and kept until room runs short while none
// of their blocks is in use. AllocateSmallPages is for the connections' eager
// buffers, which are only copied into and out of: no huge pages there.
//
// Memory handed out as Buffers (transport.h) is registered; the engine looks a
// slice's registration up (Lookup) to send it zero-copy. A Buffer keeps the pool
// alive (shared ownership), so Buffers may outlive the Server or Client that gave
// them out.
//
// Threading: every method is thread-safe (one mutex; the critical sections are a
// free-list pop or push and a map update).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "artune/transport/transport.h"
#include "fabric/fabric.h"

namespace artune::transport {

// Registered bytes one transport (Server or Client) may hold, in use and cached.
inline constexpr uint64_t kAllocatorLimitBytes = uint64_t{2} << 30;  // 2 GiB

struct Registration {
  const std::byte* block = nullptr;  // start of the registered block
  uint64_t block_bytes = 0;
  fabric::MemoryKeys keys;
};

class RegisteredAllocator final : public Allocator {
 public:
  // `fabric` registers the blocks; it must stay usable for registration while any
  // Buffer lives (fabrics do after Shutdown).
  RegisteredAllocator(std::shared_ptr<fabric::Fabric> fabric, uint64_t limit_bytes);
  ~RegisteredAllocator() override;

  // kInvalidArgument for size 0; kResourceExhausted when the request exceeds the
  // largest class or the limit (after freeing cached blocks).
  Result<Buffer> Allocate(size_t size) override;

  // Allocate, backed by small pages (never a huge-page slab, MADV_NOHUGEPAGE) and
  // kept on free lists of their own: for a connection's eager receive buffers and
  // packets, sized for the largest eager packet but mostly written a few bytes
  // at a time. In a huge page the first byte written faults (zeroes) all 2 MiB:
  // with eager_threshold = 1 MiB that was 4 MiB per small call on a new
  // connection's receive pool, on the fabric's progress thread (issue 22).
  // Nothing reads these buffers one-sidedly, so huge pages buy them nothing.
  Result<Buffer> AllocateSmallPages(size_t size);

  // The registration of the block that holds [data, data + length), if the range
  // lies inside one block this allocator handed out and that is still in use.
  std::optional<Registration> Lookup(const std::byte* data, uint64_t length) const;

  uint64_t bytes_in_use() const;
  uint64_t bytes_cached() const;

 private:
  class Pool;
  std::shared_ptr<Pool> pool_;
};

}  // namespace artune::transport
