#include "components.hpp"

namespace syntorch::hw::detail {

void parse_switch(ObjectReader& r, ComponentSpec& out) {
  SwitchSpec s;
  s.latency_s = r.time("latency", false).value_or(0);
  s.bandwidth_bytes_per_s = r.bandwidth("bandwidth", false).value_or(0);
  s.in_switch_reduction = r.boolean("in_switch_reduction", false).value_or(false);
  out.body = s;
}

}  // namespace syntorch::hw::detail
