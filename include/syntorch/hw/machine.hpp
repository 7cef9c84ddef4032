#pragma once
// A hardware config elaborated into instances: every device (a group holding a compute), switch,
// host and link, with groups expanded (`gpu[3]`, `node[1].gpu[3]`), link endpoints resolved, and
// the interconnect as a boost-graph topology with a route between every two endpoints. Plain
// data, immutable after load and safe to share between threads; binding it to a simulator is
// SimMachine's job.

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "syntorch/hw/config.hpp"
#include "syntorch/hw/config_loader.hpp"

namespace syntorch::hw {

namespace detail {
class RouteTable;
}

enum class EndpointKind : std::uint8_t { device, switch_, host };
std::string_view endpoint_kind_name(EndpointKind k);

struct Endpoint {
  std::string name;
  EndpointKind kind;
  std::uint32_t index;  // into devices(), switches() or hosts()
};

struct Device {
  std::string name;  // e.g. "gpu[3]"
  std::uint32_t endpoint = 0;
  ComputeSpec compute;
  MemorySpec memory;
  CacheSpec cache;  // size 0 when the device has none
  std::optional<CollectiveSpec> collective;  // absent when the device has no collective library
  std::string spec_path;  // JSON pointer of the group that defines it
};

struct Switch {
  std::string name;
  std::uint32_t endpoint = 0;
  SwitchSpec spec;
};

struct Host {
  std::string name;
  std::uint32_t endpoint = 0;
  HostSpec spec;
};

struct Link {
  std::string name;  // e.g. "nvlink[3]"
  std::uint32_t a = 0;  // endpoints; "forward" is a -> b
  std::uint32_t b = 0;
  double bandwidth_bytes_per_s = 0;  // per direction
  double latency_s = 0;
  double efficiency = 1;             // achievable fraction of the bandwidth
  std::string spec_path;  // JSON pointer of the link component that declared it
};

// One step of a route: a link crossed in one direction.
struct Hop {
  std::uint32_t link;
  bool forward;  // true: from link.a to link.b
};

struct Route {
  std::vector<Hop> hops;
  std::vector<std::uint32_t> switches;  // switch indices crossed, in order
  double latency_s = 0;                 // links plus switches crossed
  double bottleneck_bytes_per_s = 0;    // slowest link on the way (0 for an empty route)
};

class Machine {
 public:
  // Loads, validates and elaborates `file`. Throws InputError listing every problem.
  static Machine load(const std::string& file, const std::vector<Override>& overrides = {});

  const HardwareConfig& config() const { return config_; }
  const std::string& name() const { return config_.name; }
  std::span<const Device> devices() const { return devices_; }
  std::span<const Switch> switches() const { return switches_; }
  std::span<const Host> hosts() const { return hosts_; }
  std::span<const Link> links() const { return links_; }
  std::span<const Endpoint> endpoints() const { return endpoints_; }

  std::optional<std::uint32_t> find_endpoint(std::string_view name) const;
  // The route between two endpoints (empty when from == to). Routes minimise the time to move a
  // 1 MiB message (latency, switches, serialisation per hop) and never pass through a host.
  const Route& route(std::uint32_t from_endpoint, std::uint32_t to_endpoint) const;
  // The host closest to a device (by route latency), if the machine has hosts.
  std::optional<std::uint32_t> host_of_device(std::uint32_t device) const;

 private:
  friend struct MachineBuilder;
  HardwareConfig config_;
  std::vector<Device> devices_;
  std::vector<Switch> switches_;
  std::vector<Host> hosts_;
  std::vector<Link> links_;
  std::vector<Endpoint> endpoints_;
  // Routes, a source at a time on first use; shared by copies of the machine (they are the same).
  std::shared_ptr<const detail::RouteTable> routes_;
  std::unordered_map<std::string, std::uint32_t> endpoint_index_;
};

}  // namespace syntorch::hw
