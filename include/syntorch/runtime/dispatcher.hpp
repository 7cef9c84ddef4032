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
#include "syntorch/runtime/ops_supported.hpp"
#include "syntorch/runtime/policy.hpp"

namespace syntorch::runtime {

class Dispatcher {
 public:
  // Throws InputError when the config restricts a device to ops it does not name correctly.
  Dispatcher(const hw::Machine& machine, KernelPolicy policy);

  // The kernels that compute `op` on device `device`, in launch order. Throws InputError when the
  // device cannot (an op its config does not list, an unsupported dtype or implementation) or the
  // shapes are invalid.
  std::vector<Kernel> lower(const OpDesc& op, std::uint32_t device) const;

  // The transfer plan of a collective among `devices` (rank order). Throws InputError likewise.
  CollectivePlan lower_collective(const OpDesc& op, std::span<const std::uint32_t> devices) const;

  const KernelPolicy& policy() const { return policy_; }
  const hw::Machine& machine() const { return machine_; }

 private:
  // Throws InputError when `device` may not run `op` (its config's metadata.ops_supported).
  void check_supported(const OpDesc& op, std::uint32_t device) const;

  const hw::Machine& machine_;
  KernelPolicy policy_;
  std::vector<OpSet> supported_;  // per device
};

}  // namespace syntorch::runtime
