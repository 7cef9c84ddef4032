// Elementwise ops: activations and their backward, arithmetic and comparisons (tensor with tensor
// or with a number), powers, selection, masking, triangles, dropout.
#include "syntorch/graph/lowering.hpp"
#include "syntorch/torch/aten.hpp"
#include "syntorch/torch/fused.hpp"
#include "syntorch/torch/ops.hpp"

namespace syntorch::graph::lowerings {

namespace elementwise_ops {

using torch::Tensor;

template <Tensor (*Fn)(const Tensor&)>
Lowered unary(const Call& c) {
  return std::vector{Fn(c.tensor("self"))};
}

Lowered gelu(const Call& c) { return std::vector{torch::gelu(c.tensor("self"), c.text("approximate", "none"))}; }
Lowered neg(const Call& c) { return std::vector{c.tensor("self").neg()}; }

Lowered activation_backward(const Call& c) {
  const std::string_view op = c.op();
  const std::string forward = op == "threshold_backward" ? "relu" : std::string(op.substr(0, op.size() - 9));
  const Tensor saved = c.is_tensor("self") ? c.tensor("self") : c.tensor("output");
  return std::vector{torch::aten::activation_backward(forward, c.tensor("grad_output"), saved, c.aten_name())};
}

Lowered pow(const Call& c) {
  if (!c.is_tensor("self") && c.is_tensor("exponent")) {  // pow.Scalar: a number to a tensor's powers
    return std::vector{torch::pow(c.real("self"), c.tensor("exponent"))};
  }
  if (!c.is_tensor("self") || c.is_tensor("exponent")) return std::nullopt;  // the generic cost
  return std::vector{torch::pow(c.tensor("self"), c.real("exponent"))};
}

// Tensor with tensor, or tensor with a number; a number first has no model of its own.
template <Tensor (*TT)(const Tensor&, const Tensor&), Tensor (*TS)(const Tensor&, double)>
Lowered binary(const Call& c) {
  if (!c.is_tensor("self")) return std::nullopt;
  if (c.is_tensor("other")) return std::vector{TT(c.tensor("self"), c.tensor("other"))};
  return std::vector{TS(c.tensor("self"), c.real("other"))};
}

// In-place arithmetic (add_, sub_, mul_, div_ with a tensor or a number): one elementwise kernel
// writing self, as the torch layer's in-place ops run it.
template <Tensor& (Tensor::*TT)(const Tensor&), Tensor& (Tensor::*TS)(double)>
Lowered inplace_binary(const Call& c) {
  Tensor self = c.tensor("self");
  if (c.is_tensor("other")) {
    (self.*TT)(c.tensor("other"));
  } else {
    (self.*TS)(c.real("other"));
  }
  return std::vector{self};
}

// An activation in place (relu_, ...): its elementwise kernel over self.
Lowered activation_inplace(const Call& c) {
  const std::string_view op = c.op();
  return std::vector{torch::aten::activation_(op.substr(0, op.size() - 1), c.tensor("self"), c.aten_name())};
}

// A number minus a tensor (rsub's self is the tensor).
Lowered rsub(const Call& c) {
  if (!c.is_tensor("self") || c.is_tensor("other")) return std::nullopt;
  return std::vector{c.real("other") - c.tensor("self")};
}

Tensor add_scalar(const Tensor& a, double b) { return a + b; }
Tensor sub_scalar(const Tensor& a, double b) { return a - b; }
Tensor mul_scalar(const Tensor& a, double b) { return a * b; }
Tensor div_scalar(const Tensor& a, double b) { return a / b; }

Lowered where(const Call& c) {
  if (!c.is_tensor("condition") || !c.is_tensor("self") || !c.is_tensor("other")) return std::nullopt;
  return std::vector{torch::where(c.tensor("condition"), c.tensor("self"), c.tensor("other"))};
}

Lowered masked_fill(const Call& c) {
  if (c.is_tensor("value")) return std::nullopt;
  return std::vector{torch::masked_fill(c.tensor("self"), c.tensor("mask"), c.real("value"))};
}

Lowered tril(const Call& c) { return std::vector{torch::tril(c.tensor("self"), c.integer("diagonal", 0))}; }
Lowered triu(const Call& c) { return std::vector{torch::triu(c.tensor("self"), c.integer("diagonal", 0))}; }

Lowered dropout(const Call& c) {
  return std::vector{torch::dropout(c.tensor("input"), c.real("p"), c.boolean("train", true)), c.fresh(1)};
}

Lowered dropout_composite(const Call& c) {
  return std::vector{torch::dropout(c.tensor("input"), c.real("p"), c.boolean("train", true))};
}

// The torch layer's fused kernels, as syntorch's own custom operators.
Lowered silu_and_mul(const Call& c) { return std::vector{torch::fused::silu_and_mul(c.tensor("self"))}; }
Lowered rotary_embedding_(const Call& c) {
  Tensor q = c.tensor("query");
  Tensor k = c.tensor("key");
  torch::fused::rotary_embedding_(q, k, c.integer("rotary_dim"));
  return std::vector{q, k};
}

constexpr Tensor (*eq_s)(const Tensor&, double) = torch::eq;
constexpr Tensor (*ne_s)(const Tensor&, double) = torch::ne;
constexpr Tensor (*lt_s)(const Tensor&, double) = torch::lt;
constexpr Tensor (*le_s)(const Tensor&, double) = torch::le;
constexpr Tensor (*gt_s)(const Tensor&, double) = torch::gt;
constexpr Tensor (*ge_s)(const Tensor&, double) = torch::ge;
constexpr Tensor (*eq_t)(const Tensor&, const Tensor&) = torch::eq;
constexpr Tensor (*ne_t)(const Tensor&, const Tensor&) = torch::ne;
constexpr Tensor (*lt_t)(const Tensor&, const Tensor&) = torch::lt;
constexpr Tensor (*le_t)(const Tensor&, const Tensor&) = torch::le;
constexpr Tensor (*gt_t)(const Tensor&, const Tensor&) = torch::gt;
constexpr Tensor (*ge_t)(const Tensor&, const Tensor&) = torch::ge;

constexpr Lowering kTable[] = {
    {"gelu", "self", gelu},
    {"silu", "self", unary<torch::silu>},
    {"relu", "self", unary<torch::relu>},
    {"tanh", "self", unary<torch::tanh>},
    {"sigmoid", "self", unary<torch::sigmoid>},
    {"exp", "self", unary<torch::exp>},
    {"log", "self", unary<torch::log>},
    {"sqrt", "self", unary<torch::sqrt>},
    {"rsqrt", "self", unary<torch::rsqrt>},
    {"sin", "self", unary<torch::sin>},
    {"cos", "self", unary<torch::cos>},
    {"abs", "self", unary<torch::abs>},
    {"neg", "self", neg},
    {"gelu_backward", "grad_output self", activation_backward},
    {"silu_backward", "grad_output self", activation_backward},
    {"threshold_backward", "grad_output self threshold", activation_backward},
    {"tanh_backward", "grad_output output", activation_backward},
    {"sigmoid_backward", "grad_output output", activation_backward},
    {"pow", "self exponent", pow},
    {"add", "self other", binary<torch::add, add_scalar>},
    {"sub", "self other", binary<torch::sub, sub_scalar>},
    {"rsub", "self other", rsub},
    {"add_", "self other", inplace_binary<&Tensor::add_, &Tensor::add_>},
    {"sub_", "self other", inplace_binary<&Tensor::sub_, &Tensor::sub_>},
    {"mul_", "self other", inplace_binary<&Tensor::mul_, &Tensor::mul_>},
    {"div_", "self other", inplace_binary<&Tensor::div_, &Tensor::div_>},
    {"relu_", "self", activation_inplace},
    {"silu_", "self", activation_inplace},
    {"gelu_", "self", activation_inplace},
    {"sigmoid_", "self", activation_inplace},
    {"tanh_", "self", activation_inplace},
    {"mul", "self other", binary<torch::mul, mul_scalar>},
    {"div", "self other", binary<torch::div, div_scalar>},
    {"eq", "self other", binary<eq_t, eq_s>},
    {"ne", "self other", binary<ne_t, ne_s>},
    {"lt", "self other", binary<lt_t, lt_s>},
    {"le", "self other", binary<le_t, le_s>},
    {"gt", "self other", binary<gt_t, gt_s>},
    {"ge", "self other", binary<ge_t, ge_s>},
    {"where", "condition self other", where},
    {"masked_fill", "self mask value", masked_fill},
    {"tril", "self diagonal", tril},
    {"triu", "self diagonal", triu},
    {"native_dropout", "input p train", dropout},
    {"dropout", "input p train", dropout_composite},
    {"silu_and_mul", "self", silu_and_mul},
    {"rotary_embedding_", "query key rotary_dim", rotary_embedding_},
};

}  // namespace elementwise_ops

std::span<const Lowering> elementwise() { return elementwise_ops::kTable; }

}  // namespace syntorch::graph::lowerings
