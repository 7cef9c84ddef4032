#pragma once
// A hardware config on its own, as front ends ask about one (`syntorch hw validate`, `hw show`,
// a study's roofline plot): checked whole, described for a reader, its first device's peaks. The
// zoo's model names, for the help texts that list them.

#include <cstddef>
#include <string>
#include <vector>

#include "syntorch/base/dtype.hpp"
#include "syntorch/hw/machine.hpp"

namespace syntorch::session {

// A config that loaded and checked whole: its name and size.
struct HardwareSummary {
  std::string name;
  std::size_t devices = 0;
  std::size_t links = 0;
};
// Loads `file` and checks it whole, the op names its metadata lists as supported included;
// throws InputError with every problem.
HardwareSummary check_hardware(const std::string& file);

// The config with its "/json/pointer=value" overrides, as a run uses it (the benchmarks load their
// machines so). Throws InputError with every problem.
hw::Machine load_machine(const std::string& file, const std::vector<std::string>& sets = {});

// The config with its "/json/pointer=value" overrides, described: devices, peak FLOP/s,
// memories, links and topology. Throws InputError.
std::string describe_hardware(const std::string& file, const std::vector<std::string>& sets);

// The first device's peaks, for a roofline: its matrix units' FLOP/s in `dtype` (its vector
// units' fp32 FLOP/s where it has no matrix unit for it), its memory's bandwidth. Throws
// InputError.
struct DevicePeaks {
  std::string device;
  std::string machine;
  double flops_per_s = 0;
  double memory_bytes_per_s = 0;
};
DevicePeaks device_peaks(const std::string& file, const std::vector<std::string>& sets, DType dtype);

// The zoo's model names and custom forms, in the registry's order.
std::vector<std::string> zoo_model_names();

}  // namespace syntorch::session
