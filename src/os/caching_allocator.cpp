#include "syntorch/os/caching_allocator.hpp"

#include <algorithm>
#include <stdexcept>

namespace syntorch::os {

std::string_view memory_use_name(MemoryUse u) {
  switch (u) {
    case MemoryUse::weights: return "weights";
    case MemoryUse::kv_cache: return "kv cache";
    case MemoryUse::activations: return "activations";
    case MemoryUse::workspace: return "workspace";
    case MemoryUse::other: return "other";
    case MemoryUse::gradients: return "gradients";
    case MemoryUse::optimizer_state: return "optimizer state";
  }
  return "?";
}

double AllocatorStats::fragmentation() const {
  return reserved_bytes == 0 ? 0.0 : 1.0 - static_cast<double>(allocated_bytes) / static_cast<double>(reserved_bytes);
}

CachingAllocator::CachingAllocator(std::uint64_t capacity_bytes, std::uint64_t base_address) {
  stats_.capacity_bytes = capacity_bytes;
  if (capacity_bytes > 0) device_free_.insert({base_address, capacity_bytes});
}

std::uint64_t CachingAllocator::round_size(std::uint64_t bytes) {
  if (bytes < kRound) return kRound;
  return (bytes + kRound - 1) / kRound * kRound;
}

std::uint64_t CachingAllocator::segment_size(std::uint64_t rounded) {
  if (rounded <= kSmallRequest) return kSmallSegment;
  if (rounded < kMinLargeAlloc) return kLargeSegment;
  return (rounded + kSegmentRound - 1) / kSegmentRound * kSegmentRound;
}

std::uint32_t CachingAllocator::new_node() {
  if (!free_nodes_.empty()) {
    const std::uint32_t id = free_nodes_.back();
    free_nodes_.pop_back();
    nodes_[id] = Node{};
    nodes_[id].live = true;
    return id;
  }
  nodes_.emplace_back();
  nodes_.back().live = true;
  return static_cast<std::uint32_t>(nodes_.size() - 1);
}

bool CachingAllocator::device_range(std::uint64_t size, std::uint64_t& address) {
  for (auto it = device_free_.begin(); it != device_free_.end(); ++it) {
    if (it->second >= size) {
      address = it->first;
      const auto rest = std::make_pair(it->first + size, it->second - size);
      device_free_.erase(it);
      if (rest.second > 0) device_free_.insert(rest);
      return true;
    }
  }
  return false;
}

void CachingAllocator::device_release(std::uint64_t address, std::uint64_t size) {
  auto it = device_free_.insert({address, size}).first;
  // Coalesce with the following and preceding free ranges.
  auto next = std::next(it);
  if (next != device_free_.end() && it->first + it->second == next->first) {
    const auto merged = std::make_pair(it->first, it->second + next->second);
    device_free_.erase(next);
    it = device_free_.erase(it);
    it = device_free_.insert(merged).first;
  }
  if (it != device_free_.begin()) {
    auto prev = std::prev(it);
    if (prev->first + prev->second == it->first) {
      const auto merged = std::make_pair(prev->first, prev->second + it->second);
      device_free_.erase(it);
      device_free_.erase(prev);
      device_free_.insert(merged);
    }
  }
}

std::optional<std::uint32_t> CachingAllocator::take_from_device(std::uint64_t size, bool small) {
  std::uint64_t address = 0;
  if (!device_range(size, address)) return std::nullopt;
  const std::uint32_t id = new_node();
  Node& n = nodes_[id];
  n.address = address;
  n.size = size;
  n.small = small;
  stats_.reserved_bytes += size;
  stats_.peak_reserved_bytes = std::max(stats_.peak_reserved_bytes, stats_.reserved_bytes);
  stats_.recent_peak_reserved_bytes = std::max(stats_.recent_peak_reserved_bytes, stats_.reserved_bytes);
  ++stats_.segments;
  ++stats_.device_allocations;
  return id;
}

std::optional<CachingAllocator::Block> CachingAllocator::allocate(std::uint64_t bytes, MemoryUse use) {
  const std::uint64_t size = round_size(bytes);
  const bool small = size <= kSmallRequest;
  FreeIndex& free_blocks = pool(small);
  std::uint32_t id = kNone;
  // Best fit among cached blocks.
  auto it = caching_ ? free_blocks.lower_bound({size, 0, 0}) : free_blocks.end();
  if (it != free_blocks.end()) {
    id = std::get<2>(*it);
    free_blocks.erase(it);
    ++stats_.cache_hits;
  } else {
    const std::uint64_t seg = caching_ ? segment_size(size) : size;
    auto fresh = take_from_device(seg, small);
    if (!fresh) {
      empty_cache();  // as PyTorch does before reporting OOM
      fresh = take_from_device(seg, small);
    }
    if (!fresh) {
      ++stats_.ooms;
      return std::nullopt;
    }
    id = *fresh;
  }
  // Split off the remainder when it is worth keeping.
  Node& n = nodes_[id];
  const std::uint64_t remaining = n.size - size;
  if (caching_ && ((small && remaining >= kRound) || (!small && remaining > kSmallRequest))) {
    const std::uint32_t rest_id = new_node();
    Node& b = nodes_[id];  // new_node may have moved the vector
    Node& rest = nodes_[rest_id];
    rest.address = b.address + size;
    rest.size = remaining;
    rest.small = b.small;
    rest.prev = id;
    rest.next = b.next;
    if (b.next != kNone) nodes_[b.next].prev = rest_id;
    b.next = rest_id;
    b.size = size;
    free_blocks.insert({rest.size, rest.address, rest_id});
  }
  Node& b = nodes_[id];
  b.free = false;
  b.requested = bytes;
  b.use = use;
  stats_.allocated_bytes += b.size;
  stats_.requested_bytes += bytes;
  const auto u = static_cast<std::size_t>(use);
  stats_.allocated_by_use[u] += b.size;
  stats_.peak_allocated_by_use[u] = std::max(stats_.peak_allocated_by_use[u], stats_.allocated_by_use[u]);
  stats_.peak_allocated_bytes = std::max(stats_.peak_allocated_bytes, stats_.allocated_bytes);
  stats_.recent_peak_allocated_bytes = std::max(stats_.recent_peak_allocated_bytes, stats_.allocated_bytes);
  ++stats_.allocations;
  return Block{b.address, b.size, id};
}

void CachingAllocator::set_use(std::uint32_t id, MemoryUse use) {
  if (id >= nodes_.size() || !nodes_[id].live || nodes_[id].free) {
    throw std::logic_error("CachingAllocator::set_use: not a live allocation");
  }
  Node& n = nodes_[id];
  stats_.allocated_by_use[static_cast<std::size_t>(n.use)] -= n.size;
  n.use = use;
  const auto u = static_cast<std::size_t>(use);
  stats_.allocated_by_use[u] += n.size;
  stats_.peak_allocated_by_use[u] = std::max(stats_.peak_allocated_by_use[u], stats_.allocated_by_use[u]);
}

void CachingAllocator::free(std::uint32_t id) {
  if (id >= nodes_.size() || !nodes_[id].live || nodes_[id].free) {
    throw std::logic_error("CachingAllocator::free: not a live allocation");
  }
  Node& n = nodes_[id];
  n.free = true;
  stats_.allocated_bytes -= n.size;
  stats_.requested_bytes -= n.requested;
  stats_.allocated_by_use[static_cast<std::size_t>(n.use)] -= n.size;
  FreeIndex& free_blocks = pool(n.small);
  // Merge with free neighbours in the same segment.
  auto absorb = [&](std::uint32_t keep, std::uint32_t gone) {
    Node& k = nodes_[keep];
    Node& g = nodes_[gone];
    k.size += g.size;
    k.next = g.next;
    if (g.next != kNone) nodes_[g.next].prev = keep;
    g.live = false;
    free_nodes_.push_back(gone);
  };
  std::uint32_t cur = id;
  if (const std::uint32_t nx = nodes_[cur].next; nx != kNone && nodes_[nx].free) {
    free_blocks.erase({nodes_[nx].size, nodes_[nx].address, nx});
    absorb(cur, nx);
  }
  if (const std::uint32_t pv = nodes_[cur].prev; pv != kNone && nodes_[pv].free) {
    free_blocks.erase({nodes_[pv].size, nodes_[pv].address, pv});
    absorb(pv, cur);
    cur = pv;
  }
  if (!caching_ && nodes_[cur].prev == kNone && nodes_[cur].next == kNone) {
    release_segment(cur);  // a whole segment again: back to the device (cudaFree)
    return;
  }
  free_blocks.insert({nodes_[cur].size, nodes_[cur].address, cur});
}

void CachingAllocator::release_segment(std::uint32_t id) {
  const Node& n = nodes_[id];
  device_release(n.address, n.size);
  stats_.reserved_bytes -= n.size;
  --stats_.segments;
  ++stats_.device_frees;
  nodes_[id].live = false;
  free_nodes_.push_back(id);
}

void CachingAllocator::set_caching(bool caching) {
  caching_ = caching;
  if (!caching_) empty_cache();
}

void CachingAllocator::reset_peak_stats() {
  stats_.recent_peak_allocated_bytes = stats_.allocated_bytes;
  stats_.recent_peak_reserved_bytes = stats_.reserved_bytes;
}

void CachingAllocator::empty_cache() {
  for (FreeIndex* index : {&small_free_, &large_free_}) {
    for (auto it = index->begin(); it != index->end();) {
      const std::uint32_t id = std::get<2>(*it);
      const Node& n = nodes_[id];
      // A free block with no neighbours is a whole segment.
      if (n.prev == kNone && n.next == kNone) {
        release_segment(id);
        it = index->erase(it);
      } else {
        ++it;
      }
    }
  }
}

}  // namespace syntorch::os
