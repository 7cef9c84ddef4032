// The pipeline schedule's memory: a stage keeps what its backward needs, not what it sent on.

#include <gtest/gtest.h>

#include <string>

#include "syntorch/hw/machine.hpp"
#include "syntorch/parallel/distributed.hpp"
#include "syntorch/parallel/training.hpp"
#include "syntorch/runtime/engine.hpp"
#include "syntorch/torch/cuda.hpp"
#include "syntorch/torch/ops.hpp"
#include "syntorch/torch/utils.hpp"

namespace {

using namespace syntorch;

// Two stages under GPipe (every forward before any backward, so all micro-batches are in flight
// at once). Stage 0 sends a wide output [64, 4096] made from a narrow input [64, 64]: it keeps the
// input for its weight gradient, and frees the output once sent (Megatron's
// deallocate_output_tensor), keeping only its history.
TEST(Pipeline, AStageFreesEachOutputItHasSentAndKeepsOnlyItsHistory) {
  const hw::Machine m = hw::Machine::load(std::string(SYNTORCH_SOURCE_DIR) + "/hw_configs/dgx_h100.json");
  constexpr int kMicroBatches = 8;
  constexpr std::uint64_t kOutputBytes = 64 * 4096 * 2;
  runtime::Engine engine(m, {}, 2);
  const runtime::EngineResult r = engine.run([](runtime::RankContext&) {
    torch::DefaultDtypeGuard fp16(torch::kFloat16);
    const parallel::ParallelState& st = parallel::initialize_model_parallel(1, 2);
    torch::Tensor w = torch::empty({64, 4096}).requires_grad_();
    parallel::PipelineOptions o;
    o.micro_batches = kMicroBatches;
    o.schedule = parallel::PipelineSchedule::gpipe;
    o.activation_shape = {64, 4096};
    o.activation_dtype = torch::kFloat16;
    parallel::forward_backward(
        [&](int, int, const torch::Tensor& input) {
          if (st.is_first_stage()) return torch::matmul(torch::empty({64, 64}), w);
          return torch::sum(input * 2.0);
        },
        o);
    torch::cuda::synchronize();
  });
  const std::uint64_t peak = r.ranks[0].memory.peak_allocated_bytes;
  // The weight, its gradient, an incoming gradient and the weight-gradient GEMM's output, each
  // the size of one output; keeping the eight sent outputs as well would be 8 more.
  EXPECT_GT(peak, kOutputBytes);
  EXPECT_LT(peak, kMicroBatches * kOutputBytes) << "the sent outputs were kept until their backward";
}

}  // namespace
