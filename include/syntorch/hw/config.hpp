#pragma once
// Plain structs for a hardware config as written in hw_configs/*.json, after parsing and
// validation and before anything is built (parse, validate all, then construct). Quantities are
// SI numbers whose units are in the field names.

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "syntorch/base/dtype.hpp"

namespace syntorch::hw {

// One CTA tile shape of a GEMM kernel: an m x n block of the output, k deep per mainloop step.
struct GemmTile {
  std::uint32_t m = 0;
  std::uint32_t n = 0;
  std::uint32_t k = 0;
};

// The processing units of a device (SMs, CUs, NPU cores): `units` identical ones at `clock_hz`,
// each doing the given operations per cycle on its matrix (tensor-core) and vector datapaths.
struct ComputeSpec {
  std::uint32_t units = 0;
  double clock_hz = 0;
  std::map<DType, double> matrix_ops_per_cycle;  // per unit; an FMA counts as 2 ops
  std::map<DType, double> vector_ops_per_cycle;  // per unit
  double shared_memory_bytes = 0;                // per unit; 0 = not given
  double register_file_bytes = 0;                // per unit; 0 = not given
  // Calibration: physical and efficiency parameters of kernels on these units.
  std::vector<GemmTile> gemm_tiles;              // CTA tile shapes the matrix units run
  double matrix_efficiency = 1;                  // fraction of matrix peak a GEMM mainloop sustains
  double vector_efficiency = 1;                  // same for vector-unit arithmetic
  double unit_bandwidth_bytes_per_s = 0;         // most one unit can stream from memory; 0 = no limit
  std::uint32_t tile_cluster = 1;                // GEMM CTAs that load one operand panel once between them
                                                 // (Hopper's TMA multicast in a cluster, Blackwell's CTA-pair
                                                 // MMA): each fetches 1/tile_cluster of the shared panel
  double kernel_overhead_s = 0;                  // device-side fixed cost of a kernel (ramp and drain)
  std::uint32_t resident_tiles_per_unit = 1;     // CTAs of a memory-bound kernel one unit holds at once
  bool async_matrix = false;                     // asynchronous matrix instructions + bulk copies (Hopper wgmma/TMA)
  double special_ops_per_cycle = 0;              // per unit: exponentials the special-function units finish
                                                 // per clock (0: not given; exps run on the vector units)
  double async_softmax_overlap = 1;              // on async_matrix devices: the share of attention's softmax (or,
                                                 // exponential-bound, of its products) FlashAttention-3's
                                                 // ping-pong hides behind the other; 1 = all of it
  double sync_matrix_efficiency = 1;             // on async_matrix devices: the fraction of the matrix rate that
                                                 // synchronous (pre-Hopper mma.sync) instructions reach

  std::vector<std::string> ops_supported;         // the ops the unit may run (op or PyTorch names); empty = all
  std::string ops_supported_pointer;              // where the config says so, for messages
  double peak_matrix_ops_per_s(DType t) const;   // 0 when the dtype is not supported
  double peak_vector_ops_per_s(DType t) const;
  // The fastest the unit runs the dtype, on whichever of its units is faster: what a utilisation
  // divides by, so that no kernel can run above it.
  double peak_ops_per_s(DType t) const { return std::max(peak_matrix_ops_per_s(t), peak_vector_ops_per_s(t)); }
};

// A device's main memory (HBM, GDDR, DRAM): capacity and peak bandwidth.
struct MemorySpec {
  double size_bytes = 0;
  double bandwidth_bytes_per_s = 0;
  double latency_s = 0;
  double efficiency = 1;  // fraction of peak bandwidth streaming kernels achieve reading
  double write_efficiency = 0;  // ... writing (DRAM bus turnarounds); 0 = as reading
  std::optional<std::uint64_t> start_address;  // where it sits in the device's address space
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
  double device_malloc_s = 0;   // host time of one cudaMalloc (a segment or, uncached, a tensor); 0 = free
  double device_free_s = 0;     // host time of one cudaFree, after the device sync it implies; 0 = free
  double memcpy_bandwidth_bytes_per_s = 0;  // the host's copy rate between pageable memory and a pinned
                                            // staging buffer (pageable transfers); 0 = no staging cost
  double memory_bytes = 0;      // host DRAM; 0 = not given
};

// A point-to-point, full-duplex connection: `bandwidth` in each direction. `endpoints` name
// components relative to the group the link is declared in, with [*] or [i] for group instances.
struct LinkSpec {
  double bandwidth_bytes_per_s = 0;  // per direction
  double latency_s = 0;
  double efficiency = 1;             // fraction of bandwidth data transfers achieve (protocol overhead)
  std::vector<std::string> endpoints;
  std::vector<std::string> endpoint_paths;  // JSON pointer of each endpoint string, for errors
};

// A switch (NVSwitch, PCIe switch, network switch). Non-blocking unless `bandwidth` is given.
struct SwitchSpec {
  double latency_s = 0;
  double bandwidth_bytes_per_s = 0;  // aggregate switching capacity; 0 = non-blocking
  bool in_switch_reduction = false;  // can reduce in the switch (NVLink SHARP / NVLS)
};

// One protocol of a device's communication library (NCCL's Simple, LL, LL128): a collective run
// in it pays `launch_latency` once and `step_latency` of synchronisation per algorithm step; data
// moves in pipelined chunks of `chunk_bytes` per channel over up to `channels` channels (one CTA
// each) of at most `channel_bandwidth` on the wire each, one per chunk a step holds, so small
// messages use few channels; `payload` is the share of wire bytes that is data (LL sends a flag
// with every 4 bytes: 0.5; LL128 one flag word per 128-byte line: 120/128).
struct CollectiveProtocol {
  std::string name;
  double launch_latency_s = 0;
  double step_latency_s = 0;
  double chunk_bytes = 0;
  std::uint32_t channels = 1;
  double channel_bandwidth_bytes_per_s = 0;  // 0 = no limit per channel
  double payload = 1;
};

// How a device's communication library (NCCL/RCCL-like) moves collective data: its protocols,
// "simple" first (the component's own fields), then those under `protocols`; and what a
// reduction in a switch costs it (NCCL's NVLS): a fixed `in_switch_latency` and the share of the
// link (`in_switch_efficiency`) its multicast loads and stores reach.
struct CollectiveSpec {
  std::vector<CollectiveProtocol> protocols;
  double in_switch_latency_s = 0;
  double in_switch_efficiency = 1;

  const CollectiveProtocol& simple() const { return protocols.front(); }
  const CollectiveProtocol* protocol(std::string_view name) const;
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
  std::variant<ComputeSpec, MemorySpec, CacheSpec, HostSpec, LinkSpec, SwitchSpec, GroupSpec, CollectiveSpec> body;
};

struct HardwareConfig {
  std::string file;   // the file it was loaded from (for messages)
  std::string name;
  std::vector<std::string> notes;
  GroupSpec root;     // the top-level components, count 1
};

std::string_view component_type_name(const ComponentSpec& c);

}  // namespace syntorch::hw
