// Convolutions (implicit GEMM, as the torch layer's convolution launches them) and their
// backward; pooling, resampling and group norm as memory-bound passes named by their ATen op
// (each input read once, each output written once; max pooling's indices too).
#include "syntorch/graph/lowering.hpp"
#include "syntorch/torch/aten.hpp"
#include "syntorch/torch/ops.hpp"

namespace syntorch::graph::lowerings {

namespace vision_ops {

using torch::Tensor;

Lowered convolution(const Call& c) {
  return std::vector{torch::convolution(c.tensor("input"), c.tensor("weight"), c.optional_tensor("bias"),
                                        c.ints("stride"), c.ints("padding"), c.ints("dilation"),
                                        c.boolean("transposed"), c.ints("output_padding"), c.integer("groups"))};
}

Lowered convolution_backward(const Call& c) {
  const std::vector<bool> m = c.bools("output_mask", {true, true, true});
  const std::array<bool, 3> mask{m.size() > 0 && m[0], m.size() > 1 && m[1], m.size() > 2 && m[2]};
  auto [dx, dw, db] = torch::aten::convolution_backward(
      c.tensor("grad_output"), c.tensor("input"), c.tensor("weight"), c.ints("stride"), c.ints("padding"),
      c.ints("dilation"), c.boolean("transposed"), c.ints("output_padding"), c.integer("groups"), mask);
  return std::vector{dx, dw, db};
}

Lowered memory_pass(const Call& c) {
  std::vector<torch::aten::OutputSpec> specs;
  for (std::size_t i = 0; i < c.output_count(); ++i) {
    if (const IrTensor* t = c.output(i)) specs.push_back({t->sizes, scalar_type_of(t->dtype).value_or(torch::kFloat)});
  }
  const std::vector<Tensor> ins = c.inputs();
  const std::vector<Tensor> made = torch::aten::memory_bound(c.aten_name(), ins, specs);
  std::vector<Tensor> out(c.output_count());
  std::size_t next = 0;
  for (std::size_t i = 0; i < c.output_count(); ++i) {
    if (c.output(i) != nullptr) out[i] = made[next++];
  }
  return out;
}

constexpr Lowering kTable[] = {
    {"convolution", "input weight bias stride padding dilation transposed output_padding groups", convolution},
    {"convolution_backward",
     "grad_output input weight bias_sizes stride padding dilation transposed output_padding groups output_mask",
     convolution_backward},
    {"max_pool2d_with_indices", "", memory_pass},
    {"max_pool3d_with_indices", "", memory_pass},
    {"max_pool2d_with_indices_backward", "", memory_pass},
    {"max_pool3d_with_indices_backward", "", memory_pass},
    {"avg_pool2d", "", memory_pass},
    {"avg_pool3d", "", memory_pass},
    {"avg_pool2d_backward", "", memory_pass},
    {"avg_pool3d_backward", "", memory_pass},
    {"_adaptive_avg_pool2d", "", memory_pass},
    {"_adaptive_avg_pool3d", "", memory_pass},
    {"_adaptive_avg_pool2d_backward", "", memory_pass},
    {"_adaptive_avg_pool3d_backward", "", memory_pass},
    {"adaptive_max_pool2d", "", memory_pass},
    {"adaptive_max_pool2d_backward", "", memory_pass},
    {"upsample_nearest2d", "", memory_pass},
    {"upsample_bilinear2d", "", memory_pass},
    {"upsample_nearest2d_backward", "", memory_pass},
    {"upsample_bilinear2d_backward", "", memory_pass},
    {"native_group_norm", "", memory_pass},
    {"native_group_norm_backward", "", memory_pass},
    {"select_backward", "", memory_pass},
    {"slice_backward", "", memory_pass},
    {"index_select_backward", "", memory_pass},
    {"embedding_backward", "", memory_pass},
    {"unfold_backward", "", memory_pass},
    {"diagonal_backward", "", memory_pass},
    {"as_strided_backward", "", memory_pass},
};

}  // namespace vision_ops

std::span<const Lowering> vision() { return vision_ops::kTable; }

}  // namespace syntorch::graph::lowerings
