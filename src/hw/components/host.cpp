#include "components.hpp"

namespace syntorch::hw::detail {

void parse_host(ObjectReader& r, ComponentSpec& out) {
  HostSpec h;
  h.op_dispatch_s = r.time("op_dispatch", true).value_or(0);
  h.kernel_launch_s = r.time("kernel_launch", true).value_or(0);
  h.launch_latency_s = r.time("launch_latency", true).value_or(0);
  h.sync_latency_s = r.time("sync_latency", true).value_or(0);
  h.graph_launch_s = r.time("graph_launch", false).value_or(h.kernel_launch_s);
  h.device_malloc_s = r.time("device_malloc", false).value_or(0);
  h.device_free_s = r.time("device_free", false).value_or(0);
  h.memcpy_bandwidth_bytes_per_s = r.bandwidth("memcpy_bandwidth", false).value_or(0);
  h.memory_bytes = r.size("memory", false).value_or(0);
  out.body = h;
}

}  // namespace syntorch::hw::detail
