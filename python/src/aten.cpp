// What the bridge from real PyTorch calls: each ATen op run through the torch layer's ATen lowering
// (_aten_run, with its tally), as_strided for mirrors of strided tensors, convolution and batch
// norm as syntorch.torch's functional layer calls them, and cuDNN's TF32 switch.
#include "bindings.hpp"
#include "syntorch/session/aten_ops.hpp"
#include "syntorch/session/graph_capture.hpp"

namespace syntorch::python {

using torch::Tensor;

namespace {

// An argument of an ATen op as the bridge hands it over: numbers, strings, lists, the torch
// layer's tensors (gathered into `tensors`), and (kind, name) pairs for dtypes, devices, layouts
// and memory formats.
session::AtenValue aten_value(const py::handle& x, std::vector<Tensor>& tensors) {
  using Kind = session::AtenValue::Kind;
  session::AtenValue v;
  if (x.is_none()) return v;
  if (py::isinstance<py::bool_>(x)) {
    v.kind = Kind::boolean;
    v.boolean = x.cast<bool>();
  } else if (py::isinstance<py::int_>(x)) {
    v.kind = Kind::integer;
    v.integer = x.cast<std::int64_t>();
  } else if (py::isinstance<py::float_>(x)) {
    v.kind = Kind::real;
    v.real = x.cast<double>();
  } else if (py::isinstance<py::str>(x)) {
    v.kind = Kind::string;
    v.text = x.cast<std::string>();
  } else if (py::isinstance<Tensor>(x)) {
    v.kind = Kind::tensor;
    v.tensor = static_cast<int>(tensors.size());
    tensors.push_back(x.cast<Tensor>());
  } else if (py::isinstance<py::tuple>(x) && py::len(x) == 2 && py::isinstance<py::str>(x[py::int_(0)]) &&
             py::isinstance<py::str>(x[py::int_(1)])) {
    v.kind = Kind::typed;
    v.typed_kind = x[py::int_(0)].cast<std::string>();
    v.text = x[py::int_(1)].cast<std::string>();
  } else if (py::isinstance<py::list>(x) || py::isinstance<py::tuple>(x)) {
    v.kind = Kind::list;
    for (const py::handle& y : x) v.items.push_back(aten_value(y, tensors));
  } else {
    throw py::type_error("_aten_run: an argument of type " + std::string(py::str(x.get_type().attr("__name__"))) +
                         " cannot be handed to the torch layer");
  }
  return v;
}

}  // namespace

void bind_aten(py::module_& m) {
  // The tally of the ATen ops a bridge ran; summary() as the IR simulation reports it.
  py::class_<session::AtenTally>(m, "_AtenTally")
      .def(py::init<>())
      .def("summary", [](const session::AtenTally& t) {
        return py::module_::import("json").attr("loads")(t.to_json().dump());
      });
  // One ATen op: its overload, its arguments by schema name, the outputs PyTorch made ((sizes,
  // strides, offset, dtype) or None per slot) and what its schema says (the argument it views,
  // those it writes, whether it is a factory); the torch layer's tensor per output slot.
  m.def("_aten_run", [](session::AtenTally& tally, const std::string& op, const py::dict& args, const py::list& outputs,
                        const std::string& view_source, const std::vector<std::string>& written, bool factory) {
    std::vector<Tensor> tensors;
    std::vector<std::pair<std::string, session::AtenValue>> bound;
    for (const auto& [k, v] : args) bound.emplace_back(k.cast<std::string>(), aten_value(v, tensors));
    std::vector<std::optional<session::AtenOutput>> outs;
    for (const py::handle& o : outputs) {
      if (o.is_none()) {
        outs.emplace_back();
        continue;
      }
      const auto [sizes, strides, offset, dtype] =
          o.cast<std::tuple<std::vector<std::int64_t>, std::vector<std::int64_t>, std::int64_t, std::string>>();
      outs.push_back(session::AtenOutput{sizes, strides, offset, dtype});
    }
    const session::AtenForm form{view_source, written, factory};
    std::vector<Tensor> made = session::run_aten_op(tally, op, bound, tensors, outs, form);
    py::list result;
    for (const Tensor& t : made) result.append(t.defined() ? py::cast(t) : py::none());
    return result;
  }, py::call_guard<RequireRun>());
  // A syntorch.torch program's graph as it runs (syntorch.ir.extract_ir).
  py::class_<session::GraphCapture>(m, "_GraphCapture")
      .def(py::init<>())
      .def("add_weight", &session::GraphCapture::add_weight)
      .def("add_input", &session::GraphCapture::add_input)
      .def("start", &session::GraphCapture::start)
      .def("finish", [](session::GraphCapture& c, const std::vector<Tensor>& outputs, const std::string& model) {
        return c.finish(outputs, model).dump();
      })
      .def_property_readonly("constants", &session::GraphCapture::constants);
  m.def("_aten_as_strided", [](const Tensor& self, const std::vector<std::int64_t>& sizes,
                               const std::vector<std::int64_t>& strides, std::int64_t offset, const std::string& name) {
    return torch::aten::as_strided(self, sizes_of(sizes), sizes_of(strides), offset, name);
  }, py::call_guard<RequireRun>());
  m.def("_set_cudnn_allow_tf32", &torch::set_cudnn_allow_tf32);
  m.def("_get_cudnn_allow_tf32", &torch::get_cudnn_allow_tf32);
  m.def("_aten_convolution", [](const Tensor& input, const Tensor& weight, std::optional<Tensor> bias,
                                const std::vector<std::int64_t>& stride, const std::vector<std::int64_t>& padding,
                                const std::vector<std::int64_t>& dilation, bool transposed,
                                const std::vector<std::int64_t>& output_padding, std::int64_t groups) {
    return torch::convolution(input, weight, bias.value_or(Tensor()), sizes_of(stride), sizes_of(padding),
                              sizes_of(dilation), transposed, sizes_of(output_padding), groups);
  }, py::call_guard<RequireRun>());
  m.def("_aten_batch_norm", [](const Tensor& input, std::optional<Tensor> weight, std::optional<Tensor> bias,
                               std::optional<Tensor> running_mean, std::optional<Tensor> running_var, bool training,
                               double momentum, double eps) {
    return torch::batch_norm(input, weight.value_or(Tensor()), bias.value_or(Tensor()),
                             running_mean.value_or(Tensor()), running_var.value_or(Tensor()), training, momentum, eps);
  }, py::call_guard<RequireRun>());
}

}  // namespace syntorch::python
