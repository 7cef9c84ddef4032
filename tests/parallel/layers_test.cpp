// Megatron's layout and tensor-parallel layers, run on the Engine with real ranks.

#include <gtest/gtest.h>

#include <array>

#include "syntorch/hw/machine.hpp"
#include "syntorch/parallel/layers.hpp"
#include "syntorch/parallel/mappings.hpp"
#include "syntorch/runtime/engine.hpp"
#include "syntorch/torch/cuda.hpp"
#include "syntorch/torch/ops.hpp"
#include "syntorch/torch/utils.hpp"

namespace {

using namespace syntorch;
namespace torch = syntorch::torch;

std::string config(const std::string& name) { return std::string(SYNTORCH_SOURCE_DIR) + "/hw_configs/" + name; }

TEST(ParallelState, RanksAreLaidOutTensorParallelInnermostAsMegatronDoes) {
  const hw::Machine m = hw::Machine::load(config("dgx_a100.json"));
  runtime::Engine engine(m, {}, 8);
  std::array<parallel::ParallelState, 8> seen;
  engine.run([&](runtime::RankContext& ctx) {
    seen[static_cast<std::size_t>(ctx.rank())] = parallel::initialize_model_parallel(2, 2);
  });
  const parallel::ParallelState& s = seen[5];  // dp = 8 / (2 x 2) = 2
  EXPECT_EQ(s.tp_rank, 1);
  EXPECT_EQ(s.dp_rank, 0);
  EXPECT_EQ(s.pp_rank, 1);
  EXPECT_EQ(s.tp_group.ranks, (std::vector<int>{4, 5}));
  EXPECT_EQ(s.dp_group.ranks, (std::vector<int>{5, 7}));
  EXPECT_EQ(s.pp_group.ranks, (std::vector<int>{1, 5}));
  EXPECT_EQ(s.tp_group.rank, 1);
  EXPECT_EQ(seen[1].next_stage_rank(), 5);
  EXPECT_EQ(seen[5].prev_stage_rank(), 1);
  EXPECT_TRUE(seen[5].is_last_stage());
  EXPECT_TRUE(seen[2].is_first_stage());
}

TEST(ParallelState, ALayoutThatDoesNotDivideTheWorldIsAnError) {
  const hw::Machine m = hw::Machine::load(config("dgx_a100.json"));
  runtime::Engine engine(m, {}, 6);
  try {
    engine.run([](runtime::RankContext&) { parallel::initialize_model_parallel(4, 1); });
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("tensor parallel 4 x pipeline parallel 1 does not divide the world of 6"),
              std::string::npos)
        << e.what();
  }
}

TEST(TensorParallel, ColumnThenRowSplitsWeightsAndCommunicatesOnce) {
  const hw::Machine m = hw::Machine::load(config("dgx_a100.json"));
  runtime::Engine engine(m, {}, 4);
  std::array<std::vector<std::int64_t>, 4> column_weight, hidden_shape, out_shape;
  std::array<std::uint64_t, 4> weight_bytes{};
  const auto r = engine.run([&](runtime::RankContext& ctx) {
    torch::DefaultDtypeGuard fp16(torch::kFloat16);
    const auto& st = parallel::initialize_model_parallel(4);
    parallel::ColumnParallelLinear fc1(1024, 4096, st.tp_size, st.tp_rank, /*gather_output=*/false);
    parallel::RowParallelLinear fc2(4096, 1024, st.tp_size, st.tp_rank, /*input_is_parallel=*/true);
    const auto i = static_cast<std::size_t>(ctx.rank());
    column_weight[i] = fc1->weight.sizes();
    weight_bytes[i] = fc1->weight.nbytes() + fc2->weight.nbytes();
    torch::Tensor x = torch::empty({2, 8, 1024});
    torch::Tensor h = fc1(x);
    hidden_shape[i] = h.sizes();
    out_shape[i] = fc2(h).sizes();
    torch::cuda::synchronize();
  });
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(column_weight[i], (std::vector<std::int64_t>{1024, 1024}));
    EXPECT_EQ(hidden_shape[i], (std::vector<std::int64_t>{2, 8, 1024}));
    EXPECT_EQ(out_shape[i], (std::vector<std::int64_t>{2, 8, 1024}));
    EXPECT_EQ(weight_bytes[i], 2u * 1024 * 1024 * 2);  // a quarter of each weight, fp16
    EXPECT_EQ(r.ranks[i].collectives, 1u);             // the row layer's all-reduce only
  }
}

// Megatron's sequence parallelism replaces a layer pair's all-reduce by an all-gather before it
// and a reduce-scatter after it: a ring all-reduce is a reduce-scatter then an all-gather, so each
// rank moves the same 2(n-1)/n of the activation over the same links, in the same time.
TEST(TensorParallel, SequenceParallelMovesTheBytesOfTheAllReduceItReplaces) {
  const hw::Machine m = hw::Machine::load(config("dgx_a100.json"));
  std::array<std::vector<std::int64_t>, 2> hidden_shape, out_shape;
  auto run = [&](bool sp) {
    runtime::Engine engine(m, {}, 8);
    return engine.run([&](runtime::RankContext& ctx) {
      torch::DefaultDtypeGuard fp16(torch::kFloat16);
      torch::NoGradGuard no_grad;
      const auto& st = parallel::initialize_model_parallel(8);
      parallel::ColumnParallelLinear fc1(4096, 16384, st.tp_size, st.tp_rank, false, true, sp);
      parallel::RowParallelLinear fc2(16384, 4096, st.tp_size, st.tp_rank, true, true, sp);
      // Activations [b, s, h]; sharded along s (dim 1) between the regions under SP.
      torch::Tensor x = torch::empty({4, sp ? 4096 / 8 : 4096, 4096});
      torch::Tensor h = fc1(x);
      torch::Tensor y = fc2(h);
      if (ctx.rank() == 0) {
        hidden_shape[sp] = h.sizes();
        out_shape[sp] = y.sizes();
      }
      torch::cuda::synchronize();
    });
  };
  const auto plain = run(false);
  const auto sp = run(true);
  EXPECT_EQ(plain.ranks[0].collectives, 1u);
  EXPECT_EQ(sp.ranks[0].collectives, 2u);
  const double ratio = static_cast<double>(sp.ranks[0].communication_ps) / static_cast<double>(plain.ranks[0].communication_ps);
  EXPECT_NEAR(ratio, 1.0, 0.05);
  // The whole sequence between the layers either way; the shard outside them under SP.
  EXPECT_EQ(hidden_shape[0], (std::vector<std::int64_t>{4, 4096, 2048}));
  EXPECT_EQ(hidden_shape[1], (std::vector<std::int64_t>{4, 4096, 2048}));
  EXPECT_EQ(out_shape[0], (std::vector<std::int64_t>{4, 4096, 4096}));
  EXPECT_EQ(out_shape[1], (std::vector<std::int64_t>{4, 4096 / 8, 4096}));
}

// The backward of the pair: without SP the column layer all-reduces its input's gradient (the
// row layer's backward communicates nothing); under SP the column layer gathers its input shard
// again for the weight gradient and reduce-scatters the input's gradient, and the row layer's
// reduce-scatter becomes an all-gather of the gradient.
TEST(TensorParallel, SequenceParallelBackwardGathersTheShardAgainAndScattersTheGradient) {
  const hw::Machine m = hw::Machine::load(config("dgx_a100.json"));
  auto run = [&](bool sp) {
    runtime::Engine engine(m, {}, 8);
    return engine.run([&](runtime::RankContext&) {
      torch::DefaultDtypeGuard fp16(torch::kFloat16);
      const auto& st = parallel::initialize_model_parallel(8);
      parallel::ColumnParallelLinear fc1(1024, 4096, st.tp_size, st.tp_rank, false, true, sp);
      parallel::RowParallelLinear fc2(4096, 1024, st.tp_size, st.tp_rank, true, true, sp);
      torch::Tensor x = torch::empty({2, sp ? 1024 / 8 : 1024, 1024}).requires_grad_();
      torch::Tensor y = fc2(fc1(x));
      torch::sum(y).backward();
      EXPECT_EQ(x.grad().sizes(), x.sizes());
      torch::cuda::synchronize();
    });
  };
  EXPECT_EQ(run(false).ranks[0].collectives, 1u + 1u);
  EXPECT_EQ(run(true).ranks[0].collectives, 2u + 3u);
}

// Megatron's region functions for a user's own layers: copying into the TP region costs nothing
// forward and all-reduces the gradient; gathering from the sequence-parallel region all-gathers
// forward and reduce-scatters the gradient back to the shard.
TEST(TensorParallel, RegionFunctionsCommunicateWhereMegatronsDo) {
  const hw::Machine m = hw::Machine::load(config("dgx_a100.json"));
  runtime::Engine engine(m, {}, 2);
  std::array<std::vector<std::int64_t>, 2> gathered, grad;
  const auto r = engine.run([&](runtime::RankContext& ctx) {
    torch::DefaultDtypeGuard fp16(torch::kFloat16);
    parallel::initialize_model_parallel(2);
    torch::Tensor x = torch::empty({2, 64, 256}).requires_grad_();
    torch::Tensor copied = parallel::copy_to_tensor_model_parallel_region(x);
    torch::Tensor whole = parallel::gather_from_sequence_parallel_region(copied, 1);
    torch::cuda::synchronize();
    const auto i = static_cast<std::size_t>(ctx.rank());
    gathered[i] = whole.sizes();
    torch::sum(whole).backward();
    grad[i] = x.grad().sizes();
    torch::cuda::synchronize();
  });
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(gathered[i], (std::vector<std::int64_t>{2, 128, 256}));
    EXPECT_EQ(grad[i], (std::vector<std::int64_t>{2, 64, 256}));
    // Forward the gather only (the copy communicates nothing); backward a reduce-scatter, then
    // an all-reduce.
    EXPECT_EQ(r.ranks[i].collectives, 1u + 2u);
  }
}

TEST(TensorParallel, GatheredOutputsAndVocabularySplits) {
  const hw::Machine m = hw::Machine::load(config("dgx_a100.json"));
  runtime::Engine engine(m, {}, 2);
  std::array<std::vector<std::int64_t>, 2> gathered, embedded, table;
  const auto r = engine.run([&](runtime::RankContext& ctx) {
    const auto& st = parallel::initialize_model_parallel(2);
    parallel::ColumnParallelLinear head(256, 1000, 2, st.tp_rank, /*gather_output=*/true, /*bias=*/false);
    parallel::VocabParallelEmbedding wte(1000, 256, 2, st.tp_rank);
    const auto i = static_cast<std::size_t>(ctx.rank());
    table[i] = wte->weight.sizes();
    embedded[i] = wte(torch::empty({3, 5}, torch::kInt64)).sizes();
    gathered[i] = head(torch::empty({3, 256})).sizes();
  });
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(table[i], (std::vector<std::int64_t>{500, 256}));
    EXPECT_EQ(embedded[i], (std::vector<std::int64_t>{3, 5, 256}));
    EXPECT_EQ(gathered[i], (std::vector<std::int64_t>{3, 1000}));
    EXPECT_EQ(r.ranks[i].collectives, 2u);  // the embedding's all-reduce, the head's all-gather
  }
}

TEST(TensorParallel, SizesThatDoNotSplitNameTheLayerAndTheSize) {
  try {
    parallel::ColumnParallelLinear bad(1024, 1000, 3, 0);
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("ColumnParallelLinear: output_size (1000) must be divisible by tp_size (3)"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(parallel::RowParallelLinear(1000, 64, 3, 0), std::invalid_argument);
  EXPECT_THROW(parallel::RowParallelLinear(1024, 64, 2, 2), std::invalid_argument);  // rank out of range
}

TEST(TensorParallel, WithoutASimulationLayersAreShapeOnly) {
  parallel::ColumnParallelLinear fc(64, 128, 2, 1, /*gather_output=*/false);
  EXPECT_EQ(fc(torch::empty({4, 64})).sizes(), (std::vector<std::int64_t>{4, 64}));
}

}  // namespace
