// torch::cuda streams and events reach the rank as CUDA's calls would.

#include <gtest/gtest.h>

#include "fake_rank.hpp"
#include "syntorch/torch/cuda.hpp"
#include "syntorch/torch/ops.hpp"

namespace syntorch::torch::testing {
namespace {

using TorchCuda = OnRank;

TEST_F(TorchCuda, LaunchesGoToTheStreamAGuardMakesCurrentAndItRestoresThePrevious) {
  cuda::Stream side;
  EXPECT_EQ(side.id(), 1u);
  EXPECT_EQ(cuda::current_stream(), cuda::default_stream());
  {
    cuda::StreamGuard guard(side);
    EXPECT_EQ(rank.current_stream(), 1u);
    EXPECT_EQ(cuda::current_stream(), side);
  }
  EXPECT_EQ(rank.current_stream(), 0u);
  EXPECT_EQ(rank.events, (std::vector<std::string>{"new_stream 1"}));
}

TEST_F(TorchCuda, WaitStreamRecordsOnTheOtherAndWaitsForIt) {
  cuda::Stream side;
  side.wait_stream(cuda::current_stream());
  cuda::Event e;
  EXPECT_FALSE(e.recorded());
  e.record(side);
  EXPECT_TRUE(e.recorded());
  e.wait(cuda::default_stream());
  e.synchronize();
  side.synchronize();
  EXPECT_EQ(rank.events, (std::vector<std::string>{"new_stream 1", "record 0 1", "wait 1 1", "record 1 2", "wait 0 2"}));
  EXPECT_EQ(rank.syncs, (std::vector<std::string>{"event 2", "stream 1"}));
}

TEST(TorchCudaOutsideASimulation, StreamsAndEventsAreInert) {
  cuda::Stream s;
  EXPECT_EQ(s.id(), 0u);
  cuda::Event e;
  e.record(s);
  EXPECT_FALSE(e.recorded());
  cuda::StreamGuard guard(s);
  e.synchronize();
}

}  // namespace
}  // namespace syntorch::torch::testing
