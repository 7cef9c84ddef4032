#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <thread>
#include <vector>

#include "syntorch/hw/machine.hpp"

namespace syntorch::hw {
namespace {

namespace fs = std::filesystem;

std::string config_path(const std::string& name) {
  return (fs::path(SYNTORCH_SOURCE_DIR) / "hw_configs" / (name + ".json")).string();
}

// Writes a config into a fresh temporary folder and returns its path.
std::string write_temp(const std::string& name, const std::string& text) {
  const fs::path dir = fs::temp_directory_path() / "syntorch_machine_test";
  fs::create_directories(dir);
  const fs::path p = dir / name;
  std::ofstream(p) << text;
  return p.string();
}

const char* kDevice = R"("type": "group", "components": {
      "sm": {"type": "compute", "count": 10, "clock": "1 GHz", "vector_ops_per_cycle": {"fp32": 128}},
      "hbm": {"type": "memory", "size": "16 GB", "bandwidth": "1 TB/s"}})";

TEST(Machine, EveryBundledConfigLoads) {
  const std::vector<std::pair<std::string, std::size_t>> expected{
      {"a100_sxm4_80gb", 1}, {"h100_sxm5_80gb", 1}, {"h200_sxm_141gb", 1}, {"b200_sxm", 1},
      {"mi300x", 1},         {"dgx_a100", 8},       {"dgx_h100", 8},       {"hgx_h200", 8},
      {"simple_gpu", 1},     {"npu_systolic_4x", 4}};
  for (const auto& [name, devices] : expected) {
    SCOPED_TRACE(name);
    const Machine m = Machine::load(config_path(name));
    EXPECT_EQ(m.devices().size(), devices);
    EXPECT_FALSE(m.name().empty());
    EXPECT_FALSE(m.config().notes.empty()) << "bundled configs cite their sources";
    ASSERT_FALSE(m.hosts().empty());
    for (std::uint32_t d = 0; d < m.devices().size(); ++d) EXPECT_TRUE(m.host_of_device(d).has_value());
  }
}

TEST(Machine, PeaksReproduceTheDatasheet) {
  auto peak = [](const std::string& name, DType t) {
    return Machine::load(config_path(name)).devices()[0].compute.peak_matrix_ops_per_s(t);
  };
  EXPECT_NEAR(peak("a100_sxm4_80gb", DType::fp16) / 1e12, 312, 1);      // A001
  EXPECT_NEAR(peak("a100_sxm4_80gb", DType::tf32) / 1e12, 156, 0.5);    // A002
  EXPECT_EQ(peak("a100_sxm4_80gb", DType::fp8), 0.0);                   // no fp8 on A100
  EXPECT_NEAR(peak("h100_sxm5_80gb", DType::bf16) / 1e12, 989.4, 0.5);  // A013
  EXPECT_NEAR(peak("h100_sxm5_80gb", DType::fp8) / 1e12, 1978.9, 1);    // A014
  EXPECT_NEAR(peak("b200_sxm", DType::bf16) / 1e12, 2250, 1);           // A031
  EXPECT_NEAR(peak("b200_sxm", DType::fp4) / 1e12, 9000, 5);            // A033
  EXPECT_NEAR(peak("mi300x", DType::bf16) / 1e12, 1307.4, 0.5);         // A039
  const Machine h100 = Machine::load(config_path("h100_sxm5_80gb"));
  EXPECT_NEAR(h100.devices()[0].compute.peak_vector_ops_per_s(DType::fp32) / 1e12, 66.9, 0.1);  // A016
  EXPECT_DOUBLE_EQ(h100.devices()[0].memory.bandwidth_bytes_per_s, 3.35e12);                     // A018
}

TEST(Machine, ExtendsMergesObjectsKeyByKey) {
  const Machine h200 = Machine::load(config_path("h200_sxm_141gb"));
  const Machine h100 = Machine::load(config_path("h100_sxm5_80gb"));
  EXPECT_DOUBLE_EQ(h200.devices()[0].memory.size_bytes, 143771.0 * (1 << 20));  // as NVML reports it
  EXPECT_DOUBLE_EQ(h200.devices()[0].memory.bandwidth_bytes_per_s, 4.8e12);
  EXPECT_DOUBLE_EQ(h200.devices()[0].memory.latency_s, h100.devices()[0].memory.latency_s);  // inherited
  EXPECT_EQ(h200.devices()[0].compute.units, 132u);
  const Machine dgx = Machine::load(config_path("dgx_h100"));
  EXPECT_EQ(dgx.devices().size(), 8u);
  EXPECT_DOUBLE_EQ(dgx.devices()[7].memory.bandwidth_bytes_per_s, 3.35e12);
  ASSERT_EQ(dgx.switches().size(), 1u);
  EXPECT_TRUE(dgx.switches()[0].spec.in_switch_reduction);
  EXPECT_FALSE(Machine::load(config_path("dgx_a100")).switches()[0].spec.in_switch_reduction);
}

TEST(Machine, SetOverridesChangeOnlyThatField) {
  const Machine base = Machine::load(config_path("dgx_h100"));
  const Machine m = Machine::load(config_path("dgx_h100"),
                                  {{"/components/gpu/components/hbm/bandwidth", "6.7 TB/s"},
                                   {"/components/gpu/count", "4"}});
  EXPECT_EQ(m.devices().size(), 4u);
  EXPECT_DOUBLE_EQ(m.devices()[0].memory.bandwidth_bytes_per_s, 6.7e12);
  EXPECT_DOUBLE_EQ(m.devices()[0].memory.size_bytes, base.devices()[0].memory.size_bytes);
  EXPECT_DOUBLE_EQ(m.links()[0].bandwidth_bytes_per_s, base.links()[0].bandwidth_bytes_per_s);
}

TEST(Machine, BadOverridesNameTheFlag) {
  try {
    Machine::load(config_path("dgx_h100"), {{"/components/gpu/components/hbm/bandwidth", "fast"},
                                            {"/components/missing/x", "1"}});
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    const std::string text = e.diagnostics().to_string();
    EXPECT_NE(text.find("--set:/components/gpu/components/hbm/bandwidth: expected a bandwidth like \"3.35 TB/s\", got \"fast\""),
              std::string::npos) << text;
    EXPECT_NE(text.find("--set /components/missing/x=1: /components/missing names no object"), std::string::npos) << text;
  }
  Diagnostics d;
  EXPECT_TRUE(parse_overrides({"no-equals-sign"}, d).empty());
  EXPECT_EQ(d.size(), 1u);
}

TEST(Topology, DevicesReachEachOtherThroughTheSwitch) {
  const Machine m = Machine::load(config_path("dgx_h100"));
  const auto g0 = *m.find_endpoint("gpu[0]");
  const auto g5 = *m.find_endpoint("gpu[5]");
  const Route& r = m.route(g0, g5);
  ASSERT_EQ(r.hops.size(), 2u);
  EXPECT_EQ(m.links()[r.hops[0].link].name, "nvlink[0]");
  EXPECT_EQ(m.links()[r.hops[1].link].name, "nvlink[5]");
  EXPECT_TRUE(r.hops[0].forward);    // gpu[0] -> nvswitch
  EXPECT_FALSE(r.hops[1].forward);   // nvswitch -> gpu[5]
  ASSERT_EQ(r.switches.size(), 1u);
  EXPECT_NEAR(r.latency_s, 0.25e-6 + 0.1e-6 + 0.25e-6, 1e-12);
  EXPECT_DOUBLE_EQ(r.bottleneck_bytes_per_s, 450e9);
  EXPECT_TRUE(m.route(g0, g0).hops.empty());
  // The host is reached over PCIe, not through another GPU.
  const Route& to_host = m.route(g0, *m.find_endpoint("host"));
  ASSERT_EQ(to_host.hops.size(), 1u);
  EXPECT_EQ(m.links()[to_host.hops[0].link].name, "pcie[0]");
}

// Routes are worked out a source at a time when first asked for, from several threads at once
// (a sweep's points share a Machine): the answers are those of one thread asking in order.
TEST(Topology, RoutesAskedFromManyThreadsAreThoseAskedFromOne) {
  const Machine shared = Machine::load(config_path("dgx_a100_superpod"));
  const Machine alone = Machine::load(config_path("dgx_a100_superpod"));
  const std::uint32_t n = 96;  // GPUs of 12 nodes
  auto endpoint = [](const Machine& m, std::uint32_t g) { return m.devices()[g].endpoint; };
  std::vector<std::thread> threads;
  std::vector<std::vector<double>> seen(4);
  for (std::size_t t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (std::uint32_t a = 0; a < n; ++a) {
        for (std::uint32_t b = 0; b < n; b += 7) {
          const Route& r = shared.route(endpoint(shared, (a + 13 * static_cast<std::uint32_t>(t)) % n), endpoint(shared, b));
          seen[t].push_back(r.latency_s + static_cast<double>(r.hops.size()));
        }
      }
      seen[t].push_back(static_cast<double>(shared.host_of_device(static_cast<std::uint32_t>(t) * 8).value_or(999)));
    });
  }
  for (auto& th : threads) th.join();
  for (std::size_t t = 0; t < 4; ++t) {
    std::size_t i = 0;
    for (std::uint32_t a = 0; a < n; ++a) {
      for (std::uint32_t b = 0; b < n; b += 7) {
        const Route& r = alone.route(endpoint(alone, (a + 13 * static_cast<std::uint32_t>(t)) % n), endpoint(alone, b));
        ASSERT_EQ(seen[t][i++], r.latency_s + static_cast<double>(r.hops.size()));
      }
    }
    EXPECT_EQ(seen[t][i], static_cast<double>(alone.host_of_device(static_cast<std::uint32_t>(t) * 8).value()));
  }
  // A GPU's nearest host is its own node's.
  EXPECT_EQ(alone.host_of_device(8), 1u);
}

TEST(Topology, ParallelLinksRouteOverTheFasterOne) {
  const std::string file = write_temp("parallel.json", std::string(R"({"name": "parallel", "components": {
    "gpu": {"count": 2, )") + kDevice + R"(},
    "slow": {"type": "link", "bandwidth": "1 GB/s", "latency": "50 us", "endpoints": ["gpu[0]", "gpu[1]"]},
    "fast": {"type": "link", "bandwidth": "400 GB/s", "latency": "1 us", "endpoints": ["gpu[0]", "gpu[1]"]}}})");
  const Machine m = Machine::load(file);
  const Route& r = m.route(*m.find_endpoint("gpu[0]"), *m.find_endpoint("gpu[1]"));
  ASSERT_EQ(r.hops.size(), 1u);
  EXPECT_EQ(m.links()[r.hops[0].link].name, "fast");
  EXPECT_DOUBLE_EQ(r.bottleneck_bytes_per_s, 400e9);
}

TEST(Topology, ALatencyWhatIfDoesNotReroutePeerTrafficThroughTheHost) {
  const Machine m = Machine::load(config_path("dgx_h100"), {{"/components/nvlink/latency", "1.5 us"}});
  const Route& r = m.route(*m.find_endpoint("gpu[0]"), *m.find_endpoint("gpu[3]"));
  ASSERT_EQ(r.hops.size(), 2u);
  EXPECT_EQ(m.links()[r.hops[0].link].name, "nvlink[0]");
  EXPECT_NEAR(r.latency_s, 1.5e-6 + 0.1e-6 + 1.5e-6, 1e-12);
}

TEST(Topology, RingRoutesTakeTheShorterWay) {
  const Machine m = Machine::load(config_path("npu_systolic_4x"));
  const auto n0 = *m.find_endpoint("npu[0]");
  EXPECT_EQ(m.route(n0, *m.find_endpoint("npu[1]")).hops.size(), 1u);
  EXPECT_EQ(m.route(n0, *m.find_endpoint("npu[3]")).hops.size(), 1u);
  EXPECT_EQ(m.route(n0, *m.find_endpoint("npu[2]")).hops.size(), 2u);
}

TEST(Topology, SameNameTwiceMakesAFullMeshAndDifferentNamesPairUp) {
  const std::string file = write_temp("mesh.json", std::string(R"({"name": "mesh", "components": {
    "gpu": {"count": 4, )") + kDevice + R"(},
    "nic": {"count": 4, )" + kDevice + R"(},
    "xgmi": {"type": "link", "bandwidth": "64 GB/s", "endpoints": ["gpu[*]", "gpu[*]"]},
    "rail": {"type": "link", "bandwidth": "50 GB/s", "endpoints": ["gpu[*]", "nic[*]"]}}})");
  const Machine m = Machine::load(file);
  std::size_t mesh = 0;
  std::size_t rail = 0;
  for (const Link& l : m.links()) {
    mesh += l.name.starts_with("xgmi");
    rail += l.name.starts_with("rail");
  }
  EXPECT_EQ(mesh, 6u);  // 4 choose 2
  EXPECT_EQ(rail, 4u);  // gpu[i] <-> nic[i]
  for (std::uint32_t i = 0; i < 4; ++i) {
    for (std::uint32_t j = 0; j < 4; ++j) {
      if (i != j) {
        EXPECT_EQ(m.route(m.devices()[i].endpoint, m.devices()[j].endpoint).hops.size(), 1u);
      }
    }
  }
  const Route& r = m.route(*m.find_endpoint("gpu[2]"), *m.find_endpoint("nic[2]"));
  ASSERT_EQ(r.hops.size(), 1u);
  EXPECT_EQ(m.links()[r.hops[0].link].bandwidth_bytes_per_s, 50e9);
}

TEST(Topology, NestedGroupsNameInstancesAndFindTheirOwnHost) {
  const std::string file = write_temp("two_nodes.json", std::string(R"({"name": "two nodes", "components": {
    "node": {"type": "group", "count": 2, "components": {
      "gpu": {"count": 2, )") + kDevice + R"(},
      "sw": {"type": "switch", "latency": "0.5 us"},
      "host": {"type": "host", "op_dispatch": "1 us", "kernel_launch": "1 us", "launch_latency": "1 us", "sync_latency": "1 us"},
      "nvlink": {"type": "link", "bandwidth": "100 GB/s", "latency": "1 us", "endpoints": ["gpu[*]", "sw"]},
      "pcie": {"type": "link", "bandwidth": "10 GB/s", "latency": "1 us", "endpoints": ["gpu[*]", "host"]}}},
    "spine": {"type": "switch", "latency": "1 us"},
    "net": {"type": "link", "bandwidth": "50 GB/s", "latency": "2 us", "endpoints": ["node[*].sw", "spine"]}}})");
  const Machine m = Machine::load(file);
  ASSERT_EQ(m.devices().size(), 4u);
  EXPECT_EQ(m.devices()[3].name, "node[1].gpu[1]");
  EXPECT_EQ(m.hosts()[*m.host_of_device(3)].name, "node[1].host");
  EXPECT_EQ(m.hosts()[*m.host_of_device(0)].name, "node[0].host");
  // Inside a node the NVLink switch carries GPU traffic, not the host over PCIe (shorter in
  // latency here, but ten times slower); hosts are never transit.
  const Route& local = m.route(*m.find_endpoint("node[0].gpu[0]"), *m.find_endpoint("node[0].gpu[1]"));
  ASSERT_EQ(local.hops.size(), 2u);
  EXPECT_EQ(m.links()[local.hops[0].link].name, "node[0].nvlink[0]");
  const Route& r = m.route(*m.find_endpoint("node[0].gpu[0]"), *m.find_endpoint("node[1].gpu[1]"));
  // gpu -> sw -> spine -> sw -> gpu
  ASSERT_EQ(r.hops.size(), 4u);
  EXPECT_EQ(r.switches.size(), 3u);
  EXPECT_NEAR(r.latency_s, 1e-6 + 0.5e-6 + 2e-6 + 1e-6 + 2e-6 + 0.5e-6 + 1e-6, 1e-12);
  EXPECT_DOUBLE_EQ(r.bottleneck_bytes_per_s, 50e9);
}

}  // namespace
}  // namespace syntorch::hw
