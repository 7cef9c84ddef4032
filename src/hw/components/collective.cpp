#include "components.hpp"

namespace syntorch::hw::detail {

void parse_collective(ObjectReader& r, ComponentSpec& out) {
  CollectiveSpec c;
  c.step_latency_s = r.time("step_latency", true).value_or(0);
  c.chunk_bytes = r.size("chunk", true).value_or(0);
  c.channels = r.count("channels", false, 1).value_or(1);
  c.channel_bandwidth_bytes_per_s = r.bandwidth("channel_bandwidth", false).value_or(0);
  out.body = c;
}

}  // namespace syntorch::hw::detail
