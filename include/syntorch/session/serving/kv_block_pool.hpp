#pragma once
// A serving engine's KV pool as its block manager keeps it (vLLM's BlockPool): a fixed number of
// pages, each held by the sequences using it (a reference count). A full page may carry a content
// key (the tokens it holds, chained from the prompt's start) and stay cached after its sequences
// let it go, so a later prompt that starts with the same tokens takes it instead of recomputing
// it (prefix caching); a free cached page is evicted, least recently freed first, only when a new
// page is needed. Invariant: free_blocks() counts the pages no sequence holds, cached or not.

#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

namespace syntorch::session::serving {

class KvBlockPool {
 public:
  // `blocks` pages; with caching off no page keeps a key.
  KvBlockPool(std::int64_t blocks, bool caching);

  std::int64_t total_blocks() const { return static_cast<std::int64_t>(blocks_.size()); }
  std::int64_t free_blocks() const { return free_count_; }
  std::int64_t used_blocks() const { return total_blocks() - free_count_; }

  // How many of `keys`, from the first, the pool holds cached.
  std::int64_t cached_prefix(std::span<const std::uint64_t> keys) const;
  // Extends `owned` (a sequence's pages, in order) to `blocks` pages: first the cached pages of
  // `hit_keys` (when `owned` is empty), then new ones. False, changing nothing, when the free
  // pages do not suffice.
  bool allocate(std::vector<std::int32_t>& owned, std::int64_t blocks, std::span<const std::uint64_t> hit_keys);
  // Page `block` is full and holds the tokens `key` names: later prompts may take it.
  void cache(std::int32_t block, std::uint64_t key);
  // The sequence lets its pages go, its last page first in line for eviction; `owned` is emptied.
  void release(std::vector<std::int32_t>& owned);

  std::uint64_t evictions() const { return evictions_; }

 private:
  static constexpr std::int32_t kNone = -1;
  struct Block {
    std::int32_t refs = 0;
    std::uint64_t key = 0;  // 0: no content key
    std::int32_t prev = kNone, next = kNone;  // the free queue (refs == 0)
  };
  void unlink(std::int32_t b);
  void push_back(std::int32_t b);

  bool caching_;
  std::vector<Block> blocks_;
  std::int32_t head_ = kNone, tail_ = kNone;  // the free queue: evicted from the head
  std::int64_t free_count_ = 0;
  std::unordered_map<std::uint64_t, std::int32_t> cached_;
  std::uint64_t evictions_ = 0;
};

}  // namespace syntorch::session::serving
