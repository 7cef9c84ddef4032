// Serving runs (target, on this machine: 10,000 requests of Llama-3 70B on 8 H100s at a rate that
// saturates them in at most 30 s, every step's time from a kernel-level simulation of its shape;
// steps whose shape repeats reuse it, within 1% of simulating every step, measured on 1,000
// requests); deployments of several engines. Counters: steps, the steps reused, output tokens/s
// and TTFT/TPOT means of the run, and the process's peak RSS so far.

#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include <algorithm>
#include <filesystem>

#include "syntorch/session/hardware.hpp"
#include "syntorch/session/serving/serve.hpp"

namespace {

using namespace syntorch;
namespace sv = session::serving;

// Llama-3 70B, TP 8 on a DGX H100, vLLM's profile, Poisson arrivals past saturation (the engine
// completes about 14 requests a second), log-normal lengths around 1024 input and 256 output.
sv::ServeSpec llama3_70b(std::int64_t requests, bool reuse) {
  Diagnostics d;
  sv::ServeSpec s;
  for (const auto& [k, v] : std::vector<std::pair<std::string, std::string>>{
           {"model", "llama3-70b"}, {"tp", "8"}, {"rate", "50"}, {"input_len", "1024"}, {"output_len", "256"},
           {"input_dist", "lognormal"}, {"input_stddev", "0.6"}, {"output_dist", "lognormal"},
           {"output_stddev", "0.6"}}) {
    session::set_parameter(sv::serving_parameters(), s, k, v, d, "bench");
  }
  s.traffic.requests = requests;
  s.reuse_steps = reuse;
  return s;
}

void run(benchmark::State& state, const sv::ServeSpec& spec) {
  const hw::Machine m = session::load_machine(
      (std::filesystem::path(SYNTORCH_SOURCE_DIR) / "hw_configs" / "dgx_h100.json").string());
  sv::ServeReport r;
  for (auto _ : state) {
    r = sv::serve(m, {}, spec);
    benchmark::DoNotOptimize(r.steps.data());
  }
  if (r.oom) state.SkipWithError("the engine did not start");
  state.counters["steps"] = static_cast<double>(r.steps.size());
  state.counters["reused"] =
      static_cast<double>(std::count_if(r.steps.begin(), r.steps.end(), [](const sv::StepSample& s) { return s.reused; }));
  state.counters["output_tok_per_s"] = r.metrics.output_throughput;
  state.counters["ttft_mean_s"] = r.metrics.ttft_s.mean;
  state.counters["tpot_mean_ms"] = r.metrics.tpot_s.mean * 1e3;
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  state.counters["peak_rss_MiB"] = static_cast<double>(usage.ru_maxrss) / 1024.0;
}

void BM_Serve_Llama3_70B_Tp8_10k(benchmark::State& state) { run(state, llama3_70b(10000, true)); }
BENCHMARK(BM_Serve_Llama3_70B_Tp8_10k)->Unit(benchmark::kSecond)->UseRealTime()->Iterations(1);

// Reuse against every step simulated, on the same 1,000 requests.
void BM_Serve_Llama3_70B_Tp8_1k_Reuse(benchmark::State& state) { run(state, llama3_70b(1000, true)); }
BENCHMARK(BM_Serve_Llama3_70B_Tp8_1k_Reuse)->Unit(benchmark::kSecond)->UseRealTime()->Iterations(1);
void BM_Serve_Llama3_70B_Tp8_1k_EveryStep(benchmark::State& state) { run(state, llama3_70b(1000, false)); }
BENCHMARK(BM_Serve_Llama3_70B_Tp8_1k_EveryStep)->Unit(benchmark::kSecond)->UseRealTime()->Iterations(1);

// Deployments on the same DGX H100, 2,000 requests of Llama-3 8B (log-normal lengths around
// 1,024 input and 256 output): four TP-2 replicas behind a least-outstanding router, and one TP-4
// prefill engine handing over to one TP-4 decode engine.
sv::ServeSpec llama3_8b_deployment(const std::vector<std::pair<std::string, std::string>>& deployment) {
  Diagnostics d;
  sv::ServeSpec s;
  for (const auto& [k, v] : std::vector<std::pair<std::string, std::string>>{
           {"model", "llama3-8b"}, {"dtype", "bf16"}, {"rate", "40"}, {"requests", "2000"}, {"input_len", "1024"},
           {"output_len", "256"}, {"input_dist", "lognormal"}, {"input_stddev", "0.6"}, {"output_dist", "lognormal"},
           {"output_stddev", "0.6"}}) {
    session::set_parameter(sv::serving_parameters(), s, k, v, d, "bench");
  }
  for (const auto& [k, v] : deployment) session::set_parameter(sv::serving_parameters(), s, k, v, d, "bench");
  return s;
}
void BM_Serve_Llama3_8B_FourReplicas_2k(benchmark::State& state) {
  run(state, llama3_8b_deployment({{"tp", "2"}, {"replicas", "4"}, {"router", "least_outstanding"}}));
}
BENCHMARK(BM_Serve_Llama3_8B_FourReplicas_2k)->Unit(benchmark::kSecond)->UseRealTime()->Iterations(1);
void BM_Serve_Llama3_8B_Disaggregated_2k(benchmark::State& state) {
  run(state, llama3_8b_deployment({{"tp", "4"}, {"replicas", "1"}, {"prefill_replicas", "1"}}));
}
BENCHMARK(BM_Serve_Llama3_8B_Disaggregated_2k)->Unit(benchmark::kSecond)->UseRealTime()->Iterations(1);

}  // namespace

BENCHMARK_MAIN();
