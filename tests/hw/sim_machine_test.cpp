#include <gtest/gtest.h>

#include <filesystem>

#include "syntorch/hw/sim_machine.hpp"

namespace syntorch::hw {
namespace {

std::string config_path(const std::string& name) {
  return (std::filesystem::path(SYNTORCH_SOURCE_DIR) / "hw_configs" / (name + ".json")).string();
}

struct Arrivals {
  sim::Simulator* sim;
  std::vector<sim::TimePs> at{0, 0, 0, 0};
  void hit(std::uint64_t tag) { at[tag] = sim->now(); }
};

void send(SimMachine& hw, Arrivals& a, const char* from, const char* to, double bytes, std::uint64_t tag,
          bool touch_hbm = false) {
  const Machine& m = hw.machine();
  hw.transfer(*m.find_endpoint(from), *m.find_endpoint(to), bytes,
              [](void* o, std::uint64_t t) { static_cast<Arrivals*>(o)->hit(t); }, &a, tag,
              TransferOptions{touch_hbm, false, sim::kUnlimitedRate});
}

constexpr double kLatencyPs = 0.6e6;  // nvlink 0.25 us + nvswitch 0.1 us + nvlink 0.25 us

// The closed forms below use the peak link bandwidth.
const std::vector<Override> kPeakLinks{{"/components/nvlink/efficiency", "1"}};

TEST(SimMachine, TransferTakesBytesOverBottleneckPlusRouteLatency) {
  const Machine m = Machine::load(config_path("dgx_h100"), kPeakLinks);
  sim::Simulator sim;
  SimMachine hw(sim, m);
  Arrivals a{&sim};
  send(hw, a, "gpu[0]", "gpu[1]", 450e6, 0);  // 450 MB at 450 GB/s = 1 ms
  sim.run();
  EXPECT_NEAR(static_cast<double>(a.at[0]), 1e9 + kLatencyPs, 1);
}

TEST(SimMachine, TransfersSharingALinkDirectionSplitItsBandwidth) {
  const Machine m = Machine::load(config_path("dgx_h100"), kPeakLinks);
  sim::Simulator sim;
  SimMachine hw(sim, m);
  Arrivals a{&sim};
  send(hw, a, "gpu[0]", "gpu[1]", 450e6, 0);  // both leave gpu[0] on nvlink[0]: 225 GB/s each
  send(hw, a, "gpu[0]", "gpu[2]", 450e6, 1);
  send(hw, a, "gpu[3]", "gpu[4]", 450e6, 2);  // disjoint links: full speed
  send(hw, a, "gpu[1]", "gpu[0]", 450e6, 3);  // the reverse direction of nvlink[0] is separate
  sim.run();
  EXPECT_NEAR(static_cast<double>(a.at[0]), 2e9 + kLatencyPs, 1);
  EXPECT_NEAR(static_cast<double>(a.at[1]), 2e9 + kLatencyPs, 1);
  EXPECT_NEAR(static_cast<double>(a.at[2]), 1e9 + kLatencyPs, 1);
  EXPECT_NEAR(static_cast<double>(a.at[3]), 1e9 + kLatencyPs, 1);
}

TEST(SimMachine, HbmIsSharedWithTransfersThatTouchIt) {
  // Shrink HBM below the link bandwidth: a transfer reading gpu[0]'s HBM is then bound by it,
  // and a kernel-like flow on the same HBM halves it.
  const Machine m = Machine::load(config_path("dgx_h100"), {{"/components/gpu/components/hbm/bandwidth", "100 GB/s"},
                                                            {"/components/gpu/components/hbm/efficiency", "1"},
                                                            {"/components/nvlink/efficiency", "1"}});
  sim::Simulator sim;
  SimMachine hw(sim, m);
  Arrivals a{&sim};
  send(hw, a, "gpu[0]", "gpu[1]", 100e6, 0, /*touch_hbm=*/true);
  const sim::ResourceId hbm0 = hw.hbm(0);
  hw.network().start(std::span(&hbm0, 1), 100e6, [](void* o, std::uint64_t t) { static_cast<Arrivals*>(o)->hit(t); },
                     &a, 1);
  sim.run();
  // Two flows on gpu[0]'s 100 GB/s HBM (gpu[1]'s HBM is not the bottleneck): 50 GB/s each, 2 ms.
  EXPECT_NEAR(static_cast<double>(a.at[1]), 2e9, 1);
  EXPECT_NEAR(static_cast<double>(a.at[0]), 2e9 + kLatencyPs, 1);
}

TEST(SimMachine, CapacitiesArePeakTimesEfficiency) {
  const Machine m = Machine::load(config_path("dgx_h100"), {{"/components/gpu/components/hbm/efficiency", "0.5"},
                                                            {"/components/nvlink/efficiency", "0.8"}});
  sim::Simulator sim;
  SimMachine hw(sim, m);
  EXPECT_DOUBLE_EQ(hw.network().capacity(hw.hbm(3)), 3.35e12 * 0.5);
  EXPECT_DOUBLE_EQ(hw.network().capacity(hw.link_direction(Hop{8, false})), 450e9 * 0.8);  // nvlink[0]
}

TEST(SimMachine, EachDeviceHasItsComputeUnitsAsAPool) {
  const Machine m = Machine::load(config_path("dgx_a100"));
  sim::Simulator sim;
  SimMachine hw(sim, m);
  EXPECT_EQ(hw.compute_units(7).size(), 108u);
  EXPECT_TRUE(hw.compute_units(7).try_acquire(108));
  EXPECT_FALSE(hw.compute_units(7).try_acquire(1));
  EXPECT_TRUE(hw.compute_units(6).try_acquire(1));
}

}  // namespace
}  // namespace syntorch::hw
