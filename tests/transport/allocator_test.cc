// The registered-memory allocator's huge-page slabs: blocks of the classes from
// 256 KiB up to 1 MiB are cut from 2 MiB slabs registered once (so a one-sided
// read of them pins huge pages), are reused from the free list, and count in the
// limit whole.
#include <gmock/gmock.h>

#include <cstdint>
#include <vector>

#include "allocator.h"
#include "engine_test_util.h"
#include "fabric/fabric.h"

namespace artune::transport {
namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20;

std::shared_ptr<fabric::Fabric> TcpFabric() {
  auto made = fabric::MakeFabric(FabricKind::kTcp, testing::TestConfig(FabricKind::kTcp));
  EXPECT_TRUE(made.ok()) << made.status().ToString();
  return std::shared_ptr<fabric::Fabric>(std::move(made).value());
}

TEST(AllocatorSlabTest, BlocksBelowAHugePageShareOneAlignedSlab) {
  RegisteredAllocator allocator(TcpFabric(), 64 * kMiB);
  Result<Buffer> first = allocator.Allocate(kMiB);
  Result<Buffer> second = allocator.Allocate(kMiB - 100);
  ASSERT_TRUE(first.ok() && second.ok());
  const auto at = reinterpret_cast<uintptr_t>(first->data());
  EXPECT_EQ(at % (2 * kMiB), 0u) << "a slab starts on a huge page";
  EXPECT_EQ(reinterpret_cast<uintptr_t>(second->data()), at + kMiB) << "the slab's next block";
  EXPECT_EQ(second->size(), kMiB - 100);
  auto one = allocator.Lookup(first->data(), kMiB);
  auto two = allocator.Lookup(second->data(), kMiB - 100);
  ASSERT_TRUE(one && two);
  EXPECT_EQ(one->keys.lkey, two->keys.lkey) << "one registration per slab";
  EXPECT_EQ(one->block_bytes, kMiB);
  EXPECT_FALSE(allocator.Lookup(first->data(), kMiB + 1)) << "a block ends at its class size";
  EXPECT_EQ(allocator.bytes_in_use(), 2 * kMiB);
  EXPECT_EQ(allocator.bytes_cached(), 0u);
  const std::byte* reused = first->data();
  *first = Buffer();
  EXPECT_EQ(allocator.bytes_cached(), kMiB);
  Result<Buffer> again = allocator.Allocate(700 * 1024);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->data(), reused) << "a freed block goes back to its class's free list";
}

TEST(AllocatorSlabTest, ASlabCountsWholeInTheLimit) {
  RegisteredAllocator allocator(TcpFabric(), 3 * kMiB);
  Result<Buffer> quarter = allocator.Allocate(256 * 1024);
  ASSERT_TRUE(quarter.ok());
  EXPECT_EQ(allocator.bytes_in_use() + allocator.bytes_cached(), 2 * kMiB);
  // 2 MiB held by the slab (one of its blocks in use) + 2 MiB asked > 3 MiB.
  Result<Buffer> big = allocator.Allocate(2 * kMiB);
  EXPECT_EQ(big.status().code(), ErrorCode::kResourceExhausted) << big.status().ToString();
  // Blocks of the slab's class still come from it; another class needs a slab of
  // its own, which does not fit.
  EXPECT_TRUE(allocator.Allocate(200 * 1024).ok());
  EXPECT_FALSE(allocator.Allocate(512 * 1024).ok());
}

// Issue 26, item 2: a burst of one slab class (a peer announcing 8192 slices of
// 256 KiB) filled the limit with its slabs, which were never trimmed: once the
// burst was over, every slice of another class (512 KiB and up) failed with
// "registered memory limit reached" until restart. Idle slabs now go when room
// is short.
TEST(AllocatorSlabTest, IdleSlabsAreTrimmedWhenAnotherClassNeedsRoom) {
  RegisteredAllocator allocator(TcpFabric(), 8 * kMiB);
  std::vector<Buffer> burst;
  for (int i = 0; i < 32; ++i) {  // 4 slabs of 8 blocks: the whole limit
    Result<Buffer> block = allocator.Allocate(256 * 1024);
    ASSERT_TRUE(block.ok()) << i << ": " << block.status().ToString();
    burst.push_back(std::move(block).value());
  }
  EXPECT_FALSE(allocator.Allocate(512 * 1024).ok()) << "the limit is full while the burst lives";
  const std::byte* kept = burst.front().data();
  std::vector<Buffer> one_kept;
  one_kept.push_back(std::move(burst.front()));
  burst.clear();
  EXPECT_EQ(allocator.bytes_in_use(), 256 * 1024u);

  Result<Buffer> half = allocator.Allocate(512 * 1024);
  ASSERT_TRUE(half.ok()) << half.status().ToString();
  Result<Buffer> whole = allocator.Allocate(4 * kMiB);
  ASSERT_TRUE(whole.ok()) << whole.status().ToString();
  // The slab with a block in use stayed, and its block is still registered.
  ASSERT_TRUE(allocator.Lookup(kept, 256 * 1024));
  EXPECT_EQ(allocator.bytes_in_use() + allocator.bytes_cached(), 8 * kMiB);
  Result<Buffer> quarter = allocator.Allocate(256 * 1024);
  ASSERT_TRUE(quarter.ok()) << "from the kept slab's free blocks";
  EXPECT_EQ(reinterpret_cast<uintptr_t>(quarter->data()) & ~(2 * kMiB - 1),
            reinterpret_cast<uintptr_t>(kept) & ~(2 * kMiB - 1));
}

}  // namespace
}  // namespace artune::transport
