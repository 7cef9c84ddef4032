// The simulated clock as programs read it through the torch layer: the rank's host clock, sleeps
// relative to it, and a clear refusal where no simulation runs.

#include "syntorch/torch/clock.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>

#include "fake_rank.hpp"
#include "syntorch/torch/cuda.hpp"

namespace {

using namespace syntorch;
using torch::testing::FakeRank;

TEST(Clock, ReadsAndSleepsOnTheRanksHostClock) {
  FakeRank rank;
  runtime::RankGuard guard(&rank);
  rank.clock_s = 1.5;
  EXPECT_DOUBLE_EQ(torch::clock::now_s(), 1.5);
  torch::clock::sleep_s(0.25);
  EXPECT_DOUBLE_EQ(torch::clock::now_s(), 1.75);
  torch::clock::sleep_until_s(1.0);  // passed
  EXPECT_DOUBLE_EQ(torch::clock::now_s(), 1.75);
  torch::clock::sleep_s(0);
  EXPECT_DOUBLE_EQ(torch::clock::now_s(), 1.75);
  EXPECT_THROW(torch::clock::sleep_s(-1), std::invalid_argument);
  EXPECT_THROW(torch::clock::sleep_s(std::nan("")), std::invalid_argument);
}

TEST(Clock, OutsideASimulationThereIsNoClock) {
  try {
    torch::clock::now_s();
    FAIL() << "expected an error";
  } catch (const std::logic_error& e) {
    EXPECT_NE(std::string(e.what()).find("no simulation"), std::string::npos) << e.what();
  }
  EXPECT_THROW(torch::clock::sleep_until_s(1), std::logic_error);
  // An event outside a simulation has nothing to wait for.
  torch::cuda::Event event;
  EXPECT_TRUE(event.query());
}

}  // namespace
