#pragma once
// The Dispatcher lowers an op for a device (or a group of devices, for collectives) by the
// KernelPolicy: it resolves the implementation and the precision, checks the device can run
// them, and records for every kernel why it was chosen (policy, shape, dtype, capability).

#include <span>
#include <vector>

#include "syntorch/hw/machine.hpp"
#include "syntorch/runtime/executor.hpp"
#include "syntorch/runtime/kernel.hpp"
#include "syntorch/runtime/op.hpp"
#include "syntorch/runtime/policy.hpp"

namespace syntorch::runtime {

class Dispatcher {
 public:
  Dispatcher(const hw::Machine& machine, KernelPolicy policy);

  // The kernels that compute `op` on device `device`, in launch order. Throws InputError when the
  // device cannot (an unsupported dtype or implementation) or the shapes are invalid.
  std::vector<Kernel> lower(const OpDesc& op, std::uint32_t device) const;

  // The transfer plan of a collective among `devices` (rank order). Throws InputError likewise.
  CollectivePlan lower_collective(const OpDesc& op, std::span<const std::uint32_t> devices) const;

  const KernelPolicy& policy() const { return policy_; }
  const hw::Machine& machine() const { return machine_; }

 private:
  const hw::Machine& machine_;
  KernelPolicy policy_;
};

}  // namespace syntorch::runtime
