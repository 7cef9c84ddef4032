#include "syntorch/session/serving/engine_profile.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace syntorch::session::serving {

namespace {

// vLLM's v1 engine (vllm/config: SchedulerConfig, CacheConfig, CompilationConfig): on a
// data-centre GPU max_num_batched_tokens 8192 and max_num_seqs 256 (EngineArgs' usage-context
// defaults for the OpenAI server), 16-token blocks, gpu_memory_utilization 0.9, chunked prefill
// and prefix caching on, piecewise CUDA graphs for every size up to 512 with full graphs for
// decode-only steps (a piecewise step's attention call and two graph launches from Python, about
// 15 us a layer). Its engine core's Python spends on the order of a millisecond a step
// (scheduling, input preparation, output processing: "vLLM V1", vLLM blog, January 2025), a few
// microseconds of it per sequence.
EngineProfile vllm() {
  EngineProfile p;
  p.name = "vllm";
  p.max_num_batched_tokens = 8192;
  p.max_num_seqs = 256;
  p.block_size = 16;
  p.kv_sizing = KvSizing::utilization_of_total;
  p.memory_fraction = 0.9;
  p.cuda_graph_max_batch = 512;
  p.piecewise_layer_overhead_s = 15e-6;
  p.step_overhead_s = 1.0e-3;
  p.sequence_overhead_s = 5e-6;
  return p;
}

// SGLang (python/sglang/srt/server_args.py): chunked_prefill_size 8192, max_running_requests
// bounded by the pool, radix-tree prefix cache with page size 1, mem_fraction_static about 0.88 on
// an 80 GB GPU, CUDA graphs for decode batches up to cuda_graph_max_bs (160), prefill and decode
// in separate steps unless --enable-mixed-chunk, and an overlap scheduler that hides most of its
// CPU work behind the GPU.
EngineProfile sglang() {
  EngineProfile p;
  p.name = "sglang";
  p.max_num_batched_tokens = 8192;
  p.max_num_seqs = 1024;
  p.block_size = 1;
  p.kv_sizing = KvSizing::static_fraction;
  p.memory_fraction = 0.88;
  p.mixed_batches = false;
  p.cuda_graph_max_batch = 160;
  p.step_overhead_s = 0.3e-3;
  p.sequence_overhead_s = 2e-6;
  return p;
}

// TensorRT-LLM's PyTorch and C++ runtimes (tensorrt_llm/llmapi: KvCacheConfig,
// SchedulerConfig, BuildConfig): max_num_tokens 8192, max_batch_size 2048 (bounded by the pool),
// 32-token KV blocks (tokens_per_block), free_gpu_memory_fraction 0.9, in-flight batching of
// context and generation requests, chunked context off by default, the GUARANTEED_NO_EVICT
// capacity policy (a request's whole KV reserved at admission), KV-cache block reuse on, CUDA
// graphs for generation steps, a C++ batch manager costing little per step.
EngineProfile trtllm() {
  EngineProfile p;
  p.name = "trtllm";
  p.max_num_batched_tokens = 8192;
  p.max_num_seqs = 2048;
  p.block_size = 32;
  p.kv_sizing = KvSizing::fraction_of_free;
  p.memory_fraction = 0.9;
  p.chunked_prefill = false;
  p.reserve_full_kv = true;
  p.cuda_graph_max_batch = 128;
  p.cuda_graph_sizes = {1, 2, 4, 8, 16, 32, 64, 128};  // its PyTorch backend's capture sizes
  p.step_overhead_s = 0.2e-3;
  p.sequence_overhead_s = 1e-6;
  return p;
}

struct Named {
  const char* name;
  EngineProfile (*make)();
};
constexpr Named kProfiles[] = {{"vllm", &vllm}, {"sglang", &sglang}, {"trtllm", &trtllm}};

// vLLM's default capture sizes: 1, 2, 4, then every multiple of 8 (CompilationConfig), up to
// `most`: the one a batch of `n` pads to.
std::int64_t default_size(std::int64_t n, std::int64_t most) {
  const std::int64_t padded = n <= 4 ? (n <= 1 ? 1 : n <= 2 ? 2 : 4) : (n + 7) / 8 * 8;
  return std::min(padded, most);
}

}  // namespace

std::optional<EngineProfile> engine_profile(const std::string& name, Diagnostics& d, const std::string& where) {
  for (const Named& n : kProfiles) {
    if (name == n.name) return n.make();
  }
  d.error(where, "engine", fmt::format("unknown engine \"{}\" (valid: {})", name, fmt::join(engine_profile_names(), ", ")));
  return std::nullopt;
}

std::vector<std::string> engine_profile_names() {
  std::vector<std::string> names;
  for (const Named& n : kProfiles) names.emplace_back(n.name);
  return names;
}

void check_engine_profile(const EngineProfile& p, Diagnostics& d, const std::string& where) {
  auto positive = [&](std::int64_t v, const char* key, std::int64_t most) {
    if (v < 1 || v > most) d.error(where, key, fmt::format("expected 1 to {}, got {}", most, v));
  };
  positive(p.max_num_batched_tokens, "max_num_batched_tokens", 1 << 24);
  positive(p.max_num_seqs, "max_num_seqs", 1 << 20);
  positive(p.block_size, "block_size", 1 << 16);
  if (!(p.memory_fraction > 0) || p.memory_fraction > 1) {
    d.error(where, "memory_fraction", fmt::format("expected a fraction in (0, 1], got {}", p.memory_fraction));
  }
  if (p.cuda_graph_max_batch < 0 || p.cuda_graph_max_batch > (1 << 16)) {
    d.error(where, "cuda_graph_max_batch",
            fmt::format("expected 0 (no graphs) to {} sequences, got {}", 1 << 16, p.cuda_graph_max_batch));
  }
  if (p.speculative_tokens < 0 || p.speculative_tokens > 15) {
    d.error(where, "speculative_tokens", fmt::format("expected 0 (off) to 15 proposed tokens, got {}", p.speculative_tokens));
  }
  if (!(p.acceptance_rate >= 0) || p.acceptance_rate > 1) {
    d.error(where, "acceptance_rate", fmt::format("expected a probability in [0, 1], got {}", p.acceptance_rate));
  }
  for (double v : {p.step_overhead_s, p.sequence_overhead_s, p.piecewise_layer_overhead_s, p.ngram_overhead_s}) {
    if (!(v >= 0) || v > 1) {
      d.error(where, "step_overhead", fmt::format("expected a CPU time per step of 0 to 1 s, got {}", v));
      break;
    }
  }
  for (std::size_t i = 0; i < p.cuda_graph_sizes.size(); ++i) {
    if (p.cuda_graph_sizes[i] < 1 || (i > 0 && p.cuda_graph_sizes[i] <= p.cuda_graph_sizes[i - 1])) {
      d.error(where, "cuda_graph_sizes", "expected increasing positive batch sizes");
      break;
    }
  }
}

std::int64_t cuda_graph_size(const EngineProfile& p, std::int64_t sequences) {
  if (p.cuda_graph_max_batch <= 0 || sequences > p.cuda_graph_max_batch) return 0;
  if (p.cuda_graph_sizes.empty()) return default_size(sequences, p.cuda_graph_max_batch);
  const auto it = std::lower_bound(p.cuda_graph_sizes.begin(), p.cuda_graph_sizes.end(), sequences);
  return it == p.cuda_graph_sizes.end() || *it > p.cuda_graph_max_batch ? 0 : *it;
}

}  // namespace syntorch::session::serving
