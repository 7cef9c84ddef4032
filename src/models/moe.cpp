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
  if (tokens < 0 || experts < 1 || top_k < 1 || top_k > experts || !(skew >= 0)) {
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

torch::Tensor MoeMlpImpl::forward(const torch::Tensor& x) {
  const parallel::ParallelState& st = parallel::state();
  const std::int64_t tokens = x.size(0);
  const std::int64_t k = options_.top_k;
  torch::Tensor logits = torch::nn::functional::linear(x, router_);
  auto [weights, ids] = torch::fused::topk_softmax(logits, k);
  const std::vector<std::int64_t> loads = expert_loads(tokens, options_.experts, k, options_.skew);
  torch::Tensor permuted = torch::fused::moe_permute(x, ids);
  auto experts = [&](const torch::Tensor& rows, const std::vector<std::int64_t>& group_rows) {
    torch::Tensor h = torch::fused::grouped_mm(rows, gate_up_, group_rows);
    h = torch::fused::silu_and_mul(h);
    return torch::fused::grouped_mm(h, down_, group_rows);
  };
  if (st.ep_size == 1) {
    torch::Tensor out = torch::fused::moe_unpermute(experts(permuted, loads), weights);
    parallel::all_reduce(out, st.tp_group);
    return out;
  }
  // Rows to each expert-parallel peer: what its experts were routed. Every rank routes alike, so
  // each peer sends this rank what this rank's experts get from one rank.
  std::vector<std::int64_t> send(static_cast<std::size_t>(st.ep_size), 0);
  for (std::int64_t e = 0; e < options_.experts; ++e) send[static_cast<std::size_t>(e / local_experts_)] += loads[static_cast<std::size_t>(e)];
  const std::int64_t mine = send[static_cast<std::size_t>(st.ep_rank)];
  const std::vector<std::int64_t> receive(static_cast<std::size_t>(st.ep_size), mine);
  torch::Tensor dispatched = parallel::all_to_all(permuted, receive, send, st.ep_group);
  // The etp ranks of these experts pool their tokens, each computing its slice of every expert.
  // (The etp ranks hold the same experts, so they skip together when those got no tokens.)
  const bool pooled = st.etp_size > 1 && dispatched.numel() > 0;
  if (pooled) dispatched = parallel::all_gather(dispatched, st.etp_group, 0);
  // Received rows come by source; local experts > 1 regroup them by expert (and back after).
  if (local_experts_ > 1) dispatched = dispatched.clone();
  std::vector<std::int64_t> local(static_cast<std::size_t>(local_experts_));
  for (std::int64_t e = 0; e < local_experts_; ++e) {
    local[static_cast<std::size_t>(e)] =
        loads[static_cast<std::size_t>(first_expert_ + e)] * st.ep_size * st.etp_size;
  }
  torch::Tensor out = experts(dispatched, local);
  if (local_experts_ > 1) out = out.clone();
  if (pooled) out = parallel::reduce_scatter(out, st.etp_group, 0);
  torch::Tensor combined = parallel::all_to_all(out, send, receive, st.ep_group);
  return torch::fused::moe_unpermute(combined, weights);
}

}  // namespace syntorch::models
