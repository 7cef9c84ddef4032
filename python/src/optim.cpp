// Training's other pieces: optimizers, autocast, loss scaling and record_function scopes.

#include "bindings.hpp"

#include "syntorch/torch/optim.hpp"

namespace syntorch::python {

namespace {
using AutocastScope = PyScope<torch::autocast::AutocastMode, torch::ScalarType, bool, bool>;
using RecordScope = PyScope<torch::RecordScope, std::string>;
}  // namespace

void bind_optim(py::module_& m) {
  using torch::Tensor;
  namespace optim = torch::optim;
  py::class_<optim::Optimizer>(m, "_Optimizer")
      .def("step", &optim::Optimizer::step, py::call_guard<RequireRun>())
      .def("zero_grad", &optim::Optimizer::zero_grad, py::arg("set_to_none") = true, py::call_guard<RequireRun>())
      .def("state_bytes", &optim::Optimizer::state_bytes)
      .def("_state_tensors", [](const optim::Optimizer& o) {
        std::vector<std::vector<std::optional<Tensor>>> out;
        for (const auto& slot : o.state_tensors()) {
          auto& row = out.emplace_back();
          for (const Tensor& t : slot) row.push_back(t.defined() ? std::optional<Tensor>(t) : std::nullopt);
        }
        return out;
      })
      .def_property_readonly("supports_amp_scaling", &optim::Optimizer::supports_amp_scaling);
  py::class_<optim::SGD, optim::Optimizer>(m, "_SGD")
      .def(py::init([](std::vector<Tensor> params, double lr, double momentum, double weight_decay, bool foreach,
                       bool fused) {
        return std::make_unique<optim::SGD>(std::move(params), optim::SGDOptions(lr).momentum(momentum)
                                                                   .weight_decay(weight_decay).foreach(foreach)
                                                                   .fused(fused));
      }));
  py::class_<optim::Adam, optim::Optimizer>(m, "_Adam")
      .def(py::init([](std::vector<Tensor> params, double lr, double beta1, double beta2, double eps,
                       double weight_decay, bool foreach, bool fused, bool decoupled) -> std::unique_ptr<optim::Adam> {
        const auto o = optim::AdamOptions(lr).betas(beta1, beta2).eps(eps).weight_decay(weight_decay)
                           .foreach(foreach).fused(fused);
        if (decoupled) return std::make_unique<optim::AdamW>(std::move(params), o);
        return std::make_unique<optim::Adam>(std::move(params), o);
      }));

  py::class_<AutocastScope>(m, "_Autocast")
      .def(py::init<torch::ScalarType, bool, bool>())
      .def("__enter__", &AutocastScope::enter)
      .def("__exit__", [](AutocastScope& s, py::args) { s.exit(); return false; });
  m.def("is_autocast_enabled", &torch::autocast::is_autocast_enabled);
  py::class_<RecordScope>(m, "_RecordScope")
      .def(py::init<std::string>())
      .def("__enter__", &RecordScope::enter, py::call_guard<RequireRun>())
      .def("__exit__", [](RecordScope& s, py::args) { s.exit(); return false; });
  m.def("get_autocast_dtype", &torch::autocast::get_autocast_dtype);

  py::class_<torch::amp::GradScaler>(m, "_GradScaler")
      .def(py::init([](double init_scale, double growth_factor, double backoff_factor, std::int64_t growth_interval,
                       bool enabled) {
        return std::make_unique<torch::amp::GradScaler>(torch::amp::GradScalerOptions()
                                                            .init_scale(init_scale).growth_factor(growth_factor)
                                                            .backoff_factor(backoff_factor)
                                                            .growth_interval(growth_interval).enabled(enabled));
      }))
      .def("scale", &torch::amp::GradScaler::scale, py::call_guard<RequireRun>())
      .def("unscale_", &torch::amp::GradScaler::unscale_, py::call_guard<RequireRun>())
      .def("step", &torch::amp::GradScaler::step, py::call_guard<RequireRun>())
      .def("update", &torch::amp::GradScaler::update, py::call_guard<RequireRun>())
      .def("get_scale", &torch::amp::GradScaler::get_scale, py::call_guard<RequireRun>())
      .def("is_enabled", &torch::amp::GradScaler::is_enabled);
}

}  // namespace syntorch::python
