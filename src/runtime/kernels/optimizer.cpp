// Optimizer steps as PyTorch's multi-tensor-apply kernels run them (ATen's MultiTensorApply.cuh):
// the parameters' tensors are cut into chunks of 65,536 elements, one CTA a chunk, and one launch
// takes at most 320 chunks and a number of tensors that falls as the kernel touches more tensor
// lists (110 for one list, 64, 48, 36, 30 for five). A foreach op (torch._foreach_mul_ and the
// like) is one such kernel, a pass over HBM; a foreach optimizer step is several of them, a fused
// step (_fused_adam_) one. Many small tensors mean many launches; large ones, many chunks.

#include <algorithm>
#include <array>
#include <span>
#include <cmath>
#include <fmt/format.h>

#include "kernels.hpp"

namespace syntorch::runtime::detail {

namespace {

constexpr double kChunkElements = 65536;
constexpr std::uint64_t kMaxChunksPerLaunch = 320;
constexpr std::array<std::uint64_t, 5> kMaxTensorsByLists{110, 64, 48, 36, 30};

// One tensor operation over every parameter: the tensor lists it reads and writes (each an
// element of the op's dtype per parameter) and its fp32 operations per element.
struct ListPass {
  std::string_view name;
  int reads;
  int writes;
  double ops_per_element;
};

// The launches of one multi-tensor kernel over all `op.batch` tensors of `op.elements`.
void multi_tensor(const OpDesc& op, const LowerContext& cx, const ListPass& pass, std::string_view impl,
                  std::vector<Kernel>& out) {
  const double e = element_bytes(cx.dtype);
  const double elements = static_cast<double>(op.elements);
  const auto tensors = static_cast<double>(op.batch);
  // Each tensor's last chunk is partly filled: about one more chunk a tensor than the elements need.
  const double chunks = std::ceil(elements / kChunkElements) + std::max(0.0, tensors - 1);
  const int lists = std::clamp(std::max(pass.reads, pass.writes), 1, 5);
  const double max_tensors = static_cast<double>(kMaxTensorsByLists[static_cast<std::size_t>(lists - 1)]);
  const auto launches = static_cast<std::uint64_t>(
      std::max({1.0, std::ceil(tensors / max_tensors), std::ceil(chunks / static_cast<double>(kMaxChunksPerLaunch))}));
  const double per_launch = elements / static_cast<double>(launches);
  for (std::uint64_t i = 0; i < launches; ++i) {
    Kernel k = stream_kernel(cx, {"", per_launch, pass.reads * e, pass.writes * e, pass.ops_per_element});
    k.name = pass.name.empty() ? std::string(op_name(op.kind)) : fmt::format("{} {}", op_name(op.kind), pass.name);
    k.impl = std::string(impl);
    k.tiles = std::max<std::uint64_t>(1, static_cast<std::uint64_t>(std::ceil(chunks / static_cast<double>(launches))));
    k.tile_hbm_bytes = k.hbm_bytes / static_cast<double>(k.tiles);
    k.tile_compute_s = per_launch / static_cast<double>(k.tiles) * pass.ops_per_element /
                       unit_vector_ops_per_s(cx.device, DType::fp32);
    if (i == 0) {
      k.why.push_back(fmt::format("{}{} launch(es) over {} tensors in {:.0f} chunks of 65536 (at most {:.0f} tensors "
                                  "and 320 chunks a launch for {} list(s)); reads {}, writes {} list(s)",
                                  pass.name.empty() ? "" : fmt::format("{}: ", pass.name), launches, op.batch, chunks,
                                  max_tensors, lists, pass.reads, pass.writes));
    }
    out.push_back(std::move(k));
  }
}

}  // namespace

std::vector<Kernel> lower_adam(const OpDesc& op, const LowerContext& cx) {
  // PyTorch's _fused_adam(w)_: parameter, gradient and both moments read, all but the gradient
  // written, in one pass.
  std::vector<Kernel> ks;
  multi_tensor(op, cx, {"fused step", 4, 3, 12}, "fused", ks);
  return ks;
}

std::vector<Kernel> lower_sgd(const OpDesc& op, const LowerContext& cx) {
  // _fused_sgd_: parameter, gradient (and momentum buffer) read, parameter (and buffer) written.
  std::vector<Kernel> ks;
  multi_tensor(op, cx, op.k ? ListPass{"fused step", 3, 2, 4} : ListPass{"fused step", 2, 1, 2}, "fused", ks);
  return ks;
}

std::vector<Kernel> lower_foreach(const OpDesc& op, const LowerContext& cx) {
  // One _foreach_ op: `k` tensor lists read, one written, an operation or two an element.
  std::vector<Kernel> ks;
  multi_tensor(op, cx, {"", static_cast<int>(op.k), 1, static_cast<double>(op.k)}, "fused", ks);
  return ks;
}

}  // namespace syntorch::runtime::detail
