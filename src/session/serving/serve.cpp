#include "syntorch/session/serving/serve.hpp"

#include <fmt/format.h>

#include <cmath>
#include <deque>
#include <unordered_map>
#include <limits>
#include <stdexcept>

#include "request_tracks.hpp"
#include "step_reuse.hpp"
#include "syntorch/models/causal_lm.hpp"
#include "syntorch/parallel/distributed.hpp"
#include "syntorch/runtime/rank_context.hpp"
#include "syntorch/session/serving/router.hpp"
#include "syntorch/session/serving/scheduler.hpp"
#include "syntorch/session/simulate.hpp"
#include "syntorch/torch/clock.hpp"
#include "syntorch/torch/cuda.hpp"
#include "syntorch/torch/float8.hpp"
#include "syntorch/torch/ops.hpp"
#include "syntorch/torch/utils.hpp"

namespace syntorch::session::serving {

std::optional<EngineProfile> resolved_engine(const ServeSpec& s, Diagnostics& d, const std::string& where) {
  std::optional<EngineProfile> p = engine_profile(s.engine, d, where);
  if (!p) return p;
  if (s.max_num_batched_tokens) p->max_num_batched_tokens = *s.max_num_batched_tokens;
  if (s.max_num_seqs) p->max_num_seqs = *s.max_num_seqs;
  if (s.block_size) p->block_size = *s.block_size;
  if (s.cuda_graph_max_batch) p->cuda_graph_max_batch = *s.cuda_graph_max_batch;
  if (s.memory_fraction) p->memory_fraction = *s.memory_fraction;
  if (s.prefix_caching) p->prefix_caching = *s.prefix_caching;
  if (s.chunked_prefill) p->chunked_prefill = *s.chunked_prefill;
  if (s.speculative_tokens) p->speculative_tokens = *s.speculative_tokens;
  if (s.acceptance_rate) p->acceptance_rate = *s.acceptance_rate;
  check_engine_profile(*p, d, where);
  return p;
}

namespace {

// The RunSpec a serving spec's model checks are made on: its layout, the longest request.
RunSpec layout_of(const ServeSpec& s, std::int64_t longest) {
  RunSpec r;
  r.model = s.model;
  r.tp = s.tp;
  r.dtype = s.dtype;
  r.kv_dtype = s.kv_dtype;
  r.input_tokens = std::max<std::int64_t>(1, longest - 1);
  r.output_tokens = 1;
  r.mirror_ranks = true;
  return r;
}

std::int64_t longest_request(const std::vector<Request>& requests) {
  std::int64_t most = 1;
  for (const Request& r : requests) most = std::max(most, r.input_tokens + r.output_tokens);
  return most;
}


// The engine's start-up refused: no KV pool that holds the longest request.
struct NoKvRoom {
  std::string why;
};

// What the serving program leaves for the report.
struct Outcome {
  std::optional<NoKvRoom> refused;
  std::int64_t kv_blocks = 0;
  double kv_pool_bytes = 0, weights_bytes = 0, activation_peak_bytes = 0;
  double start_s = 0;
  std::vector<Sequence> sequences;
  std::vector<StepSample> steps;
};

// What one engine of a deployment does: serve whole requests, or (disaggregated) only their
// prompts, handing each over with its first token, or only their decoding, pulling each handed-
// over prompt's keys and values from the prefill engine's devices first.
struct EngineRole {
  enum class Kind : std::uint8_t { whole, prefill, decode } kind = Kind::whole;
  int index = 0;               // within its pool (its router's replica index)
  int engine = 0;              // within the deployment: the whole or decode engines, then prefill
  Router* router = nullptr;    // what it takes requests from (none: the traffic itself)
  Router* handoffs = nullptr;  // a prefill engine's: where it hands requests over
  Router* arrivals = nullptr;  // a decode engine's: where the requests it gets handed first went
  int first_prefill = 0;       // the deployment's first prefill engine (engines are tp ranks apart)
};

// A prefill engine's program tells the hand-over router it has ended, however it ends, so the
// decode engines stop waiting for what it will never hand over.
struct CloseOnExit {
  Router* router;
  ~CloseOnExit() {
    if (router) router->close_source();
  }
};

// How often an idle decode engine looks for handed-over requests (they come when a prefill ends,
// which nothing tells it in advance).
constexpr double kIdlePollS = 100e-6;

// A batch of `tokens` padded to a captured graph's `graph_size` tokens (none: 0): the padding
// slots run their tokens only, attending to the pool's null page. The tokens it then runs.
std::int64_t pad_to_graph(models::PackedBatch& batch, std::int64_t tokens, std::int64_t graph_size) {
  if (graph_size <= tokens) return tokens;
  batch.query_lens.push_back(graph_size - tokens);
  batch.context_lens.push_back(graph_size - tokens);
  return graph_size;
}

// One engine's loop, on its first rank (its other tensor-parallel ranks mirror it). With a
// router, it takes the requests routed to it as it goes, and reports its state at its step
// boundaries.
void serving_program(const hw::Machine& machine, const runtime::KernelPolicy& policy, const ServeSpec& spec,
                     const EngineProfile& engine, const std::vector<Request>& requests, const EngineRole& role,
                     Outcome& out) {
  Router* const router = role.router;
  const int replica = role.index;
  const CloseOnExit close_on_exit{role.kind == EngineRole::Kind::prefill ? role.handoffs : nullptr};
  torch::DefaultDtypeGuard dtype_guard(torch::from_runtime_dtype(activation_dtype(spec.dtype)));
  std::optional<torch::fp8::ModelInitGuard> fp8_weights;
  std::optional<torch::fp8::AutocastGuard> fp8_gemms;
  if (spec.dtype == DType::fp8) {
    fp8_weights.emplace();
    fp8_gemms.emplace();
  }
  parallel::initialize_model_parallel(spec.tp, 1, 1);
  const std::shared_ptr<models::CausalLM> share = spec.model->build(models::BuildOptions{});
  models::CausalLM& model = *share;
  torch::NoGradGuard no_grad;
  RunSpec kv_spec;
  kv_spec.dtype = spec.dtype;
  kv_spec.kv_dtype = spec.kv_dtype;
  const DType kv_dtype = kv_cache_dtype(kv_spec);
  const torch::ScalarType kv_type = torch::from_runtime_dtype(kv_dtype);
  const double per_token = model.kv_bytes_per_token(runtime::element_bytes(kv_dtype));
  const std::int64_t bs = engine.block_size;

  // A draft model proposes the speculative tokens (speculative decoding with a draft model): it
  // shares the devices, the tensor parallelism and the KV pool's pages (each page holds both
  // models' keys and values of its tokens).
  std::shared_ptr<models::CausalLM> draft;
  if (spec.draft_model) draft = spec.draft_model->build(models::BuildOptions{});
  out.weights_bytes = static_cast<double>(torch::cuda::memory_allocated());
  const double draft_per_token = draft ? draft->kv_bytes_per_token(runtime::element_bytes(kv_dtype)) : 0.0;
  const double pool_per_token = per_token + draft_per_token;  // what a token takes of the pool, a device

  // A forward of `lm` over a packed batch on `caches`: the target's sampled tokens come to the
  // host; the draft's stay on the device for its next pass (the host waits for them all the same).
  auto step = [&](models::CausalLM& lm, std::vector<models::PagedKVCache>& caches, const models::PackedBatch& batch,
                  std::int64_t tokens, std::int64_t sampling, bool graph, bool to_host = true) {
    // The batch's token ids, from pinned memory without a host wait (as vLLM's input preparation).
    torch::Tensor ids = torch::empty({1, tokens}, torch::TensorOptions(torch::kInt64).device(torch::kCPU).pinned_memory(true))
                            .to(torch::kCUDA, /*non_blocking=*/true);
    torch::cuda::CUDAGraph g;
    if (graph) g.capture_begin();
    torch::Tensor x = lm.embed(ids, 0);
    x = lm.blocks_packed(x, caches, batch);
    torch::Tensor next = lm.sample_packed(x, sampling);
    if (graph) {
      g.capture_end();
      g.replay();
    }
    if (to_host) torch::Tensor host = next.to(torch::kCPU);
    torch::cuda::synchronize();
  };

  // Start-up, as vLLM's profile_run: a forward over a full step's tokens (one dummy sequence per
  // max_num_seqs, as many as the budget holds) measures the activations' peak.
  {
    torch::RecordScope scope("profile run");
    const std::int64_t tokens = engine.max_num_batched_tokens;
    const std::int64_t seqs = std::min(engine.max_num_seqs, tokens);
    models::PackedBatch batch;
    for (std::int64_t i = 0; i < seqs; ++i) {
      const std::int64_t n = tokens / seqs + (i < tokens % seqs ? 1 : 0);
      batch.query_lens.push_back(n);
      batch.context_lens.push_back(n);
    }
    std::int64_t pages = 0;
    for (std::int64_t n : batch.context_lens) pages += (n + bs - 1) / bs;
    std::vector<models::PagedKVCache> caches;
    {
      torch::DefaultDtypeGuard g(kv_type);
      caches = model.make_paged_kv_cache(pages, bs);
    }
    const double profile_pool = static_cast<double>(pages * bs) * per_token;
    step(model, caches, batch, tokens, seqs, false);
    out.activation_peak_bytes = static_cast<double>(torch::cuda::max_memory_allocated()) - out.weights_bytes - profile_pool;
  }
  torch::cuda::empty_cache();
  const double total = static_cast<double>(torch::cuda::mem_get_info().second);
  const double used = out.weights_bytes + out.activation_peak_bytes;
  double budget = 0;
  switch (engine.kv_sizing) {
    case KvSizing::utilization_of_total: budget = engine.memory_fraction * total - used; break;
    case KvSizing::fraction_of_free: budget = engine.memory_fraction * (total - used); break;
    case KvSizing::static_fraction: budget = engine.memory_fraction * total - out.weights_bytes; break;
  }
  const std::int64_t pages =
      budget > 0 ? static_cast<std::int64_t>(budget / (static_cast<double>(bs) * pool_per_token)) - 1 : 0;
  const std::int64_t longest = longest_request(requests);
  if (pages * bs < longest) {
    out.refused = NoKvRoom{fmt::format(
        "the KV pool left after {:.2f} GB of weights and {:.2f} GB of activations ({} of {:.1f} GB under {} {}) holds {} "
        "tokens, fewer than the longest request's {}",
        out.weights_bytes / 1e9, out.activation_peak_bytes / 1e9, engine.memory_fraction, total / 1e9, engine.name,
        engine.kv_sizing == KvSizing::utilization_of_total ? "gpu_memory_utilization"
        : engine.kv_sizing == KvSizing::fraction_of_free   ? "free_gpu_memory_fraction"
                                                           : "mem_fraction_static",
        pages * bs, longest)};
    return;
  }
  out.kv_blocks = pages;
  out.kv_pool_bytes = static_cast<double>(pages * bs) * pool_per_token;
  std::vector<models::PagedKVCache> caches, draft_caches;
  {
    // One more page than the scheduler hands out: the null page padding slots point to (vLLM's).
    torch::DefaultDtypeGuard g(kv_type);
    caches = model.make_paged_kv_cache(pages + 1, bs);
    if (draft) draft_caches = draft->make_paged_kv_cache(pages + 1, bs);
  }
  const double layers = static_cast<double>(caches.size());

  std::optional<StepReuse> reuse, draft_reuse;
  if (spec.reuse_steps) {
    reuse.emplace(machine, policy, model.attention_shape(), activation_dtype(spec.dtype), kv_dtype, bs);
    if (draft) draft_reuse.emplace(machine, policy, draft->attention_shape(), activation_dtype(spec.dtype), kv_dtype, bs);
  }
  // A forward as a step runs it, or (a shape simulated before) that step's rest and its own
  // attention (StepReuse). Every forward takes a graph: a full one replayed, else captured pieces
  // launched one by one (their host time counted apart), so kernels cost no dispatch of their own.
  // True when reused.
  const auto forward = [&](models::CausalLM& lm, std::vector<models::PagedKVCache>& kv, std::optional<StepReuse>& r,
                           const models::PackedBatch& b, std::int64_t tokens, std::int64_t sampling, bool graph,
                           bool to_host) {
    if (!r) {
      step(lm, kv, b, tokens, sampling, true, to_host);
      return false;
    }
    const double begin = torch::clock::now_s();
    const StepKey key{tokens, sampling, graph};
    const double attention = r->attention_s(b);
    if (const std::optional<double> rest = r->rest_s(key)) {
      torch::clock::sleep_s(std::max(0.0, *rest + attention));
      return true;
    }
    step(lm, kv, b, tokens, sampling, true, to_host);
    r->learn(key, torch::clock::now_s() - begin, attention);
    return false;
  };
  // The draft's passes before a step verifies its proposals: the first over the step's own
  // tokens (each decoding sequence's last token, each prompt chunk: the draft keeps its own keys
  // and values of them), proposing a token for each speculating sequence; then one pass per
  // further proposal, a token for each sequence still proposing. Decode-only passes replay
  // graphs, padded as the target's are.
  models::PackedBatch draft_batch;
  const auto draft_passes = [&](const StepPlan& plan) {
    std::int64_t passes = 0;
    for (const ScheduledSequence& x : plan.sequences) passes = std::max(passes, x.proposed);
    for (std::int64_t j = 0; j < std::max<std::int64_t>(passes, 1); ++j) {
      draft_batch.query_lens.clear();
      draft_batch.context_lens.clear();
      std::int64_t tokens = 0, rows = 0;
      for (const ScheduledSequence& x : plan.sequences) {
        if (j > 0 && x.proposed <= j) continue;
        const std::int64_t q = j == 0 ? x.new_tokens - x.proposed : 1;
        draft_batch.query_lens.push_back(q);
        draft_batch.context_lens.push_back(x.context - x.proposed + j);
        tokens += q;
        rows += x.proposed > j ? 1 : 0;
      }
      const bool decode_only = j > 0 || plan.decode_only();
      const std::int64_t graph_size = decode_only ? cuda_graph_size(engine, tokens) : 0;
      tokens = pad_to_graph(draft_batch, tokens, graph_size);
      forward(*draft, draft_caches, draft_reuse, draft_batch, tokens, std::max<std::int64_t>(rows, 1), graph_size > 0,
              false);
    }
  };
  Scheduler scheduler(engine, pages, router ? std::vector<Request>{} : requests, spec.traffic.seed);
  const double start = torch::clock::now_s();
  out.start_s = start;
  models::PackedBatch batch;
  std::int64_t steps = 0;
  const auto report = [&](double time_s) {
    router->publish(replica, time_s, ReplicaState{scheduler.finished(), scheduler.pool().used_blocks()});
  };
  // A prefill engine serves each prompt and its first token; the request as it came is what it
  // hands over (by its sequence's index).
  std::vector<Request> taken;
  // A decode engine's pulls of handed-over prompts' keys and values, on a stream of their own, in
  // the order issued (so they end in that order).
  runtime::RankContext* const ctx = runtime::current_rank();
  std::uint32_t transfer_stream = 0;
  struct Pull {
    Request request;
    std::uint64_t event;
  };
  std::deque<Pull> pulls;
  std::vector<Request> landed;  // pulls seen landed since the last clock read
  if (role.kind == EngineRole::Kind::decode) transfer_stream = ctx->new_stream();
  const auto take = [&](double now) {
    for (Request q : router->take(replica, now)) {
      if (role.kind == EngineRole::Kind::prefill) {
        taken.push_back(q);
        q.output_tokens = 1;
        scheduler.submit(q);
      } else if (role.kind == EngineRole::Kind::decode && q.output_tokens > 1) {
        const std::uint32_t compute_stream = ctx->current_stream();
        ctx->set_stream(transfer_stream);
        ctx->copy_from_peer(q.prefilled_on,
                            static_cast<std::uint64_t>(
                                std::llround(static_cast<double>(q.input_tokens) * pool_per_token)),
                            "kv transfer");
        const std::uint64_t event = ctx->record_event(transfer_stream);
        ctx->set_stream(compute_stream);
        pulls.push_back({q, event});
      } else {
        scheduler.submit(q);
      }
    }
    // Pulls that have landed: their requests join, prompts computed (their prefill engines told
    // once the clock has been read again).
    while (!pulls.empty() && std::isfinite(ctx->event_time_s(pulls.front().event))) {
      scheduler.submit(pulls.front().request);
      landed.push_back(pulls.front().request);
      pulls.pop_front();
    }
  };
  // A prefill engine's held pages, by request: freed once the decode engine has pulled them.
  std::unordered_map<std::int64_t, std::int32_t> held;
  if (role.kind == EngineRole::Kind::prefill) scheduler.hold_finished_pages(true);
  while (true) {
    double now = torch::clock::now_s() - start;
    if (router) take(now);
    // A decode engine's pulls and their queries took host time: what it reports comes from a
    // clock read again, right before (every report must be in place before its date passes).
    if (role.kind == EngineRole::Kind::decode) {
      now = torch::clock::now_s() - start;
      for (const Request& q : landed) {
        router->pulled(now, q.prefilled_on / spec.tp - role.first_prefill, q.id);
      }
      landed.clear();
    }
    if (role.kind == EngineRole::Kind::prefill) {
      for (const std::int64_t id : role.handoffs->take_pulled(replica, now)) {
        if (const auto it = held.find(id); it != held.end()) {
          scheduler.release_pages(it->second);
          held.erase(it);
        }
      }
    }
    scheduler.arrive_until(now);
    if (!scheduler.has_work()) {
      if (router ? router->drained(replica) && pulls.empty() : scheduler.done()) break;
      if (!pulls.empty()) {
        ctx->synchronize_event(pulls.front().event);  // idle until the next pull lands
      } else if (role.kind == EngineRole::Kind::decode) {
        // Hand-overs come from requests in prefill: with none there, not before the next arrival.
        const double seen = now - Router::kStateLagS;
        const bool in_flight = role.arrivals->count_until(seen) > router->count_until(seen);
        const double next = role.arrivals->next_arrival_after(seen);
        if (in_flight || !std::isfinite(next) || next <= now + kIdlePollS) {
          torch::clock::sleep_s(kIdlePollS);
        } else {
          torch::clock::sleep_until_s(start + next);
        }
      } else {
        // Idle until the next arrival (with a router, the next anywhere: it may come here).
        torch::clock::sleep_until_s(start + (router ? router->next_arrival_after(now) : scheduler.next_arrival_s()));
      }
      continue;
    }
    const StepPlan& plan = scheduler.schedule(now);
    if (router) report(now);
    if (plan.sequences.empty() && !held.empty()) {
      // A prefill engine whose pool is held for pulls: nothing fits until one is freed.
      torch::clock::sleep_s(kIdlePollS);
      continue;
    }
    if (plan.sequences.empty()) {
      throw std::logic_error(fmt::format("serve: the scheduler found nothing to run with {} requests waiting",
                                         scheduler.waiting()));
    }
    const std::int64_t seqs = static_cast<std::int64_t>(plan.sequences.size());
    // Decode-only steps replay a graph of the next capture size, the batch padded to it.
    // (Graphs are captured by token count: a speculating batch's verified positions included.)
    const std::int64_t graph_size = plan.decode_only() ? cuda_graph_size(engine, plan.tokens) : 0;
    std::int64_t proposing = 0;
    for (const ScheduledSequence& x : plan.sequences) proposing += x.proposed > 0 ? 1 : 0;
    const double cpu_s = engine.step_overhead_s + engine.sequence_overhead_s * static_cast<double>(seqs) +
                         (draft ? 0.0 : engine.ngram_overhead_s * static_cast<double>(proposing));
    torch::RecordScope scope(fmt::format("step {}", steps++));
    torch::clock::sleep_s(cpu_s);
    batch.query_lens.clear();
    batch.context_lens.clear();
    for (const ScheduledSequence& x : plan.sequences) {
      batch.query_lens.push_back(x.new_tokens);
      batch.context_lens.push_back(x.context);
    }
    // Logits for every scheduled sequence's last token, as the engines gather them (a partial
    // prefill's is dropped).
    const std::int64_t tokens = pad_to_graph(batch, plan.tokens, graph_size);
    const std::int64_t sampling = plan.logit_rows;
    const double forward_begin = torch::clock::now_s();
    if (draft) draft_passes(plan);
    const bool reused = forward(model, caches, reuse, batch, tokens, sampling, graph_size > 0, true);
    // A step no full graph serves launches its pieces one by one (vLLM v1: the attention between
    // graph pieces, from Python): hidden behind the GPU where the forward takes longer than the
    // launches, the rest adds to the step.
    if (graph_size == 0) {
      const double launches_s = engine.piecewise_layer_overhead_s * layers;
      const double forward_s = torch::clock::now_s() - forward_begin;
      if (launches_s > forward_s) torch::clock::sleep_s(launches_s - forward_s);
    }
    const double done = torch::clock::now_s() - start;
    scheduler.complete(done);
    if (router) report(done);
    if (role.kind == EngineRole::Kind::prefill) {
      for (const std::int32_t i : scheduler.finished_in_step()) {
        Request q = taken[static_cast<std::size_t>(i)];
        q.first_token_s = done;
        q.prefilled_on = ctx->rank();
        role.handoffs->submit(done, q);
        // Its pages wait for the decode engine's pull (none comes for a request already done).
        if (q.output_tokens > 1) {
          held.emplace(q.id, i);
        } else {
          scheduler.release_pages(i);
        }
      }
    }
    StepSample sample;
    sample.replica = static_cast<std::int16_t>(role.engine);
    sample.time_s = done;
    sample.sequences = static_cast<std::int32_t>(seqs);
    sample.running = static_cast<std::int32_t>(scheduler.running());
    sample.tokens = static_cast<std::int32_t>(plan.tokens);
    sample.prefill_tokens = static_cast<std::int32_t>(plan.prefill_tokens);
    sample.waiting = static_cast<std::int32_t>(scheduler.waiting());
    sample.preempted = static_cast<std::int32_t>(plan.preempted);
    sample.kv_used = static_cast<float>(static_cast<double>(scheduler.pool().used_blocks()) / static_cast<double>(pages));
    sample.reused = reused;
    out.steps.push_back(sample);
  }
  out.sequences = scheduler.sequences();
  for (Sequence& q : out.sequences) q.replica = role.engine;
  if (role.kind == EngineRole::Kind::prefill) {
    for (std::size_t i = 0; i < out.sequences.size(); ++i) out.sequences[i].request = taken[i];
  }
}

// A decode engine's sequence with its prefill engine's stays in front: admitted and preempted
// there, then handed over with its first token (handed_over_s) until admitted here.
void merge_prefill(Sequence& q, const Sequence& prefill) {
  std::vector<double> admitted = prefill.admitted_s, preempted = prefill.preempted_s;
  preempted.push_back(q.first_token_s);
  admitted.insert(admitted.end(), q.admitted_s.begin(), q.admitted_s.end());
  preempted.insert(preempted.end(), q.preempted_s.begin(), q.preempted_s.end());
  q.admitted_s = std::move(admitted);
  q.preempted_s = std::move(preempted);
  q.handed_over_s = q.first_token_s;
  q.preemptions += prefill.preemptions;
  q.prefix_hit_tokens += prefill.prefix_hit_tokens;
}

}  // namespace

namespace {
// validate_serve, leaving the requests it made in `made` (serve runs them, rather than reading a
// requests file again).
bool check_serve(const ServeSpec& s, const hw::Machine& machine, Diagnostics& d, const std::string& where,
                 std::vector<Request>& made) {
  const std::size_t before = d.size();
  check_traffic(s.traffic, d, where);
  const std::optional<EngineProfile> engine = resolved_engine(s, d, where);
  if (d.size() != before) return false;
  if (s.dtype == DType::fp32) {
    d.error(where, "dtype", "serving engines run fp16, bf16 or fp8 (their attention kernels have no fp32 form)");
    return false;
  }
  made = make_requests(s.traffic);
  const std::vector<Request>& requests = made;
  // Arrivals past about 11 days of simulated time (a rate far too low, or a trace's nanoseconds
  // read as milliseconds) are refused before the run, not part way through it.
  constexpr double kLatestArrivalS = 1e6;
  if (!requests.empty() && requests.back().arrival_s > kLatestArrivalS) {
    d.error(where, s.traffic.requests_file.empty() ? "rate" : "requests_file",
            fmt::format("the last request arrives {:.3g} s after the first; at most {:g} s are simulated (a rate or "
                        "time_scale that stretches the traffic too far, or a trace's times in another unit)",
                        requests.back().arrival_s, kLatestArrivalS));
  }
  // Without chunked prefill a prompt (or, where preemption recomputes them, a prompt and its
  // outputs) runs in one step: the step's budget must hold the longest.
  if (!engine->chunked_prefill) {
    std::int64_t longest = 0;
    for (const Request& r : requests) {
      longest = std::max(longest, engine->reserve_full_kv ? r.input_tokens : r.input_tokens + r.output_tokens - 1);
    }
    if (longest > engine->max_num_batched_tokens) {
      d.error(where, "max_num_batched_tokens",
              fmt::format("{} tokens a step cannot hold a request's {} without chunked prefill (engine {}): give "
                          "chunked_prefill true, or max_num_batched_tokens {} or more",
                          engine->max_num_batched_tokens, longest, engine->name, longest));
    }
  }
  if (d.size() != before) return false;
  const std::size_t devices = machine.devices().size();
  const std::size_t engines = static_cast<std::size_t>(s.replicas) + static_cast<std::size_t>(s.prefill_replicas);
  if (engines * static_cast<std::size_t>(s.tp) > devices) {
    d.error(where, "replicas",
            fmt::format("{} replicas{} of {} devices (tp {}) need {} devices; {} has {}", s.replicas,
                        s.prefill_replicas ? fmt::format(" and {} prefill replicas", s.prefill_replicas) : std::string(),
                        s.tp, s.tp, engines * static_cast<std::size_t>(s.tp), machine.name(), devices));
    return false;
  }
  if (s.draft_model && engine->speculative_tokens == 0) {
    d.error(where, "draft_model",
            fmt::format("a draft model proposes speculative tokens: give num_speculative_tokens 1 to 15 with it (engine "
                        "{} proposes none)", engine->name));
    return false;
  }
  // The model, its layout and dtypes as a generation run of the longest request checks them; a
  // draft model's the same way.
  if (!validate_run(layout_of(s, longest_request(requests)), machine, d, where)) return false;
  if (s.draft_model) {
    RunSpec draft = layout_of(s, longest_request(requests));
    draft.model = s.draft_model;
    if (!validate_run(draft, machine, d, where + ": draft_model")) return false;
  }
  return d.size() == before;
}
}  // namespace

bool validate_serve(const ServeSpec& s, const hw::Machine& machine, Diagnostics& d, const std::string& where) {
  std::vector<Request> made;
  return check_serve(s, machine, d, where, made);
}

ServeReport serve(const hw::Machine& machine, const runtime::KernelPolicy& policy, const ServeSpec& spec,
                  trace::Recorder* recorder, runtime::TraceLevel trace_level) {
  Diagnostics d;
  std::vector<Request> requests;
  if (!check_serve(spec, machine, d, "serve", requests)) throw InputError(std::move(d));
  const EngineProfile engine = *resolved_engine(spec, d, "serve");
  // Engine e runs on devices e*tp .. e*tp+tp-1, its first rank the engine's program and the others
  // mirroring it: the replicas (decode engines when disaggregated) first, then the prefill ones.
  const int replicas = spec.replicas, prefills = spec.prefill_replicas;
  const int engines = replicas + prefills;
  const int world = engines * spec.tp;
  runtime::EngineOptions options;
  options.recorder = recorder;
  options.trace_level = trace_level;
  options.framework = runtime::Framework::eager;
  options.mirror_of.resize(static_cast<std::size_t>(world));
  for (int r = 0; r < world; ++r) options.mirror_of[static_cast<std::size_t>(r)] = r - r % spec.tp;
  runtime::Engine sim(machine, policy, world, options);
  std::vector<Outcome> outs(static_cast<std::size_t>(engines));
  // Arrivals go to the prefill pool, or to the replicas when there are several; hand-overs to the
  // decode pool.
  std::optional<Router> arrivals, handoffs;
  if (prefills > 0) {
    arrivals.emplace(spec.router, requests, prefills, engine.block_size, spec.router_balance);
    handoffs.emplace(spec.router, requests.size(), prefills, replicas, engine.block_size, spec.router_balance);
  } else if (replicas > 1) {
    arrivals.emplace(spec.router, requests, replicas, engine.block_size, spec.router_balance);
  }
  ServeReport report;
  report.engine = sim.run([&](runtime::RankContext& ctx) {
    EngineRole role;
    role.engine = ctx.rank() / spec.tp;
    if (prefills == 0) {
      role.index = role.engine;
      role.router = arrivals ? &*arrivals : nullptr;
    } else if (role.engine < replicas) {
      role.kind = EngineRole::Kind::decode;
      role.index = role.engine;
      role.router = &*handoffs;
      role.arrivals = &*arrivals;
      role.first_prefill = replicas;
    } else {
      role.kind = EngineRole::Kind::prefill;
      role.index = role.engine - replicas;
      role.router = &*arrivals;
      role.handoffs = &*handoffs;
    }
    serving_program(machine, policy, spec, engine, requests, role, outs[static_cast<std::size_t>(role.engine)]);
  });
  const Outcome& first = outs.front();
  report.weights_bytes = first.weights_bytes;
  report.activation_peak_bytes = first.activation_peak_bytes;
  if (report.engine.oom) {
    report.oom = true;
    report.oom_reason = "a device ran out of memory";
    return report;
  }
  for (const Outcome& o : outs) {
    if (o.refused) {
      report.oom = true;
      report.oom_reason = o.refused->why;
      return report;
    }
  }
  for (const Outcome& o : outs) {
    if (o.start_s != first.start_s || o.kv_blocks != first.kv_blocks) {
      throw std::logic_error(fmt::format("serve: engines started at {} and {} s with {} and {} KV pages; identical "
                                         "engines must start together", first.start_s, o.start_s, first.kv_blocks,
                                         o.kv_blocks));
    }
  }
  report.kv_blocks = first.kv_blocks;
  report.kv_tokens = first.kv_blocks * engine.block_size;
  report.kv_pool_bytes = first.kv_pool_bytes;
  std::vector<Sequence> sequences;
  std::vector<StepSample> steps;
  for (int e = 0; e < engines; ++e) {
    const Outcome& o = outs[static_cast<std::size_t>(e)];
    ReplicaSummary summary;
    summary.role = prefills == 0 ? "replica" : e < replicas ? "decode" : "prefill";
    for (const Sequence& q : o.sequences) {
      ++summary.requests;
      summary.output_tokens += q.generated - (summary.role == "decode" ? 1 : 0);
      summary.preemptions += q.preemptions;
    }
    summary.steps = static_cast<std::int64_t>(o.steps.size());
    for (const StepSample& x : o.steps) summary.kv_used_peak = std::max(summary.kv_used_peak, static_cast<double>(x.kv_used));
    report.replicas.push_back(summary);
    // The whole requests: the replicas' (decode engines' when disaggregated, with their prefills'
    // stays in front).
    if (e < replicas) sequences.insert(sequences.end(), o.sequences.begin(), o.sequences.end());
    steps.insert(steps.end(), o.steps.begin(), o.steps.end());
  }
  std::sort(sequences.begin(), sequences.end(),
            [](const Sequence& a, const Sequence& b) { return a.request.id < b.request.id; });
  if (prefills > 0) {
    std::vector<const Sequence*> prefilled(requests.size(), nullptr);
    for (int e = replicas; e < engines; ++e) {
      for (const Sequence& q : outs[static_cast<std::size_t>(e)].sequences) {
        prefilled[static_cast<std::size_t>(q.request.id)] = &q;
      }
    }
    for (Sequence& q : sequences) merge_prefill(q, *prefilled[static_cast<std::size_t>(q.request.id)]);
  }
  // Steps in time order (an engine's own stay in order).
  std::stable_sort(steps.begin(), steps.end(), [](const StepSample& a, const StepSample& b) { return a.time_s < b.time_s; });
  report.metrics = compute_metrics(sequences, spec.slo);
  if (recorder != nullptr) {
    std::vector<std::string> names;
    for (const ReplicaSummary& x : report.replicas) names.push_back(fmt::format("{} {}", x.role, names.size()));
    record_request_tracks(*recorder, sequences, steps, first.start_s, engines > 1 ? names : std::vector<std::string>{});
  }
  report.steps = std::move(steps);
  return report;
}

}  // namespace syntorch::session::serving
