// Row-wise ops: softmax, log-softmax, layer norm, RMS norm and batch norm, with their backward.
#include "syntorch/graph/lowering.hpp"
#include "syntorch/torch/aten.hpp"
#include "syntorch/torch/ops.hpp"

namespace syntorch::graph::lowerings {

namespace norm_ops {

std::optional<torch::ScalarType> half_to_float(const Call& c) {
  return c.boolean("half_to_float", false) ? std::optional(torch::kFloat) : std::nullopt;
}

Lowered softmax(const Call& c) {
  return std::vector{torch::softmax(c.tensor("self"), c.integer("dim"), half_to_float(c))};
}
Lowered log_softmax(const Call& c) {
  return std::vector{torch::log_softmax(c.tensor("self"), c.integer("dim"), half_to_float(c))};
}

Lowered softmax_backward(const Call& c) {
  const IrValue* dtype = c.arg("input_dtype");
  std::optional<torch::ScalarType> input_dtype;
  if (dtype != nullptr && dtype->kind == IrValue::Kind::typed) input_dtype = scalar_type_of(dtype->text);
  const torch::Tensor grad = c.tensor("grad_output");
  return std::vector{torch::aten::softmax_backward(grad, c.tensor("output"), c.integer("dim"),
                                                   input_dtype.value_or(grad.dtype()),
                                                   c.op() == "_log_softmax_backward_data")};
}

Lowered layer_norm(const Call& c) {
  return std::vector{torch::layer_norm(c.tensor("input"), c.ints("normalized_shape"), c.optional_tensor("weight"),
                                       c.optional_tensor("bias"), c.real("eps", 1e-5)),
                     c.fresh(1), c.fresh(2)};  // mean and rstd: written by the same kernel
}

std::array<bool, 3> mask3(const Call& c, std::string_view name) {
  const std::vector<bool> m = c.bools(name, {true, true, true});
  return {m.size() > 0 && m[0], m.size() > 1 && m[1], m.size() > 2 && m[2]};
}

Lowered layer_norm_backward(const Call& c) {
  auto [dx, dw, db] = torch::aten::native_layer_norm_backward(
      c.tensor("grad_out"), c.tensor("input"), static_cast<std::int64_t>(c.ints("normalized_shape").size()),
      c.optional_tensor("weight"), c.optional_tensor("bias"), mask3(c, "output_mask"), false);
  return std::vector{dx, dw, db};
}

Lowered rms_norm(const Call& c) {
  std::optional<double> eps;
  if (c.has("eps")) eps = c.real("eps");
  std::vector<torch::Tensor> out{
      torch::rms_norm(c.tensor("input"), c.ints("normalized_shape"), c.optional_tensor("weight"), eps)};
  for (std::size_t i = 1; i < c.output_count(); ++i) out.push_back(c.fresh(i));
  return out;
}

Lowered batch_norm(const Call& c) {
  const bool no_training_form = c.op() == "_native_batch_norm_legit_no_training";
  const bool training = !no_training_form && c.boolean("training", false);
  const double momentum = c.has("momentum") ? c.real("momentum") : c.real("exponential_average_factor", 0.1);
  const double eps = c.has("eps") ? c.real("eps") : c.real("epsilon", 1e-5);
  const torch::Tensor running_mean = c.optional_tensor("running_mean");
  std::vector<torch::Tensor> out{torch::batch_norm(c.tensor("input"), c.optional_tensor("weight"),
                                                   c.optional_tensor("bias"), running_mean,
                                                   c.optional_tensor("running_var"),
                                                   training || !running_mean.defined(), momentum, eps)};
  for (std::size_t i = 1; i < c.output_count(); ++i) out.push_back(c.fresh(i));  // saved statistics
  return out;
}

Lowered batch_norm_backward(const Call& c) {
  const torch::Tensor grad = c.has("grad_out") ? c.tensor("grad_out") : c.tensor("grad_output");
  auto [dx, dw, db] = torch::aten::native_batch_norm_backward(grad, c.tensor("input"), c.optional_tensor("weight"),
                                                              mask3(c, "output_mask"));
  return std::vector{dx, dw, db};
}

Lowered layer_norm_composite(const Call& c) {
  return std::vector{torch::layer_norm(c.tensor("input"), c.ints("normalized_shape"), c.optional_tensor("weight"),
                                       c.optional_tensor("bias"), c.real("eps", 1e-5))};
}

Lowered rms_norm_composite(const Call& c) {
  std::optional<double> eps;
  if (c.has("eps")) eps = c.real("eps");
  return std::vector{torch::rms_norm(c.tensor("input"), c.ints("normalized_shape"), c.optional_tensor("weight"), eps)};
}

Lowered log_softmax_composite(const Call& c) {
  const IrValue* dtype = c.arg("dtype");
  std::optional<torch::ScalarType> out;
  if (dtype != nullptr && dtype->kind == IrValue::Kind::typed) out = scalar_type_of(dtype->text);
  return std::vector{torch::log_softmax(c.tensor("self"), c.integer("dim"), out)};
}

Lowered softmax_composite(const Call& c) {
  const IrValue* dtype = c.arg("dtype");
  std::optional<torch::ScalarType> out;
  if (dtype != nullptr && dtype->kind == IrValue::Kind::typed) out = scalar_type_of(dtype->text);
  return std::vector{torch::softmax(c.tensor("self"), c.integer("dim"), out)};
}

constexpr Lowering kTable[] = {
    {"layer_norm", "input normalized_shape weight bias eps cudnn_enable", layer_norm_composite},
    {"rms_norm", "input normalized_shape weight eps", rms_norm_composite},
    {"softmax", "self dim dtype", softmax_composite},
    {"log_softmax", "self dim dtype", log_softmax_composite},
    {"_softmax", "self dim half_to_float", softmax},
    {"_log_softmax", "self dim half_to_float", log_softmax},
    {"_softmax_backward_data", "grad_output output dim input_dtype", softmax_backward},
    {"_log_softmax_backward_data", "grad_output output dim input_dtype", softmax_backward},
    {"native_layer_norm", "input normalized_shape weight bias eps", layer_norm},
    {"native_layer_norm_backward", "grad_out input normalized_shape mean rstd weight bias output_mask",
     layer_norm_backward},
    {"_fused_rms_norm", "input normalized_shape weight eps", rms_norm},
    {"native_batch_norm", "input weight bias running_mean running_var training momentum eps", batch_norm},
    {"_native_batch_norm_legit", "input weight bias running_mean running_var training momentum eps", batch_norm},
    {"_native_batch_norm_legit_no_training", "input weight bias running_mean running_var momentum eps", batch_norm},
    {"cudnn_batch_norm", "input weight bias running_mean running_var training exponential_average_factor epsilon",
     batch_norm},
    {"native_batch_norm_backward",
     "grad_out input weight running_mean running_var save_mean save_invstd train eps output_mask", batch_norm_backward},
    {"cudnn_batch_norm_backward",
     "input grad_output weight running_mean running_var save_mean save_var epsilon reserveSpace", batch_norm_backward},
};

}  // namespace norm_ops

std::span<const Lowering> norms() { return norm_ops::kTable; }

}  // namespace syntorch::graph::lowerings
