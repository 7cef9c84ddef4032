#include <fmt/format.h>

#include <limits>

#include "components.hpp"

namespace syntorch::hw::detail {

void parse_memory(ObjectReader& r, ComponentSpec& out) {
  MemorySpec m;
  m.size_bytes = r.size("size", true).value_or(0);
  m.bandwidth_bytes_per_s = r.bandwidth("bandwidth", true).value_or(0);
  m.latency_s = r.time("latency", false).value_or(0);
  m.efficiency = r.fraction("efficiency", false).value_or(1.0);
  m.write_efficiency = r.fraction("write_efficiency", false).value_or(m.efficiency);
  m.start_address = r.address("start_address", false);
  if (m.start_address && m.size_bytes > 0 &&
      static_cast<double>(*m.start_address) + m.size_bytes > static_cast<double>(std::numeric_limits<std::uint64_t>::max())) {
    r.error("start_address", fmt::format("the memory would end past the 64-bit address space ({:#x} + {:.0f} bytes)",
                                         *m.start_address, m.size_bytes));
  }
  out.body = m;
}

}  // namespace syntorch::hw::detail
