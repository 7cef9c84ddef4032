// Tensors and their dtypes: the torch layer's Tensor bound as it is (views, arithmetic, autograd
// properties), and the factories, which take sizes, a dtype or None and a device name.

#include "bindings.hpp"

namespace syntorch::python {

namespace {
// An in-place op bound under its method name and its augmented operator, for a tensor and a number:
// it returns the tensor it updated (the same Python object).
template <torch::Tensor& (torch::Tensor::*WithTensor)(const torch::Tensor&), torch::Tensor& (torch::Tensor::*WithNumber)(double)>
void bind_in_place(py::class_<torch::Tensor>& tensor, const char* method, const char* augmented) {
  for (const char* name : {method, augmented}) {
    tensor.def(name, [](torch::Tensor& a, const torch::Tensor& b) -> torch::Tensor& { return (a.*WithTensor)(b); },
               py::return_value_policy::reference_internal, py::call_guard<RequireRun>());
    tensor.def(name, [](torch::Tensor& a, double b) -> torch::Tensor& { return (a.*WithNumber)(b); },
               py::return_value_policy::reference_internal, py::call_guard<RequireRun>());
  }
}
// torch.Size, the Python package's tuple subclass (set by it at import; a plain tuple before).
PyObject* g_size_type = nullptr;

// A shape as torch.Size: the tuple of its ints, made an instance of the subclass directly.
py::object size_of(torch::IntArrayRef sizes) {
  py::tuple items(sizes.size());
  for (std::size_t i = 0; i < sizes.size(); ++i) items[i] = py::int_(sizes[i]);
  if (g_size_type == nullptr) return items;
  py::tuple args = py::make_tuple(items);
  PyObject* out = PyTuple_Type.tp_new(reinterpret_cast<PyTypeObject*>(g_size_type), args.ptr(), nullptr);
  if (out == nullptr) throw py::error_already_set();
  return py::reinterpret_steal<py::object>(out);
}
// PyTorch's type promotion of a tensor with a Python number: an integer or bool tensor meets a
// float (or a true division) as the default floating dtype, a bool tensor meets an integer as
// int64; other tensors keep their dtype. The cast is a kernel of its own here (PyTorch promotes
// inside the op's kernel).
bool is_integral_number(const py::handle& b) {
  return PyLong_Check(b.ptr()) || (PyIndex_Check(b.ptr()) && !PyFloat_Check(b.ptr()));
}
torch::Tensor promoted(const torch::Tensor& a, const py::handle& b, bool true_division) {
  const torch::ScalarType t = a.dtype();
  if (torch::is_floating_point(t) || torch::is_complex(t)) return a;
  if (true_division || !is_integral_number(b)) return a.to(torch::get_default_dtype());
  if (t == torch::kBool && !PyBool_Check(b.ptr())) return a.to(torch::kLong);
  return a;
}

// `op(tensor, number)` for a Python number b (NotImplemented for anything else, so that Python
// tries the other operand), with PyTorch's promotion.
template <class Op>
auto with_number(Op op, bool true_division) {
  return [op, true_division](const torch::Tensor& a, const py::object& b) -> py::object {
    if (!PyNumber_Check(b.ptr()) || PyComplex_Check(b.ptr())) {
      return py::reinterpret_borrow<py::object>(Py_NotImplemented);
    }
    const double v = b.cast<double>();
    return py::cast(op(promoted(a, b, true_division), v));
  };
}
}  // namespace

void bind_tensor(py::module_& m) {
  m.def("_set_size_type", [](const py::type& size) {
    if (!PyType_IsSubtype(reinterpret_cast<PyTypeObject*>(size.ptr()), &PyTuple_Type)) {
      throw py::type_error("_set_size_type: expected a subclass of tuple");
    }
    Py_XDECREF(g_size_type);
    g_size_type = size.inc_ref().ptr();
  });
  py::class_<torch::ScalarType>(m, "dtype")
      .def("__repr__", &dtype_repr)
      .def("__str__", &dtype_repr)
      .def("__eq__", [](torch::ScalarType a, torch::ScalarType b) { return a == b; }, py::is_operator())
      .def("__ne__", [](torch::ScalarType a, torch::ScalarType b) { return a != b; }, py::is_operator())
      .def("__hash__", [](torch::ScalarType a) { return static_cast<int>(a); })
      .def_property_readonly("is_floating_point", [](torch::ScalarType t) { return torch::is_floating_point(t); })
      .def_property_readonly("is_complex", [](torch::ScalarType t) { return torch::is_complex(t); })
      .def_property_readonly("itemsize", [](torch::ScalarType t) { return torch::element_bits(t) / 8.0; });
  const std::pair<const char*, torch::ScalarType> dtypes[] = {
      {"float64", torch::kFloat64}, {"double", torch::kFloat64}, {"float32", torch::kFloat32},
      {"float", torch::kFloat32},   {"float16", torch::kFloat16}, {"half", torch::kFloat16},
      {"bfloat16", torch::kBFloat16}, {"float8_e4m3fn", torch::kFloat8_e4m3fn}, {"int8", torch::kInt8}, {"uint8", torch::kUInt8},
      {"int32", torch::kInt32},     {"int", torch::kInt32},     {"int64", torch::kInt64},
      {"long", torch::kInt64},      {"bool", torch::kBool},     {"complex64", torch::kComplexFloat},
      {"cfloat", torch::kComplexFloat}, {"complex128", torch::kComplexDouble}, {"cdouble", torch::kComplexDouble}};
  for (const auto& [name, t] : dtypes) m.attr(name) = t;
  m.def("set_default_dtype", &torch::set_default_dtype);
  m.def("get_default_dtype", &torch::get_default_dtype);

  using torch::Tensor;
  py::class_<Tensor> tensor(m, "Tensor");
  // In place, as PyTorch's: x += y updates x (a view writes through to what it views), one
  // kernel, no new tensor; each by method name and augmented operator, for a tensor or a number.
  bind_in_place<&Tensor::add_, &Tensor::add_>(tensor, "add_", "__iadd__");
  bind_in_place<&Tensor::sub_, &Tensor::sub_>(tensor, "sub_", "__isub__");
  bind_in_place<&Tensor::mul_, &Tensor::mul_>(tensor, "mul_", "__imul__");
  bind_in_place<&Tensor::div_, &Tensor::div_>(tensor, "div_", "__itruediv__");
  tensor
      .def_property_readonly("shape", [](const Tensor& t) { return size_of(t.sizes()); })
      .def_property_readonly("dtype", [](const Tensor& t) { return t.dtype(); })
      .def_property_readonly("_device", [](const Tensor& t) { return t.device().str(); })
      .def_property_readonly("is_cuda", &Tensor::is_cuda)
      .def_property_readonly("ndim", &Tensor::dim)
      .def("size", [](const Tensor& t, std::optional<std::int64_t> dim) -> py::object {
        if (dim) return py::int_(t.size(*dim));
        return size_of(t.sizes());
      }, py::arg("dim") = py::none())
      .def("stride", [](const Tensor& t, std::optional<std::int64_t> dim) -> py::object {
        if (dim) return py::int_(t.stride(*dim));
        return py::tuple(py::cast(t.strides()));
      }, py::arg("dim") = py::none())
      .def("dim", &Tensor::dim)
      .def("numel", &Tensor::numel)
      .def("element_size", &Tensor::element_size)
      .def("is_contiguous", &Tensor::is_contiguous)
      .def("is_floating_point", &Tensor::is_floating_point)
      .def("_view", [](const Tensor& t, const std::vector<std::int64_t>& s) { return t.view(sizes_of(s)); })
      .def("_reshape", [](const Tensor& t, const std::vector<std::int64_t>& s) { return t.reshape(sizes_of(s)); })
      .def("_permute", [](const Tensor& t, const std::vector<std::int64_t>& s) { return t.permute(sizes_of(s)); })
      .def("_expand", [](const Tensor& t, const std::vector<std::int64_t>& s) { return t.expand(sizes_of(s)); })
      .def("view", [](const Tensor& t, const py::args& a) { return t.view(sizes_of(ints_of(a))); })
      .def("reshape", [](const Tensor& t, const py::args& a) { return t.reshape(sizes_of(ints_of(a))); })
      .def("permute", [](const Tensor& t, const py::args& a) { return t.permute(sizes_of(ints_of(a))); })
      .def("expand", [](const Tensor& t, const py::args& a) { return t.expand(sizes_of(ints_of(a))); })
      .def("transpose", &Tensor::transpose)
      .def("t", &Tensor::t)
      .def("flatten", &Tensor::flatten, py::arg("start_dim") = 0, py::arg("end_dim") = -1)
      .def("unsqueeze", &Tensor::unsqueeze)
      .def("squeeze", [](const Tensor& t, std::optional<std::int64_t> dim) { return dim ? t.squeeze(*dim) : t.squeeze(); },
           py::arg("dim") = py::none())
      .def("narrow", &Tensor::narrow)
      .def("_slice", &Tensor::slice)
      .def("_item", [](const Tensor& t) -> py::object {
        // Values are not simulated: the copy to the host and the wait happen, the value is 0
        // (Tensor.item in Python warns or raises as the run's value mode says).
        const double v = t.item<double>();
        if (t.is_floating_point()) return py::float_(v);
        if (t.dtype() == torch::kBool) return py::bool_(false);
        return py::int_(0);
      }, py::call_guard<RequireRun>())
      .def("select", &Tensor::select)
      .def("split", &Tensor::split, py::arg("split_size"), py::arg("dim") = 0)
      .def("split", [](const Tensor& t, const std::vector<std::int64_t>& sizes, std::int64_t dim) {
        return t.split_with_sizes(sizes_of(sizes), dim);
      }, py::arg("split_size"), py::arg("dim") = 0)
      .def("split_with_sizes", [](const Tensor& t, const std::vector<std::int64_t>& sizes, std::int64_t dim) {
        return t.split_with_sizes(sizes_of(sizes), dim);
      }, py::arg("split_sizes"), py::arg("dim") = 0)
      .def("chunk", &Tensor::chunk, py::arg("chunks"), py::arg("dim") = 0)
      .def("contiguous", &Tensor::contiguous, py::call_guard<RequireRun>())
      .def("clone", &Tensor::clone, py::call_guard<RequireRun>())
      .def("_to_dtype", [](const Tensor& t, torch::ScalarType d) { return t.to(d); }, py::call_guard<RequireRun>())
      .def("_to_device", [](const Tensor& t, const std::string& device, bool non_blocking) {
        return t.to(options_of(std::nullopt, device).device(), non_blocking);
      }, py::arg("device"), py::arg("non_blocking") = false, py::call_guard<RequireRun>())
      .def("copy_", &Tensor::copy_, py::arg("src"), py::arg("non_blocking") = false,
           py::return_value_policy::reference_internal, py::call_guard<RequireRun>())
      .def("pin_memory", &Tensor::pin_memory, py::call_guard<RequireRun>())
      .def("is_pinned", &Tensor::is_pinned)
      .def_property_readonly("_storage_id", &Tensor::storage_id)
      .def_property_readonly("_serial", &Tensor::unique_id)
      .def("_watch_release", &Tensor::watch_release)
      .def("storage_offset", &Tensor::storage_offset)
      .def("_as_strided", [](const Tensor& t, const std::vector<std::int64_t>& sizes,
                             const std::vector<std::int64_t>& strides, std::int64_t offset) {
        return torch::aten::as_strided(t, sizes_of(sizes), sizes_of(strides), offset);
      }, py::call_guard<RequireRun>())
      .def("fill_", &Tensor::fill_, py::return_value_policy::reference_internal, py::call_guard<RequireRun>())
      .def("zero_", &Tensor::zero_, py::return_value_policy::reference_internal, py::call_guard<RequireRun>())
      .def("__add__", [](const Tensor& a, const Tensor& b) { return a + b; }, py::call_guard<RequireRun>())
      .def("__add__", with_number([](const Tensor& a, double b) { return a + b; }, false), py::call_guard<RequireRun>())
      .def("__radd__", with_number([](const Tensor& a, double b) { return a + b; }, false),
           py::call_guard<RequireRun>())
      .def("__sub__", [](const Tensor& a, const Tensor& b) { return a - b; }, py::call_guard<RequireRun>())
      .def("__sub__", with_number([](const Tensor& a, double b) { return a - b; }, false), py::call_guard<RequireRun>())
      .def("__mul__", [](const Tensor& a, const Tensor& b) { return a * b; }, py::call_guard<RequireRun>())
      .def("__mul__", with_number([](const Tensor& a, double b) { return a * b; }, false), py::call_guard<RequireRun>())
      .def("__rmul__", with_number([](const Tensor& a, double b) { return a * b; }, false),
           py::call_guard<RequireRun>())
      .def("__truediv__", [](const Tensor& a, const Tensor& b) {
        // True division of two integer tensors is a floating one, as PyTorch's.
        const bool integral = !torch::is_floating_point(a.dtype()) && !torch::is_complex(a.dtype()) &&
                              !torch::is_floating_point(b.dtype()) && !torch::is_complex(b.dtype());
        return integral ? a.to(torch::get_default_dtype()) / b : a / b;
      }, py::call_guard<RequireRun>())
      .def("__truediv__", with_number([](const Tensor& a, double b) { return a / b; }, true),
           py::call_guard<RequireRun>())
      .def("__neg__", [](const Tensor& a) { return a.neg(); }, py::call_guard<RequireRun>())
      .def("__rsub__", with_number([](const Tensor& a, double b) { return b - a; }, false),
           py::call_guard<RequireRun>())
      .def("__rtruediv__", with_number([](const Tensor& a, double b) { return b / a; }, true),
           py::call_guard<RequireRun>())
      .def("__matmul__", [](const Tensor& a, const Tensor& b) { return torch::matmul(a, b); }, py::call_guard<RequireRun>())
      // Autograd.
      .def_property("requires_grad", &Tensor::requires_grad,
                    [](Tensor& t, bool on) { t.requires_grad_(on); })
      .def("requires_grad_", [](Tensor& t, bool on) -> Tensor& { return t.requires_grad_(on); },
           py::arg("requires_grad") = true, py::return_value_policy::reference_internal)
      .def_property("grad", [](const Tensor& t) -> py::object {
        if (!t.grad().defined()) return py::none();
        return py::cast(t.grad());
      }, [](Tensor& t, std::optional<Tensor> g) { t.mutable_grad() = g.value_or(Tensor()); })
      .def_property_readonly("is_leaf", &Tensor::is_leaf)
      .def_property_readonly("grad_fn", [](const Tensor& t) -> py::object {
        auto fn = t.grad_fn();
        if (!fn) return py::none();
        return py::str(std::string(fn->name()));
      })
      .def("backward", [](const Tensor& t, std::optional<Tensor> gradient, bool retain_graph) {
        torch::autograd::backward({t}, gradient ? std::vector<Tensor>{*gradient} : std::vector<Tensor>{}, retain_graph);
      }, py::arg("gradient") = py::none(), py::arg("retain_graph") = false, py::call_guard<RequireRun>())
      .def("detach", &Tensor::detach)
      .def("register_post_accumulate_grad_hook", [](Tensor& t, const py::function& hook) {
        // The hook runs inside backward, on the thread that called it (holding the interpreter).
        t.register_post_accumulate_grad_hook([hook](Tensor& param) { hook(param); });
      })
      .def("__repr__", [](const Tensor& t) {
        std::string s = "tensor(..., size=(";
        for (std::size_t i = 0; i < t.sizes().size(); ++i) s += (i ? ", " : "") + std::to_string(t.sizes()[i]);
        if (t.sizes().size() == 1) s += ",";
        return s + "), dtype=" + dtype_repr(t.dtype()) + ", device='" + t.device().str() + "')";
      });

  m.def("_take_released_watched", &torch::take_released_watched);

  // Factories take sizes, a dtype or None (the default dtype) and a device name.
  using Factory = Tensor (*)(torch::IntArrayRef, torch::TensorOptions);
  const std::pair<const char*, Factory> factories[] = {
      {"_empty", &torch::empty}, {"_zeros", &torch::zeros}, {"_ones", &torch::ones},
      {"_randn", &torch::randn}, {"_rand", &torch::rand}};
  for (const auto& [name, make] : factories) {
    m.def(name, [make = make](const std::vector<std::int64_t>& s, std::optional<torch::ScalarType> dt,
                              const std::string& dev, bool pin_memory) {
      return make(sizes_of(s), options_of(dt, dev).pinned_memory(pin_memory));
    }, py::arg("sizes"), py::arg("dtype"), py::arg("device"), py::arg("pin_memory") = false, py::call_guard<RequireRun>());
  }
  m.def("_randint", [](std::int64_t low, std::int64_t high, const std::vector<std::int64_t>& s,
                       torch::ScalarType dt, const std::string& dev) {
    return torch::randint(low, high, sizes_of(s), options_of(dt, dev));
  }, py::call_guard<RequireRun>());
  m.def("_full", [](const std::vector<std::int64_t>& s, double v, std::optional<torch::ScalarType> dt,
                    const std::string& dev) { return torch::full(sizes_of(s), v, options_of(dt, dev)); }, py::call_guard<RequireRun>());
  m.def("_arange", [](std::int64_t start, std::int64_t end, std::optional<torch::ScalarType> dt, const std::string& dev) {
    return torch::arange(start, end, options_of(dt.value_or(torch::kInt64), dev));
  }, py::call_guard<RequireRun>());
}

}  // namespace syntorch::python
