// The registered-memory pool behind RegisteredAllocator.
#include "allocator.h"

#include <algorithm>
#include <bit>
#include <cstdlib>
#include <string>

#include <sys/mman.h>

#include "engine_access.h"

namespace artune::transport {
namespace {

constexpr int kSmallestClassLog2 = 8;  // 256 B
constexpr int kLargestClassLog2 = 31;  // 2 GiB
// Page-aligned blocks (smaller classes: aligned to their size, as aligned_alloc
// needs the size to be a multiple of the alignment).
constexpr uint64_t kAlignment = 4096;
constexpr uint64_t kHugePageBytes = uint64_t{2} << 20;
// The smallest class cut from huge-page slabs (see NewSlabLocked): 256 KiB, so a
// slab holds at most 8 blocks and small buffers keep small pages.
constexpr int kSlabSmallestClassLog2 = 18;

int ClassLog2(uint64_t size) {
  int log2 = std::bit_width(size - 1);
  return log2 < kSmallestClassLog2 ? kSmallestClassLog2 : log2;
}

}  // namespace

class RegisteredAllocator::Pool final : public internal::EngineAccess::BufferOwner,
                                        public std::enable_shared_from_this<Pool> {
 public:
  Pool(std::shared_ptr<fabric::Fabric> fabric, uint64_t limit)
      : fabric_(std::move(fabric)), limit_(limit) {}

  ~Pool() override {
    for (auto& [start, block] : blocks_) {
      if (block.slab != nullptr) continue;
      fabric_->Deregister(block.keys);
      std::free(const_cast<std::byte*>(block.data));
    }
    for (auto& [start, slab] : slabs_) {
      fabric_->Deregister(slab.keys);
      std::free(slab.data);
    }
  }

  // `small_pages`: see RegisteredAllocator::AllocateSmallPages.
  Result<Buffer> Allocate(size_t size, bool small_pages) {
    if (size == 0) return Status::InvalidArgument("cannot allocate a registered buffer of 0 bytes");
    if (size > (uint64_t{1} << kLargestClassLog2)) {
      return Status::ResourceExhausted("registered buffer of " + std::to_string(size) +
                                       " bytes exceeds the largest size class (2 GiB)");
    }
    const int log2 = ClassLog2(size);
    const uint64_t class_bytes = uint64_t{1} << log2;
    std::lock_guard lock(mutex_);
    auto& free_list = free_[small_pages][log2];
    if (!free_list.empty()) {
      std::byte* data = free_list.back();
      free_list.pop_back();
      cached_ -= class_bytes;
      in_use_ += class_bytes;
      Block& block = blocks_[reinterpret_cast<uintptr_t>(data)];
      block.in_use = true;
      if (block.slab != nullptr) ++block.slab->blocks_in_use;
      return internal::EngineAccess::MakeBuffer(data, size, shared_from_this());
    }
    if (!small_pages && log2 >= kSlabSmallestClassLog2 && class_bytes < kHugePageBytes) {
      return NewSlabLocked(log2, size);
    }
    TrimLocked(class_bytes);
    if (in_use_ + cached_ + class_bytes > limit_) {
      return Status::ResourceExhausted(
          "registered memory limit reached: " + std::to_string(in_use_) + " bytes in use, " +
          std::to_string(class_bytes) + " more requested, limit " + std::to_string(limit_) +
          "; release Buffers or Messages, or lower the calls in flight");
    }
    // Blocks of whole huge pages are aligned to them and asked to be backed by them:
    // a one-sided read (process_vm_readv, an RDMA registration) then pins one page
    // per 2 MiB instead of 512, and pinning cost more than copying in the shm
    // fabric's profile. A kernel that says no keeps small pages.
    const bool huge = !small_pages && class_bytes >= kHugePageBytes;
    const uint64_t alignment = huge ? kHugePageBytes : std::min(kAlignment, class_bytes);
    auto* data = static_cast<std::byte*>(std::aligned_alloc(alignment, class_bytes));
    if (data == nullptr) {
      return Status::ResourceExhausted("out of memory allocating " + std::to_string(class_bytes) +
                                       " bytes of registered memory");
    }
    if (huge) {
      (void)::madvise(data, class_bytes, MADV_HUGEPAGE);
    } else if (small_pages && class_bytes >= kAlignment) {
      // Heap memory freed by a huge-page block may come back here still marked.
      (void)::madvise(data, class_bytes, MADV_NOHUGEPAGE);
    }
    Result<fabric::MemoryKeys> keys = fabric_->Register(data, class_bytes);
    if (!keys.ok()) {
      std::free(data);
      return keys.status();
    }
    blocks_[reinterpret_cast<uintptr_t>(data)] =
        Block{data, class_bytes, *keys, log2, true, nullptr, small_pages};
    in_use_ += class_bytes;
    return internal::EngineAccess::MakeBuffer(data, size, shared_from_this());
  }

  void Release(std::byte* data, size_t /*size*/) override {
    std::lock_guard lock(mutex_);
    auto it = blocks_.find(reinterpret_cast<uintptr_t>(data));
    if (it == blocks_.end() || !it->second.in_use) return;
    it->second.in_use = false;
    if (it->second.slab != nullptr) --it->second.slab->blocks_in_use;
    in_use_ -= it->second.bytes;
    cached_ += it->second.bytes;
    free_[it->second.small_pages][it->second.class_log2].push_back(data);
  }

  std::optional<Registration> Lookup(const std::byte* data, uint64_t length) const {
    const auto address = reinterpret_cast<uintptr_t>(data);
    std::lock_guard lock(mutex_);
    auto it = blocks_.upper_bound(address);
    if (it == blocks_.begin()) return std::nullopt;
    --it;
    const Block& block = it->second;
    if (!block.in_use || address - it->first > block.bytes ||
        length > block.bytes - (address - it->first)) {
      return std::nullopt;
    }
    return Registration{block.data, block.bytes, block.keys};
  }

  uint64_t in_use() const {
    std::lock_guard lock(mutex_);
    return in_use_;
  }
  uint64_t cached() const {
    std::lock_guard lock(mutex_);
    return cached_;
  }

 private:
  // One huge-page slab cut into blocks of one class.
  struct Slab {
    std::byte* data = nullptr;
    fabric::MemoryKeys keys;
    int class_log2 = 0;
    uint32_t blocks_in_use = 0;
  };
  struct Block {
    const std::byte* data = nullptr;
    uint64_t bytes = 0;
    fabric::MemoryKeys keys;
    int class_log2 = 0;
    bool in_use = false;
    Slab* slab = nullptr;      // cut from this slab (a node of slabs_): freed with it
    bool small_pages = false;  // AllocateSmallPages's: on the small-page free lists
  };

  // Blocks of the classes below a huge page, down to kSlabSmallestClassLog2, are
  // cut from huge-page slabs (2 MiB, aligned, MADV_HUGEPAGE, registered once), so
  // a read of them pins huge pages as the larger classes' do. A slab lives until
  // room is short and none of its blocks is in use (TrimLocked): a burst of one
  // class must not keep the limit from every other class for the pool's life.
  Result<Buffer> NewSlabLocked(int log2, size_t size) {
    const uint64_t class_bytes = uint64_t{1} << log2;
    TrimLocked(kHugePageBytes);
    if (in_use_ + cached_ + kHugePageBytes > limit_) {
      return Status::ResourceExhausted(
          "registered memory limit reached: " + std::to_string(in_use_) + " bytes in use, " +
          std::to_string(kHugePageBytes) + " more requested, limit " + std::to_string(limit_) +
          "; release Buffers or Messages, or lower the calls in flight");
    }
    auto* data = static_cast<std::byte*>(std::aligned_alloc(kHugePageBytes, kHugePageBytes));
    if (data == nullptr) {
      return Status::ResourceExhausted("out of memory allocating " +
                                       std::to_string(kHugePageBytes) +
                                       " bytes of registered memory");
    }
    (void)::madvise(data, kHugePageBytes, MADV_HUGEPAGE);
    Result<fabric::MemoryKeys> keys = fabric_->Register(data, kHugePageBytes);
    if (!keys.ok()) {
      std::free(data);
      return keys.status();
    }
    Slab* slab = &slabs_[reinterpret_cast<uintptr_t>(data)];
    *slab = Slab{data, *keys, log2, 1};
    const uint64_t count = kHugePageBytes / class_bytes;
    for (uint64_t i = count; i > 0; --i) {
      std::byte* block = data + (i - 1) * class_bytes;
      blocks_[reinterpret_cast<uintptr_t>(block)] =
          Block{block, class_bytes, *keys, log2, i == 1, slab, false};
      if (i > 1) free_[false][log2].push_back(block);
    }
    cached_ += (count - 1) * class_bytes;
    in_use_ += class_bytes;
    return internal::EngineAccess::MakeBuffer(data, size, shared_from_this());
  }

  // Frees cached blocks (largest classes first) until `wanted` more bytes fit,
  // then, if still short, whole slabs none of whose blocks is in use.
  void TrimLocked(uint64_t wanted) {
    for (int log2 = kLargestClassLog2; log2 >= kSmallestClassLog2; --log2) {
      for (auto& by_pages : free_) {
        auto& free_list = by_pages[log2];
        for (size_t i = free_list.size(); i > 0 && in_use_ + cached_ + wanted > limit_; --i) {
          std::byte* data = free_list[i - 1];
          auto it = blocks_.find(reinterpret_cast<uintptr_t>(data));
          if (it->second.slab != nullptr) continue;
          free_list.erase(free_list.begin() + static_cast<std::ptrdiff_t>(i - 1));
          fabric_->Deregister(it->second.keys);
          cached_ -= it->second.bytes;
          blocks_.erase(it);
          std::free(data);
        }
      }
    }
    if (in_use_ + cached_ + wanted > limit_) TrimIdleSlabsLocked(wanted);
  }

  // Frees slabs with no block in use until `wanted` more bytes fit. Their blocks
  // leave the free lists in one pass per class (a slab is aligned to its size, so
  // a block's slab is its address rounded down).
  void TrimIdleSlabsLocked(uint64_t wanted) {
    bool trimmed_class[kLargestClassLog2 + 1] = {};
    std::vector<uintptr_t> trimmed;
    for (auto& [start, slab] : slabs_) {
      if (in_use_ + cached_ + wanted <= limit_) break;
      if (slab.blocks_in_use != 0) continue;
      trimmed.push_back(start);
      trimmed_class[slab.class_log2] = true;
      cached_ -= kHugePageBytes;
    }
    if (trimmed.empty()) return;
    auto is_trimmed = [&](const std::byte* block) {
      const uintptr_t start = reinterpret_cast<uintptr_t>(block) & ~(kHugePageBytes - 1);
      return std::binary_search(trimmed.begin(), trimmed.end(), start);
    };
    for (int log2 = kSlabSmallestClassLog2; log2 <= kLargestClassLog2; ++log2) {
      if (!trimmed_class[log2]) continue;
      std::erase_if(free_[false][log2], is_trimmed);
    }
    for (uintptr_t start : trimmed) {  // ascending: slabs_ is ordered
      auto slab = slabs_.find(start);
      blocks_.erase(blocks_.lower_bound(start), blocks_.lower_bound(start + kHugePageBytes));
      fabric_->Deregister(slab->second.keys);
      std::free(slab->second.data);
      slabs_.erase(slab);
    }
  }

  const std::shared_ptr<fabric::Fabric> fabric_;
  const uint64_t limit_;
  mutable std::mutex mutex_;
  std::map<uintptr_t, Block> blocks_;
  std::map<uintptr_t, Slab> slabs_;  // by start; nodes are stable (Block::slab)
  // [small_pages][class]: a block goes back to the kind it was allocated as.
  std::vector<std::byte*> free_[2][kLargestClassLog2 + 1];
  uint64_t in_use_ = 0;
  uint64_t cached_ = 0;
};

RegisteredAllocator::RegisteredAllocator(std::shared_ptr<fabric::Fabric> fabric,
                                         uint64_t limit_bytes)
    : pool_(std::make_shared<Pool>(std::move(fabric), limit_bytes)) {}

RegisteredAllocator::~RegisteredAllocator() = default;

Result<Buffer> RegisteredAllocator::Allocate(size_t size) { return pool_->Allocate(size, false); }

Result<Buffer> RegisteredAllocator::AllocateSmallPages(size_t size) {
  return pool_->Allocate(size, true);
}

std::optional<Registration> RegisteredAllocator::Lookup(const std::byte* data,
                                                        uint64_t length) const {
  return pool_->Lookup(data, length);
}

uint64_t RegisteredAllocator::bytes_in_use() const { return pool_->in_use(); }
uint64_t RegisteredAllocator::bytes_cached() const { return pool_->cached(); }

// ---------------------------------------------------------------------------
// Buffer and Message (transport.h).

Buffer::Buffer(Buffer&& other) noexcept
    : data_(other.data_), size_(other.size_), owner_(std::move(other.owner_)) {
  other.data_ = nullptr;
  other.size_ = 0;
}

Buffer& Buffer::operator=(Buffer&& other) noexcept {
  if (this != &other) {
    if (owner_ && data_) owner_->Release(data_, size_);
    data_ = other.data_;
    size_ = other.size_;
    owner_ = std::move(other.owner_);
    other.data_ = nullptr;
    other.size_ = 0;
  }
  return *this;
}

Buffer::~Buffer() {
  if (owner_ && data_) owner_->Release(data_, size_);
}

uint64_t Message::total_bytes() const {
  uint64_t total = 0;
  for (const ConstSlice& slice : slices_) total += slice.size();
  return total;
}

}  // namespace artune::transport
