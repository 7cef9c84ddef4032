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
