#include <gtest/gtest.h>

#include <map>
#include <random>

#include "syntorch/os/caching_allocator.hpp"

namespace syntorch::os {
namespace {

constexpr std::uint64_t MiB = 1 << 20;

TEST(CachingAllocator, RoundsRequestsTo512Bytes) {
  EXPECT_EQ(CachingAllocator::round_size(1), 512u);
  EXPECT_EQ(CachingAllocator::round_size(512), 512u);
  EXPECT_EQ(CachingAllocator::round_size(513), 1024u);
  EXPECT_EQ(CachingAllocator::segment_size(512), 2 * MiB);         // small pool
  EXPECT_EQ(CachingAllocator::segment_size(1 * MiB), 2 * MiB);
  EXPECT_EQ(CachingAllocator::segment_size(1 * MiB + 512), 20 * MiB);  // large, under 10 MiB
  EXPECT_EQ(CachingAllocator::segment_size(15 * MiB), 16 * MiB);   // rounded to 2 MiB
}

TEST(CachingAllocator, SmallRequestsSplitOneSegment) {
  CachingAllocator a(80 * MiB);
  const auto x = a.allocate(1000);
  const auto y = a.allocate(1000);
  ASSERT_TRUE(x && y);
  EXPECT_EQ(y->address, x->address + 1024);
  EXPECT_EQ(a.stats().segments, 1u);
  EXPECT_EQ(a.stats().reserved_bytes, 2 * MiB);
  EXPECT_EQ(a.stats().allocated_bytes, 2048u);
  EXPECT_EQ(a.stats().requested_bytes, 2000u);
}

TEST(CachingAllocator, FreedBlocksAreReusedBestFitFromTheCache) {
  CachingAllocator a(80 * MiB);
  const auto three = a.allocate(3 * MiB);
  const auto five = a.allocate(5 * MiB);
  ASSERT_TRUE(three && five);
  EXPECT_EQ(a.stats().segments, 1u);  // both from one 20 MiB segment
  a.free(three->id);
  const auto two = a.allocate(2 * MiB);  // the freed 3 MiB block fits best (12 MiB also free)
  ASSERT_TRUE(two);
  EXPECT_EQ(two->address, three->address);
  EXPECT_EQ(a.stats().device_allocations, 1u);
  EXPECT_GE(a.stats().cache_hits, 2u);
}

TEST(CachingAllocator, FreeingMergesNeighboursAndEmptyCacheReturnsWholeSegments) {
  CachingAllocator a(80 * MiB);
  const auto x = a.allocate(2 * MiB);
  const auto y = a.allocate(2 * MiB);
  const auto z = a.allocate(2 * MiB);
  ASSERT_TRUE(x && y && z);
  a.free(x->id);
  a.free(z->id);
  a.empty_cache();  // y still holds the segment
  EXPECT_EQ(a.stats().reserved_bytes, 20 * MiB);
  a.free(y->id);    // x, y, z and the tail merge back into one block
  EXPECT_EQ(a.stats().allocated_bytes, 0u);
  a.empty_cache();
  EXPECT_EQ(a.stats().reserved_bytes, 0u);
  EXPECT_EQ(a.stats().segments, 0u);
  EXPECT_EQ(a.stats().peak_reserved_bytes, 20 * MiB);
  EXPECT_EQ(a.stats().peak_allocated_bytes, 6 * MiB);
}

TEST(CachingAllocator, OutOfMemoryIsAResultAfterEmptyingTheCache) {
  CachingAllocator a(40 * MiB);
  const auto first = a.allocate(15 * MiB);  // a 16 MiB segment
  ASSERT_TRUE(first);
  a.free(first->id);                         // cached, still reserved
  const auto big = a.allocate(30 * MiB);     // needs the cache released first
  ASSERT_TRUE(big);
  EXPECT_EQ(a.stats().device_frees, 1u);
  EXPECT_EQ(a.stats().reserved_bytes, 30 * MiB);
  EXPECT_FALSE(a.allocate(20 * MiB));       // 10 MiB left: out of memory
  EXPECT_EQ(a.stats().ooms, 1u);
  EXPECT_EQ(a.stats().allocated_bytes, 30 * MiB);  // nothing changed by the failure
}

TEST(CachingAllocator, CountsBytesByUseAndFragmentation) {
  CachingAllocator a(80 * MiB);
  const auto w = a.allocate(12 * MiB, MemoryUse::weights);
  const auto kv = a.allocate(512, MemoryUse::kv_cache);
  ASSERT_TRUE(w && kv);
  EXPECT_EQ(a.stats().allocated_by_use[static_cast<std::size_t>(MemoryUse::weights)], 12 * MiB);
  EXPECT_EQ(a.stats().allocated_by_use[static_cast<std::size_t>(MemoryUse::kv_cache)], 512u);
  // 12 MiB segment + 2 MiB small segment reserved, 12 MiB + 512 B allocated.
  EXPECT_NEAR(a.stats().fragmentation(), 1.0 - (12.0 * MiB + 512) / (14.0 * MiB), 1e-12);
  EXPECT_THROW(a.free(9999), std::logic_error);
  a.free(kv->id);
  EXPECT_THROW(a.free(kv->id), std::logic_error);
}

// Random allocations and frees: live blocks never overlap, stay inside the device, and the
// counters add up.
TEST(CachingAllocator, InvariantsHoldUnderRandomUse) {
  std::mt19937_64 rng(7);
  CachingAllocator a(256 * MiB, 1 << 30);
  std::map<std::uint32_t, CachingAllocator::Block> live;
  for (int i = 0; i < 20000; ++i) {
    if (live.empty() || rng() % 3 != 0) {
      const std::uint64_t size = rng() % 2 ? 1 + rng() % (64 << 10) : 1 + rng() % (24 * MiB);
      if (auto b = a.allocate(size)) live[b->id] = *b;
    } else {
      auto it = std::next(live.begin(), static_cast<long>(rng() % live.size()));
      a.free(it->first);
      live.erase(it);
    }
    if (i % 997 == 0) a.empty_cache();
    const AllocatorStats& s = a.stats();
    ASSERT_LE(s.allocated_bytes, s.reserved_bytes);
    ASSERT_LE(s.reserved_bytes, s.capacity_bytes);
  }
  std::uint64_t total = 0;
  std::uint64_t end = 0;
  std::map<std::uint64_t, std::uint64_t> by_address;
  for (const auto& [id, b] : live) by_address[b.address] = b.size;
  for (const auto& [address, size] : by_address) {
    EXPECT_GE(address, end) << "overlapping blocks";
    EXPECT_GE(address, 1u << 30);
    EXPECT_LE(address + size, (1u << 30) + 256 * MiB);
    end = address + size;
    total += size;
  }
  EXPECT_EQ(total, a.stats().allocated_bytes);
  for (const auto& [id, b] : live) a.free(id);
  a.empty_cache();
  EXPECT_EQ(a.stats().reserved_bytes, 0u);
}

TEST(CachingAllocator, WithoutCachingEachTensorIsASegmentGivenBackOnFree) {
  CachingAllocator a(80 * MiB);
  const auto cached = a.allocate(1000);
  ASSERT_TRUE(cached);
  a.free(cached->id);
  EXPECT_EQ(a.stats().segments, 1u);  // kept in the cache
  a.set_caching(false);                // turning caching off empties the cache
  EXPECT_FALSE(a.caching());
  EXPECT_EQ(a.stats().segments, 0u);
  const auto x = a.allocate(1000);
  const auto y = a.allocate(3 * MiB);
  ASSERT_TRUE(x && y);
  EXPECT_EQ(a.stats().reserved_bytes, 1024u + 3 * MiB);  // each its own rounded size
  EXPECT_EQ(a.stats().device_allocations, 3u);
  a.free(x->id);
  a.free(y->id);
  EXPECT_EQ(a.stats().reserved_bytes, 0u);
  EXPECT_EQ(a.stats().device_frees, 3u);
  a.set_caching(true);
  a.reset_peak_stats();
  EXPECT_EQ(a.stats().recent_peak_allocated_bytes, 0u);
  EXPECT_EQ(a.stats().recent_peak_reserved_bytes, 0u);
  EXPECT_EQ(a.stats().peak_allocated_bytes, 3 * MiB + 1024);  // the run's own peak stays
}

}  // namespace
}  // namespace syntorch::os
