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

std::vector<Kernel> lower_row_pass(const OpDesc& op, const LowerContext& cx, RowPassCost cost) {
  const double e = element_bytes(cx.dtype);
  const double cols = static_cast<double>(op.cols);
  const double write = cost.scan ? e : (e * cost.outputs_per_row + cost.index_bytes_per_row) / cols;
  Kernel k = stream_kernel(cx, {op_name(op.kind), static_cast<double>(op.rows) * cols, e, write, cost.ops_per_input});
  k.why.push_back(fmt::format("{} rows of {}: every input read once, {}", op.rows, op.cols,
                              cost.scan ? "every output written" : "one result per row"));
  return {std::move(k)};
}

std::vector<Kernel> lower_sort(const OpDesc& op, const LowerContext& cx) {
  const double e = element_bytes(cx.dtype);
  const double passes = std::max(1.0, e);  // 8-bit digits
  const double moved = passes * (e + 8.0);
  Kernel k = stream_kernel(cx, {"sort", static_cast<double>(op.rows * op.cols), moved, moved, passes * 4});
  k.why.push_back(fmt::format("{} rows of {} sorted by radix: {} passes over keys and int64 positions", op.rows,
                              op.cols, passes));
  return {std::move(k)};
}

std::vector<Kernel> lower_indexed(const OpDesc& op, const LowerContext& cx) {
  const double e = element_bytes(cx.dtype);
  Kernel k = stream_kernel(cx, {op_name(op.kind), static_cast<double>(op.elements), e + 8.0, e, 1});
  k.why.push_back(fmt::format("{} positions: an int64 index and a value read, a value written each", op.elements));
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
