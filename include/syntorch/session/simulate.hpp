#pragma once
// One generation run of a zoo model on a simulated machine, as `syntorch simulate` runs it: every
// rank builds its share of the model and generates; the report says what a user measures end to
// end (time to first token, time per output token, tokens/s, memory, MFU) and where the time
// went. Front ends (the CLI, sweeps, validation, the Python package) call this.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "syntorch/base/dtype.hpp"
#include "syntorch/hw/machine.hpp"
#include "syntorch/models/model.hpp"
#include "syntorch/runtime/engine.hpp"
#include "syntorch/runtime/policy.hpp"

namespace syntorch::trace {
class Recorder;
}

namespace syntorch::session {

// The dtype of activations, embeddings, norms and attention in a run of `dtype`: fp16 for an fp8
// run (only the Linear weights and GEMMs are fp8), else `dtype`.
DType activation_dtype(DType dtype);
// The KV cache's dtype in `spec`: kv_dtype, else fp8 for an fp8 run (TensorRT-LLM's fp8 recipe
// quantises the KV cache too), else the activations'.
DType kv_cache_dtype(const struct RunSpec& spec);

// What model FLOPs utilisation divides by on one device: its peak in the precision the run's GEMMs
// run at (the policy's GEMM precision, else the run's dtype), on its fastest unit for it.
double utilisation_peak_ops_per_s(const hw::Device& device, DType dtype, const runtime::KernelPolicy& policy);

struct RunSpec {
  std::shared_ptr<const models::Model> model;  // from models::parse_model
  int tp = 1;
  int pp = 1;
  int ep = 1;                // expert parallel (mixture-of-experts models), dividing tp
  double expert_skew = 0;    // routing imbalance of a mixture of experts (models::expert_loads)
  std::int64_t batch = 1;
  std::int64_t input_tokens = 128;
  std::int64_t output_tokens = 16;
  DType dtype = DType::fp16;
  std::optional<DType> kv_dtype;  // the KV cache's dtype; when not given, the activations' (fp8 runs: fp8)
  bool graph = false;
  runtime::Framework framework = runtime::Framework::eager;
  std::int64_t micro_batches = 0;  // 0: one per pipeline stage
  std::int64_t max_num_tokens = 0;  // prompt tokens per prefill forward (session::GenerateOptions); 0: all
  // Tensor-parallel ranks run the same program on the same shapes: with mirror_ranks only rank 0's
  // runs and the others mirror it, joining its collectives (runtime::EngineOptions::mirror_of): the
  // same times at 1/tp of the work. Only without pipeline or expert parallelism, whose ranks differ.
  bool mirror_ranks = false;
};

// Sets one run parameter from its text, as study files and measurement rows give them: model,
// tp, pp, ep, expert_skew, batch, input_tokens (or input), output_tokens (or output), dtype, kv_dtype, graph (true|false),
// framework (eager|native), micro_batches, max_num_tokens, ranks (one|all: mirror_ranks). Returns false for a key
// that is none of these; a value
// that is wrong is reported under `where` and the key, and leaves the spec as it was.
bool set_run_parameter(RunSpec& spec, const std::string& key, const std::string& value, Diagnostics& diagnostics,
                       const std::string& where);
// The keys set_run_parameter takes (input and output also as input_tokens and output_tokens).
const std::vector<std::string>& run_parameter_keys();

// Checks a spec against a machine: a model given, sizes positive, tp x pp devices available, the
// model's own checks (heads and layers dividing), a dtype models run in. Sequences longer than the model's trained context are allowed
// (the cost of a position lookup does not depend on the position); reports say so. Problems go under
// `where` ("flags", a file row).
bool validate_run(const RunSpec& spec, const hw::Machine& machine, Diagnostics& diagnostics, const std::string& where);

// Mean time per device, by what the device was doing.
struct TimeBreakdown {
  double compute_s = 0;        // kernels bound by arithmetic
  double memory_s = 0;         // kernels bound by memory bandwidth
  double communication_s = 0;  // collectives moving data, host-device copies
  double waiting_s = 0;        // waiting for peers: collectives until all arrive, receives not yet in
  double idle_s = 0;           // launch gaps, host synchronisations, pipeline bubbles: the rest
  double p2p_s = 0;            // sends and receives on their own streams (overlapping the above)
};

struct RunReport {
  bool oom = false;
  // Times count from the start of generation (the prefill's start; building the model is not
  // part of it).
  double ttft_s = 0;          // prefill done: the first token is on the host
  double tpot_s = 0;          // mean decode step after that (NaN with a single output token)
  double e2e_s = 0;
  double tokens_per_s = 0;    // generated tokens (batch x output) per second of the run
  double mfu = 0;             // kernel FLOPs / (run time x devices x utilisation_peak_ops_per_s)
  double model_flops = 0;
  std::vector<std::uint64_t> peak_memory_bytes;   // per device: peak allocated
  std::vector<std::uint64_t> peak_reserved_bytes; // per device: peak reserved by the caching allocator
  TimeBreakdown breakdown;
  runtime::EngineResult engine;
};

// Throws InputError for a spec that validate_run rejects.
// With a recorder, the run's events at `trace_level` go to it.
RunReport simulate_generation(const hw::Machine& machine, const runtime::KernelPolicy& policy, const RunSpec& spec,
                              trace::Recorder* recorder = nullptr,
                              runtime::TraceLevel trace_level = runtime::TraceLevel::kernel);

}  // namespace syntorch::session
