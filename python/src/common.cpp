// The helpers the bindings share (bindings.hpp).

#include "bindings.hpp"

namespace syntorch::python {

RequireRun::RequireRun() {
  if (!torch::cuda::is_available()) {
    throw torch::Error("syntorch: no run is going on this thread (the last one ended with "
                       "trace_manager.stats(), or the run belongs to another thread); call syntorch.init() or make "
                       "a new tensor to start one");
  }
}

std::vector<std::int64_t> ints_of(const py::args& args) {
  py::sequence items = args;
  if (args.size() == 1 && (py::isinstance<py::tuple>(args[0]) || py::isinstance<py::list>(args[0]))) {
    items = py::reinterpret_borrow<py::sequence>(args[0]);
  }
  std::vector<std::int64_t> out;
  out.reserve(items.size());
  for (py::handle item : items) {
    PyObject* index = PyNumber_Index(item.ptr());
    if (!index) {
      PyErr_Clear();
      throw py::type_error("expected a sequence of integers, got " + py::repr(args).cast<std::string>());
    }
    const long long v = PyLong_AsLongLong(index);
    Py_DECREF(index);
    if (v == -1 && PyErr_Occurred()) throw py::error_already_set();  // too large for 64 bits
    out.push_back(v);
  }
  return out;
}

torch::TensorOptions options_of(std::optional<torch::ScalarType> dtype, const std::string& device) {
  torch::TensorOptions o;
  if (dtype) o = o.dtype(*dtype);
  if (device == "cpu") {
    o = o.device(torch::Device(torch::kCPU));
  } else if (device == "cuda" || device.rfind("cuda:", 0) == 0) {
    o = o.device(torch::Device(torch::kCUDA));
  } else if (device == "meta") {
    o = o.device(torch::Device(torch::kMeta));
  } else {
    throw std::invalid_argument("Expected one of cpu, cuda, meta device type at start of device string: " + device);
  }
  return o;
}

std::string dtype_repr(torch::ScalarType t) {
  switch (t) {
    case torch::ScalarType::Double: return "torch.float64";
    case torch::ScalarType::Float: return "torch.float32";
    case torch::ScalarType::Half: return "torch.float16";
    case torch::ScalarType::BFloat16: return "torch.bfloat16";
    case torch::ScalarType::Float8_e4m3fn: return "torch.float8_e4m3fn";
    case torch::ScalarType::Float4: return "torch.float4_e2m1fn_x2";
    case torch::ScalarType::Char: return "torch.int8";
    case torch::ScalarType::Byte: return "torch.uint8";
    case torch::ScalarType::Int: return "torch.int32";
    case torch::ScalarType::Long: return "torch.int64";
    case torch::ScalarType::Bool: return "torch.bool";
    case torch::ScalarType::ComplexFloat: return "torch.complex64";
    case torch::ScalarType::ComplexDouble: return "torch.complex128";
  }
  return "torch.unknown";
}

}  // namespace syntorch::python
