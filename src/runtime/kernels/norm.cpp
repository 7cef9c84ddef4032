// LayerNorm and RMSNorm by implementation, each a physical account of what its kernels move:
// - fused: one kernel, one read and one write of each row (lower_rowwise; Apex, Liger,
//   TensorRT-LLM's and vLLM's norm kernels);
// - torch: PyTorch's native norm kernels: a pass computing each row's statistics, then a
//   normalising pass that reads the row again; the second read comes from L2 only when the
//   whole input fits there (the first pass has finished before the second starts);
// - eager (RMSNorm): Hugging Face's LlamaRMSNorm.forward as PyTorch runs it, one kernel per
//   tensor op: upcast to fp32, pow, mean, add eps, rsqrt, multiply, cast back, multiply by the
//   weight; the fp32 intermediates go through HBM.

#include <fmt/format.h>

#include "kernels.hpp"
#include "syntorch/base/units.hpp"

namespace syntorch::runtime::detail {

namespace {

std::vector<Kernel> torch_native(const OpDesc& op, const LowerContext& cx, RowCost cost) {
  const double e = element_bytes(cx.dtype);
  const double elements = static_cast<double>(op.rows) * static_cast<double>(op.cols);
  const double rows = static_cast<double>(op.rows);
  const bool in_l2 = elements * e <= cx.device.cache.size_bytes;
  // Statistics: read every row, write its mean and reciprocal deviation (two fp32 per row).
  Kernel stats = stream_kernel(cx, {"", elements, e, 8.0 * rows / elements, cost.ops_per_element / 2});
  stats.name = fmt::format("{} row statistics", op_name(op.kind));
  stats.why.push_back(fmt::format("PyTorch's native kernels: statistics of {} rows of {}, then a normalising pass",
                                  op.rows, op.cols));
  Kernel apply = stream_kernel(cx, {"", elements, in_l2 ? 0.0 : e, e, cost.ops_per_element / 2});
  apply.name = fmt::format("{} normalise", op_name(op.kind));
  apply.why.push_back(in_l2 ? fmt::format("the {} input fits in L2: the second read comes from there",
                                          units::format_size(elements * e))
                            : fmt::format("the {} input exceeds the {} L2: the second read comes from HBM",
                                          units::format_size(elements * e),
                                          units::format_size(cx.device.cache.size_bytes)));
  for (Kernel* k : {&stats, &apply}) k->impl = "torch";
  return {std::move(stats), std::move(apply)};
}

std::vector<Kernel> hf_eager_rmsnorm(const OpDesc& op, const LowerContext& cx) {
  const double e = element_bytes(cx.dtype);
  const double n = static_cast<double>(op.rows) * static_cast<double>(op.cols);
  const double rows = static_cast<double>(op.rows);
  const bool upcast = e < 4;  // .to(torch.float32) is a no-op on fp32 input
  std::vector<StreamPass> passes;
  if (upcast) passes.push_back({"rmsnorm eager: to(float32)", n, e, 4, 1});
  passes.push_back({"rmsnorm eager: pow", n, 4, 4, 1});
  passes.push_back({"rmsnorm eager: mean", n, 4, 4 / static_cast<double>(op.cols), 1});
  passes.push_back({"rmsnorm eager: add eps", rows, 4, 4, 1});
  passes.push_back({"rmsnorm eager: rsqrt", rows, 4, 4, 1});
  passes.push_back({"rmsnorm eager: mul", n, 4, 4, 1});
  if (upcast) passes.push_back({"rmsnorm eager: to(input dtype)", n, 4, e, 1});
  passes.push_back({"rmsnorm eager: mul weight", n, e, e, 1});
  std::vector<Kernel> ks;
  for (const StreamPass& p : passes) {
    ks.push_back(stream_kernel(cx, p));
    ks.back().impl = "eager";
  }
  ks[0].why.push_back(fmt::format("Hugging Face's RMSNorm as {} PyTorch kernels{}", ks.size(),
                                  upcast ? ", fp32 intermediates through HBM" : ""));
  return ks;
}

}  // namespace

std::vector<Kernel> lower_norm(const OpDesc& op, const LowerContext& cx, RowCost fused_cost) {
  std::vector<std::vector<Kernel>> options;
  options.push_back(lower_rowwise(op, cx, fused_cost));
  options.push_back(torch_native(op, cx, fused_cost));
  if (op.kind == OpKind::rmsnorm) options.push_back(hf_eager_rmsnorm(op, cx));
  return choose_implementation(std::move(options), cx);
}

std::vector<Kernel> lower_norm_backward(const OpDesc& op, const LowerContext& cx, RowCost cost) {
  const double e = element_bytes(cx.dtype);
  const double elements = static_cast<double>(op.rows) * static_cast<double>(op.cols);
  const double cols = static_cast<double>(op.cols);
  // Weight and bias (LayerNorm) or weight alone (RMSNorm): the reductions over rows.
  const double params = op.kind == OpKind::layernorm_backward ? 2.0 : 1.0;
  // Fused: dx row by row with x and dy (the cost's two inputs) on chip; each CTA adds its rows
  // into fp32 partial sums of the weight gradient, one partial row per resident CTA, which a
  // second small kernel reduces.
  std::vector<Kernel> fused = lower_rowwise(op, cx, cost);
  const double partial_rows = std::min(static_cast<double>(op.rows),
                                       static_cast<double>(cx.device.compute.units) * fused[0].tiles_per_unit);
  const double partial_bytes = partial_rows * cols * 4.0 * params;
  fused[0].hbm_bytes += partial_bytes;
  fused[0].hbm_write_bytes += partial_bytes;
  fused[0].tile_hbm_bytes = fused[0].hbm_bytes / static_cast<double>(fused[0].tiles);
  fused[0].name = fmt::format("{} dx", op_name(op.kind));
  fused[0].why.push_back(fmt::format("dx from x and dy in one pass; the weight gradient as {:.0f} fp32 partial rows",
                                     partial_rows));
  Kernel reduce = stream_kernel(cx, {"", cols, partial_rows * 4.0 * params, e * params, 0});
  reduce.name = fmt::format("{} dweight", op_name(op.kind));
  reduce.why.push_back(fmt::format("{:.0f} partial rows reduced to the weight gradient", partial_rows));
  fused.push_back(std::move(reduce));
  // PyTorch's native backward: dx (reads x, dy and the row statistics), then a column-wise
  // kernel that reads x and dy again for the weight (and bias) gradients.
  Kernel dx = stream_kernel(cx, {"", elements, 2.0 * e + 8.0 / cols, e, cost.ops_per_element});
  dx.name = fmt::format("{} dx", op_name(op.kind));
  dx.why.push_back("PyTorch's native kernels: dx, then the weight gradient reading x and dy again");
  Kernel dw = stream_kernel(cx, {"", elements, 2.0 * e + 8.0 / cols, params * e / static_cast<double>(op.rows), 0});
  dw.name = fmt::format("{} dweight", op_name(op.kind));
  std::vector<Kernel> torch{std::move(dx), std::move(dw)};
  for (Kernel& k : torch) k.impl = "torch";
  return choose_implementation({std::move(fused), std::move(torch)}, cx);
}

}  // namespace syntorch::runtime::detail
