// Mixture-of-experts kernels around the grouped GEMM, as the serving engines launch them: the
// router's softmax and top-k in one pass over the gate logits (vLLM's topk_softmax), the
// permutation of token rows into expert order after sorting their expert ids (TensorRT-LLM's
// radix sort and expandInputRows), and the weighted combine of each token's expert outputs
// (finalizeMoeRouting, vLLM's moe_sum). All are streaming passes: they cost their bytes.

#include <fmt/format.h>

#include "kernels.hpp"

namespace syntorch::runtime::detail {

namespace {
constexpr double kIndexBytes = 4;   // int32 expert ids and row positions
constexpr double kWeightBytes = 4;  // fp32 routing weights
}  // namespace

std::vector<Kernel> lower_topk(const OpDesc& op, const LowerContext& cx) {
  const double e = element_bytes(cx.dtype);
  const double kept = static_cast<double>(op.k) / static_cast<double>(op.cols);
  Kernel k = stream_kernel(cx, {"topk", static_cast<double>(op.rows * op.cols), e, kept * (kWeightBytes + kIndexBytes),
                                6.0 + static_cast<double>(op.k)});
  k.why.push_back(fmt::format("{} rows of {}: softmax and the top {} in one pass, writing an fp32 weight and an int32 "
                              "index per kept value",
                              op.rows, op.cols, op.k));
  return {std::move(k)};
}

std::vector<Kernel> lower_moe_permute(const OpDesc& op, const LowerContext& cx) {
  const double e = element_bytes(cx.dtype);
  const double routed = static_cast<double>(op.rows * op.k);
  // Sort the (token, expert) pairs by expert: read the ids, write the sorted ids and each
  // routed row's source position.
  Kernel sort = stream_kernel(cx, {"moe_permute: sort", routed, kIndexBytes, 2 * kIndexBytes, 1});
  sort.flops = 0;  // comparisons, not the op's arithmetic
  sort.why.push_back(fmt::format("{} (token, expert) pairs sorted by expert", op.rows * op.k));
  // Each routed row is its token's row copied: the token is read once and written top_k times.
  Kernel gather = stream_kernel(cx, {"moe_permute: gather", routed * static_cast<double>(op.cols),
                                     e / static_cast<double>(op.k), e, 0});
  gather.why.push_back(fmt::format("{} token rows of {} copied to {} expert slots", op.rows, op.cols, op.rows * op.k));
  return {std::move(sort), std::move(gather)};
}

std::vector<Kernel> lower_moe_unpermute(const OpDesc& op, const LowerContext& cx) {
  const double e = element_bytes(cx.dtype);
  const double top_k = static_cast<double>(op.k);
  Kernel k = stream_kernel(cx, {"moe_unpermute", static_cast<double>(op.rows * op.cols),
                                top_k * e + top_k * kWeightBytes / static_cast<double>(op.cols), e, 2 * top_k});
  k.why.push_back(fmt::format("{} tokens: their {} expert rows read, weighted and summed into one", op.rows, op.k));
  return {std::move(k)};
}

}  // namespace syntorch::runtime::detail
