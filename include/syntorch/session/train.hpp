#pragma once
// One training iteration of a zoo model on a simulated cluster, as `syntorch train` runs it:
// every rank of tp x pp x dp builds its share, runs its pipeline stage's micro-batches forward
// and backward, reduces gradients over data parallel and steps a mixed-precision optimizer. The
// report says what Megatron-LM prints (iteration time, tokens/s, TFLOP/s per GPU in model FLOPs,
// MFU and HFU) and what each stage holds in memory.

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "syntorch/base/diagnostics.hpp"
#include "syntorch/base/dtype.hpp"
#include "syntorch/hw/machine.hpp"
#include "syntorch/models/model.hpp"
#include "syntorch/os/caching_allocator.hpp"
#include "syntorch/runtime/engine.hpp"
#include "syntorch/runtime/policy.hpp"

namespace syntorch::trace {
class Recorder;
}

namespace syntorch::session {

struct TrainSpec {
  std::shared_ptr<const models::Model> model;
  int tp = 1, pp = 1, dp = 1;
  int vp = 1;                           // virtual stages per rank (interleaved 1F1B)
  std::int64_t global_batch = 0;        // sequences per iteration (0: micro_batch x dp)
  std::int64_t micro_batch = 1;
  std::int64_t seq = 2048;
  models::Recompute recompute = models::Recompute::none;
  bool sequence_parallel = false;
  int zero = 0;                         // 1: the distributed optimizer
  bool overlap_grad_reduce = false;     // data-parallel reduction under the last micro-batch's backward
  bool overlap_param_gather = false;    // with zero 1: the step's all-gather under the next forward
  double hidden_dropout = 0.1;          // Megatron-LM's default
  double attention_dropout = 0.1;       // on the attention probabilities; Megatron-LM's default
  bool adam = true;                     // adamw; false: sgd
  bool gpipe = false;                   // the GPipe schedule instead of 1F1B
  DType dtype = DType::bf16;
  // Data-parallel replicas run identical programs: simulate replica 0 (and those of trace_ranks)
  // and let the others mirror it, joining its collectives so that those still move every
  // member's bytes (runtime::EngineOptions::mirror_of). False: every rank runs its program.
  bool mirror_replicas = true;
  std::vector<int> trace_ranks;         // ranks a trace shows (empty: every simulated rank)
};

// Sets one parameter from its text, as measurement rows and study files give them: model, seq, tp,
// pp, dp, vp, global_batch, micro_batch, recompute (none|selective|full), sp (true|false or 1|0), zero
// (0|1), overlap_grad_reduce and overlap_param_gather (true|false), hidden_dropout and attention_dropout (0 .. 1), optimizer (adamw|sgd),
// schedule (1f1b|gpipe), dtype, replicas (one|all: mirror_replicas), trace_ranks ("0-7,64"). False
// for a key that is none of these.
bool set_train_parameter(TrainSpec& spec, const std::string& key, const std::string& value, Diagnostics& diagnostics,
                         const std::string& where);
const std::vector<std::string>& train_parameter_keys();

// Checks a spec against a machine: a model that can train, positive sizes, tp x pp x dp devices
// with a collective library, the batch splitting into micro-batches over dp, interleaving's
// needs, the model's layout checks, a 16- or 32-bit dtype. Problems go under `where` keyed as
// set_train_parameter's keys.
bool validate_train(const TrainSpec& spec, const hw::Machine& machine, Diagnostics& diagnostics,
                    const std::string& where);
// The spec's global batch, or micro_batch x dp when it gives none (0).
std::int64_t global_batch(const TrainSpec& spec);

struct StageMemory {
  int stage = 0;
  std::uint64_t peak_bytes = 0;                                  // the stage's largest rank's peak
  std::array<std::uint64_t, os::kMemoryUses> peak_by_use{};      // each purpose's own peak on that rank
};

struct TrainReport {
  bool oom = false;
  std::int64_t global_batch = 0;  // sequences per iteration (the spec's, or micro_batch x dp)
  double iteration_s = 0;       // the last iteration (the first warms up)
  double tokens_per_s = 0;      // global batch x seq / iteration time
  double model_flops = 0;       // per iteration, as Megatron counts them (3 x forward)
  double tflops_per_gpu = 0;    // model FLOPs / iteration time / GPUs, in TFLOP/s
  double mfu = 0;               // model FLOPs against the GPUs' peak (session::utilisation_peak_ops_per_s)
  double hfu = 0;               // FLOPs executed (recomputation included) against the same peak
  double bubble_fraction = 0;   // (pp - 1) / (m + pp - 1): the schedule's idle share on a balanced pipeline
  double exposed_communication_s = 0;  // mean per GPU of collectives on the compute stream
  double overlapped_communication_s = 0;  // mean per GPU of collectives on a communication stream
  std::int64_t micro_batches = 0;      // per iteration and data-parallel replica
  std::vector<StageMemory> stages;
  std::int64_t warmup_micro_batches = 0;  // of the warm-up iteration (min(m, pp): it fills the pipeline)
  int simulated_replicas = 0;   // data-parallel replicas whose programs ran (the others mirror replica 0)
  runtime::EngineResult engine;
};

// Throws InputError for a spec validate_train rejects.
TrainReport simulate_training(const hw::Machine& machine, const runtime::KernelPolicy& policy, TrainSpec spec,
                              trace::Recorder* recorder = nullptr,
                              runtime::TraceLevel trace_level = runtime::TraceLevel::kernel);

}  // namespace syntorch::session
