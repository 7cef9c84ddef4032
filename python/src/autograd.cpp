// Autograd from Python: grad mode, backward, torch.utils.checkpoint and module parameters.

#include "bindings.hpp"

#include <set>

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
  m.def("autograd_grad", [](const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                            std::optional<std::vector<Tensor>> grad_outputs, bool retain_graph, bool allow_unused) {
    const std::vector<Tensor> grads =
        torch::autograd::grad(outputs, inputs, grad_outputs.value_or(std::vector<Tensor>{}), retain_graph, allow_unused);
    py::list out;  // None for an input nothing reached (allow_unused)
    for (const Tensor& g : grads) out.append(g.defined() ? py::cast(g) : py::none());
    return out;
  }, py::arg("outputs"), py::arg("inputs"), py::arg("grad_outputs"), py::arg("retain_graph"),
        py::arg("allow_unused"), py::call_guard<RequireRun>());
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
  // torch.autograd.Function: `outputs` (made by the Python forward with grad mode off) become the
  // outputs of a node over `inputs` whose backward calls `backward` (Python: a list of output
  // gradients, None where undefined, to one gradient or None per input). Node names must outlive
  // the graph: interned.
  m.def("_record_function", [](const std::string& name, const std::vector<Tensor>& inputs, std::vector<Tensor> outputs,
                               std::vector<Tensor> saved, const py::function& backward) {
    static std::set<std::string> names;  // guarded by the interpreter's lock
    const std::string& interned = *names.insert(name).first;
    std::shared_ptr<py::function> held(new py::function(backward), [](py::function* f) {
      py::gil_scoped_acquire gil;
      delete f;
    });
    std::vector<const Tensor*> in;
    for (const Tensor& t : inputs) in.push_back(&t);
    std::vector<Tensor*> out;
    for (Tensor& t : outputs) out.push_back(&t);
    const std::size_t n_inputs = inputs.size();
    // The saved tensors travel in the node (without their history, so that an output saved for
    // backward does not keep its own node alive), not in the Python function.
    torch::autograd::record(interned, in, out, std::move(saved),
                            [held, n_inputs](std::vector<Tensor>& grads, std::vector<Tensor>& kept,
                                             const torch::autograd::Node&) {
      py::gil_scoped_acquire gil;
      py::list g;
      for (const Tensor& t : grads) g.append(t.defined() ? py::cast(t) : py::none());
      std::vector<Tensor> result;
      for (const auto& r : (*held)(g, kept).cast<std::vector<std::optional<Tensor>>>()) {
        result.push_back(r.value_or(Tensor()));
      }
      if (result.size() != n_inputs) {
        throw torch::Error("function backward returned an incorrect number of gradients (expected " +
                           std::to_string(n_inputs) + ", got " + std::to_string(result.size()) + ")");
      }
      return result;
    });
    return outputs;
  }, py::arg("name"), py::arg("inputs"), py::arg("outputs"), py::arg("saved"), py::arg("backward"));
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
