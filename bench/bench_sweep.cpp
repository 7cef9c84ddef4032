// A 1,000-point what-if sweep of GPT-3 13B end-to-end runs, no traces, on every core (target: at
// most 60 s on this 2-core machine): batch x HBM bandwidth x output tokens on one H100.

#include <benchmark/benchmark.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "syntorch/session/sweep.hpp"
#include "syntorch/session/study.hpp"

namespace {

using namespace syntorch;

std::string write_study() {
  const auto path = std::filesystem::temp_directory_path() / "syntorch_bench_sweep.yaml";
  std::ofstream out(path);
  out << "name: bench-1000\nbase:\n  hw: " << SYNTORCH_SOURCE_DIR << "/hw_configs/h100_sxm5_80gb.json\n"
      << "  model: gpt3-13b\n  input_tokens: 128\n  cuda_graphs: true\naxes:\n"
      << "  - {param: batch, values: [1, 2, 4, 8, 12, 16, 24, 32, 48, 64]}\n"
      << "  - {hw: /components/gpu/components/hbm/bandwidth, values: [2 TB/s, 2.5 TB/s, 3 TB/s, 3.35 TB/s, 4 TB/s, "
         "4.8 TB/s, 5.5 TB/s, 6.7 TB/s, 8 TB/s, 10 TB/s]}\n"
      << "  - {param: output_tokens, values: [8, 16, 24, 32, 40, 48, 56, 64, 72, 80]}\n";
  return path.string();
}

void BM_Sweep1000PointsGpt3_13B(benchmark::State& state) {
  const session::Study study = session::load_study(write_study());
  const auto points = session::expand(study);
  session::SweepOptions options;
  options.jobs = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::size_t ok = 0;
  for (auto _ : state) {
    const auto rows = session::run_points(study, points, {}, options);
    ok = 0;
    for (const auto& r : rows) ok += r.status == "ok";
  }
  state.counters["points"] = static_cast<double>(points.size());
  state.counters["ok"] = static_cast<double>(ok);
  state.counters["points_per_s"] =
      benchmark::Counter(static_cast<double>(points.size()), benchmark::Counter::kIsIterationInvariantRate);
  state.counters["jobs"] = options.jobs;
}
BENCHMARK(BM_Sweep1000PointsGpt3_13B)->Unit(benchmark::kSecond)->UseRealTime()->Iterations(1);

}  // namespace

BENCHMARK_MAIN();
