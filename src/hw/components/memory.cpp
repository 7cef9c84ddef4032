#include "components.hpp"

namespace syntorch::hw::detail {

void parse_memory(ObjectReader& r, ComponentSpec& out) {
  MemorySpec m;
  m.size_bytes = r.size("size", true).value_or(0);
  m.bandwidth_bytes_per_s = r.bandwidth("bandwidth", true).value_or(0);
  m.latency_s = r.time("latency", false).value_or(0);
  m.efficiency = r.fraction("efficiency", false).value_or(1.0);
  out.body = m;
}

}  // namespace syntorch::hw::detail
