#pragma once
// What a serving benchmark reports, defined as vllm bench serve defines it: request, output-token
// and total-token throughput over the benchmark's duration (the first arrival to the last
// completion); time to first token (arrival to the first token on the host), time per output
// token (per request: (latency - TTFT) / (output tokens - 1)), inter-token latency (every gap
// between consecutive tokens of a request, pooled) and end-to-end latency, each as mean, median,
// p90 and p99 (linear interpolation between ranks, as numpy.percentile); goodput, the requests a
// second that met every given SLO.

#include <cstdint>
#include <vector>

#include "syntorch/session/serving/scheduler.hpp"

namespace syntorch::session::serving {

// Latency objectives, seconds (0: none).
struct Slo {
  double ttft_s = 0;
  double tpot_s = 0;
  double e2e_s = 0;
};

struct Distribution {
  double mean = 0, median = 0, p90 = 0, p99 = 0, max = 0;
};
// The distribution of `values` (sorted in place); zeros for none.
Distribution distribution_of(std::vector<double>& values);

struct ServeMetrics {
  std::int64_t completed = 0;
  std::int64_t input_tokens = 0;   // of the completed requests
  std::int64_t output_tokens = 0;
  double duration_s = 0;
  double request_throughput = 0;      // requests / s
  double output_throughput = 0;       // output tokens / s
  double total_token_throughput = 0;  // (input + output) tokens / s
  Distribution ttft_s, tpot_s, itl_s, e2e_s;
  std::int64_t good = 0;        // requests that met every SLO given
  double goodput = 0;           // of them, per second
  std::int64_t preemptions = 0;
  std::int64_t prefix_hit_tokens = 0;  // prompt tokens served from the prefix cache
  // Speculative decoding: tokens proposed and accepted (their ratio the acceptance measured).
  std::int64_t proposed_tokens = 0;
  std::int64_t accepted_tokens = 0;
};

// From the sequences after a run; times count from the run's serving start (arrival 0).
ServeMetrics compute_metrics(const std::vector<Sequence>& sequences, const Slo& slo);

}  // namespace syntorch::session::serving
