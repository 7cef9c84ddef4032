#include "syntorch/session/metrics.hpp"

#include <algorithm>
#include <array>
#include <limits>

namespace syntorch::session {

namespace {

double peak_bytes(const RunReport& r) {
  std::uint64_t peak = 0;
  for (std::uint64_t b : r.peak_memory_bytes) peak = std::max(peak, b);
  return static_cast<double>(peak);
}

double per_byte(double flops, double bytes) { return bytes > 0 ? flops / bytes : std::numeric_limits<double>::quiet_NaN(); }

// name, unit, label, definition, shown unit and factor, SI unit and factor; then the value.
const std::array<GenerationMetric, 11> kGeneration{{
    {{"ttft_ms", "ms", "time to first token", "from the prefill's start until the first token is on the host", "ms", 1,
      "s", 1e-3},
     [](const RunReport& r, const RunSpec&) { return r.ttft_s * 1e3; }},
    {{"tpot_ms", "ms", "time per output token", "the mean decode step after the first token (NaN with one output token)",
      "ms", 1, "s", 1e-3},
     [](const RunReport& r, const RunSpec&) { return r.tpot_s * 1e3; }},
    {{"e2e_ms", "ms", "end-to-end latency", "from the prefill's start until the last token is on the host", "ms", 1, "s",
      1e-3},
     [](const RunReport& r, const RunSpec&) { return r.e2e_s * 1e3; }},
    {{"tokens_per_s", "tokens/s", "throughput", "generated tokens (batch x output tokens) per second of the run",
      "tokens/s", 1, "tokens/s", 1},
     [](const RunReport& r, const RunSpec&) { return r.tokens_per_s; }},
    {{"tokens_per_s_per_gpu", "tokens/s", "throughput per GPU", "throughput divided by the devices the run uses (tp x pp)",
      "tokens/s", 1, "tokens/s", 1},
     [](const RunReport& r, const RunSpec& s) { return r.tokens_per_s / (static_cast<double>(s.tp) * s.pp); }},
    {{"peak_memory_bytes", "B", "peak memory per device", "the most bytes allocated at once on the busiest device", "GB",
      1e-9, "B", 1},
     [](const RunReport& r, const RunSpec&) { return peak_bytes(r); }},
    {{"mfu", "1", "model FLOPs utilisation",
      "kernel FLOPs / (run time x devices x the device's peak FLOP/s: its fastest unit in the GEMMs' precision)", "%", 100, "%", 100},
     [](const RunReport& r, const RunSpec&) { return r.mfu; }},
    {{"compute_ms", "ms", "compute-bound kernel time", "time of kernels bound by the compute units, per device", "ms", 1,
      "s", 1e-3},
     [](const RunReport& r, const RunSpec&) { return r.breakdown.compute_s * 1e3; }},
    {{"memory_ms", "ms", "memory-bound kernel time", "time of kernels bound by memory bandwidth, per device", "ms", 1, "s",
      1e-3},
     [](const RunReport& r, const RunSpec&) { return r.breakdown.memory_s * 1e3; }},
    {{"communication_ms", "ms", "communication time", "time in collectives and transfers, per device", "ms", 1, "s", 1e-3},
     [](const RunReport& r, const RunSpec&) { return r.breakdown.communication_s * 1e3; }},
    {{"launch_idle_ms", "ms", "launch gaps and idle", "time a device waits for the host or is idle, per device", "ms", 1,
      "s", 1e-3},
     [](const RunReport& r, const RunSpec&) { return r.breakdown.idle_s * 1e3; }},
}};

const std::array<KernelMetric, 6> kKernel{{
    {{"time_us", "us", "kernel time", "the op's time in the study's timing (device, host or events)", "us", 1, "s", 1e-6},
     [](const runtime::Prediction& p) { return p.time_s * 1e6; }},
    {{"tflops", "TFLOP/s", "achieved FLOP rate", "the op's FLOPs per second of its time", "TFLOP/s", 1, "FLOP/s", 1e12},
     [](const runtime::Prediction& p) { return p.flops / p.time_s / 1e12; }},
    {{"hbm_gbps", "GB/s", "achieved HBM bandwidth", "bytes moved to and from HBM per second of the op's time", "GB/s", 1,
      "B/s", 1e9},
     [](const runtime::Prediction& p) { return p.hbm_bytes / p.time_s / 1e9; }},
    {{"flops", "FLOP", "FLOPs", "the op's floating-point operations", "GFLOP", 1e-9, "FLOP", 1},
     [](const runtime::Prediction& p) { return p.flops; }},
    {{"hbm_bytes", "B", "HBM bytes", "bytes moved to and from HBM", "GB", 1e-9, "B", 1},
     [](const runtime::Prediction& p) { return p.hbm_bytes; }},
    {{"flops_per_byte", "FLOP/B", "arithmetic intensity", "FLOPs per byte moved to and from HBM", "FLOP/B", 1, "FLOP/B",
      1},
     [](const runtime::Prediction& p) { return per_byte(p.flops, p.hbm_bytes); }},
}};

double graph_peak_bytes(const GraphRunReport& r) {
  std::uint64_t peak = 0;
  for (std::uint64_t b : r.stats.peak_memory_bytes) peak = std::max(peak, b);
  return static_cast<double>(peak);
}

const std::array<GraphMetric, 6> kGraph{{
    {{"time_ms", "ms", "graph time", "the graph's run on one device, from its start to its last kernel's end", "ms", 1,
      "s", 1e-3},
     [](const GraphRunReport& r) { return r.stats.simulated_time_s * 1e3; }},
    {{"achieved_tflops", "TFLOP/s", "achieved FLOP rate", "the graph's kernel FLOPs per second of its time", "TFLOP/s",
      1, "FLOP/s", 1e12},
     [](const GraphRunReport& r) { return r.stats.flops / r.stats.simulated_time_s / 1e12; }},
    {{"kernels", "1", "kernels", "the kernels the graph's ops launched", "", 1, "", 1},
     [](const GraphRunReport& r) { return static_cast<double>(r.stats.kernels); }},
    {{"graph_flops", "FLOP", "FLOPs", "the kernels' floating-point operations", "GFLOP", 1e-9, "FLOP", 1},
     [](const GraphRunReport& r) { return r.stats.flops; }},
    {{"graph_hbm_bytes", "B", "HBM bytes", "bytes the kernels moved to and from HBM", "GB", 1e-9, "B", 1},
     [](const GraphRunReport& r) { return r.stats.hbm_bytes; }},
    {{"graph_peak_memory_bytes", "B", "peak memory", "the most bytes allocated at once on the device", "GB", 1e-9, "B",
      1},
     [](const GraphRunReport& r) { return graph_peak_bytes(r); }},
}};

// As vllm bench serve defines them (serving/metrics.hpp).
const std::array<ServingMetric, 11> kServing{{
    {{"output_tokens_per_s", "tokens/s", "output token throughput", "output tokens over the run (first arrival to last token)",
      "tokens/s", 1, "tokens/s", 1},
     [](const serving::ServeMetrics& m) { return m.output_throughput; }},
    {{"requests_per_s", "req/s", "request throughput", "completed requests per second of the run", "req/s", 1, "req/s", 1},
     [](const serving::ServeMetrics& m) { return m.request_throughput; }},
    {{"goodput", "req/s", "goodput", "requests a second that met every SLO given", "req/s", 1, "req/s", 1},
     [](const serving::ServeMetrics& m) { return m.goodput; }},
    {{"ttft_mean_ms", "ms", "mean time to first token", "arrival to the first token on the host, mean over requests", "ms",
      1, "s", 1e-3},
     [](const serving::ServeMetrics& m) { return m.ttft_s.mean * 1e3; }},
    {{"ttft_p99_ms", "ms", "p99 time to first token", "arrival to the first token, 99th percentile", "ms", 1, "s", 1e-3},
     [](const serving::ServeMetrics& m) { return m.ttft_s.p99 * 1e3; }},
    {{"tpot_mean_ms", "ms", "mean time per output token", "(latency - TTFT) / (output tokens - 1), mean over requests",
      "ms", 1, "s", 1e-3},
     [](const serving::ServeMetrics& m) { return m.tpot_s.mean * 1e3; }},
    {{"tpot_p99_ms", "ms", "p99 time per output token", "TPOT's 99th percentile over requests", "ms", 1, "s", 1e-3},
     [](const serving::ServeMetrics& m) { return m.tpot_s.p99 * 1e3; }},
    {{"itl_mean_ms", "ms", "mean inter-token latency", "every gap between a request's consecutive tokens, pooled", "ms", 1,
      "s", 1e-3},
     [](const serving::ServeMetrics& m) { return m.itl_s.mean * 1e3; }},
    {{"itl_p99_ms", "ms", "p99 inter-token latency", "every gap between a request's consecutive tokens, pooled, 99th "
      "percentile (a decode step that shares its batch with a prompt shows here)", "ms", 1, "s", 1e-3},
     [](const serving::ServeMetrics& m) { return m.itl_s.p99 * 1e3; }},
    {{"e2e_p99_s", "s", "p99 end-to-end latency", "arrival to the last token, 99th percentile", "s", 1, "s", 1},
     [](const serving::ServeMetrics& m) { return m.e2e_s.p99; }},
    {{"preemptions", "1", "preemptions", "sequences preempted to make room in the KV pool", "", 1, "", 1},
     [](const serving::ServeMetrics& m) { return static_cast<double>(m.preemptions); }},
}};

}  // namespace

std::span<const ServingMetric> serving_metric_table() { return kServing; }
std::span<const GraphMetric> graph_metric_table() { return kGraph; }
std::span<const GenerationMetric> generation_metrics() { return kGeneration; }
std::span<const KernelMetric> kernel_metric_table() { return kKernel; }

const Metric* find_metric(std::string_view name) {
  for (const GenerationMetric& m : kGeneration) {
    if (m.info.name == name) return &m.info;
  }
  for (const KernelMetric& m : kKernel) {
    if (m.info.name == name) return &m.info;
  }
  for (const ServingMetric& m : kServing) {
    if (m.info.name == name) return &m.info;
  }
  for (const GraphMetric& m : kGraph) {
    if (m.info.name == name) return &m.info;
  }
  return nullptr;
}

}  // namespace syntorch::session
