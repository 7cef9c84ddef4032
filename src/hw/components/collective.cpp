#include <fmt/format.h>

#include "components.hpp"

namespace syntorch::hw::detail {

namespace {
// The fields one protocol has; `channels` defaults to the simple protocol's.
void read_protocol(ObjectReader& r, CollectiveProtocol& p, std::uint32_t default_channels) {
  p.launch_latency_s = r.time("launch_latency", false).value_or(0);
  p.step_latency_s = r.time("step_latency", true).value_or(0);
  p.chunk_bytes = r.size("chunk", true).value_or(0);
  p.channels = r.count("channels", false, 1).value_or(default_channels);
  p.channel_bandwidth_bytes_per_s = r.bandwidth("channel_bandwidth", false).value_or(0);
}
}  // namespace

void parse_collective(ObjectReader& r, ComponentSpec& out) {
  CollectiveSpec c;
  CollectiveProtocol simple;
  simple.name = "simple";
  read_protocol(r, simple, 1);
  c.protocols.push_back(simple);
  c.in_switch_latency_s = r.time("in_switch_latency", false).value_or(0);
  c.in_switch_efficiency = r.fraction("in_switch_efficiency", false).value_or(1);
  if (const Json* protocols = r.raw("protocols")) {
    const std::string pointer = child_pointer(r.pointer(), "protocols");
    if (!protocols->is_object()) {
      r.error("protocols", fmt::format("expected an object mapping protocol names (such as ll, ll128) to "
                                       "{{step_latency, chunk, payload, ...}}, got {}",
                                       describe_json(*protocols)));
    } else {
      for (auto it = protocols->begin(); it != protocols->end(); ++it) {
        const std::string at = child_pointer(pointer, it.key());
        const bool lower_case = !it.key().empty() && it.key().find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_") ==
                                                         std::string::npos;
        if (it.key() == "simple" || !lower_case) {
          r.context().error(at, "a protocol needs a name of its own in lower case letters, digits and '_' (policies "
                                "name it so, as in allreduce=ring:ll128), and not \"simple\", which the component's "
                                "own fields describe");
          continue;
        }
        if (!it.value().is_object()) {
          r.context().error(at, fmt::format("expected an object {{step_latency, chunk, payload, ...}}, got {}",
                                            describe_json(it.value())));
          continue;
        }
        ObjectReader pr(it.value(), at, r.context(), fmt::format("collective protocol \"{}\"", it.key()));
        pr.strings("notes", false);
        CollectiveProtocol p;
        p.name = it.key();
        read_protocol(pr, p, simple.channels);
        p.payload = pr.fraction("payload", true).value_or(1);
        pr.finish();
        c.protocols.push_back(std::move(p));
      }
    }
  }
  out.body = c;
}

}  // namespace syntorch::hw::detail
