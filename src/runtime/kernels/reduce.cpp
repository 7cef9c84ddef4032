// Reductions and scatters: a sum over rows, and embedding's backward.

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

#include "kernels.hpp"

namespace syntorch::runtime::detail {

std::vector<Kernel> lower_sum(const OpDesc& op, const LowerContext& cx) {
  const double e = element_bytes(cx.dtype);
  const double cols = static_cast<double>(op.cols);
  // A streaming read of every input, one add each; each output written once.
  Kernel k = stream_kernel(cx, {"sum", static_cast<double>(op.rows) * cols, e, e / cols, 1});
  k.why.push_back(fmt::format("{} sums of {} elements: every input read once", op.rows, op.cols));
  return {std::move(k)};
}

std::vector<Kernel> lower_embedding_backward(const OpDesc& op, const LowerContext& cx) {
  const double e = element_bytes(cx.dtype);
  const double tokens = static_cast<double>(op.rows);
  const double cols = static_cast<double>(op.cols);
  const double vocab = static_cast<double>(op.vocab);
  // The table's gradient zeroed, the token ids sorted (8-byte keys and their positions), then
  // each token's gradient row added into its id's row: the rows touched read and written once.
  Kernel zero = stream_kernel(cx, {"embedding_backward: zero", vocab * cols, 0, e, 0});
  Kernel sort = stream_kernel(cx, {"embedding_backward: sort ids", tokens, 16, 16, 0});
  const double touched = std::min(tokens, vocab);
  Kernel add = stream_kernel(cx, {"embedding_backward: accumulate", tokens * cols,
                                  e + 2 * e * touched / tokens, e * touched / tokens, 1});
  zero.why.push_back(fmt::format("a dense gradient of {} rows of {}: zeroed, then {} token rows added", op.vocab,
                                 op.cols, op.rows));
  return {std::move(zero), std::move(sort), std::move(add)};
}

}  // namespace syntorch::runtime::detail
