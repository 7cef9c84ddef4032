// Reductions (sum, mean, amax, norms, ...): one reduction kernel into the output the IR recorded.
#include "syntorch/graph/lowering.hpp"
#include "syntorch/torch/aten.hpp"

namespace syntorch::graph::lowerings {

namespace reduction_ops {

using torch::Tensor;

Tensor reduce_into(const Call& c, std::size_t output) {
  const IrTensor* out = c.output(output);
  const std::optional<torch::ScalarType> dtype = scalar_type_of(out->dtype);
  return torch::aten::reduce(c.tensor("self"), out->sizes, dtype.value_or(torch::kFloat), c.aten_name());
}

Lowered reduce(const Call& c) {
  if (c.output(0) == nullptr) return std::nullopt;
  return std::vector{reduce_into(c, 0)};
}

// max and min over a dim (values and indices), var_mean and std_mean: the first output from the
// reduction, the second written beside it.
Lowered reduce_pair(const Call& c) {
  if (c.output(0) == nullptr) return std::nullopt;
  std::vector<Tensor> out{reduce_into(c, 0)};
  for (std::size_t i = 1; i < c.output_count(); ++i) out.push_back(c.fresh(i));
  return out;
}

constexpr Lowering kTable[] = {
    {"sum", "self", reduce},          {"mean", "self", reduce},     {"amax", "self", reduce},
    {"amin", "self", reduce},         {"prod", "self", reduce},     {"var", "self", reduce},
    {"std", "self", reduce},          {"norm", "self", reduce},     {"linalg_vector_norm", "self", reduce},
    {"logsumexp", "self", reduce},    {"any", "self", reduce},      {"all", "self", reduce},
    {"argmax", "self", reduce},       {"argmin", "self", reduce},   {"max", "self", reduce_pair},
    {"min", "self", reduce_pair},     {"var_mean", "self", reduce_pair}, {"std_mean", "self", reduce_pair},
};

}  // namespace reduction_ops

std::span<const Lowering> reductions() { return reduction_ops::kTable; }

}  // namespace syntorch::graph::lowerings
