// The torch functions a model calls: losses, reductions, elementwise math, comparisons,
// selection and sampling, matrix products, activations, norms, attention.

#include "bindings.hpp"

namespace syntorch::python {

void bind_functions(py::module_& m) {
  using torch::Tensor;
  m.def("cross_entropy", [](const Tensor& input, const Tensor& target) {
    return torch::nn::functional::cross_entropy(input, target);
  }, py::call_guard<RequireRun>());
  m.def("nll_loss", [](const Tensor& input, const Tensor& target) {
    return torch::nn::functional::nll_loss(input, target);
  }, py::call_guard<RequireRun>());
  m.def("mean", [](const Tensor& x, std::optional<std::vector<std::int64_t>> dims, bool keepdim) {
    return dims ? torch::mean(x, sizes_of(*dims), keepdim) : torch::mean(x);
  }, py::arg("input"), py::arg("dim") = py::none(), py::arg("keepdim") = false, py::call_guard<RequireRun>());
  m.def("sum", [](const Tensor& x, std::optional<std::vector<std::int64_t>> dims, bool keepdim) {
    return dims ? torch::sum(x, sizes_of(*dims), keepdim) : torch::sum(x);
  }, py::arg("input"), py::arg("dim") = py::none(), py::arg("keepdim") = false, py::call_guard<RequireRun>());
  m.def("exp", &torch::exp, py::call_guard<RequireRun>());
  m.def("sqrt", &torch::sqrt, py::arg("input"), py::call_guard<RequireRun>());
  m.def("rsqrt", &torch::rsqrt, py::arg("input"), py::call_guard<RequireRun>());
  m.def("sin", &torch::sin, py::arg("input"), py::call_guard<RequireRun>());
  m.def("cos", &torch::cos, py::arg("input"), py::call_guard<RequireRun>());
  m.def("abs", &torch::abs, py::arg("input"), py::call_guard<RequireRun>());
  m.def("_pow", py::overload_cast<const Tensor&, double>(&torch::pow), py::call_guard<RequireRun>());
  m.def("_rpow", py::overload_cast<double, const Tensor&>(&torch::pow), py::call_guard<RequireRun>());
  m.def("polar", &torch::polar, py::arg("abs"), py::arg("angle"), py::call_guard<RequireRun>());
  m.def("view_as_complex", &torch::view_as_complex, py::arg("input"), py::call_guard<RequireRun>());
  m.def("view_as_real", &torch::view_as_real, py::arg("input"), py::call_guard<RequireRun>());
  // Comparisons (tensor or number), selection, masking, sampling.
#define SYNTORCH_BIND_COMPARE(name)                                                                       \
  m.def(#name, [](const Tensor& a, const Tensor& b) { return torch::name(a, b); }, py::call_guard<RequireRun>()); \
  m.def(#name, [](const Tensor& a, double b) { return torch::name(a, b); }, py::call_guard<RequireRun>());
  SYNTORCH_BIND_COMPARE(eq)
  SYNTORCH_BIND_COMPARE(ne)
  SYNTORCH_BIND_COMPARE(lt)
  SYNTORCH_BIND_COMPARE(le)
  SYNTORCH_BIND_COMPARE(gt)
  SYNTORCH_BIND_COMPARE(ge)
#undef SYNTORCH_BIND_COMPARE
  m.def("where", &torch::where, py::call_guard<RequireRun>());
  m.def("masked_fill", &torch::masked_fill, py::call_guard<RequireRun>());
  m.def("masked_fill_", &torch::masked_fill_, py::return_value_policy::reference, py::call_guard<RequireRun>());
  m.def("tril", &torch::tril, py::arg("input"), py::arg("diagonal") = 0, py::call_guard<RequireRun>());
  m.def("triu", &torch::triu, py::arg("input"), py::arg("diagonal") = 0, py::call_guard<RequireRun>());
  m.def("index_select", &torch::index_select, py::arg("input"), py::arg("dim"), py::arg("index"),
        py::call_guard<RequireRun>());
  m.def("index_copy_", &torch::index_copy_, py::return_value_policy::reference, py::call_guard<RequireRun>());
  m.def("_index", &torch::index, py::call_guard<RequireRun>());
  m.def("_index_put_", &torch::index_put_, py::return_value_policy::reference, py::call_guard<RequireRun>());
  m.def("_tensor", [](const std::vector<std::int64_t>& values, const std::string& dev) {
    return torch::tensor(values, options_of(torch::kInt64, dev));
  }, py::call_guard<RequireRun>());
  m.def("multinomial", &torch::multinomial, py::arg("input"), py::arg("num_samples"), py::arg("replacement") = false,
        py::call_guard<RequireRun>());
  m.def("topk", [](const Tensor& x, std::int64_t k, std::int64_t dim, bool largest, bool sorted) {
    auto [values, indices] = torch::topk(x, k, dim, largest, sorted);
    return py::make_tuple(values, indices);
  }, py::arg("input"), py::arg("k"), py::arg("dim") = -1, py::arg("largest") = true, py::arg("sorted") = true,
     py::call_guard<RequireRun>());
  m.def("log", &torch::log, py::call_guard<RequireRun>());
  m.def("clamp", &torch::clamp, py::arg("input"), py::arg("min") = py::none(), py::arg("max") = py::none(),
        py::call_guard<RequireRun>());
  m.def("clip_grad_norm_", &torch::nn::utils::clip_grad_norm_, py::arg("parameters"), py::arg("max_norm"),
        py::arg("norm_type") = 2.0, py::call_guard<RequireRun>());
  m.def("matmul", &torch::matmul, py::call_guard<RequireRun>());
  m.def("mm", &torch::mm, py::call_guard<RequireRun>());
  m.def("bmm", &torch::bmm, py::call_guard<RequireRun>());
  m.def("add", [](const Tensor& a, const Tensor& b) { return torch::add(a, b); }, py::call_guard<RequireRun>());
  m.def("sub", [](const Tensor& a, const Tensor& b) { return torch::sub(a, b); }, py::call_guard<RequireRun>());
  m.def("mul", [](const Tensor& a, const Tensor& b) { return torch::mul(a, b); }, py::call_guard<RequireRun>());
  m.def("div", [](const Tensor& a, const Tensor& b) { return torch::div(a, b); }, py::call_guard<RequireRun>());
  m.def("gelu", &torch::gelu, py::arg("input"), py::arg("approximate") = "none", py::call_guard<RequireRun>());
  m.def("relu", &torch::relu, py::call_guard<RequireRun>());
  m.def("silu", &torch::silu, py::call_guard<RequireRun>());
  m.def("tanh", &torch::tanh, py::call_guard<RequireRun>());
  m.def("sigmoid", &torch::sigmoid, py::call_guard<RequireRun>());
  m.def("softmax", &torch::softmax, py::arg("input"), py::arg("dim"), py::arg("dtype") = py::none(), py::call_guard<RequireRun>());
  m.def("log_softmax", &torch::log_softmax, py::arg("input"), py::arg("dim"), py::arg("dtype") = py::none(), py::call_guard<RequireRun>());
  m.def("_layer_norm", [](const Tensor& x, const std::vector<std::int64_t>& shape, std::optional<Tensor> w,
                          std::optional<Tensor> b, double eps) {
    return torch::layer_norm(x, sizes_of(shape), w.value_or(Tensor()), b.value_or(Tensor()), eps);
  }, py::call_guard<RequireRun>());
  m.def("_rms_norm", [](const Tensor& x, const std::vector<std::int64_t>& shape, std::optional<Tensor> w,
                        std::optional<double> eps) {
    return torch::rms_norm(x, sizes_of(shape), w.value_or(Tensor()), eps);
  }, py::call_guard<RequireRun>());
  m.def("linear", [](const Tensor& x, const Tensor& w, std::optional<Tensor> b) {
    return torch::nn::functional::linear(x, w, b.value_or(Tensor()));
  }, py::arg("input"), py::arg("weight"), py::arg("bias") = py::none(), py::call_guard<RequireRun>());
  m.def("_pad", [](const Tensor& input, const std::vector<std::int64_t>& pad, double value) {
    return torch::nn::functional::pad(input, sizes_of(pad), value);
  }, py::call_guard<RequireRun>());
  m.def("embedding", [](const Tensor& indices, const Tensor& weight) { return torch::embedding(weight, indices); }, py::call_guard<RequireRun>());
  m.def("dropout", &torch::dropout, py::arg("input"), py::arg("p") = 0.5, py::arg("train") = true, py::call_guard<RequireRun>());
  m.def("argmax", &torch::argmax, py::arg("input"), py::arg("dim") = py::none(), py::arg("keepdim") = false, py::call_guard<RequireRun>());
  m.def("cat", &torch::cat, py::arg("tensors"), py::arg("dim") = 0, py::call_guard<RequireRun>());
  m.def("stack", &torch::stack, py::arg("tensors"), py::arg("dim") = 0, py::call_guard<RequireRun>());
  using Ints = std::vector<std::int64_t>;
  m.def("_max_pool", [](const Tensor& x, const Ints& kernel, const Ints& stride, const Ints& padding,
                        const Ints& dilation, bool ceil_mode) {
    return torch::max_pool(x, sizes_of(kernel), sizes_of(stride), sizes_of(padding), sizes_of(dilation), ceil_mode);
  }, py::call_guard<RequireRun>());
  m.def("_avg_pool", [](const Tensor& x, const Ints& kernel, const Ints& stride, const Ints& padding, bool ceil_mode) {
    return torch::avg_pool(x, sizes_of(kernel), sizes_of(stride), sizes_of(padding), ceil_mode);
  }, py::call_guard<RequireRun>());
  m.def("_adaptive_avg_pool", [](const Tensor& x, const Ints& size) { return torch::adaptive_avg_pool(x, sizes_of(size)); },
        py::call_guard<RequireRun>());
  m.def("_upsample", [](const Tensor& x, const Ints& size, const std::string& mode) {
    return torch::upsample(x, sizes_of(size), mode);
  }, py::call_guard<RequireRun>());
  m.def("_group_norm", [](const Tensor& x, std::int64_t groups, std::optional<Tensor> w, std::optional<Tensor> b,
                          double eps) { return torch::group_norm(x, groups, w.value_or(Tensor()), b.value_or(Tensor()), eps); },
        py::call_guard<RequireRun>());
  m.def("scaled_dot_product_attention",
        [](const Tensor& q, const Tensor& k, const Tensor& v, std::optional<Tensor> attn_mask, double dropout_p,
           bool is_causal, std::optional<double> scale, bool enable_gqa) {
          return torch::scaled_dot_product_attention(q, k, v, attn_mask.value_or(Tensor()), dropout_p, is_causal,
                                                     scale, enable_gqa);
        },
        py::arg("query"), py::arg("key"), py::arg("value"), py::arg("attn_mask") = py::none(),
        py::arg("dropout_p") = 0.0, py::arg("is_causal") = false, py::arg("scale") = py::none(),
        py::arg("enable_gqa") = false, py::call_guard<RequireRun>());
}

}  // namespace syntorch::python
