// Single-kernel predictions per second over a mixed list of ops (target: 100,000/s on one core).
// Each prediction lowers the op (tile search included) and runs it on the simulator; one
// Predictor per machine is reused, as `syntorch validate` and sweeps do.

#include <benchmark/benchmark.h>

#include <filesystem>
#include <vector>

#include "syntorch/runtime/predictor.hpp"

namespace {

using namespace syntorch;
using namespace syntorch::runtime;

std::string config(const char* name) {
  return (std::filesystem::path(SYNTORCH_SOURCE_DIR) / "hw_configs" / name).string();
}

std::vector<OpDesc> mixed_ops() {
  std::vector<OpDesc> ops;
  auto gemm = [&](std::uint64_t m, std::uint64_t n, std::uint64_t k) {
    OpDesc o;
    o.kind = OpKind::gemm;
    o.m = m;
    o.n = n;
    o.k = k;
    ops.push_back(o);
  };
  // A transformer layer's worth of shapes: projections at prefill and decode, norms, softmax,
  // GELU, attention prefill and decode.
  gemm(8192, 12288, 12288);
  gemm(8192, 4 * 12288, 12288);
  gemm(8, 12288, 12288);
  gemm(1, 3 * 12288, 12288);
  gemm(2048, 2048, 13312);
  for (OpKind k : {OpKind::layernorm, OpKind::softmax, OpKind::rmsnorm}) {
    OpDesc o;
    o.kind = k;
    o.rows = 8192;
    o.cols = 12288;
    ops.push_back(o);
  }
  OpDesc g;
  g.kind = OpKind::gelu;
  g.elements = 8192ULL * 4 * 12288;
  ops.push_back(g);
  OpDesc a;
  a.kind = OpKind::attention;
  a.batch = 8;
  a.heads = a.kv_heads = 96;
  a.seq_q = a.seq_kv = 2048;
  a.head_dim = 128;
  a.causal = true;
  ops.push_back(a);
  a.seq_q = 1;
  a.causal = false;
  ops.push_back(a);
  return ops;
}

void BM_KernelPredictions(benchmark::State& state) {
  const hw::Machine m = hw::Machine::load(config("a100_sxm4_80gb.json"));
  Predictor p(m, KernelPolicy{});
  const auto ops = mixed_ops();
  std::size_t i = 0;
  double sink = 0;
  for (auto _ : state) {
    sink += p.predict(ops[i]).time_s;
    i = (i + 1) % ops.size();
  }
  benchmark::DoNotOptimize(sink);
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}
BENCHMARK(BM_KernelPredictions);

void BM_AllReducePredictions(benchmark::State& state) {
  const hw::Machine m = hw::Machine::load(config("dgx_a100.json"));
  Predictor p(m, KernelPolicy{});
  OpDesc o;
  o.kind = OpKind::allreduce;
  o.ranks = 8;
  o.bytes = static_cast<std::uint64_t>(state.range(0));
  double sink = 0;
  for (auto _ : state) sink += p.predict(o).time_s;
  benchmark::DoNotOptimize(sink);
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}
BENCHMARK(BM_AllReducePredictions)->Arg(32 << 10)->Arg(64 << 20)->Arg(1 << 30);

}  // namespace

BENCHMARK_MAIN();
