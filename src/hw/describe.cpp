#include "syntorch/hw/describe.hpp"

#include <fmt/format.h>

#include "syntorch/base/units.hpp"

namespace syntorch::hw {

namespace {

// A column-aligned text table.
class Table {
 public:
  explicit Table(std::vector<std::string> header) { rows_.push_back(std::move(header)); }
  void add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  std::string render(std::string_view indent = "  ") const {
    std::vector<std::size_t> width;
    for (const auto& r : rows_) {
      if (width.size() < r.size()) width.resize(r.size(), 0);
      for (std::size_t i = 0; i < r.size(); ++i) width[i] = std::max(width[i], r[i].size());
    }
    std::string out;
    for (std::size_t k = 0; k < rows_.size(); ++k) {
      std::string line(indent);
      for (std::size_t i = 0; i < rows_[k].size(); ++i) {
        line += rows_[k][i];
        if (i + 1 < rows_[k].size()) line += std::string(width[i] - rows_[k][i].size() + 2, ' ');
      }
      out += line + "\n";
      if (k == 0) {
        std::string rule(indent);
        for (std::size_t i = 0; i < width.size(); ++i) rule += std::string(width[i], '-') + (i + 1 < width.size() ? "  " : "");
        out += rule + "\n";
      }
    }
    return out;
  }

 private:
  std::vector<std::vector<std::string>> rows_;
};

// "simple: step 1.4 us, chunk 128 KiB, 12 x 24 GB/s; ll: ...; in-switch 25 us, efficiency 0.85".
std::string describe_library(const CollectiveSpec& c) {
  std::vector<std::string> parts;
  for (const CollectiveProtocol& p : c.protocols) {
    std::string s = fmt::format("{}: step {}, chunk {}, {} x {}", p.name, units::format_time_s(p.step_latency_s),
                                units::format_size(p.chunk_bytes), p.channels,
                                p.channel_bandwidth_bytes_per_s > 0 ? units::format_bandwidth(p.channel_bandwidth_bytes_per_s)
                                                                    : "unlimited");
    if (p.launch_latency_s > 0) s += fmt::format(", launch {}", units::format_time_s(p.launch_latency_s));
    if (p.payload < 1) s += fmt::format(", payload {:g}", p.payload);
    parts.push_back(std::move(s));
  }
  if (c.in_switch_latency_s > 0 || c.in_switch_efficiency < 1) {
    parts.push_back(fmt::format("in-switch {}, efficiency {:g}", units::format_time_s(c.in_switch_latency_s),
                                c.in_switch_efficiency));
  }
  return join(parts, "; ");
}

// "gpu[0..7]" for a run of instances "gpu[0]".."gpu[7]" that share a spec.
std::string range_name(const std::string& first, const std::string& last, std::size_t count) {
  if (count == 1) return first;
  const auto lb = first.rfind('[');
  const auto lb2 = last.rfind('[');
  if (lb == std::string::npos || lb2 == std::string::npos || first.substr(0, lb) != last.substr(0, lb2)) {
    return fmt::format("{} .. {}", first, last);
  }
  return fmt::format("{}[{}..{}", first.substr(0, lb), first.substr(lb + 1, first.size() - lb - 2), last.substr(lb2 + 1));
}

// Runs of consecutive items with the same key: (first index, count).
template <class T, class Key>
std::vector<std::pair<std::size_t, std::size_t>> runs(std::span<const T> items, Key key) {
  std::vector<std::pair<std::size_t, std::size_t>> out;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (!out.empty() && key(items[out.back().first]) == key(items[i])) {
      ++out.back().second;
    } else {
      out.emplace_back(i, 1);
    }
  }
  return out;
}

std::string route_text(const Machine& m, const Route& r) {
  std::string s;
  for (std::size_t h = 0; h < r.hops.size(); ++h) {
    const Link& l = m.links()[r.hops[h].link];
    const std::uint32_t to = r.hops[h].forward ? l.b : l.a;
    s += l.name;
    if (h + 1 < r.hops.size()) s += " > " + m.endpoints()[to].name + " > ";
  }
  return s;
}

}  // namespace

std::string describe_machine(const Machine& m) {
  std::string out;
  out += fmt::format("{}  ({})\n", m.name(), m.config().file);
  out += fmt::format("  {} device(s), {} switch(es), {} host(s), {} link(s)\n", m.devices().size(), m.switches().size(),
                     m.hosts().size(), m.links().size());
  for (const auto& n : m.config().notes) out += fmt::format("  note: {}\n", n);

  const auto device_runs = runs(m.devices(), [](const Device& d) { return d.spec_path; });
  out += "\nDevices\n";
  Table dev({"devices", "units", "clock", "HBM", "HBM bandwidth", "HBM latency", "L2", "L2 bandwidth", "smem/unit",
             "registers/unit"});
  for (auto [first, count] : device_runs) {
    const Device& d = m.devices()[first];
    dev.add({range_name(d.name, m.devices()[first + count - 1].name, count), std::to_string(d.compute.units),
             units::format_frequency(d.compute.clock_hz), units::format_size(d.memory.size_bytes),
             units::format_bandwidth(d.memory.bandwidth_bytes_per_s),
             d.memory.latency_s > 0 ? units::format_time_s(d.memory.latency_s) : "-",
             d.cache.size_bytes > 0 ? units::format_size(d.cache.size_bytes) : "-",
             d.cache.bandwidth_bytes_per_s > 0 ? units::format_bandwidth(d.cache.bandwidth_bytes_per_s) : "-",
             d.compute.shared_memory_bytes > 0 ? units::format_size(d.compute.shared_memory_bytes) : "-",
             d.compute.register_file_bytes > 0 ? units::format_size(d.compute.register_file_bytes) : "-"});
  }
  out += dev.render();

  out += "\nCalibration (achievable fractions and fixed costs)\n";
  Table cal({"devices", "matrix eff", "vector eff", "HBM eff", "unit bandwidth", "kernel overhead", "tiles/unit",
             "gemm tiles", "collective library"});
  for (auto [first, count] : device_runs) {
    const Device& d = m.devices()[first];
    std::vector<std::string> tiles;
    for (const auto& t : d.compute.gemm_tiles) tiles.push_back(fmt::format("{}x{}x{}", t.m, t.n, t.k));
    cal.add({range_name(d.name, m.devices()[first + count - 1].name, count), fmt::format("{:g}", d.compute.matrix_efficiency),
             fmt::format("{:g}", d.compute.vector_efficiency), fmt::format("{:g}", d.memory.efficiency),
             d.compute.unit_bandwidth_bytes_per_s > 0 ? units::format_bandwidth(d.compute.unit_bandwidth_bytes_per_s) : "-",
             units::format_time_s(d.compute.kernel_overhead_s), std::to_string(d.compute.resident_tiles_per_unit),
             tiles.empty() ? "-" : fmt::format("{} shapes", tiles.size()),
             d.collective ? describe_library(*d.collective) : "-"});
  }
  out += cal.render();

  out += "\nPeak throughput per device (matrix = tensor cores, vector = SIMD cores)\n";
  std::vector<std::string> header{"dtype"};
  for (auto [first, count] : device_runs) {
    header.push_back(range_name(m.devices()[first].name, m.devices()[first + count - 1].name, count) + " matrix");
    header.push_back("vector");
  }
  Table peak(header);
  for (DType t : kAllDTypes) {
    std::vector<std::string> row{std::string(dtype_name(t))};
    bool any = false;
    for (auto [first, count] : device_runs) {
      const ComputeSpec& c = m.devices()[first].compute;
      const double mx = c.peak_matrix_ops_per_s(t);
      const double vx = c.peak_vector_ops_per_s(t);
      any = any || mx > 0 || vx > 0;
      row.push_back(mx > 0 ? units::format_flops(mx) : "-");
      row.push_back(vx > 0 ? units::format_flops(vx) : "-");
    }
    if (any) peak.add(row);
  }
  out += peak.render();

  if (!m.links().empty()) {
    out += "\nLinks (bandwidth per direction)\n";
    Table links({"links", "connects", "bandwidth", "efficiency", "latency"});
    for (auto [first, count] : runs(m.links(), [](const Link& l) { return l.spec_path; })) {
      const Link& l = m.links()[first];
      const Link& last = m.links()[first + count - 1];
      std::string connects = m.endpoints()[l.a].name + " <-> " + m.endpoints()[l.b].name;
      if (count > 1) connects += fmt::format(" .. {} <-> {}", m.endpoints()[last.a].name, m.endpoints()[last.b].name);
      links.add({range_name(l.name, last.name, count), connects, units::format_bandwidth(l.bandwidth_bytes_per_s),
                 fmt::format("{:g}", l.efficiency), units::format_time_s(l.latency_s)});
    }
    out += links.render();
  }
  if (!m.switches().empty()) {
    out += "\nSwitches\n";
    Table sw({"switch", "latency", "capacity", "in-switch reduction"});
    for (const Switch& s : m.switches()) {
      sw.add({s.name, units::format_time_s(s.spec.latency_s),
              s.spec.bandwidth_bytes_per_s > 0 ? units::format_bandwidth(s.spec.bandwidth_bytes_per_s) : "non-blocking",
              s.spec.in_switch_reduction ? "yes" : "no"});
    }
    out += sw.render();
  }
  if (!m.hosts().empty()) {
    out += "\nHosts\n";
    Table hosts({"host", "op dispatch", "kernel launch", "launch latency", "sync latency", "graph launch", "memory"});
    for (const Host& h : m.hosts()) {
      hosts.add({h.name, units::format_time_s(h.spec.op_dispatch_s), units::format_time_s(h.spec.kernel_launch_s),
                 units::format_time_s(h.spec.launch_latency_s), units::format_time_s(h.spec.sync_latency_s),
                 units::format_time_s(h.spec.graph_launch_s),
                 h.spec.memory_bytes > 0 ? units::format_size(h.spec.memory_bytes) : "-"});
    }
    out += hosts.render();
  }

  // Topology: routes from the first device to every other endpoint.
  if (m.endpoints().size() > 1) {
    const Device& d0 = m.devices()[0];
    out += fmt::format("\nTopology: routes from {}\n", d0.name);
    Table routes({"to", "hops", "latency", "bottleneck", "path"});
    for (const Endpoint& e : m.endpoints()) {
      if (e.name == d0.name) continue;
      const Route& r = m.route(d0.endpoint, static_cast<std::uint32_t>(&e - m.endpoints().data()));
      routes.add({e.name, std::to_string(r.hops.size()), units::format_time_s(r.latency_s),
                  units::format_bandwidth(r.bottleneck_bytes_per_s), route_text(m, r)});
    }
    out += routes.render();
  }
  return out;
}

}  // namespace syntorch::hw
