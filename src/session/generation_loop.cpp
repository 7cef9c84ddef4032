#include "syntorch/session/generation_loop.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "syntorch/models/causal_lm.hpp"
#include "syntorch/parallel/distributed.hpp"
#include "syntorch/torch/cuda.hpp"
#include "syntorch/torch/ops.hpp"
#include "syntorch/torch/utils.hpp"

namespace syntorch::session {

using models::KVCache;

void generate(const models::Model& built_from, const GenerateOptions& o) {
  if (o.batch < 1 || o.input_tokens < 1 || o.output_tokens < 1) {
    throw std::invalid_argument("generate: batch, input tokens and output tokens must be at least 1");
  }
  if (o.micro_batches > 0 && o.batch % o.micro_batches != 0) {
    throw std::invalid_argument(fmt::format("generate: {} micro-batches do not split a batch of {} evenly",
                                            o.micro_batches, o.batch));
  }
  models::BuildOptions build;
  build.expert_skew = o.expert_skew;
  const std::shared_ptr<models::CausalLM> share = built_from.build(build);
  models::CausalLM& model = *share;
  // Inference: nothing records a backward (torch.inference_mode), so no activation is kept.
  torch::NoGradGuard no_grad;
  const parallel::ParallelState& st = parallel::state();
  // By default one micro-batch per stage, or the most up to that which splits the batch.
  std::int64_t micro = o.micro_batches > 0 ? o.micro_batches : std::min<std::int64_t>(st.pp_size, o.batch);
  while (o.batch % micro != 0) --micro;
  const std::int64_t mb = o.batch / micro;
  const std::int64_t max_seq = o.input_tokens + o.output_tokens - 1;
  std::vector<KVCache> caches = [&] {
    torch::DefaultDtypeGuard kv_dtype(o.kv_cache_dtype ? torch::from_runtime_dtype(*o.kv_cache_dtype)
                                                       : torch::get_default_dtype());
    return model.make_kv_cache(o.batch, max_seq);
  }();
  // Each micro-batch's rows of every cache (views).
  std::vector<std::vector<KVCache>> rows(static_cast<std::size_t>(micro));
  for (std::int64_t m = 0; m < micro; ++m) {
    for (KVCache& kv : caches) {
      rows[m].push_back(micro == 1 ? kv : KVCache{kv.keys.narrow(0, m * mb, mb), kv.values.narrow(0, m * mb, mb)});
    }
  }
  std::vector<torch::Tensor> tokens(static_cast<std::size_t>(micro));
  if (st.is_first_stage()) {
    for (auto& t : tokens) {
      // Pinned, copied without a host wait.
      t = torch::empty({mb, o.input_tokens}, torch::TensorOptions(torch::kInt64).device(torch::kCPU).pinned_memory(true))
              .to(torch::kCUDA, /*non_blocking=*/true);
    }
  }
  // Prefill groups: sequences of a micro-batch whose prompts fit max_num_tokens together.
  const std::int64_t group = o.max_num_tokens > 0 ? std::clamp<std::int64_t>(o.max_num_tokens / o.input_tokens, 1, mb)
                                                  : mb;
  for (std::int64_t step = 0; step < o.output_tokens; ++step) {
    const bool prefill = step == 0;
    const std::int64_t s = prefill ? o.input_tokens : 1;
    const std::int64_t past = prefill ? 0 : o.input_tokens + step - 1;
    torch::RecordScope scope(prefill ? "prefill" : "decode");
    torch::cuda::CUDAGraph graph;
    if (o.graph && !prefill) graph.capture_begin();
    for (std::int64_t m = 0; m < micro; ++m) {
      if (st.is_first_stage() && !prefill && st.pp_size > 1) {
        // This micro-batch's tokens from the last stage (a receive that only the work after it
        // waits for).
        tokens[m] = torch::empty({mb, 1}, torch::kInt64);
        parallel::recv(tokens[m], st.prev_stage_rank());
      }
      // The micro-batch in one forward, or its prefill in groups of sequences.
      const std::int64_t rows_per_forward = prefill ? group : mb;
      std::vector<torch::Tensor> nexts;
      for (std::int64_t first = 0; first < mb; first += rows_per_forward) {
        const std::int64_t n = std::min(rows_per_forward, mb - first);
        std::vector<KVCache> part;  // the group's rows of the caches, when it is not the whole micro-batch
        if (n < mb) {
          for (const KVCache& kv : rows[m]) part.push_back({kv.keys.narrow(0, first, n), kv.values.narrow(0, first, n)});
        }
        torch::Tensor x;
        if (st.is_first_stage()) {
          x = model.embed(n < mb ? tokens[m].narrow(0, first, n) : tokens[m], past);
        } else {
          x = torch::empty({n, s, model.hidden_size()}, torch::get_default_dtype());
          parallel::recv(x, st.prev_stage_rank());
        }
        x = model.blocks(x, n < mb ? part : rows[m], past);
        if (st.is_last_stage()) {
          nexts.push_back(model.next_token(x));
        } else {
          parallel::send(x, st.next_stage_rank());
        }
      }
      if (st.is_last_stage()) {
        torch::Tensor next = nexts.size() == 1 ? nexts.front() : torch::cat(nexts, 0);
        if (st.pp_size == 1) {
          tokens[m] = next;
        } else if (step + 1 < o.output_tokens) {
          parallel::send(next, st.next_stage_rank());  // to the first stage, for the next step
        }
      }
    }
    if (o.graph && !prefill) {
      graph.capture_end();
      graph.replay();  // a step's shapes are its own (the KV length grows): captured once, run once
    }
    // The sampled tokens are on the host (the last stage reads them); the other stages' hosts go
    // on launching, their streams waiting for what they receive.
    if (st.is_last_stage()) torch::cuda::synchronize();
  }
  torch::cuda::synchronize();  // every rank: generation is done
}

}  // namespace syntorch::session
