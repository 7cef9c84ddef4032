// End-to-end generation runs, every kernel simulated (targets, on one core of this machine:
// GPT-3 175B, TP=8 on dgx_h100, batch 8, 2048 input and 128 output tokens: at most 2 s without a
// trace and 1 GiB peak RSS; at most 10 s with a kernel-level Chrome JSON trace).
// Counters: kernels and events simulated per run, and the process's peak RSS so far.

#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include <filesystem>

#include "syntorch/hw/machine.hpp"
#include "syntorch/models/simulate.hpp"
#include "syntorch/trace/chrome_json_writer.hpp"
#include "syntorch/trace/recorder.hpp"

namespace {

using namespace syntorch;

std::string config(const char* name) {
  return (std::filesystem::path(SYNTORCH_SOURCE_DIR) / "hw_configs" / name).string();
}

models::RunSpec gpt3_175b() {
  Diagnostics d;
  models::RunSpec spec;
  spec.model = *models::parse_model("gpt3-175b", d, "bench");
  spec.tp = 8;
  spec.batch = 8;
  spec.input_tokens = 2048;
  spec.output_tokens = 128;
  return spec;
}

void report(benchmark::State& state, const models::RunReport& r) {
  std::uint64_t kernels = 0;
  for (const auto& rank : r.engine.ranks) kernels += rank.kernels;
  state.counters["kernels"] = static_cast<double>(kernels);
  state.counters["events"] = static_cast<double>(r.engine.events);
  state.counters["kernels_per_s"] = benchmark::Counter(static_cast<double>(kernels), benchmark::Counter::kIsIterationInvariantRate);
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  state.counters["peak_rss_MiB"] = static_cast<double>(usage.ru_maxrss) / 1024.0;
}

void BM_Gpt3_175B_Tp8_NoTrace(benchmark::State& state) {
  const hw::Machine m = hw::Machine::load(config("dgx_h100.json"));
  const models::RunSpec spec = gpt3_175b();
  models::RunReport r;
  for (auto _ : state) {
    r = models::simulate_generation(m, {}, spec);
    benchmark::DoNotOptimize(r.e2e_s);
  }
  report(state, r);
}
BENCHMARK(BM_Gpt3_175B_Tp8_NoTrace)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_Gpt3_175B_Tp8_ChromeTrace(benchmark::State& state) {
  const hw::Machine m = hw::Machine::load(config("dgx_h100.json"));
  const models::RunSpec spec = gpt3_175b();
  const auto path = std::filesystem::temp_directory_path() / "syntorch_bench_trace.json";
  models::RunReport r;
  for (auto _ : state) {
    trace::Recorder recorder;
    recorder.attach(trace::ChromeJsonWriter::open(path));
    r = models::simulate_generation(m, {}, spec, &recorder);
    recorder.finish();
    benchmark::DoNotOptimize(r.e2e_s);
  }
  state.counters["trace_MiB"] = static_cast<double>(std::filesystem::file_size(path)) / (1 << 20);
  std::filesystem::remove(path);
  report(state, r);
}
BENCHMARK(BM_Gpt3_175B_Tp8_ChromeTrace)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1);

// A sweep-sized point: GPT-3 13B on one H100, batch 1, 128 + 128 tokens.
void BM_Gpt3_13B_Tp1(benchmark::State& state) {
  const hw::Machine m = hw::Machine::load(config("h100_sxm5_80gb.json"));
  Diagnostics d;
  models::RunSpec spec;
  spec.model = *models::parse_model("gpt3-13b", d, "bench");
  spec.input_tokens = 128;
  spec.output_tokens = 128;
  models::RunReport r;
  for (auto _ : state) {
    r = models::simulate_generation(m, {}, spec);
    benchmark::DoNotOptimize(r.e2e_s);
  }
  report(state, r);
}
BENCHMARK(BM_Gpt3_13B_Tp1)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
