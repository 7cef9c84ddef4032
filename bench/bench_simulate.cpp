// End-to-end generation runs, every kernel simulated (targets, on one core of this machine:
// GPT-3 175B, TP=8 on dgx_h100, batch 8, 2048 input and 128 output tokens: at most 2 s without a
// trace and 1 GiB peak RSS; at most 10 s with a kernel-level Chrome JSON trace).
// Counters: kernels and events simulated per run, and the process's peak RSS so far.

#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include <filesystem>

#include "syntorch/session/hardware.hpp"
#include "syntorch/session/simulate.hpp"
#include "syntorch/trace/chrome_json_writer.hpp"
#include "syntorch/trace/open_trace_writer.hpp"
#include "syntorch/trace/recorder.hpp"

namespace {

using namespace syntorch;

std::string config(const char* name) {
  return (std::filesystem::path(SYNTORCH_SOURCE_DIR) / "hw_configs" / name).string();
}

session::RunSpec gpt3_175b() {
  Diagnostics d;
  session::RunSpec spec;
  session::set_run_parameter(spec, "model", "gpt3-175b", d, "bench");
  spec.tp = 8;
  spec.batch = 8;
  spec.input_tokens = 2048;
  spec.output_tokens = 128;
  return spec;
}

void report(benchmark::State& state, const session::RunReport& r) {
  std::uint64_t kernels = 0;
  for (const auto& rank : r.engine.ranks) kernels += rank.kernels;
  state.counters["kernels"] = static_cast<double>(kernels);
  state.counters["events"] = static_cast<double>(r.engine.events);
  state.counters["kernels_per_s"] = benchmark::Counter(static_cast<double>(kernels), benchmark::Counter::kIsIterationInvariantRate);
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  state.counters["peak_rss_MiB"] = static_cast<double>(usage.ru_maxrss) / 1024.0;
}

// Simulates `spec` on the bundled `hw` once per iteration, without a trace.
void run_generation(benchmark::State& state, const char* hw, const session::RunSpec& spec) {
  const hw::Machine m = session::load_machine(config(hw));
  session::RunReport r;
  for (auto _ : state) {
    r = session::simulate_generation(m, {}, spec);
    benchmark::DoNotOptimize(r.e2e_s);
  }
  if (r.oom) state.SkipWithError("simulated out of memory");
  report(state, r);
}

void BM_Gpt3_175B_Tp8_NoTrace(benchmark::State& state) { run_generation(state, "dgx_h100.json", gpt3_175b()); }
BENCHMARK(BM_Gpt3_175B_Tp8_NoTrace)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_Gpt3_175B_Tp8_ChromeTrace(benchmark::State& state) {
  const hw::Machine m = session::load_machine(config("dgx_h100.json"));
  const session::RunSpec spec = gpt3_175b();
  const auto path = std::filesystem::temp_directory_path() / "syntorch_bench_trace.json";
  session::RunReport r;
  for (auto _ : state) {
    trace::Recorder recorder;
    recorder.attach(trace::ChromeJsonWriter::open(path));
    r = session::simulate_generation(m, {}, spec, &recorder);
    recorder.finish();
    benchmark::DoNotOptimize(r.e2e_s);
  }
  state.counters["trace_MiB"] = static_cast<double>(std::filesystem::file_size(path)) / (1 << 20);
  std::filesystem::remove(path);
  report(state, r);
}
BENCHMARK(BM_Gpt3_175B_Tp8_ChromeTrace)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1);

// The same simulated run written as Chrome JSON and as Perfetto protobuf (target: the .pftrace
// at most a quarter of the JSON): GPT-3 13B, TP=2 x PP=2 on dgx_a100, batch 8, 512 + 64 tokens.
void BM_TraceSizeOfTheSameRun(benchmark::State& state) {
  const hw::Machine m = session::load_machine(config("dgx_a100.json"));
  Diagnostics d;
  session::RunSpec spec;
  session::set_run_parameter(spec, "model", "gpt3-13b", d, "bench");
  spec.tp = 2;
  spec.pp = 2;
  spec.batch = 8;
  spec.input_tokens = 512;
  spec.output_tokens = 64;
  const auto dir = std::filesystem::temp_directory_path();
  double sizes[2] = {0, 0};
  for (auto _ : state) {
    int i = 0;
    for (const char* name : {"syntorch_bench_run.json", "syntorch_bench_run.pftrace"}) {
      trace::Recorder recorder;
      recorder.attach(trace::open_trace_writer(dir / name));
      session::simulate_generation(m, {}, spec, &recorder);
      recorder.finish();
      sizes[i++] = static_cast<double>(std::filesystem::file_size(dir / name));
      std::filesystem::remove(dir / name);
    }
  }
  state.counters["json_MiB"] = sizes[0] / (1 << 20);
  state.counters["pftrace_MiB"] = sizes[1] / (1 << 20);
  state.counters["pftrace_to_json"] = sizes[1] / sizes[0];
}
BENCHMARK(BM_TraceSizeOfTheSameRun)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1);

// A sweep-sized point: GPT-3 13B on one H100, batch 1, 128 + 128 tokens.
void BM_Gpt3_13B_Tp1(benchmark::State& state) {
  Diagnostics d;
  session::RunSpec spec;
  session::set_run_parameter(spec, "model", "gpt3-13b", d, "bench");
  spec.input_tokens = 128;
  spec.output_tokens = 128;
  run_generation(state, "h100_sxm5_80gb.json", spec);
}
BENCHMARK(BM_Gpt3_13B_Tp1)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

// Issue target: Llama 3 405B, TP 8 x PP 2 over two DGX H100 nodes, batch 16, 8192 + 256 tokens,
// every kernel simulated, in at most 5 s and 1 GiB; and the same for a mixture of experts,
// Mixtral 8x22B with its 8 experts spread by expert parallelism over each stage's 8 GPUs
// (all-to-all dispatch and combine).
void run_tp8_pp2_on_two_nodes(benchmark::State& state, const char* model, int ep) {
  Diagnostics d;
  session::RunSpec spec;
  session::set_run_parameter(spec, "model", model, d, "bench");
  spec.tp = 8;
  spec.ep = ep;
  spec.pp = 2;
  spec.batch = 16;
  spec.input_tokens = 8192;
  spec.output_tokens = 256;
  run_generation(state, "dgx_h100_x2.json", spec);
}
void BM_Llama3_405B_Tp8_Pp2(benchmark::State& state) { run_tp8_pp2_on_two_nodes(state, "llama3.1-405b", 1); }
BENCHMARK(BM_Llama3_405B_Tp8_Pp2)->Unit(benchmark::kMillisecond)->UseRealTime();
void BM_Mixtral_8x22B_Tp8_Ep8_Pp2(benchmark::State& state) { run_tp8_pp2_on_two_nodes(state, "mixtral-8x22b", 8); }
BENCHMARK(BM_Mixtral_8x22B_Tp8_Ep8_Pp2)->Unit(benchmark::kMillisecond)->UseRealTime();

BENCHMARK_MAIN();
