#pragma once
// Plain structs for a hardware config as written in hw_configs/*.json, after parsing and
// validation and before anything is built (parse, validate all, then construct). Quantities are
// SI numbers whose units are in the field names.

#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "syntorch/base/dtype.hpp"

namespace syntorch::hw {

// The processing units of a device (SMs, CUs, NPU cores): `units` identical ones at `clock_hz`,
// each doing the given operations per cycle on its matrix (tensor-core) and vector datapaths.
struct ComputeSpec {
  std::uint32_t units = 0;
  double clock_hz = 0;
  std::map<DType, double> matrix_ops_per_cycle;  // per unit; an FMA counts as 2 ops
  std::map<DType, double> vector_ops_per_cycle;  // per unit
  double shared_memory_bytes = 0;                // per unit; 0 = not given

  double peak_matrix_ops_per_s(DType t) const;   // 0 when the dtype is not supported
  double peak_vector_ops_per_s(DType t) const;
};

// A device's main memory (HBM, GDDR, DRAM): capacity and peak bandwidth.
struct MemorySpec {
  double size_bytes = 0;
  double bandwidth_bytes_per_s = 0;
  double latency_s = 0;
};

// An on-device cache (L2): capacity and, optionally, bandwidth.
struct CacheSpec {
  double size_bytes = 0;
  double bandwidth_bytes_per_s = 0;  // 0 = not given
};

// The host side of a node: CPU-side costs that every kernel launch and synchronisation pays.
struct HostSpec {
  double op_dispatch_s = 0;     // framework cost per op on the host (eager mode)
  double kernel_launch_s = 0;   // host time of one launch API call
  double launch_latency_s = 0;  // from enqueue to the kernel starting on an idle device
  double sync_latency_s = 0;    // from the device finishing to the host noticing
  double graph_launch_s = 0;    // host time to launch one captured graph
  double memory_bytes = 0;      // host DRAM; 0 = not given
};

// A point-to-point, full-duplex connection: `bandwidth` in each direction. `endpoints` name
// components relative to the group the link is declared in, with [*] or [i] for group instances.
struct LinkSpec {
  double bandwidth_bytes_per_s = 0;  // per direction
  double latency_s = 0;
  std::vector<std::string> endpoints;
  std::vector<std::string> endpoint_paths;  // JSON pointer of each endpoint string, for errors
};

// A switch (NVSwitch, PCIe switch, network switch). Non-blocking unless `bandwidth` is given.
struct SwitchSpec {
  double latency_s = 0;
  double bandwidth_bytes_per_s = 0;  // aggregate switching capacity; 0 = non-blocking
  bool in_switch_reduction = false;  // can reduce in the switch (NVLink SHARP / NVLS)
};

struct ComponentSpec;

// A group of components, instantiated `count` times. A group that directly contains a compute
// component is a device (a GPU); other groups (a node, a rack) only organise.
struct GroupSpec {
  std::uint32_t count = 1;
  std::vector<ComponentSpec> components;  // in file order
};

struct ComponentSpec {
  std::string name;
  std::string json_path;
  std::variant<ComputeSpec, MemorySpec, CacheSpec, HostSpec, LinkSpec, SwitchSpec, GroupSpec> body;
};

struct HardwareConfig {
  std::string file;   // the file it was loaded from (for messages)
  std::string name;
  std::vector<std::string> notes;
  GroupSpec root;     // the top-level components, count 1
};

std::string_view component_type_name(const ComponentSpec& c);

}  // namespace syntorch::hw
