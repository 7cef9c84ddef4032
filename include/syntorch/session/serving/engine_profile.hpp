#pragma once
// A serving engine as its scheduler and memory manager behave, each a named profile whose
// parameters a run may override: vLLM (the v1 engine), SGLang and TensorRT-LLM. The defaults are
// the engines' own (their documentation and source, cited beside each); the per-step CPU cost is
// what the engine's Python or C++ does around each forward (scheduling, preparing the inputs,
// sampling, processing the outputs), which dominates small-batch latency.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "syntorch/base/diagnostics.hpp"

namespace syntorch::session::serving {

// How the KV pool's size follows from the device's memory: vLLM's gpu_memory_utilization (a
// fraction of all memory for everything, the pool what the weights and the profiled activations
// leave), TensorRT-LLM's free_gpu_memory_fraction (a fraction of what is free after the weights
// and activations), SGLang's mem_fraction_static (a fraction of all memory for weights and pool).
enum class KvSizing : std::uint8_t { utilization_of_total, fraction_of_free, static_fraction };

struct EngineProfile {
  std::string name;
  // The most tokens one step's forward runs (prefill chunks and decode tokens together) and the
  // most sequences running at once.
  std::int64_t max_num_batched_tokens = 0;
  std::int64_t max_num_seqs = 0;
  std::int64_t block_size = 16;  // tokens per KV page
  KvSizing kv_sizing = KvSizing::utilization_of_total;
  double memory_fraction = 0.9;
  // A prompt longer than the step's token budget left runs in chunks over several steps (vLLM v1
  // always; off: it waits for a step with room for all of it).
  bool chunked_prefill = true;
  // Prefill chunks and decode tokens share a step (vLLM v1, TensorRT-LLM's in-flight batching);
  // off: a step that admits prompts runs them alone, the running sequences' decode waiting for
  // the next (SGLang without --enable-mixed-chunk).
  bool mixed_batches = true;
  bool prefix_caching = true;
  // Admission reserves the pages of a request's whole output (TensorRT-LLM's GUARANTEED_NO_EVICT
  // capacity policy): nothing is ever preempted, fewer requests run at once.
  bool reserve_full_kv = false;
  // CUDA graphs: decode-only steps of up to this many sequences replay a graph captured for the
  // next capture size (the batch padded to it); 0: none. Steps with a prefill run piecewise
  // (vLLM v1: graphs around the attention, which launches eagerly: piecewise_launches per layer).
  std::int64_t cuda_graph_max_batch = 0;
  std::vector<std::int64_t> cuda_graph_sizes;  // empty: the engine's default list up to the maximum
  // The host time a layer adds to a step no full graph serves (vLLM v1's piecewise graphs launch
  // the attention between two graph pieces from Python), seconds.
  double piecewise_layer_overhead_s = 0;
  // Speculative decoding by n-gram lookup (vLLM's ngram proposer, TensorRT-LLM's prompt lookup):
  // each decoding sequence proposes up to `speculative_tokens` tokens from its own context on the
  // CPU (ngram_overhead_s a sequence), the step verifies them with its own token (1 + k query
  // tokens), and each is accepted with probability `acceptance_rate` until the first rejection;
  // the step then yields the accepted ones and one more. 0: off.
  std::int64_t speculative_tokens = 0;
  double acceptance_rate = 0.7;
  double ngram_overhead_s = 10e-6;
  // The engine's CPU time per step: a fixed part and a part per scheduled sequence, seconds.
  double step_overhead_s = 0;
  double sequence_overhead_s = 0;
};

// The profiles by name: "vllm", "sglang", "trtllm". Unknown names are reported under `where`.
std::optional<EngineProfile> engine_profile(const std::string& name, Diagnostics& diagnostics, const std::string& where);
std::vector<std::string> engine_profile_names();
// Problems with a profile's values (after overrides), under `where`.
void check_engine_profile(const EngineProfile& profile, Diagnostics& diagnostics, const std::string& where);
// The capture size a decode batch of `sequences` is padded to (the profile's list), or 0 when no
// graph serves it.
std::int64_t cuda_graph_size(const EngineProfile& profile, std::int64_t sequences);

}  // namespace syntorch::session::serving
