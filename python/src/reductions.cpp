// Reductions, scans, sorts, gathers and scatters, and the elementwise maximum, sign, rounding and
// leaky_relu, for syntorch.torch's functions and Tensor methods (python/syntorch/torch/_reductions.py).

#include "bindings.hpp"

namespace syntorch::python {

void bind_reductions(py::module_& m) {
  using torch::Tensor;
  using Dims = std::vector<std::int64_t>;
  const auto guard = py::call_guard<RequireRun>();
  m.def("_amax", [](const Tensor& x, const Dims& dims, bool keepdim) { return torch::amax(x, sizes_of(dims), keepdim); },
        guard);
  m.def("_prod", [](const Tensor& x, const Dims& dims, bool keepdim) { return torch::prod(x, sizes_of(dims), keepdim); },
        guard);
  m.def("_amin", [](const Tensor& x, const Dims& dims, bool keepdim) { return torch::amin(x, sizes_of(dims), keepdim); },
        guard);
  m.def("_max_dim", [](const Tensor& x, std::int64_t dim, bool keepdim) {
    auto [v, i] = torch::max(x, dim, keepdim);
    return py::make_tuple(v, i);
  }, guard);
  m.def("_min_dim", [](const Tensor& x, std::int64_t dim, bool keepdim) {
    auto [v, i] = torch::min(x, dim, keepdim);
    return py::make_tuple(v, i);
  }, guard);
  m.def("_all", [](const Tensor& x, const Dims& dims, bool keepdim) { return torch::all(x, sizes_of(dims), keepdim); },
        guard);
  m.def("_any", [](const Tensor& x, const Dims& dims, bool keepdim) { return torch::any(x, sizes_of(dims), keepdim); },
        guard);
  m.def("_norm", [](const Tensor& x, double p, const Dims& dims, bool keepdim) {
    return torch::norm(x, p, sizes_of(dims), keepdim);
  }, guard);
  m.def("_cumsum", [](const Tensor& x, std::int64_t dim, std::optional<torch::ScalarType> dtype) {
    return torch::cumsum(x, dim, dtype);
  }, guard);
  m.def("_sort", [](const Tensor& x, std::int64_t dim, bool descending) {
    auto [v, i] = torch::sort(x, dim, descending);
    return py::make_tuple(v, i);
  }, guard);
  m.def("_gather", &torch::gather, guard);
  m.def("_scatter_", [](Tensor& x, std::int64_t dim, const Tensor& index, const Tensor& src) {
    return torch::scatter_(x, dim, index, src);
  }, py::return_value_policy::reference_internal, guard);
  m.def("_scatter_value_", [](Tensor& x, std::int64_t dim, const Tensor& index, double value) {
    return torch::scatter_(x, dim, index, value);
  }, py::return_value_policy::reference_internal, guard);
  m.def("_scatter_add_", [](Tensor& x, std::int64_t dim, const Tensor& index, const Tensor& src) {
    return torch::scatter_add_(x, dim, index, src);
  }, py::return_value_policy::reference_internal, guard);
  m.def("_scatter", &torch::scatter, guard);
  m.def("_scatter_add", &torch::scatter_add, guard);
  m.def("_maximum", &torch::maximum, guard);
  m.def("_minimum", &torch::minimum, guard);
  m.def("_sign", &torch::sign, guard);
  m.def("_round", &torch::round, guard);
  m.def("_floor", &torch::floor, guard);
  m.def("_ceil", &torch::ceil, guard);
  m.def("_trunc", &torch::trunc, guard);
  m.def("_leaky_relu", &torch::leaky_relu, guard);
}

}  // namespace syntorch::python
