#include "kernel_cache.hpp"

#include "syntorch/base/diagnostics.hpp"

namespace syntorch::runtime::detail {

std::unique_ptr<LoweredKernels> lower_kernels(const Dispatcher& dispatcher, const OpDesc& op, std::uint32_t device,
                                              bool why) {
  auto kernels = std::make_unique<LoweredKernels>();
  for (Kernel& k : dispatcher.lower(op, device)) {
    LoweredKernel lk;
    if (why) lk.why = join(k.why, "; ");
    lk.kernel = std::move(k);
    kernels->push_back(std::move(lk));
  }
  return kernels;
}

const LoweredKernels& KernelCache::lower(const OpDesc& op, std::uint32_t device) {
  // Devices built from one group of the config share its spec, so they lower ops alike.
  const std::lock_guard lock(mutex_);
  ByOp& by_op = by_spec_[machine_.devices()[device].spec_path];
  if (const auto it = by_op.find(op); it != by_op.end()) return *it->second;
  return *by_op.emplace(op, lower_kernels(dispatcher_, op, device, why_)).first->second;
}

}  // namespace syntorch::runtime::detail
