// Gathers, copies and joins: embedding and its backward, index_select, cat, stack, clone, dtype
// conversion, copy_, topk, dropout's mask aside, and reading a value back to the host.
#include "syntorch/graph/lowering.hpp"
#include "syntorch/torch/aten.hpp"
#include "syntorch/torch/ops.hpp"

namespace syntorch::graph::lowerings {

namespace data_ops {

using torch::Tensor;

Lowered embedding(const Call& c) { return std::vector{torch::embedding(c.tensor("weight"), c.tensor("indices"))}; }

Lowered embedding_backward(const Call& c) {
  return std::vector{torch::aten::embedding_dense_backward(c.tensor("grad_output"), c.integer("num_weights"))};
}

Lowered index_select(const Call& c) {
  return std::vector{torch::index_select(c.tensor("self"), c.integer("dim"), c.tensor("index"))};
}

Lowered cat(const Call& c) { return std::vector{torch::cat(c.tensors("tensors"), c.integer("dim", 0))}; }
Lowered stack(const Call& c) { return std::vector{torch::stack(c.tensors("tensors"), c.integer("dim", 0))}; }
Lowered clone(const Call& c) { return std::vector{c.tensor("self").clone()}; }

// A conversion to the dtype the IR recorded for the output; to the same dtype, a copy.
Lowered to_copy(const Call& c) {
  const Tensor self = c.tensor("self");
  const IrTensor* out = c.output(0);
  const std::optional<torch::ScalarType> target = out != nullptr ? scalar_type_of(out->dtype) : std::nullopt;
  if (target && *target != self.dtype()) return std::vector{self.to(*target)};
  return std::vector{self.clone()};
}

Lowered copy_(const Call& c) {
  Tensor self = c.tensor("self");
  self.copy_(c.tensor("src"));
  return std::vector{self};
}

Lowered topk(const Call& c) {
  auto [values, indices] = torch::topk(c.tensor("self"), c.integer("k"), c.integer("dim", -1),
                                       c.boolean("largest", true), c.boolean("sorted", true));
  return std::vector{values, indices};
}

// The host waits for the device to read a value back (.item()); a number, no tensor.
Lowered item(const Call& c) {
  static_cast<void>(c.tensor("self").item<double>());
  return std::vector<Tensor>(c.output_count());
}

Lowered nll_loss(const Call& c) {
  const Tensor self = c.tensor("self");
  if (c.integer("reduction", 1) != 1 || c.has("weight") || self.dim() != 2) return std::nullopt;
  return std::vector{torch::nn::functional::nll_loss(self, c.tensor("target")), c.fresh(1)};
}

Lowered nll_loss_backward(const Call& c) {
  const Tensor self = c.tensor("self");
  if (c.integer("reduction", 1) != 1 || c.has("weight") || self.dim() != 2) return std::nullopt;
  return std::vector{torch::aten::nll_loss_backward(c.tensor("grad_output"), self)};
}

Lowered reshape(const Call& c) { return std::vector{c.tensor("self").reshape(c.ints("shape"))}; }

// arange(end) or arange(start, end), in the dtype asked (int64 by default).
Lowered arange(const Call& c) {
  const bool both = c.has("end");
  const std::int64_t start = both ? c.integer("start") : 0;
  const std::int64_t end = both ? c.integer("end") : c.integer("start");
  const IrValue* dtype = c.arg("dtype");
  std::optional<torch::ScalarType> t;
  if (dtype != nullptr && dtype->kind == IrValue::Kind::typed) t = scalar_type_of(dtype->text);
  return std::vector{torch::arange(start, end, torch::TensorOptions(t.value_or(torch::kInt64)).device(torch::kCUDA))};
}

// Factories as the torch layer makes them: a new tensor, filled by one kernel (empty: none).
torch::TensorOptions factory_options(const Call& c) {
  const IrValue* dtype = c.arg("dtype");
  std::optional<torch::ScalarType> t;
  if (dtype != nullptr && dtype->kind == IrValue::Kind::typed) t = scalar_type_of(dtype->text);
  return torch::TensorOptions(t.value_or(torch::get_default_dtype())).device(torch::kCUDA);
}
Lowered empty(const Call& c) { return std::vector{torch::empty(c.ints("size"), factory_options(c))}; }
Lowered zeros(const Call& c) { return std::vector{torch::zeros(c.ints("size"), factory_options(c))}; }
Lowered ones(const Call& c) { return std::vector{torch::ones(c.ints("size"), factory_options(c))}; }
Lowered full(const Call& c) {
  return std::vector{torch::full(c.ints("size"), c.real("fill_value"), factory_options(c))};
}

Lowered cross_entropy(const Call& c) {
  return std::vector{torch::nn::functional::cross_entropy(c.tensor("self"), c.tensor("target"))};
}

constexpr Lowering kTable[] = {
    {"reshape", "self shape", reshape},
    {"empty", "size", empty},
    {"zeros", "size", zeros},
    {"ones", "size", ones},
    {"full", "size fill_value", full},
    {"cross_entropy_loss", "self target weight reduction ignore_index label_smoothing", cross_entropy},
    {"arange", "start end step", arange},
    {"embedding", "weight indices padding_idx scale_grad_by_freq sparse", embedding},
    {"embedding_dense_backward", "grad_output indices num_weights padding_idx scale_grad_by_freq",
     embedding_backward},
    {"index_select", "self dim index", index_select},
    {"cat", "tensors dim", cat},
    {"stack", "tensors dim", stack},
    {"clone", "self", clone},
    {"_to_copy", "self", to_copy},
    {"copy_", "self src non_blocking", copy_},
    {"topk", "self k dim largest sorted", topk},
    {"_local_scalar_dense", "self", item},
    {"nll_loss_forward", "self target weight reduction ignore_index", nll_loss},
    {"nll_loss_backward", "grad_output self target weight reduction ignore_index total_weight", nll_loss_backward},
};

}  // namespace data_ops

std::span<const Lowering> data_movement() { return data_ops::kTable; }

}  // namespace syntorch::graph::lowerings
