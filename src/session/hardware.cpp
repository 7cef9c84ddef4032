#include "syntorch/session/hardware.hpp"

#include "syntorch/base/diagnostics.hpp"
#include "syntorch/hw/config_loader.hpp"
#include "syntorch/hw/describe.hpp"
#include "syntorch/hw/machine.hpp"
#include "syntorch/models/registry.hpp"
#include "syntorch/runtime/ops_supported.hpp"

namespace syntorch::session {

namespace {
// The config with its overrides; every problem with either in one InputError.
hw::Machine load(const std::string& file, const std::vector<std::string>& sets) {
  Diagnostics d;
  const std::vector<hw::Override> overrides = hw::parse_overrides(sets, d);
  try {
    hw::Machine m = hw::Machine::load(file, overrides);
    if (d.empty()) return m;
  } catch (const InputError& e) {
    d.append(e.diagnostics());
  }
  throw InputError(std::move(d));
}
}  // namespace

hw::Machine load_machine(const std::string& file, const std::vector<std::string>& sets) { return load(file, sets); }

HardwareSummary check_hardware(const std::string& file) {
  const hw::Machine m = hw::Machine::load(file);
  Diagnostics ops;  // op names in metadata.ops_supported are the runtime's to check
  runtime::ops_supported(m, ops);
  if (!ops.empty()) throw InputError(std::move(ops));
  return {m.name(), m.devices().size(), m.links().size()};
}

std::string describe_hardware(const std::string& file, const std::vector<std::string>& sets) {
  return hw::describe_machine(load(file, sets));
}

DevicePeaks device_peaks(const std::string& file, const std::vector<std::string>& sets, DType dtype) {
  const hw::Machine m = load(file, sets);
  const hw::Device& dev = m.devices().front();
  DevicePeaks p;
  p.device = dev.name;
  p.machine = m.name();
  p.flops_per_s = dev.compute.peak_matrix_ops_per_s(dtype);
  if (p.flops_per_s <= 0) p.flops_per_s = dev.compute.peak_vector_ops_per_s(DType::fp32);
  p.memory_bytes_per_s = dev.memory.bandwidth_bytes_per_s;
  return p;
}

std::vector<std::string> zoo_model_names() { return models::model_names(); }

}  // namespace syntorch::session
