#pragma once
// A serving engine's scheduler, step by step, as vLLM's v1 scheduler decides (and, by the
// profile's switches, SGLang's and TensorRT-LLM's): each step has a token budget
// (max_num_batched_tokens); the running sequences go first, each its next decode token or the next
// chunk of its prompt, taking pages from the KV pool as they grow, the last admitted preempted
// (its pages freed, to be recomputed) when the pool runs dry; then, if none was preempted,
// waiting requests are admitted first come first served while the budget, max_num_seqs and the
// pool allow, their cached prefix pages taken instead of recomputed. A sequence samples a token
// when a step reaches the end of its tokens; it finishes at its output length. Pure bookkeeping:
// the caller runs each step's forward and says when it ended.

#include <cstdint>
#include <deque>
#include <limits>
#include <vector>

#include "syntorch/session/serving/engine_profile.hpp"
#include "syntorch/session/serving/kv_block_pool.hpp"
#include "syntorch/session/serving/requests.hpp"

namespace syntorch::session::serving {

// A request as the engine tracks it.
struct Sequence {
  Request request;
  std::int64_t computed = 0;   // tokens whose keys and values are in the pool
  std::int64_t generated = 0;  // output tokens sampled
  std::vector<std::int32_t> blocks;
  std::int64_t cached_blocks = 0;  // of its full pages, those given their content key
  std::int64_t prefix_hit_tokens = 0;  // prompt tokens found in the prefix cache (all admissions)
  std::int32_t preemptions = 0;
  std::int64_t decode_steps = 0;     // steps it decoded in (what its speculation draws are keyed by)
  std::int64_t proposed_tokens = 0;  // speculative tokens proposed for it, and accepted
  std::int64_t accepted_tokens = 0;
  double first_token_s = std::numeric_limits<double>::quiet_NaN();
  double last_token_s = std::numeric_limits<double>::quiet_NaN();
  double finish_s = std::numeric_limits<double>::quiet_NaN();
  std::vector<float> token_gaps_s;  // between consecutive output tokens (inter-token latency)
  // When it was admitted (again after each preemption) and preempted: preempted_s[i] ends the
  // stay that began at admitted_s[i].
  std::vector<double> admitted_s;
  std::vector<double> preempted_s;
  bool finished = false;
  std::int32_t replica = 0;  // the replica that served it (a deployment of several behind a router)
  // Handed over by a prefill engine with its first token: its prompt's keys and values are in
  // this engine's memory until it is first admitted (a preemption then recomputes them).
  bool kv_given = false;
  double handed_over_s = std::numeric_limits<double>::quiet_NaN();  // from its prefill engine (the report's)

  std::int64_t tokens() const { return request.input_tokens + generated; }
};

// One sequence's share of a step.
struct ScheduledSequence {
  std::int32_t sequence = 0;    // index into Scheduler::sequences()
  std::int64_t new_tokens = 0;  // this step's tokens of it
  std::int64_t context = 0;     // positions it attends to (cached and new)
  bool samples = false;         // the step reaches the end of its tokens
  std::int64_t proposed = 0;    // of its new tokens, speculative ones to verify
};

struct StepPlan {
  std::vector<ScheduledSequence> sequences;
  std::int64_t tokens = 0;          // new tokens of all sequences
  std::int64_t prefill_tokens = 0;  // of which prompt (or recomputed) tokens
  std::int64_t logit_rows = 0;      // rows the LM head computes: each sequence's last token, and
                                    // every verified position of a speculating one
  std::int64_t preempted = 0;       // sequences preempted to make room
  bool decode_only() const { return prefill_tokens == 0; }
};

class Scheduler {
 public:
  // `requests` in arrival order; `kv_blocks` pages of profile.block_size tokens; `seed` fixes which
  // speculative tokens are accepted.
  Scheduler(const EngineProfile& profile, std::int64_t kv_blocks, std::vector<Request> requests,
            std::uint64_t seed = 0);

  // A request for this engine after those it has (a router's, in arrival order). One handed over
  // by a prefill engine (Request::prefilled_on) comes with its first token and its prompt's keys
  // and values; if that was its only token it is finished at once.
  void submit(const Request& request);
  // Requests that have arrived by `time_s` join the waiting queue.
  void arrive_until(double time_s);
  // When the next request arrives (infinity when all have).
  double next_arrival_s() const;
  bool has_work() const { return !running_.empty() || !waiting_.empty(); }
  bool done() const { return finished_ == static_cast<std::int64_t>(sequences_.size()); }

  // The next step at `now_s`; empty when nothing can run (no work, or a request the pool can
  // never hold).
  const StepPlan& schedule(double now_s);
  // The step's forward ended at `time_s` (its sampled tokens on the host): the sequences advance,
  // sample, finish.
  void complete(double time_s);

  const std::vector<Sequence>& sequences() const { return sequences_; }
  const KvBlockPool& pool() const { return pool_; }
  std::int64_t running() const { return static_cast<std::int64_t>(running_.size()); }
  std::int64_t waiting() const { return static_cast<std::int64_t>(waiting_.size()); }
  std::uint64_t preemptions() const { return preemptions_; }
  std::int64_t finished() const { return finished_; }
  // The sequences the last completed step finished.
  const std::vector<std::int32_t>& finished_in_step() const { return finished_in_step_; }
  // A prefill engine's: finished sequences keep their pages (their keys and values wait to be
  // pulled) until released.
  void hold_finished_pages(bool hold) { hold_finished_ = hold; }
  void release_pages(std::int32_t sequence);

 private:
  std::int64_t blocks_for(std::int64_t tokens) const { return (tokens + profile_.block_size - 1) / profile_.block_size; }
  // The content key of a sequence's full page `block` (its prompt's shared prefix keyed by its
  // group, the rest by the request).
  std::uint64_t block_key(const Sequence& s, std::int64_t block) const;
  void add(std::int32_t seq, std::int64_t new_tokens, std::int64_t proposed);
  // Which running sequences a step takes: all, or (steps that do not mix) only those with prompt
  // tokens left, or only those decoding.
  enum class Phase : std::uint8_t { any, prefill, decode };
  void schedule_running(std::int64_t& budget, Phase phase);
  void admit_waiting(std::int64_t& budget);

  // Of `proposed` speculative tokens of sequence `s`, how many the target model accepts.
  std::int64_t accepted(const Sequence& s, std::int64_t proposed) const;

  EngineProfile profile_;
  std::uint64_t seed_;
  KvBlockPool pool_;
  std::vector<Sequence> sequences_;
  std::size_t arrived_ = 0;
  std::vector<std::int32_t> running_;  // admission order: the last is preempted first
  std::deque<std::int32_t> waiting_;   // first come first served; the preempted go back in front
  StepPlan plan_;
  double now_s_ = 0;  // the step being scheduled
  std::vector<std::uint64_t> keys_;  // scratch
  std::int64_t finished_ = 0;
  std::vector<std::int32_t> finished_in_step_;
  bool hold_finished_ = false;
  std::uint64_t preemptions_ = 0;
};

}  // namespace syntorch::session::serving
