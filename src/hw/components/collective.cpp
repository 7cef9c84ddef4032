#include "components.hpp"

namespace syntorch::hw::detail {

void parse_collective(ObjectReader& r, ComponentSpec& out) {
  CollectiveSpec c;
  c.step_latency_s = r.time("step_latency", true).value_or(0);
  c.chunk_bytes = r.size("chunk", true).value_or(0);
  out.body = c;
}

}  // namespace syntorch::hw::detail
