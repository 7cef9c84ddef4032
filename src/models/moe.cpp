#include "syntorch/models/moe.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

#include "syntorch/parallel/distributed.hpp"
#include "syntorch/torch/float8.hpp"
#include "syntorch/torch/fused.hpp"
#include "syntorch/torch/ops.hpp"
#include "syntorch/torch/utils.hpp"

namespace syntorch::models {

std::vector<std::int64_t> expert_loads(std::int64_t tokens, std::int64_t experts, std::int64_t top_k, double skew) {
  if (tokens < 0 || experts < 1 || top_k < 1 || top_k > experts || !(skew >= 0) || skew > kMaxExpertSkew) {
    throw std::invalid_argument(fmt::format("expert_loads: {} tokens, {} experts, top {}, skew {} is not a routing",
                                            tokens, experts, top_k, skew));
  }
  const auto e_count = static_cast<std::size_t>(experts);
  std::vector<double> share(e_count);
  for (std::size_t e = 0; e < e_count; ++e) share[e] = std::pow(static_cast<double>(e + 1), -skew);
  // Water-filling: experts whose share would exceed `tokens` are capped there and the rest
  // re-shared among the others (shares fall with e, so the capped ones are a prefix).
  const double total = static_cast<double>(tokens * top_k);
  std::vector<double> target(e_count, 0);
  std::size_t capped = 0;
  for (;;) {
    const double left = total - static_cast<double>(capped) * static_cast<double>(tokens);
    const double weight = std::accumulate(share.begin() + static_cast<std::ptrdiff_t>(capped), share.end(), 0.0);
    bool more = false;
    for (std::size_t e = capped; e < e_count; ++e) target[e] = left * share[e] / weight;
    if (capped < e_count && target[capped] > static_cast<double>(tokens)) {
      target[capped] = static_cast<double>(tokens);
      ++capped;
      more = true;
    }
    if (!more) break;
  }
  std::vector<std::int64_t> rows(e_count);
  std::int64_t assigned = 0;
  std::vector<std::pair<double, std::size_t>> remainders;
  for (std::size_t e = 0; e < e_count; ++e) {
    rows[e] = std::min<std::int64_t>(tokens, static_cast<std::int64_t>(std::floor(target[e] + 1e-9)));
    assigned += rows[e];
    remainders.emplace_back(target[e] - static_cast<double>(rows[e]), e);
  }
  std::stable_sort(remainders.begin(), remainders.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  for (const auto& [r, e] : remainders) {
    if (assigned == tokens * top_k) break;
    if (rows[e] < tokens) {
      ++rows[e];
      ++assigned;
    }
  }
  return rows;
}

Routing::Routing(const std::vector<std::int64_t>& tokens_per_rank, std::int64_t experts, std::int64_t top_k,
                 double skew)
    : experts_(experts) {
  const std::int64_t tokens = std::accumulate(tokens_per_rank.begin(), tokens_per_rank.end(), std::int64_t{0});
  loads_ = expert_loads(tokens, experts, top_k, skew);
  rows_.assign(tokens_per_rank.size() * static_cast<std::size_t>(experts), 0);
  if (tokens == 0) return;
  // Slot i (of tokens x top_k) goes to token i mod tokens; expert e holds the slots
  // [start, start + loads[e]), at most `tokens` of them, so a token range wraps at most once.
  std::int64_t start = 0;
  for (std::int64_t e = 0; e < experts; ++e) {
    const std::int64_t first = start % tokens, count = loads_[static_cast<std::size_t>(e)];
    std::int64_t rank_begin = 0;
    for (std::size_t r = 0; r < tokens_per_rank.size(); ++r) {
      const std::int64_t rank_end = rank_begin + tokens_per_rank[r];
      auto overlap = [&](std::int64_t a, std::int64_t b) {
        return std::max<std::int64_t>(0, std::min(b, rank_end) - std::max(a, rank_begin));
      };
      const std::int64_t tail = std::min(count, tokens - first);  // [first, first + tail), then [0, count - tail)
      rows_[r * static_cast<std::size_t>(experts) + static_cast<std::size_t>(e)] =
          overlap(first, first + tail) + overlap(0, count - tail);
      rank_begin = rank_end;
    }
    start += count;
  }
}

MoeMlpImpl::MoeMlpImpl(const MoeOptions& o) : torch::nn::Module("MoeMlp"), options_(o) {
  const parallel::ParallelState& st = parallel::state();
  if (o.experts % st.ep_size != 0) {
    throw std::invalid_argument(fmt::format("MoeMlp: {} experts do not split over expert parallel {}", o.experts, st.ep_size));
  }
  // With ep = 1 the experts split over the whole TP group; otherwise over their etp ranks.
  const int split = st.ep_size == 1 ? st.tp_size : st.etp_size;
  if (o.ffn % split != 0) {
    throw std::invalid_argument(fmt::format("MoeMlp: expert width {} does not split over {} ranks", o.ffn, split));
  }
  local_experts_ = o.experts / st.ep_size;
  first_expert_ = static_cast<std::int64_t>(st.ep_rank) * local_experts_;
  router_ = register_parameter("router", torch::parameter_tensor({o.experts, o.hidden}, torch::get_default_dtype(),
                                                                 "MoeMlp.router"));
  const torch::ScalarType w = torch::fp8::linear_weight_dtype();
  gate_up_ = register_parameter(
      "experts_gate_up", torch::parameter_tensor({local_experts_, 2 * o.ffn / split, o.hidden}, w, "MoeMlp.gate_up"));
  down_ = register_parameter("experts_down",
                             torch::parameter_tensor({local_experts_, o.hidden, o.ffn / split}, w, "MoeMlp.down"));
}

torch::Tensor MoeMlpImpl::route(const torch::Tensor& x, torch::Tensor& weights) {
  torch::Tensor logits = torch::nn::functional::linear(x, router_);
  auto [w, ids] = torch::fused::topk_softmax(logits, options_.top_k);
  weights = std::move(w);
  return torch::fused::moe_permute(x, ids);
}

torch::Tensor MoeMlpImpl::experts(const torch::Tensor& rows, const std::vector<std::int64_t>& group_rows) {
  torch::Tensor h = torch::fused::grouped_mm(rows, gate_up_, group_rows);
  h = torch::fused::silu_and_mul(h);
  return torch::fused::grouped_mm(h, down_, group_rows);
}

torch::Tensor MoeMlpImpl::forward(const torch::Tensor& x) {
  const parallel::ParallelState& st = parallel::state();
  if (st.ep_size != 1) throw std::invalid_argument("MoeMlp: under expert parallelism forward needs tokens_per_rank");
  torch::Tensor weights;
  torch::Tensor permuted = route(x, weights);
  const std::vector<std::int64_t> loads = expert_loads(x.size(0), options_.experts, options_.top_k, options_.skew);
  torch::Tensor out = torch::fused::moe_unpermute(experts(permuted, loads), weights);
  parallel::all_reduce(out, st.tp_group);
  return out;
}

torch::Tensor MoeMlpImpl::forward(const torch::Tensor& x, const std::vector<std::int64_t>& tokens_per_rank) {
  const parallel::ParallelState& st = parallel::state();
  if (tokens_per_rank.size() != static_cast<std::size_t>(st.tp_size) ||
      tokens_per_rank[static_cast<std::size_t>(st.tp_rank)] != x.size(0)) {
    throw std::invalid_argument(fmt::format("MoeMlp: {} token counts for a TP group of {}, this rank's {} rows not "
                                            "among them where expected",
                                            tokens_per_rank.size(), st.tp_size, x.size(0)));
  }
  const Routing routing(tokens_per_rank, options_.experts, options_.top_k, options_.skew);
  // The TP rank of ep peer j in this rank's ep group, and the rows one TP rank's tokens send to
  // the experts of ep rank j.
  auto tp_rank_of = [&](int j) { return static_cast<std::size_t>(j * st.etp_size + st.etp_rank); };
  auto rows_to = [&](std::size_t from, int j) {
    std::int64_t rows = 0;
    for (std::int64_t e = 0; e < local_experts_; ++e) rows += routing.rows(from, j * local_experts_ + e);
    return rows;
  };
  std::vector<std::int64_t> send, receive;
  for (int j = 0; j < st.ep_size; ++j) {
    send.push_back(rows_to(static_cast<std::size_t>(st.tp_rank), j));
    receive.push_back(rows_to(tp_rank_of(j), st.ep_rank));
  }
  torch::Tensor weights;
  torch::Tensor dispatched = parallel::all_to_all(route(x, weights), receive, send, st.ep_group);
  std::vector<std::int64_t> local(static_cast<std::size_t>(local_experts_));
  std::int64_t routed = 0;  // rows all of this rank's experts receive
  for (std::int64_t e = 0; e < local_experts_; ++e) {
    local[static_cast<std::size_t>(e)] = routing.expert_rows(first_expert_ + e);
    routed += local[static_cast<std::size_t>(e)];
  }
  // The etp ranks of these experts pool what they received (padded to the largest share, as an
  // all-gather needs), each computing its slice of every expert; they skip together when the
  // experts got nothing.
  std::int64_t pool = 0;  // the largest share among the etp ranks
  for (int t = 0; t < st.etp_size; ++t) {
    std::int64_t rows = 0;
    for (int j = 0; j < st.ep_size; ++j) {
      for (std::int64_t e = 0; e < local_experts_; ++e) {
        rows += routing.rows(static_cast<std::size_t>(j * st.etp_size + t), first_expert_ + e);
      }
    }
    pool = std::max(pool, rows);
  }
  // Rows up to `count` for a collective that needs equal shares.
  auto padded = [](const torch::Tensor& t, std::int64_t count) {
    return t.size(0) < count ? torch::nn::functional::pad(t, {0, 0, 0, count - t.size(0)}) : t;
  };
  const bool pooled = st.etp_size > 1 && routed > 0;
  if (pooled) dispatched = parallel::all_gather(padded(dispatched, pool), st.etp_group, 0).narrow(0, 0, routed);
  // Received rows come by source; they are regrouped by expert (and back after) when that moves
  // them: several local experts, or rows pooled from several ranks.
  const bool regroup = local_experts_ > 1 || pooled;
  if (regroup && routed > 0) dispatched = dispatched.clone();
  torch::Tensor out = experts(dispatched, local);
  if (regroup && routed > 0) out = out.clone();
  if (pooled) {
    out = parallel::reduce_scatter(padded(out, pool * st.etp_size), st.etp_group, 0)
              .narrow(0, 0, std::accumulate(receive.begin(), receive.end(), std::int64_t{0}));
  }
  torch::Tensor combined = parallel::all_to_all(out, send, receive, st.ep_group);
  return torch::fused::moe_unpermute(combined, weights);
}

}  // namespace syntorch::models
