#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <map>
#include <string>
#include <vector>

#include "syntorch/sim/flow_network.hpp"
#include "syntorch/sim/server_pool.hpp"

namespace syntorch::sim {
namespace {

constexpr double kGBps = 1e9;

struct Done {
  Simulator* sim = nullptr;
  std::vector<std::pair<std::uint64_t, TimePs>> at;
  void hit(std::uint64_t tag) { at.emplace_back(tag, sim->now()); }
  TimePs time_of(std::uint64_t tag) const {
    for (const auto& [t, ps] : at) {
      if (t == tag) return ps;
    }
    return kTimeNever;
  }
};

void start(FlowNetwork& net, std::vector<ResourceId> path, double bytes, Done& d, std::uint64_t tag,
           double cap = kUnlimitedRate) {
  net.start(path, bytes, [](void* o, std::uint64_t a) { static_cast<Done*>(o)->hit(a); }, &d, tag, cap);
}

TEST(FlowNetwork, SingleFlowTakesBytesOverCapacity) {
  Simulator sim;
  FlowNetwork net(sim);
  Done d{&sim, {}};
  const ResourceId hbm = net.add_resource("hbm", 100 * kGBps);
  start(net, {hbm}, 1e6, d, 1);  // 1 MB at 100 GB/s = 10 us
  sim.run();
  EXPECT_EQ(d.time_of(1), 10 * kPsPerUs);
}

TEST(FlowNetwork, TwoEqualFlowsEachGetHalf) {
  Simulator sim;
  FlowNetwork net(sim);
  Done d{&sim, {}};
  const ResourceId link = net.add_resource("link", 100 * kGBps);
  start(net, {link}, 1e6, d, 1);
  start(net, {link}, 1e6, d, 2);
  sim.run(1);
  EXPECT_DOUBLE_EQ(net.used_rate(link), 100 * kGBps);
  sim.run();
  // Each moves 1 MB at 50 GB/s: both finish at 20 us.
  EXPECT_EQ(d.time_of(1), 20 * kPsPerUs);
  EXPECT_EQ(d.time_of(2), 20 * kPsPerUs);
}

TEST(FlowNetwork, WhenOneFlowEndsTheOtherSpeedsUp) {
  Simulator sim;
  FlowNetwork net(sim);
  Done d{&sim, {}};
  const ResourceId link = net.add_resource("link", 100 * kGBps);
  start(net, {link}, 1e6, d, 1);  // short
  start(net, {link}, 3e6, d, 2);  // long
  sim.run();
  // Both at 50 GB/s until the short one ends at 20 us (long has 2 MB left), then 100 GB/s: +20 us.
  EXPECT_EQ(d.time_of(1), 20 * kPsPerUs);
  EXPECT_EQ(d.time_of(2), 40 * kPsPerUs);
}

TEST(FlowNetwork, CappedFlowLeavesTheRestToOthers) {
  Simulator sim;
  FlowNetwork net(sim);
  Done d{&sim, {}};
  const ResourceId hbm = net.add_resource("hbm", 100 * kGBps);
  start(net, {hbm}, 1e6, d, 1, 20 * kGBps);  // capped at 20 GB/s: 50 us
  start(net, {hbm}, 8e6, d, 2);              // gets the other 80 GB/s
  sim.run(1);
  EXPECT_DOUBLE_EQ(net.used_rate(hbm), 100 * kGBps);
  sim.run();
  // Flow 2 moves 4 MB by 50 us, then the remaining 4 MB alone at 100 GB/s: done at 90 us.
  EXPECT_EQ(d.time_of(1), 50 * kPsPerUs);
  EXPECT_EQ(d.time_of(2), 90 * kPsPerUs);
}

TEST(FlowNetwork, MaxMinAcrossTwoLinksFollowsTheBottleneck) {
  // Flow A crosses links X (10 GB/s) and Y (100 GB/s); flow B crosses Y only.
  // Max-min: A is limited to 10 by X; B takes the remaining 90 of Y.
  Simulator sim;
  FlowNetwork net(sim);
  Done d{&sim, {}};
  const ResourceId x = net.add_resource("x", 10 * kGBps);
  const ResourceId y = net.add_resource("y", 100 * kGBps);
  start(net, {x, y}, 1e6, d, 1);
  start(net, {y}, 9e6, d, 2);
  sim.run(1);
  EXPECT_DOUBLE_EQ(net.used_rate(x), 10 * kGBps);
  EXPECT_DOUBLE_EQ(net.used_rate(y), 100 * kGBps);
  sim.run();
  EXPECT_EQ(d.time_of(1), 100 * kPsPerUs);
  EXPECT_EQ(d.time_of(2), 100 * kPsPerUs);
}

TEST(FlowNetwork, LaterFlowSlowsAnEarlierOne) {
  Simulator sim;
  FlowNetwork net(sim);
  Done d{&sim, {}};
  const ResourceId link = net.add_resource("link", 100 * kGBps);
  start(net, {link}, 2e6, d, 1);  // alone for 10 us: 1 MB done
  struct Later {
    FlowNetwork* net;
    Done* d;
    ResourceId link;
    void go() { start(*net, {link}, 0.5e6, *d, 2); }
  } later{&net, &d, link};
  sim.at<&Later::go>(10 * kPsPerUs, &later);
  sim.run();
  // From 10 us both at 50 GB/s: flow 2 (0.5 MB) ends at 20 us; flow 1 then has 0.5 MB at 100: 25 us.
  EXPECT_EQ(d.time_of(2), 20 * kPsPerUs);
  EXPECT_EQ(d.time_of(1), 25 * kPsPerUs);
  EXPECT_NEAR(net.bytes_carried(link), 2.5e6, 1e-3);
}

TEST(FlowNetwork, ZeroByteFlowCompletesAtItsStart) {
  Simulator sim;
  FlowNetwork net(sim);
  Done d{&sim, {}};
  const ResourceId link = net.add_resource("link", kGBps);
  start(net, {link}, 0, d, 7);
  sim.run();
  EXPECT_EQ(d.time_of(7), 0u);
}

TEST(FlowNetwork, FlowsCanStartAfterRunningToATimeLimit) {
  Simulator sim;
  FlowNetwork net(sim);
  Done d{&sim, {}};
  const ResourceId link = net.add_resource("link", 100 * kGBps);
  start(net, {link}, 1e6, d, 1);
  sim.run(1);
  start(net, {link}, 1e6, d, 2);  // at 1 ps, while flow 1's completion is pending
  sim.run();
  // Flow 1 moved 0.1 byte alone in the first picosecond, then both share 50/50: flow 1 ends 1 ps
  // before 20 us, and flow 2's last 0.1 byte takes that picosecond at full speed.
  EXPECT_EQ(d.time_of(1), 20 * kPsPerUs - 1);
  EXPECT_EQ(d.time_of(2), 20 * kPsPerUs);
}

// Refilling is per connected component: a change on one link leaves the flows of a link they do
// not share as they were, and a flow leaving one end of a chain speeds up the other end.
TEST(FlowNetwork, AChangeRefillsOnlyTheFlowsItsResourcesConnect) {
  Simulator sim;
  FlowNetwork net(sim);
  Done d{&sim, {}};
  const ResourceId a = net.add_resource("a", 100 * kGBps);
  const ResourceId b = net.add_resource("b", 100 * kGBps);
  const ResourceId c = net.add_resource("c", 100 * kGBps);
  const ResourceId other = net.add_resource("other", 10 * kGBps);
  // A chain: x on a and b, y on b and c, z on c alone, w elsewhere.
  const FlowId x = net.start(std::vector<ResourceId>{a, b}, 1e6, nullptr, nullptr);
  const FlowId y = net.start(std::vector<ResourceId>{b, c}, 1e9, nullptr, nullptr);
  const FlowId z = net.start(std::vector<ResourceId>{c}, 1e9, nullptr, nullptr);
  const FlowId w = net.start(std::vector<ResourceId>{other}, 1e9, nullptr, nullptr);
  sim.run(1);
  EXPECT_DOUBLE_EQ(net.rate(x), 50 * kGBps);
  EXPECT_DOUBLE_EQ(net.rate(y), 50 * kGBps);
  EXPECT_DOUBLE_EQ(net.rate(z), 50 * kGBps);
  EXPECT_DOUBLE_EQ(net.rate(w), 10 * kGBps);
  const std::uint64_t before = net.recomputations();
  const std::uint64_t refilled = net.flows_refilled();
  // x (1 MB at 50 GB/s) ends at 20 us and leaves b to y; y and z still share c, 50 each, so y
  // stays at 50. Only x's component is refilled: y and z, not w (nor x, gone).
  sim.run(21 * kPsPerUs);
  EXPECT_EQ(net.recomputations(), before + 1);
  EXPECT_EQ(net.flows_refilled(), refilled + 2);
  EXPECT_DOUBLE_EQ(net.rate(y), 50 * kGBps);
  EXPECT_DOUBLE_EQ(net.rate(z), 50 * kGBps);
  EXPECT_DOUBLE_EQ(net.used_rate(a), 0);
  EXPECT_DOUBLE_EQ(net.used_rate(b), 50 * kGBps);
  EXPECT_DOUBLE_EQ(net.rate(w), 10 * kGBps);  // untouched
  // A flow starting on c alone slows y and z, and through y the use of b.
  const FlowId v = net.start(std::vector<ResourceId>{c}, 1e9, nullptr, nullptr);
  sim.run(22 * kPsPerUs);
  EXPECT_NEAR(net.rate(y), 100 * kGBps / 3, 1e-3);
  EXPECT_NEAR(net.rate(v), 100 * kGBps / 3, 1e-3);
  EXPECT_NEAR(net.used_rate(b), 100 * kGBps / 3, 1e-3);
  EXPECT_DOUBLE_EQ(net.rate(w), 10 * kGBps);
}

// The allocation after random starts and ends equals a max-min fair allocation recomputed from
// scratch over every active flow (progressive filling written out here, independently).
TEST(FlowNetwork, RandomTrafficGetsTheMaxMinFairRatesOfAFullRecomputation) {
  struct Active {
    std::vector<ResourceId> path;
    double cap;
    FlowId id;
  };
  struct World {
    Simulator sim;
    FlowNetwork net{sim};
    std::map<std::uint64_t, Active> active;  // by tag
    static void done(void* o, std::uint64_t tag) { static_cast<World*>(o)->active.erase(tag); }
  } world;
  std::vector<double> capacity;
  for (int r = 0; r < 12; ++r) {
    capacity.push_back((10.0 + 7.0 * (r % 5)) * kGBps);
    world.net.add_resource(std::string(1, static_cast<char>('a' + r)), capacity.back());
  }
  std::uint64_t seed = 12345, tag = 0;
  auto next = [&] {
    seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    return seed >> 33;
  };
  // Max-min by progressive filling over every active flow.
  auto reference = [&] {
    std::map<std::uint64_t, double> rate;
    std::map<std::uint64_t, bool> frozen;
    for (const auto& [t, f] : world.active) frozen[t] = false;
    std::vector<double> left = capacity;
    double level = 0;
    for (std::size_t unfrozen = world.active.size(); unfrozen > 0;) {
      std::vector<int> users(capacity.size(), 0);
      for (const auto& [t, f] : world.active) {
        if (!frozen[t]) for (ResourceId r : f.path) ++users[r];
      }
      double delta = kUnlimitedRate;
      for (std::size_t r = 0; r < capacity.size(); ++r) {
        if (users[r] > 0) delta = std::min(delta, left[r] / users[r]);
      }
      for (const auto& [t, f] : world.active) {
        if (!frozen[t]) delta = std::min(delta, f.cap - level);
      }
      level += delta;
      for (std::size_t r = 0; r < capacity.size(); ++r) left[r] -= delta * users[r];
      for (const auto& [t, f] : world.active) {
        if (frozen[t]) continue;
        bool saturated = f.cap != kUnlimitedRate && f.cap - level <= f.cap * 1e-12;
        for (ResourceId r : f.path) saturated = saturated || left[r] <= capacity[r] * 1e-12;
        if (!saturated) continue;
        frozen[t] = true;
        rate[t] = level;
        --unfrozen;
      }
    }
    return rate;
  };
  TimePs now = 0;
  int compared = 0;
  for (int step = 0; step < 300; ++step) {
    for (std::uint64_t k = next() % 3; k > 0; --k) {
      std::vector<ResourceId> path;
      for (std::uint64_t n = 1 + next() % 3; path.size() < n;) {
        const auto r = static_cast<ResourceId>(next() % capacity.size());
        if (std::find(path.begin(), path.end(), r) == path.end()) path.push_back(r);
      }
      const double cap = next() % 4 == 0 ? (1.0 + static_cast<double>(next() % 20)) * kGBps : kUnlimitedRate;
      const double bytes = static_cast<double>(1 + next() % 2000) * 1e3;
      const FlowId id = world.net.start(path, bytes, &World::done, &world, ++tag, cap);
      world.active[tag] = Active{path, cap, id};
    }
    now += 1 + next() % (20 * kPsPerUs);
    world.sim.run(now);
    const auto want = reference();
    for (const auto& [t, f] : world.active) {
      EXPECT_NEAR(world.net.rate(f.id), want.at(t), want.at(t) * 1e-9) << "flow " << t << " at step " << step;
      ++compared;
    }
  }
  EXPECT_GT(compared, 300);
  world.sim.run();
  EXPECT_TRUE(world.active.empty());
  EXPECT_EQ(world.net.active_flows(), 0u);
}

TEST(FlowNetwork, RejectsBadArguments) {
  Simulator sim;
  FlowNetwork net(sim);
  Done d{&sim, {}};
  EXPECT_THROW(net.add_resource("bad", 0), std::invalid_argument);
  EXPECT_THROW(net.add_resource("bad", -1), std::invalid_argument);
  EXPECT_THROW(start(net, {}, 1e3, d, 1), std::invalid_argument);  // no path, no cap
  EXPECT_THROW(start(net, {99}, 1e3, d, 1), std::out_of_range);
  const ResourceId link = net.add_resource("link", kGBps);
  EXPECT_THROW(start(net, {link, link}, 1e3, d, 1), std::invalid_argument);
}

struct Grants {
  Simulator* sim;
  std::vector<std::pair<std::uint64_t, TimePs>> got;
  void grant(std::uint64_t tag) { got.emplace_back(tag, sim->now()); }
};

TEST(ServerPool, GrantsInFifoOrderWhenServersFree) {
  Simulator sim;
  ServerPool sms(sim, "sm", 4);
  Grants g{&sim, {}};
  auto fn = [](void* o, std::uint64_t a) { static_cast<Grants*>(o)->grant(a); };
  sms.acquire(3, fn, &g, 1);
  sms.acquire(2, fn, &g, 2);  // must wait: only 1 free
  sms.acquire(1, fn, &g, 3);  // fits, but FIFO keeps it behind request 2
  sim.run();
  ASSERT_EQ(g.got.size(), 1u);
  EXPECT_EQ(sms.free(), 1u);
  EXPECT_EQ(sms.waiting(), 2u);
  struct Releaser {
    ServerPool* p;
    void go() { p->release(3); }
  } r{&sms};
  sim.at<&Releaser::go>(100, &r);
  sim.run();
  ASSERT_EQ(g.got.size(), 3u);
  EXPECT_EQ(g.got[1], (std::pair<std::uint64_t, TimePs>{2, 100}));
  EXPECT_EQ(g.got[2], (std::pair<std::uint64_t, TimePs>{3, 100}));
  EXPECT_EQ(sms.free(), 1u);
}

TEST(ServerPool, UtilisationIntegratesBusyServers) {
  Simulator sim;
  ServerPool sms(sim, "sm", 4);
  ASSERT_TRUE(sms.try_acquire(2));
  struct Releaser {
    ServerPool* p;
    void go() { p->release(2); }
  } r{&sms};
  struct Nop {
    void go() {}
  } nop;
  sim.at<&Releaser::go>(100, &r);
  sim.at<&Nop::go>(200, &nop);
  sim.run();
  // 2 of 4 servers for 100 ps out of 200 ps.
  EXPECT_DOUBLE_EQ(sms.busy_server_ps(), 200.0);
  EXPECT_DOUBLE_EQ(sms.utilisation(), 0.25);
  EXPECT_THROW(sms.release(1), std::logic_error);
}

}  // namespace
}  // namespace syntorch::sim
