#pragma once
// Kernels as lowered for a device spec, shared by every rank whose device has that spec: ranks
// issue the same ops over and over, so the simulator thread reads a few records that stay in its
// cache, not a copy per rank written by each program's thread. A rank keeps its own index of the
// records it has used, so the lock is taken only the first time a rank meets an op.

#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "syntorch/hw/machine.hpp"
#include "syntorch/runtime/dispatcher.hpp"
#include "syntorch/runtime/kernel.hpp"
#include "syntorch/runtime/op.hpp"

namespace syntorch::runtime::detail {

// A kernel as lowered, with the dispatcher's reasons joined for traces. Its `device` is the
// device of the rank that lowered it first: the rank launching it says where it runs.
struct LoweredKernel {
  Kernel kernel;
  std::string why;
};
using LoweredKernels = std::vector<LoweredKernel>;

// `op` lowered by `dispatcher` for `device` (`why` joined when traces need it). Throws what the
// dispatcher throws for an op the device refuses, leaving nothing behind.
std::unique_ptr<LoweredKernels> lower_kernels(const Dispatcher& dispatcher, const OpDesc& op, std::uint32_t device,
                                              bool why);

class KernelCache {
 public:
  KernelCache(const hw::Machine& machine, const Dispatcher& dispatcher, bool why)
      : machine_(machine), dispatcher_(dispatcher), why_(why) {}

  // The kernels of `op` on `device`, lowered the first time any device of its spec needs them.
  // Safe to call from every program thread at once.
  const LoweredKernels& lower(const OpDesc& op, std::uint32_t device);

 private:
  using ByOp = std::unordered_map<OpDesc, std::unique_ptr<LoweredKernels>, OpDescHash>;
  const hw::Machine& machine_;
  const Dispatcher& dispatcher_;
  bool why_;
  std::mutex mutex_;
  std::unordered_map<std::string, ByOp> by_spec_;  // by the device group's JSON pointer
};

}  // namespace syntorch::runtime::detail
