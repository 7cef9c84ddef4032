#include "syntorch/runtime/rank_context.hpp"

#include <atomic>

#include <fmt/format.h>

namespace syntorch::runtime {

OutOfMemory::OutOfMemory(int rank, std::uint64_t requested_bytes, std::string what)
    : std::runtime_error(fmt::format("rank {}: out of device memory allocating {} bytes for {}", rank, requested_bytes,
                                     what)),
      rank_(rank),
      requested_bytes_(requested_bytes),
      what_(std::move(what)) {}

namespace {
// Thread-local because each rank's program runs on a thread of its own: the rank whose program runs
// here (RankGuard), so torch calls need no context argument, as libtorch's do not; and what its
// new allocations are for (MemoryUseGuard), which one rank's guard must not set for another's.
thread_local RankContext* t_current = nullptr;
thread_local os::MemoryUse t_use = os::MemoryUse::activations;
}  // namespace

RankContext::RankContext() {
  static std::atomic<std::uint64_t> next{1};
  serial_ = next.fetch_add(1, std::memory_order_relaxed);
}

RankContext* current_rank() { return t_current; }

RankGuard::RankGuard(RankContext* context) : previous_(t_current) { t_current = context; }
RankGuard::~RankGuard() { t_current = previous_; }

os::MemoryUse current_memory_use() { return t_use; }

MemoryUseGuard::MemoryUseGuard(os::MemoryUse use) : previous_(t_use) { t_use = use; }
MemoryUseGuard::~MemoryUseGuard() { t_use = previous_; }

}  // namespace syntorch::runtime
