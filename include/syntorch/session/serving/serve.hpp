#pragma once
// A serving run, as `syntorch serve` runs it: one replica of a model (tensor parallel across its
// devices) behind a serving engine, fed a stream of requests. The engine's loop is a program on
// the simulated host: at each step it reads the host clock, admits the requests that have
// arrived, lets its scheduler pick the step's batch, spends its CPU time, runs the batch's
// forward (every kernel simulated on the batch's own shapes: a packed batch whose attention reads
// each sequence's KV pages) and waits for the sampled tokens; the KV pool is sized from the memory
// left after the weights and a profiling forward, as the engines size it.

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <utility>
#include <optional>
#include <string>
#include <vector>

#include "syntorch/base/dtype.hpp"
#include "syntorch/hw/machine.hpp"
#include "syntorch/models/model.hpp"
#include "syntorch/runtime/engine.hpp"
#include "syntorch/runtime/policy.hpp"
#include "syntorch/session/parameters.hpp"
#include "syntorch/session/serving/engine_profile.hpp"
#include "syntorch/session/serving/metrics.hpp"
#include "syntorch/session/serving/requests.hpp"
#include "syntorch/session/serving/router.hpp"

namespace syntorch::trace {
class Recorder;
}

namespace syntorch::session::serving {

using session::Parameter;

struct ServeSpec {
  std::shared_ptr<const models::Model> model;
  int tp = 1;
  DType dtype = DType::fp16;
  std::optional<DType> kv_dtype;  // the activations' unless given (fp8 runs: fp8)
  std::string engine = "vllm";     // a profile (engine_profile), its fields overridden as given:
  std::optional<std::int64_t> max_num_batched_tokens, max_num_seqs, block_size, cuda_graph_max_batch,
      speculative_tokens;
  std::optional<double> memory_fraction, acceptance_rate;
  // Speculative decoding with a draft model (vLLM's draft_model method): this model, on the same
  // devices, proposes the speculative tokens in passes of its own; none: by n-gram lookup.
  std::shared_ptr<const models::Model> draft_model;
  std::optional<bool> prefix_caching, chunked_prefill;
  // Replicas of the engine, each on tp devices of its own (replica r on devices r*tp onwards),
  // behind a router that places each arrival (docs/serving.md).
  int replicas = 1;
  // Disaggregated serving: this many prefill engines (tp devices each, after the replicas') serve
  // the prompts and hand each request over with its first token; the replicas then decode it,
  // pulling its keys and values over the links first. 0: every replica serves whole requests.
  int prefill_replicas = 0;
  RouterPolicy router = RouterPolicy::round_robin;
  std::int64_t router_balance = 4;  // prefix_affinity: outstanding requests over the least loaded
  TrafficSpec traffic;
  Slo slo;
  // A step whose token count, sampled rows and graph repeat an earlier step's takes that step's
  // time less its attention, plus its own attention as the kernel model predicts it (no kernels
  // of its own in the trace); off: every step simulated kernel by kernel (docs/serving.md).
  bool reuse_steps = true;
};

// The parameters of a serving run, declared once for every front end (session/parameters.hpp).
const std::vector<Parameter<ServeSpec>>& serving_parameters();

// The spec's engine: its profile with the spec's overrides; nothing (reported) for an unknown one.
std::optional<EngineProfile> resolved_engine(const ServeSpec& spec, Diagnostics& diagnostics, const std::string& where);

// Problems with a spec on a machine, under `where`.
bool validate_serve(const ServeSpec& spec, const hw::Machine& machine, Diagnostics& diagnostics,
                    const std::string& where);

// One step as the run went, for the report's series.
struct StepSample {
  double time_s = 0;  // the step's end
  std::int32_t sequences = 0;  // scheduled in the step
  std::int32_t running = 0;    // running after it
  std::int32_t tokens = 0;
  std::int32_t prefill_tokens = 0;
  std::int32_t waiting = 0;
  std::int32_t preempted = 0;
  float kv_used = 0;  // of the pool's pages, after the step
  bool reused = false;  // its time from an earlier step of its shape (ServeSpec::reuse_steps)
  std::int16_t replica = 0;
};

// What one engine of a deployment did.
struct ReplicaSummary {
  std::string role;  // "replica", or "prefill" and "decode" when disaggregated
  std::int64_t requests = 0;  // routed to it
  std::int64_t output_tokens = 0;  // it sampled (a prefill engine's first tokens; a decode engine's the rest)
  std::int64_t preemptions = 0;
  std::int64_t steps = 0;
  double kv_used_peak = 0;  // of its pool's pages, after a step
};

struct ServeReport {
  // The engine could not start: its weights and activations do not leave a KV pool that holds the
  // longest request (as the engines refuse to start), or a device ran out of memory.
  bool oom = false;
  std::string oom_reason;
  ServeMetrics metrics;
  std::int64_t kv_blocks = 0;        // pages in the pool
  std::int64_t kv_tokens = 0;        // positions it holds
  double kv_pool_bytes = 0;          // per device
  double weights_bytes = 0;          // per device
  double activation_peak_bytes = 0;  // per device, from the profiling forward
  std::vector<StepSample> steps;    // every replica's, in time order
  std::vector<ReplicaSummary> replicas;
  runtime::EngineResult engine;
};

// Throws InputError for a spec validate_serve rejects.
ServeReport serve(const hw::Machine& machine, const runtime::KernelPolicy& policy, const ServeSpec& spec,
                  trace::Recorder* recorder = nullptr, runtime::TraceLevel trace_level = runtime::TraceLevel::kernel);

// The report as JSON: the parameters as run, the metrics (vllm bench serve's names, seconds), the
// KV pool, the batch-size distribution and the steps' series (at most `series_points`, evenly
// spaced; 0 for none). Status "oom" with the reason when the engine could not start.
nlohmann::ordered_json serve_report_json(const ServeReport& report, const ServeSpec& spec, const std::string& hw_file,
                                         std::size_t series_points = 200);
// The run's status ("ok" or "oom", with the reason), its hardware config and every parameter as it
// ran: what the serving reports open with.
nlohmann::ordered_json serve_header_json(bool oom, const std::string& oom_reason, const ServeSpec& spec,
                                         const std::string& hw_file);
// How many steps ran with 1, 2-3, 4-7, ... sequences: (lowest count of the bucket, steps).
std::vector<std::pair<std::int64_t, std::int64_t>> batch_size_histogram(const std::vector<StepSample>& steps);

}  // namespace syntorch::session::serving
