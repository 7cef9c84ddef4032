#include "syntorch/session/serving/scheduler.hpp"

#include <algorithm>


namespace syntorch::session::serving {

Scheduler::Scheduler(const EngineProfile& profile, std::int64_t kv_blocks, std::vector<Request> requests,
                     std::uint64_t seed)
    : profile_(profile), seed_(seed), pool_(kv_blocks, profile.prefix_caching) {
  sequences_.reserve(requests.size());
  for (Request& r : requests) {
    Sequence s;
    s.request = r;
    sequences_.push_back(std::move(s));
  }
}

void Scheduler::submit(const Request& request) {
  Sequence s;
  s.request = request;
  if (request.prefilled_on >= 0) {
    s.generated = 1;
    s.first_token_s = s.last_token_s = request.first_token_s;
    s.kv_given = true;
    if (s.generated >= request.output_tokens) {
      s.finished = true;
      s.finish_s = request.first_token_s;
      s.kv_given = false;
      ++finished_;
    }
  }
  sequences_.push_back(std::move(s));
}

void Scheduler::release_pages(std::int32_t sequence) {
  Sequence& s = sequences_[static_cast<std::size_t>(sequence)];
  pool_.release(s.blocks);
}

void Scheduler::arrive_until(double time_s) {
  while (arrived_ < sequences_.size() && sequences_[arrived_].request.arrival_s <= time_s) {
    if (!sequences_[arrived_].finished) waiting_.push_back(static_cast<std::int32_t>(arrived_));
    ++arrived_;
  }
}

double Scheduler::next_arrival_s() const {
  return arrived_ < sequences_.size() ? sequences_[arrived_].request.arrival_s : std::numeric_limits<double>::infinity();
}

std::uint64_t Scheduler::block_key(const Sequence& s, std::int64_t block) const {
  // A distinct 64-bit value per (shared prefix or request, page), then a bijective mix (SplitMix64's
  // finaliser): distinct pages never share a key. Requests and groups stay below 2^24, pages
  // below 2^32 (check_traffic bounds them).
  const Request& r = s.request;
  const bool shared = r.prefix_group >= 0 && (block + 1) * profile_.block_size <= r.shared_prefix_tokens;
  std::uint64_t z = (shared ? 1ULL << 62 : 0) | (static_cast<std::uint64_t>(shared ? r.prefix_group : r.id) << 32) |
                    static_cast<std::uint64_t>(block);
  z += 1;  // never 0, which means "no key"
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

void Scheduler::add(std::int32_t seq, std::int64_t new_tokens, std::int64_t proposed) {
  Sequence& s = sequences_[static_cast<std::size_t>(seq)];
  // The pages this step fills become findable now, as vLLM's allocate_slots caches them: a request
  // admitted later in the same step takes them (the step writes a layer's keys and values before
  // its attention reads them).
  const std::int64_t full =
      std::min<std::int64_t>((s.computed + new_tokens) / profile_.block_size, static_cast<std::int64_t>(s.blocks.size()));
  for (std::int64_t b = s.cached_blocks; b < full; ++b) pool_.cache(s.blocks[static_cast<std::size_t>(b)], block_key(s, b));
  s.cached_blocks = std::max(s.cached_blocks, full);
  ScheduledSequence x;
  x.sequence = seq;
  x.new_tokens = new_tokens;
  x.context = s.computed + new_tokens;
  x.proposed = proposed;
  x.samples = x.context == s.tokens() + proposed;
  plan_.sequences.push_back(x);
  plan_.logit_rows += 1 + proposed;
  plan_.tokens += new_tokens;
  // A sequence's tokens past its first output are decode tokens; before, prompt (or recomputed).
  const bool decode = new_tokens == 1 + proposed && s.computed >= s.request.input_tokens;
  if (!decode) plan_.prefill_tokens += new_tokens;
}

void Scheduler::schedule_running(std::int64_t& budget, Phase phase) {
  for (std::size_t i = 0; i < running_.size() && budget > 0;) {
    const std::int32_t id = running_[i];
    Sequence& s = sequences_[static_cast<std::size_t>(id)];
    const std::int64_t want = s.tokens() - s.computed;
    const bool decoding = want == 1 && s.computed >= s.request.input_tokens;
    if ((phase == Phase::prefill && decoding) || (phase == Phase::decode && !decoding) ||
        (!profile_.chunked_prefill && want > budget)) {
      ++i;
      continue;
    }
    // A decoding sequence verifies its own token and what it proposes, short of its output's end.
    const std::int64_t proposed =
        decoding ? std::clamp<std::int64_t>(std::min(profile_.speculative_tokens,
                                                     s.request.output_tokens - s.generated - 1),
                                            0, std::max<std::int64_t>(budget - 1, 0))
                 : 0;
    const std::int64_t n = decoding ? 1 + proposed : std::min(want, budget);
    bool scheduled = true;
    while (!pool_.allocate(s.blocks, blocks_for(s.computed + n), {})) {
      // The last admitted sequence gives its pages back, to be recomputed later.
      const std::int32_t victim = running_.back();
      running_.pop_back();
      Sequence& v = sequences_[static_cast<std::size_t>(victim)];
      pool_.release(v.blocks);
      v.computed = 0;
      v.cached_blocks = 0;
      v.kv_given = false;
      ++v.preemptions;
      v.preempted_s.push_back(now_s_);
      ++preemptions_;
      ++plan_.preempted;
      waiting_.push_front(victim);
      if (victim == id) {
        scheduled = false;
        break;
      }
    }
    if (!scheduled) break;
    add(id, n, proposed);
    budget -= n;
    ++i;
  }
}

void Scheduler::admit_waiting(std::int64_t& budget) {
  while (!waiting_.empty() && budget > 0 && static_cast<std::int64_t>(running_.size()) < profile_.max_num_seqs) {
    const std::int32_t id = waiting_.front();
    Sequence& s = sequences_[static_cast<std::size_t>(id)];
    // The cached pages at the front of its tokens, leaving at least one token to compute (it
    // yields the next token's logits).
    keys_.clear();
    const std::int64_t full = (s.tokens() - 1) / profile_.block_size;
    if (profile_.prefix_caching) {
      for (std::int64_t b = 0; b < full; ++b) keys_.push_back(block_key(s, b));
    }
    const std::int64_t hits = pool_.cached_prefix(keys_);
    const std::int64_t hit_tokens = hits * profile_.block_size;
    // A handed-over prompt's keys and values take pages of their own, computed already.
    const std::int64_t have = s.kv_given ? std::max(hit_tokens, s.request.input_tokens) : hit_tokens;
    const std::int64_t want = s.tokens() - have;
    if (!profile_.chunked_prefill && want > budget) break;
    const std::int64_t n = std::min(want, budget);
    const std::int64_t blocks = profile_.reserve_full_kv
                                    ? blocks_for(s.request.input_tokens + s.request.output_tokens)
                                    : blocks_for(have + n);
    if (!pool_.allocate(s.blocks, blocks, std::span<const std::uint64_t>(keys_.data(), static_cast<std::size_t>(hits)))) {
      break;
    }
    s.kv_given = false;
    s.computed = have;
    s.cached_blocks = hits;
    // A handed-over prompt's pages came whole from its prefill engine (which counted its hits).
    if (have == hit_tokens) s.prefix_hit_tokens += hit_tokens;
    s.admitted_s.push_back(now_s_);
    waiting_.pop_front();
    running_.push_back(id);
    add(id, n, 0);
    budget -= n;
  }
}

std::int64_t Scheduler::accepted(const Sequence& s, std::int64_t proposed) const {
  if (proposed == 0) return 0;
  // A draw per sequence and decode step: the same run accepts the same tokens.
  Random r(seed_ ^ (static_cast<std::uint64_t>(s.request.id) << 24) ^ static_cast<std::uint64_t>(s.decode_steps));
  std::int64_t a = 0;
  while (a < proposed && r.uniform() < profile_.acceptance_rate) ++a;
  return a;
}

const StepPlan& Scheduler::schedule(double now_s) {
  now_s_ = now_s;
  plan_.sequences.clear();
  plan_.tokens = plan_.prefill_tokens = plan_.preempted = plan_.logit_rows = 0;
  std::int64_t budget = profile_.max_num_batched_tokens;
  if (profile_.mixed_batches) {
    schedule_running(budget, Phase::any);
    if (plan_.preempted == 0) admit_waiting(budget);
  } else {
    // Prompts first, in steps of their own; the running sequences decode when none is left.
    schedule_running(budget, Phase::prefill);
    if (plan_.preempted == 0) admit_waiting(budget);
    if (plan_.sequences.empty()) schedule_running(budget, Phase::decode);
  }
  return plan_;
}

void Scheduler::complete(double time_s) {
  bool any_finished = false;
  finished_in_step_.clear();
  for (const ScheduledSequence& x : plan_.sequences) {
    Sequence& s = sequences_[static_cast<std::size_t>(x.sequence)];
    if (!x.samples) {
      s.computed += x.new_tokens;
      continue;
    }
    // The step yields its accepted proposals and one more token; the rejected positions' keys and
    // values are dropped (their pages stay the sequence's).
    const std::int64_t yield = 1 + accepted(s, x.proposed);
    s.computed += x.new_tokens - x.proposed + (yield - 1);
    s.generated += yield;
    if (x.proposed > 0) {
      s.proposed_tokens += x.proposed;
      s.accepted_tokens += yield - 1;
    }
    if (s.computed >= s.request.input_tokens) ++s.decode_steps;
    // Tokens that arrive together are one gap (vllm bench serve times each streamed chunk).
    if (s.generated == yield) {
      s.first_token_s = time_s;
    } else {
      s.token_gaps_s.push_back(static_cast<float>(time_s - s.last_token_s));
    }
    s.last_token_s = time_s;
    if (s.generated >= s.request.output_tokens) {
      s.finished = true;
      s.finish_s = time_s;
      if (!hold_finished_) pool_.release(s.blocks);
      ++finished_;
      finished_in_step_.push_back(x.sequence);
      any_finished = true;
    }
  }
  if (any_finished) {
    std::erase_if(running_, [&](std::int32_t id) { return sequences_[static_cast<std::size_t>(id)].finished; });
  }
}

}  // namespace syntorch::session::serving
