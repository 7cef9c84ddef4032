#include <fmt/format.h>

#include "components.hpp"

namespace syntorch::hw::detail {

void parse_link(ObjectReader& r, ComponentSpec& out) {
  LinkSpec l;
  l.bandwidth_bytes_per_s = r.bandwidth("bandwidth", true).value_or(0);
  l.latency_s = r.time("latency", false).value_or(0);
  l.efficiency = r.fraction("efficiency", false).value_or(1.0);
  const Json* ends = r.raw("endpoints");
  const std::string path = child_pointer(r.pointer(), "endpoints");
  const char* expected = "expected two endpoint names like [\"gpu[*]\", \"nvswitch\"]";
  if (!ends) {
    r.context().error(r.pointer(), fmt::format("missing required field \"endpoints\" ({}) in a link component",
                                               "two component names like [\"gpu[*]\", \"nvswitch\"]"));
  } else if (!ends->is_array() || ends->size() != 2 || !(*ends)[0].is_string() || !(*ends)[1].is_string()) {
    r.context().error(path, fmt::format("{}, got {}", expected, describe_json(*ends)));
  } else {
    for (std::size_t i = 0; i < 2; ++i) {
      l.endpoints.push_back((*ends)[i].get<std::string>());
      l.endpoint_paths.push_back(child_pointer(path, i));
    }
  }
  out.body = std::move(l);
}

}  // namespace syntorch::hw::detail
