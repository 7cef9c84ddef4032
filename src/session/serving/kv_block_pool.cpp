#include "syntorch/session/serving/kv_block_pool.hpp"

#include <algorithm>
#include <stdexcept>

namespace syntorch::session::serving {

KvBlockPool::KvBlockPool(std::int64_t blocks, bool caching) : caching_(caching) {
  if (blocks < 0 || blocks > INT32_MAX) throw std::invalid_argument("KvBlockPool: block count out of range");
  blocks_.resize(static_cast<std::size_t>(blocks));
  for (std::int32_t b = 0; b < static_cast<std::int32_t>(blocks); ++b) push_back(b);
}

void KvBlockPool::unlink(std::int32_t b) {
  Block& x = blocks_[static_cast<std::size_t>(b)];
  (x.prev == kNone ? head_ : blocks_[static_cast<std::size_t>(x.prev)].next) = x.next;
  (x.next == kNone ? tail_ : blocks_[static_cast<std::size_t>(x.next)].prev) = x.prev;
  x.prev = x.next = kNone;
  --free_count_;
}

void KvBlockPool::push_back(std::int32_t b) {
  Block& x = blocks_[static_cast<std::size_t>(b)];
  x.prev = tail_;
  x.next = kNone;
  (tail_ == kNone ? head_ : blocks_[static_cast<std::size_t>(tail_)].next) = b;
  tail_ = b;
  ++free_count_;
}

std::int64_t KvBlockPool::cached_prefix(std::span<const std::uint64_t> keys) const {
  if (!caching_) return 0;
  std::int64_t n = 0;
  for (std::uint64_t k : keys) {
    if (cached_.find(k) == cached_.end()) break;
    ++n;
  }
  return n;
}

bool KvBlockPool::allocate(std::vector<std::int32_t>& owned, std::int64_t blocks,
                           std::span<const std::uint64_t> hit_keys) {
  std::vector<std::int32_t> hits;
  if (owned.empty() && caching_) {
    for (std::uint64_t k : hit_keys) {
      const auto it = cached_.find(k);
      if (it == cached_.end() || static_cast<std::int64_t>(hits.size()) >= blocks) break;
      hits.push_back(it->second);
    }
  }
  const std::int64_t have = static_cast<std::int64_t>(owned.size() + hits.size());
  const std::int64_t fresh = std::max<std::int64_t>(0, blocks - have);
  std::int64_t hits_free = 0;  // cached pages no sequence holds: taking them uses free pages
  for (std::int32_t b : hits) hits_free += blocks_[static_cast<std::size_t>(b)].refs == 0 ? 1 : 0;
  if (fresh + hits_free > free_count_) return false;
  for (std::int32_t b : hits) {
    Block& x = blocks_[static_cast<std::size_t>(b)];
    if (x.refs++ == 0) unlink(b);
    owned.push_back(b);
  }
  for (std::int64_t i = 0; i < fresh; ++i) {
    const std::int32_t b = head_;
    unlink(b);
    Block& x = blocks_[static_cast<std::size_t>(b)];
    if (x.key != 0) {
      cached_.erase(x.key);
      x.key = 0;
      ++evictions_;
    }
    x.refs = 1;
    owned.push_back(b);
  }
  return true;
}

void KvBlockPool::cache(std::int32_t block, std::uint64_t key) {
  if (!caching_ || key == 0) return;
  Block& x = blocks_[static_cast<std::size_t>(block)];
  if (x.key != 0) return;
  // A page with the same tokens cached already stays the one later prompts find.
  if (cached_.emplace(key, block).second) x.key = key;
}

void KvBlockPool::release(std::vector<std::int32_t>& owned) {
  for (auto it = owned.rbegin(); it != owned.rend(); ++it) {
    Block& x = blocks_[static_cast<std::size_t>(*it)];
    if (--x.refs == 0) push_back(*it);
  }
  owned.clear();
}

}  // namespace syntorch::session::serving
