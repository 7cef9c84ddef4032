// Training and clusters: loading and routing a SuperPOD-sized machine, and training iterations of
// models that span tens of GPUs. Run: build/bench/bench_train
// --benchmark_repetitions=5 --benchmark_report_aggregates_only=true (docs/performance.md).

#include <benchmark/benchmark.h>

#include "syntorch/session/hardware.hpp"
#include "syntorch/session/train.hpp"

namespace {

using namespace syntorch;

std::string config(const char* name) { return std::string(SYNTORCH_SOURCE_DIR) + "/hw_configs/" + name; }

// The 4,480-GPU DGX A100 SuperPOD config: load and elaborate it, then route from one GPU to
// every other endpoint (what a simulation pays per source it uses).
void BM_LoadAndRouteSuperPod4480(benchmark::State& state) {
  for (auto _ : state) {
    const hw::Machine m = session::load_machine(config("dgx_a100_superpod.json"));
    double latency = 0;
    const std::uint32_t from = m.devices()[0].endpoint;
    for (std::uint32_t to = 0; to < m.endpoints().size(); ++to) latency += m.route(from, to).latency_s;
    benchmark::DoNotOptimize(latency);
  }
}
BENCHMARK(BM_LoadAndRouteSuperPod4480)->Unit(benchmark::kMillisecond)->UseRealTime();

void train(benchmark::State& state, const char* model, const char* hw, int tp, int pp, int dp, std::int64_t batch,
           std::int64_t seq, bool megatron = false) {
  const hw::Machine m = session::load_machine(config(hw));
  Diagnostics d;
  session::TrainSpec s;
  session::set_train_parameter(s, "model", model, d, "bench");
  s.tp = tp;
  s.pp = pp;
  s.dp = dp;
  s.global_batch = batch;
  s.seq = seq;
  if (megatron) {  // as Narayanan et al. (2021) ran their largest models
    s.recompute = models::Recompute::full;
    s.sequence_parallel = true;
  }
  std::uint64_t kernels = 0;
  for (auto _ : state) {
    const session::TrainReport r = session::simulate_training(m, {}, s);
    kernels = 0;
    for (const auto& rank : r.engine.ranks) kernels += rank.mirror_of < 0 ? rank.kernels : 0;
    benchmark::DoNotOptimize(r.iteration_s);
  }
  state.counters["kernels"] = static_cast<double>(kernels);
}

// The shared row D011's run: 48 H100s, data parallel.
void BM_Train_D011_48Gpus(benchmark::State& state) {
  train(state, "gpt:layers=24,hidden=2048,heads=16,vocab=131072", "dgx_h100_superpod.json", 1, 1, 48, 192, 4096);
}
BENCHMARK(BM_Train_D011_48Gpus)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1);

// A pipeline: 8 stages of a 32-layer model on one DGX H100, 32 micro-batches.
void BM_Train_Pp8_32MicroBatches(benchmark::State& state) {
  train(state, "gpt:layers=32,hidden=4096,heads=32,vocab=51200", "dgx_h100.json", 1, 8, 1, 32, 2048);
}
BENCHMARK(BM_Train_Pp8_32MicroBatches)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1);

// The scale targets: GPT-3 175B on 1,536 A100s (TP 8, PP 8, DP 24, global batch 2,304), and GPT
// 1T on 3,072 (TP 8, PP 64, DP 6, global batch 3,072); one data-parallel replica simulated.
void BM_Train_Gpt3_175B_1536Gpus(benchmark::State& state) {
  train(state, "gpt3-175b", "dgx_a100_superpod.json", 8, 8, 24, 2304, 2048, true);
}
BENCHMARK(BM_Train_Gpt3_175B_1536Gpus)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1);

void BM_Train_Gpt1T_3072Gpus(benchmark::State& state) {
  train(state, "gpt:layers=128,hidden=25600,heads=160,vocab=51200", "dgx_a100_superpod.json", 8, 64, 6, 3072, 2048,
        true);
}
BENCHMARK(BM_Train_Gpt1T_3072Gpus)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1);

}  // namespace

BENCHMARK_MAIN();
