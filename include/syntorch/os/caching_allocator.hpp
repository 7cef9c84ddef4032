#pragma once
// Device memory as PyTorch's CUDA caching allocator manages it, over one device's simulated
// address space. Requests are rounded up to 512 bytes; requests up to 1 MiB come from the small
// pool (2 MiB segments), larger ones from the large pool (20 MiB segments for requests under
// 10 MiB, otherwise the request rounded up to 2 MiB). A free cached block that fits is reused,
// best fit first, and split when the rest is worth keeping (at least 512 bytes in the small pool,
// more than 1 MiB in the large one); freed blocks return to the cache and merge with free
// neighbours of their segment. Only when no cached block fits is a new segment taken from the
// device; if the device is full, the cache is emptied and the request retried. Running out is a
// result (nullopt), with counters to explain it, never an exception.
// With caching off (set_caching(false), PyTorch's PYTORCH_NO_CUDA_MEMORY_CACHING) every request
// takes a segment of its own rounded size from the device and free() gives it straight back: one
// cudaMalloc and one cudaFree per tensor, which device_allocations and device_frees count.
// Invariants: allocated <= reserved <= capacity; every byte of a segment is in exactly one block.

#include <array>
#include <cstdint>
#include <optional>
#include <set>
#include <string_view>
#include <tuple>
#include <vector>

namespace syntorch::os {

// What memory is for, so an OOM can say who holds it.
enum class MemoryUse : std::uint8_t { weights, kv_cache, activations, workspace, other, gradients, optimizer_state };
inline constexpr std::size_t kMemoryUses = 7;
std::string_view memory_use_name(MemoryUse u);

struct AllocatorStats {
  std::uint64_t capacity_bytes = 0;
  std::uint64_t allocated_bytes = 0;       // in live blocks (rounded sizes)
  std::uint64_t requested_bytes = 0;       // as asked for
  std::uint64_t reserved_bytes = 0;        // in segments taken from the device
  std::uint64_t peak_allocated_bytes = 0;   // over the whole run
  std::uint64_t peak_reserved_bytes = 0;
  std::uint64_t recent_peak_allocated_bytes = 0;  // since the last reset_peak_stats (what a program reads)
  std::uint64_t recent_peak_reserved_bytes = 0;
  std::uint64_t segments = 0;
  std::uint64_t allocations = 0;           // successful allocate() calls
  std::uint64_t cache_hits = 0;            // served from a cached block
  std::uint64_t device_allocations = 0;    // segments taken from the device
  std::uint64_t device_frees = 0;          // segments given back (empty_cache)
  std::uint64_t ooms = 0;
  std::array<std::uint64_t, kMemoryUses> allocated_by_use{};
  std::array<std::uint64_t, kMemoryUses> peak_allocated_by_use{};  // each purpose's own peak

  // Reserved bytes not holding live data, as a fraction of reserved (0 when nothing is reserved).
  double fragmentation() const;
};

class CachingAllocator {
 public:
  static constexpr std::uint64_t kRound = 512;
  static constexpr std::uint64_t kSmallRequest = 1 << 20;   // up to this: small pool
  static constexpr std::uint64_t kSmallSegment = 2 << 20;
  static constexpr std::uint64_t kLargeSegment = 20 << 20;
  static constexpr std::uint64_t kMinLargeAlloc = 10 << 20;  // from here, segments fit the request
  static constexpr std::uint64_t kSegmentRound = 2 << 20;

  // A live allocation.
  struct Block {
    std::uint64_t address;
    std::uint64_t size;       // rounded
    std::uint32_t id;         // handle for free()
  };

  // `capacity_bytes` of device memory starting at `base_address`.
  static constexpr std::uint64_t kDefaultBaseAddress = 0x7f0000000000ULL;  // where CUDA's device heap starts
  explicit CachingAllocator(std::uint64_t capacity_bytes, std::uint64_t base_address = kDefaultBaseAddress);

  // nullopt: out of memory even after emptying the cache (stats().ooms counts it).
  std::optional<Block> allocate(std::uint64_t bytes, MemoryUse use = MemoryUse::other);
  void free(std::uint32_t id);
  // Files a live allocation under another purpose (a gradient an op made, kept as a parameter's
  // .grad). Throws std::logic_error for an id that is not live.
  void set_use(std::uint32_t id, MemoryUse use);
  // Gives every entirely free segment back to the device.
  void empty_cache();
  // Caching on (the default) or off (see above). Turning it off empties the cache.
  void set_caching(bool caching);
  bool caching() const { return caching_; }
  // The recent peaks restart from what is in use now (torch.cuda.reset_peak_memory_stats); the
  // run's own peaks stay.
  void reset_peak_stats();

  const AllocatorStats& stats() const { return stats_; }
  // The size a request is rounded to.
  static std::uint64_t round_size(std::uint64_t bytes);
  // The segment a request of this (rounded) size would take from the device.
  static std::uint64_t segment_size(std::uint64_t rounded);

 private:
  struct Node {
    std::uint64_t address = 0;
    std::uint64_t size = 0;
    std::uint64_t requested = 0;
    std::uint32_t prev = kNone;  // neighbours within the segment
    std::uint32_t next = kNone;
    bool small = false;
    bool free = true;
    bool live = false;           // the node slot is in use
    MemoryUse use = MemoryUse::other;
  };
  static constexpr std::uint32_t kNone = 0xffffffffu;
  using FreeIndex = std::set<std::tuple<std::uint64_t, std::uint64_t, std::uint32_t>>;  // (size, address, id)

  std::uint32_t new_node();
  FreeIndex& pool(bool small) { return small ? small_free_ : large_free_; }
  std::optional<std::uint32_t> take_from_device(std::uint64_t size, bool small);
  bool device_range(std::uint64_t size, std::uint64_t& address);
  void device_release(std::uint64_t address, std::uint64_t size);
  void release_segment(std::uint32_t id);  // a whole free segment (not in a free index) back to the device

  std::vector<Node> nodes_;
  std::vector<std::uint32_t> free_nodes_;
  FreeIndex small_free_;
  FreeIndex large_free_;
  // The device's own address space: free ranges (address -> size), first fit, coalesced.
  std::set<std::pair<std::uint64_t, std::uint64_t>> device_free_;
  AllocatorStats stats_;
  bool caching_ = true;
};

}  // namespace syntorch::os
