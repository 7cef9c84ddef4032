// ATen's ops below autograd (syntorch/torch/aten.hpp), as the bridge from real PyTorch calls them:
// underscore names, each taking the mirrored tensors and the op's plain arguments.
#include "bindings.hpp"

namespace syntorch::python {

using torch::Tensor;

void bind_aten(py::module_& m) {
  m.def("_aten_as_strided", [](const Tensor& self, const std::vector<std::int64_t>& sizes,
                               const std::vector<std::int64_t>& strides, std::int64_t offset, const std::string& name) {
    return torch::aten::as_strided(self, sizes_of(sizes), sizes_of(strides), offset, name);
  }, py::call_guard<RequireRun>());
  m.def("_aten_addmm", &torch::addmm, py::call_guard<RequireRun>());
  m.def("_aten_activation_backward", [](const std::string& forward, const Tensor& grad, const Tensor& saved,
                                        const std::string& name) {
    return torch::aten::activation_backward(forward, grad, saved, name);
  }, py::call_guard<RequireRun>());
  m.def("_aten_softmax_backward", &torch::aten::softmax_backward, py::call_guard<RequireRun>());
  m.def("_aten_layer_norm_backward", [](const Tensor& grad, const Tensor& input, std::int64_t normalized_dims,
                                        std::optional<Tensor> weight, std::optional<Tensor> bias,
                                        std::array<bool, 3> mask, bool rms) {
    auto [dx, dw, db] = torch::aten::native_layer_norm_backward(grad, input, normalized_dims, weight.value_or(Tensor()),
                                                                 bias.value_or(Tensor()), mask, rms);
    auto opt = [](const Tensor& t) { return t.defined() ? std::optional<Tensor>(t) : std::nullopt; };
    return std::make_tuple(opt(dx), opt(dw), opt(db));
  }, py::call_guard<RequireRun>());
  m.def("_aten_attention_backward", &torch::aten::attention_backward, py::call_guard<RequireRun>());
  auto opt = [](const Tensor& t) { return t.defined() ? std::optional<Tensor>(t) : std::nullopt; };
  m.def("_set_cudnn_allow_tf32", &torch::set_cudnn_allow_tf32);
  m.def("_get_cudnn_allow_tf32", &torch::get_cudnn_allow_tf32);
  m.def("_aten_convolution", [](const Tensor& input, const Tensor& weight, std::optional<Tensor> bias,
                                const std::vector<std::int64_t>& stride, const std::vector<std::int64_t>& padding,
                                const std::vector<std::int64_t>& dilation, bool transposed,
                                const std::vector<std::int64_t>& output_padding, std::int64_t groups) {
    return torch::convolution(input, weight, bias.value_or(Tensor()), sizes_of(stride), sizes_of(padding),
                              sizes_of(dilation), transposed, sizes_of(output_padding), groups);
  }, py::call_guard<RequireRun>());
  m.def("_aten_convolution_backward", [opt](const Tensor& grad, const Tensor& input, const Tensor& weight,
                                            const std::vector<std::int64_t>& stride,
                                            const std::vector<std::int64_t>& padding,
                                            const std::vector<std::int64_t>& dilation, bool transposed,
                                            const std::vector<std::int64_t>& output_padding, std::int64_t groups,
                                            std::array<bool, 3> mask) {
    auto [dx, dw, db] = torch::aten::convolution_backward(grad, input, weight, sizes_of(stride), sizes_of(padding),
                                                          sizes_of(dilation), transposed, sizes_of(output_padding),
                                                          groups, mask);
    return std::make_tuple(opt(dx), opt(dw), opt(db));
  }, py::call_guard<RequireRun>());
  m.def("_aten_batch_norm", [](const Tensor& input, std::optional<Tensor> weight, std::optional<Tensor> bias,
                               std::optional<Tensor> running_mean, std::optional<Tensor> running_var, bool training,
                               double momentum, double eps) {
    return torch::batch_norm(input, weight.value_or(Tensor()), bias.value_or(Tensor()),
                             running_mean.value_or(Tensor()), running_var.value_or(Tensor()), training, momentum, eps);
  }, py::call_guard<RequireRun>());
  m.def("_aten_batch_norm_backward", [opt](const Tensor& grad, const Tensor& input, std::optional<Tensor> weight,
                                           std::array<bool, 3> mask) {
    auto [dx, dw, db] = torch::aten::native_batch_norm_backward(grad, input, weight.value_or(Tensor()), mask);
    return std::make_tuple(opt(dx), opt(dw), opt(db));
  }, py::call_guard<RequireRun>());
  m.def("_aten_nll_loss_backward", &torch::aten::nll_loss_backward, py::call_guard<RequireRun>());
  m.def("_aten_embedding_backward", &torch::aten::embedding_dense_backward, py::call_guard<RequireRun>());
  m.def("_aten_reduce", [](const Tensor& self, const std::vector<std::int64_t>& out_sizes, torch::ScalarType dtype,
                           const std::string& name) {
    return torch::aten::reduce(self, sizes_of(out_sizes), dtype, name);
  }, py::call_guard<RequireRun>());
  // outputs: (sizes, dtype) pairs.
  m.def("_aten_memory_bound", [](const std::string& name, const std::vector<Tensor>& inputs,
                                 const std::vector<std::pair<std::vector<std::int64_t>, torch::ScalarType>>& outputs,
                                 const std::vector<Tensor>& written) {
    std::vector<torch::aten::OutputSpec> specs;
    specs.reserve(outputs.size());
    for (const auto& [sizes, dtype] : outputs) specs.push_back({sizes, dtype});
    return torch::aten::memory_bound(name, inputs, specs, written);
  }, py::call_guard<RequireRun>());
}

}  // namespace syntorch::python
