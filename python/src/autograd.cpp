// Autograd from Python: grad mode, backward, torch.utils.checkpoint and module parameters.

#include "bindings.hpp"

#include "syntorch/parallel/training.hpp"

namespace syntorch::python {

namespace {
using GradModeScope = PyScope<torch::autograd::AutoGradMode, bool>;
}  // namespace

void bind_autograd(py::module_& m) {
  using torch::Tensor;
  m.def("is_grad_enabled", &torch::autograd::GradMode::is_enabled);
  m.def("_set_grad_enabled", &torch::autograd::GradMode::set_enabled);
  py::class_<GradModeScope>(m, "_GradMode")
      .def(py::init<bool>())
      .def("__enter__", &GradModeScope::enter)
      .def("__exit__", [](GradModeScope& s, py::args) { s.exit(); return false; });
  m.def("autograd_backward", [](const std::vector<Tensor>& tensors, std::optional<std::vector<Tensor>> grads,
                                bool retain_graph) {
    torch::autograd::backward(tensors, grads.value_or(std::vector<Tensor>{}), retain_graph);
  }, py::arg("tensors"), py::arg("grad_tensors") = py::none(), py::arg("retain_graph") = false,
     py::call_guard<RequireRun>());
  // torch.utils.checkpoint: `function` (Python, from tensors to tensors) runs without keeping its
  // activations and again in the backward. The autograd node holds the function; it lets go of
  // it under the interpreter's lock, wherever the node dies.
  m.def("_checkpoint", [](const py::function& function, const std::vector<Tensor>& inputs) {
    std::shared_ptr<py::function> held(new py::function(function), [](py::function* f) {
      py::gil_scoped_acquire gil;
      delete f;
    });
    // The function gives a list of tensors and Nones (its other results); a None is an undefined
    // tensor here and None again on the way back.
    const std::vector<Tensor> outs = parallel::checkpoint_outputs(
        [held](const std::vector<Tensor>& in) {
          py::gil_scoped_acquire gil;
          std::vector<Tensor> out;
          for (const auto& o : (*held)(in).cast<std::vector<std::optional<Tensor>>>()) out.push_back(o.value_or(Tensor()));
          return out;
        },
        inputs);
    std::vector<std::optional<Tensor>> back;
    for (const Tensor& t : outs) back.push_back(t.defined() ? std::optional<Tensor>(t) : std::nullopt);
    return back;
  }, py::arg("function"), py::arg("inputs"), py::call_guard<RequireRun>());
  // A module parameter: allocated under weights (memory reports), requiring grad.
  m.def("_parameter", [](const std::vector<std::int64_t>& s, std::optional<torch::ScalarType> dt,
                         const std::string& dev, bool requires_grad) {
    const torch::TensorOptions o = options_of(dt, dev);
    Tensor t;
    if (o.device().is_cuda()) {
      t = torch::parameter_tensor(sizes_of(s), o.dtype(), "Parameter");
    } else {
      t = torch::empty(sizes_of(s), o);
    }
    if (requires_grad && torch::is_floating_point(t.dtype())) t.requires_grad_(true);
    return t;
  }, py::call_guard<RequireRun>());
}

}  // namespace syntorch::python
