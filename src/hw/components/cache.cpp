#include "components.hpp"

namespace syntorch::hw::detail {

void parse_cache(ObjectReader& r, ComponentSpec& out) {
  CacheSpec c;
  c.size_bytes = r.size("size", true).value_or(0);
  c.bandwidth_bytes_per_s = r.bandwidth("bandwidth", false).value_or(0);
  out.body = c;
}

}  // namespace syntorch::hw::detail
