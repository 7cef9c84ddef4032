// _syntorch: the C++ simulator behind `import syntorch.torch as torch`. A Session loads a machine
// and attaches a one-rank engine to the Python thread; the torch layer's Tensor and functions are
// bound as they are, so a Python program issues the same ops a C++ one does. The Python package
// (python/syntorch) gives them PyTorch's module layout, and nn.Module its Python form.

#include <pybind11/functional.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <map>
#include <memory>
#include <optional>
#include <tuple>
#include <string>
#include <vector>

#include "syntorch/base/diagnostics.hpp"
#include "syntorch/hw/machine.hpp"
#include "syntorch/os/host_thread.hpp"
#include "syntorch/runtime/engine.hpp"
#include "syntorch/torch/torch.hpp"
#include "syntorch/trace/recorder.hpp"
#include "syntorch/hw/config_loader.hpp"
#include "syntorch/trace/open_trace_writer.hpp"
#include "syntorch/trace/console_summary.hpp"

#include <sstream>
#include "syntorch/torch/optim.hpp"
#include "syntorch/parallel/distributed.hpp"
#include "syntorch/parallel/training.hpp"

namespace py = pybind11;
using namespace syntorch;

namespace {

// What a run from Python is made of, checked whole before any run starts: the machine (with
// its --set overrides), the kernel policy, the engine's options and the recorder (a trace file,
// the console summary of every op and kernel by name, or both). Not movable: the options point
// at the recorder.
struct RunSetup {
  RunSetup(const std::string& hw, const std::vector<std::string>& sets, const std::string& framework,
           const std::string& trace_path, const std::string& policy_text, bool console) {
    Diagnostics d;
    const std::vector<hw::Override> overrides = hw::parse_overrides(sets, d);
    if (!d.empty()) throw InputError(std::move(d));
    machine = std::make_unique<hw::Machine>(hw::Machine::load(hw, overrides));
    if (framework != "eager" && framework != "native") {
      throw std::invalid_argument("framework must be \"eager\" or \"native\", got \"" + framework + "\"");
    }
    options.framework = framework == "eager" ? runtime::Framework::eager : runtime::Framework::native;
    Diagnostics pd;
    policy = runtime::KernelPolicy::load(policy_text, pd, "policy");
    if (!pd.empty()) throw InputError(std::move(pd));
    if (!trace_path.empty()) recorder.attach(trace::open_trace_writer(trace_path, std::nullopt));
    if (console) recorder.attach(std::make_unique<trace::ConsoleSummary>(console_text, 12));
    if (recorder.enabled()) options.recorder = &recorder;
  }
  RunSetup(const RunSetup&) = delete;
  RunSetup& operator=(const RunSetup&) = delete;

  std::unique_ptr<hw::Machine> machine;
  runtime::KernelPolicy policy;
  runtime::EngineOptions options;
  std::ostringstream console_text;  // before the recorder, which writes to it when it finishes
  trace::Recorder recorder;
};

// The summary of a finished run, as trace_manager.stats() returns it: totals over the ranks,
// per-rank peak memory, rank 0's top-level record_function spans.
py::dict run_stats(const runtime::EngineResult& r, const hw::Machine& machine) {
  py::dict out;
  out["simulated_time_s"] = static_cast<double>(r.end_ps) * 1e-12;
  std::uint64_t kernels = 0;
  double flops = 0, hbm = 0;
  py::list peaks;
  for (const auto& rank : r.ranks) {
    kernels += rank.kernels;
    flops += rank.flops;
    hbm += rank.hbm_bytes;
    peaks.append(rank.memory.peak_allocated_bytes);
  }
  out["kernels"] = kernels;
  out["flops"] = flops;
  out["hbm_bytes"] = hbm;
  out["peak_memory_bytes"] = peaks;
  out["events"] = r.events;
  out["out_of_memory"] = r.oom.has_value();
  out["device"] = machine.devices().empty() ? "" : machine.devices()[0].name;
  out["machine"] = machine.name();
  py::list steps;
  if (!r.ranks.empty()) {
    for (const auto& s : r.ranks[0].steps) {
      py::dict d;
      d["name"] = s.name;
      d["begin_s"] = static_cast<double>(s.begin_ps) * 1e-12;
      d["end_s"] = static_cast<double>(s.end_ps) * 1e-12;
      steps.append(d);
    }
  }
  out["steps"] = steps;
  return out;
}

// One simulated run: its setup, and the engine the Python thread is attached to.
class Session {
 public:
  Session(const std::string& hw, const std::vector<std::string>& sets, const std::string& framework,
          const std::string& trace, const std::string& policy_text, bool console)
      : setup_(hw, sets, framework, trace, policy_text, console),
        engine_(std::make_unique<runtime::Engine>(*setup_.machine, setup_.policy, 1, setup_.options)) {
    engine_->attach();
  }

  // Ends the program, waits for the simulation and returns what it measured.
  py::dict finish() {
    if (!result_ && !error_) {
      try {
        py::gil_scoped_release release;  // the simulation touches no Python object
        result_ = engine_->detach();
        setup_.recorder.finish();
      } catch (...) {
        error_ = std::current_exception();  // the run is over either way
      }
    }
    if (error_) std::rethrow_exception(error_);
    return run_stats(*result_, *setup_.machine);
  }

  bool finished() const { return result_.has_value() || error_ != nullptr; }
  std::string console() const { return setup_.console_text.str(); }

 private:
  RunSetup setup_;
  std::unique_ptr<runtime::Engine> engine_;
  std::optional<runtime::EngineResult> result_;
  std::exception_ptr error_;  // why finishing failed
};

// Many ranks from Python: each rank's program is a Python call on a thread of its own, holding
// the interpreter's lock while it runs Python and giving it up whenever its queue or the gate
// makes it wait (os::set_thread_blocking_hooks); the simulation runs on the caller's thread.
// Per thread: PyEval_SaveThread and PyEval_RestoreThread pair up on the thread that waits.
thread_local PyThreadState* t_saved_state = nullptr;
void release_interpreter() { t_saved_state = PyEval_SaveThread(); }
void reacquire_interpreter() {
  PyEval_RestoreThread(t_saved_state);
  t_saved_state = nullptr;
}

py::dict run_ranks(const std::string& hw, const std::vector<std::string>& sets, const std::string& framework,
                   const std::string& trace_path, const std::string& policy_text, bool console, int world,
                   const py::function& program, bool mirror) {
  RunSetup setup(hw, sets, framework, trace_path, policy_text, console);
  // Identical ranks simulated once: rank 0's program stands for every rank, which joins its
  // collectives (runtime::EngineOptions::mirror_of).
  if (mirror) setup.options.mirror_of.assign(static_cast<std::size_t>(std::max(world, 0)), 0);
  runtime::Engine engine(*setup.machine, setup.policy, world, setup.options);
  runtime::EngineResult result;
  {
    py::gil_scoped_release release;
    result = engine.run([&](runtime::RankContext& ctx) {
      py::gil_scoped_acquire gil;
      os::set_thread_blocking_hooks({&release_interpreter, &reacquire_interpreter});
      struct Reset {
        ~Reset() { os::set_thread_blocking_hooks({}); }
      } reset;
      try {
        program(ctx.rank());
      } catch (py::error_already_set& e) {
        // A simulated OOM is a result (the rank holds its report); anything else fails the run,
        // naming the rank. The Python error goes here, with the interpreter's lock held.
        if (e.matches(py::module_::import("_syntorch").attr("OutOfMemoryError"))) return;
        throw std::runtime_error("rank " + std::to_string(ctx.rank()) + ": " + e.what());
      }
    });
  }
  setup.recorder.finish();
  py::dict out = run_stats(result, *setup.machine);
  out["console"] = setup.console_text.str();
  return out;
}

// Ops launch on the run attached to this thread: without one (the run ended with stats(), or
// another thread) they would silently run nowhere, so they refuse.
struct RequireRun {
  RequireRun() {
    if (!runtime::current_rank()) {
      throw torch::Error("syntorch: no run is going on this thread (the last one ended with "
                         "trace_manager.stats(), or the run belongs to another thread); call syntorch.init() or make "
                         "a new tensor to start one");
    }
  }
};

torch::IntArrayRef sizes_of(const std::vector<std::int64_t>& v) { return torch::IntArrayRef(v); }

// PyTorch's *size or (size,) arguments (view(2, 3), view((2, 3)), view(torch.Size)): integers,
// numpy's included (operator.index); a TypeError naming what came otherwise. Parsed here, not in
// Python: views are the most frequent calls a model makes.
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
  } else {
    throw std::invalid_argument("Expected one of cpu, cuda device type at start of device string: " + device);
  }
  return o;
}

// A scope object for Python's `with`: the C++ guard made on __enter__, dropped on __exit__.
template <class Guard, class... Args>
class PyScope {
 public:
  explicit PyScope(Args... args) : args_(std::move(args)...) {}
  void enter() {
    if (guard_) throw std::logic_error("this context is already entered");
    guard_ = std::apply([](auto&&... a) { return std::make_unique<Guard>(a...); }, args_);
  }
  void exit() { guard_.reset(); }

 private:
  std::tuple<Args...> args_;
  std::unique_ptr<Guard> guard_;
};
using AutocastScope = PyScope<torch::autocast::AutocastMode, torch::ScalarType, bool, bool>;
using GradModeScope = PyScope<torch::autograd::AutoGradMode, bool>;
using RecordScope = PyScope<torch::RecordScope, std::string>;

std::string dtype_repr(torch::ScalarType t) {
  switch (t) {
    case torch::ScalarType::Double: return "torch.float64";
    case torch::ScalarType::Float: return "torch.float32";
    case torch::ScalarType::Half: return "torch.float16";
    case torch::ScalarType::BFloat16: return "torch.bfloat16";
    case torch::ScalarType::Float8_e4m3fn: return "torch.float8_e4m3fn";
    case torch::ScalarType::Float4: return "torch.float4_e2m1fn_x2";
    case torch::ScalarType::Char: return "torch.int8";
    case torch::ScalarType::Int: return "torch.int32";
    case torch::ScalarType::Long: return "torch.int64";
    case torch::ScalarType::Bool: return "torch.bool";
    case torch::ScalarType::ComplexFloat: return "torch.complex64";
    case torch::ScalarType::ComplexDouble: return "torch.complex128";
  }
  return "torch.unknown";
}

}  // namespace

PYBIND11_MODULE(_syntorch, m) {
  m.doc() = "syntorch's simulator, bound for the syntorch Python package";

  // Errors of PyTorch's kind: shape and argument errors are RuntimeError, a simulated OOM is
  // torch.cuda.OutOfMemoryError (a RuntimeError), bad configs and flags ValueError.
  static py::exception<runtime::OutOfMemory> oom(m, "OutOfMemoryError", PyExc_RuntimeError);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const runtime::OutOfMemory& e) {
      oom(e.what());
    } catch (const torch::Error& e) {
      PyErr_SetString(PyExc_RuntimeError, e.what());
    } catch (const InputError& e) {
      PyErr_SetString(PyExc_ValueError, e.diagnostics().to_string().c_str());
    } catch (const os::QueueAborted&) {
      PyErr_SetString(PyExc_RuntimeError, "the simulation has stopped (an earlier out-of-memory)");
    }
  });

  m.def("run_ranks", &run_ranks, py::arg("hw"), py::arg("set"), py::arg("framework"), py::arg("trace"),
        py::arg("policy"), py::arg("console"), py::arg("world"), py::arg("program"), py::arg("mirror") = false);
  m.def("current_rank_index", [] {
    runtime::RankContext* ctx = runtime::current_rank();
    return ctx ? ctx->rank() : -1;
  });
  m.def("current_world_size", [] {
    runtime::RankContext* ctx = runtime::current_rank();
    return ctx ? ctx->world_size() : 1;
  });
  // torch.distributed over the run's ranks (parallel::'s collectives).
  py::class_<parallel::ProcessGroup>(m, "_ProcessGroup")
      .def_readonly("ranks", &parallel::ProcessGroup::ranks)
      .def_readonly("rank", &parallel::ProcessGroup::rank)
      .def("size", &parallel::ProcessGroup::size);
  m.def("dist_new_group", [](std::vector<int> ranks) {
    runtime::RankContext* ctx = runtime::current_rank();
    if (!ctx) throw std::invalid_argument("new_group: no run is going");
    parallel::ProcessGroup g;
    g.rank = -1;
    for (std::size_t i = 0; i < ranks.size(); ++i) {
      if (ranks[i] < 0 || ranks[i] >= ctx->world_size()) {
        throw torch::Error("new_group: rank " + std::to_string(ranks[i]) + " is not in the world of " +
                           std::to_string(ctx->world_size()));
      }
      if (ranks[i] == ctx->rank()) g.rank = static_cast<int>(i);
    }
    g.id = ctx->new_group(ranks);
    g.ranks = std::move(ranks);
    return g;
  });
  m.def("dist_all_reduce", [](torch::Tensor& t, const parallel::ProcessGroup& g) { parallel::all_reduce(t, g); },
        py::call_guard<RequireRun>());
  m.def("dist_all_gather", &parallel::all_gather, py::call_guard<RequireRun>());
  m.def("dist_broadcast", [](torch::Tensor& t, const parallel::ProcessGroup& g, int root) {
    parallel::broadcast(t, g, root);
  }, py::call_guard<RequireRun>());
  m.def("dist_reduce", [](torch::Tensor& t, const parallel::ProcessGroup& g, int root) {
    parallel::reduce(t, g, root);
  }, py::call_guard<RequireRun>());
  m.def("dist_reduce_scatter", &parallel::reduce_scatter, py::call_guard<RequireRun>());
  m.def("dist_send", &parallel::send, py::call_guard<RequireRun>());
  m.def("dist_recv", [](torch::Tensor& t, int src) { parallel::recv(t, src); }, py::call_guard<RequireRun>());

  py::class_<Session>(m, "Session")
      .def(py::init<const std::string&, const std::vector<std::string>&, const std::string&, const std::string&,
                    const std::string&, bool>(),
           py::arg("hw"), py::arg("set"), py::arg("framework"), py::arg("trace"), py::arg("policy"),
           py::arg("console"))
      .def("finish", &Session::finish)
      .def("console", &Session::console)
      .def_property_readonly("finished", &Session::finished);

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
      {"bfloat16", torch::kBFloat16}, {"float8_e4m3fn", torch::kFloat8_e4m3fn}, {"int8", torch::kInt8},
      {"int32", torch::kInt32},     {"int", torch::kInt32},     {"int64", torch::kInt64},
      {"long", torch::kInt64},      {"bool", torch::kBool},     {"complex64", torch::kComplexFloat},
      {"cfloat", torch::kComplexFloat}, {"complex128", torch::kComplexDouble}, {"cdouble", torch::kComplexDouble}};
  for (const auto& [name, t] : dtypes) m.attr(name) = t;
  m.def("set_default_dtype", &torch::set_default_dtype);
  // torch.backends.cuda's scaled_dot_product_attention switches, by PyTorch's names.
  static const std::map<std::string, torch::SdpBackend> kSdp{{"flash", torch::SdpBackend::flash},
                                                             {"mem_efficient", torch::SdpBackend::mem_efficient},
                                                             {"math", torch::SdpBackend::math},
                                                             {"cudnn", torch::SdpBackend::cudnn}};
  m.def("_set_sdp_enabled", [](const std::string& backend, bool enabled) { torch::set_sdp_enabled(kSdp.at(backend), enabled); });
  m.def("_sdp_enabled", [](const std::string& backend) { return torch::sdp_enabled(kSdp.at(backend)); });
  m.def("set_float32_matmul_precision", [](const std::string& p) { torch::set_float32_matmul_precision(p); },
        py::arg("precision"));
  m.def("get_float32_matmul_precision", [] { return std::string(torch::get_float32_matmul_precision()); });
  m.def("get_default_dtype", &torch::get_default_dtype);

  using torch::Tensor;
  py::class_<Tensor>(m, "Tensor")
      .def_property_readonly("shape", [](const Tensor& t) { return py::tuple(py::cast(t.sizes())); })
      .def_property_readonly("dtype", [](const Tensor& t) { return t.dtype(); })
      .def_property_readonly("_device", [](const Tensor& t) { return t.device().str(); })
      .def_property_readonly("is_cuda", &Tensor::is_cuda)
      .def_property_readonly("ndim", &Tensor::dim)
      .def("size", [](const Tensor& t, std::optional<std::int64_t> dim) -> py::object {
        if (dim) return py::int_(t.size(*dim));
        return py::tuple(py::cast(t.sizes()));
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
      .def("item", [](const Tensor& t) -> py::object {
        // Values are not simulated: the copy to the host and the wait happen, the value is 0.
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
      .def("_to_device", [](const Tensor& t, const std::string& device) {
        return t.to(options_of(std::nullopt, device).device());
      }, py::call_guard<RequireRun>())
      .def("copy_", &Tensor::copy_, py::return_value_policy::reference_internal, py::call_guard<RequireRun>())
      .def("fill_", &Tensor::fill_, py::return_value_policy::reference_internal, py::call_guard<RequireRun>())
      .def("zero_", &Tensor::zero_, py::return_value_policy::reference_internal, py::call_guard<RequireRun>())
      .def("__add__", [](const Tensor& a, const Tensor& b) { return a + b; }, py::call_guard<RequireRun>())
      .def("__add__", [](const Tensor& a, double b) { return a + b; }, py::call_guard<RequireRun>())
      .def("__radd__", [](const Tensor& a, double b) { return a + b; }, py::call_guard<RequireRun>())
      .def("__sub__", [](const Tensor& a, const Tensor& b) { return a - b; }, py::call_guard<RequireRun>())
      .def("__sub__", [](const Tensor& a, double b) { return a - b; }, py::call_guard<RequireRun>())
      .def("__mul__", [](const Tensor& a, const Tensor& b) { return a * b; }, py::call_guard<RequireRun>())
      .def("__mul__", [](const Tensor& a, double b) { return a * b; }, py::call_guard<RequireRun>())
      .def("__rmul__", [](const Tensor& a, double b) { return a * b; }, py::call_guard<RequireRun>())
      .def("__truediv__", [](const Tensor& a, const Tensor& b) { return a / b; }, py::call_guard<RequireRun>())
      .def("__truediv__", [](const Tensor& a, double b) { return a / b; }, py::call_guard<RequireRun>())
      .def("__neg__", [](const Tensor& a) { return a.neg(); }, py::call_guard<RequireRun>())
      .def("__rsub__", [](const Tensor& a, double b) { return b - a; }, py::call_guard<RequireRun>())
      .def("__rtruediv__", [](const Tensor& a, double b) { return b / a; }, py::call_guard<RequireRun>())
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

  // Factories take sizes, a dtype or None (the default dtype) and a device name.
  using Factory = Tensor (*)(torch::IntArrayRef, torch::TensorOptions);
  const std::pair<const char*, Factory> factories[] = {
      {"_empty", &torch::empty}, {"_zeros", &torch::zeros}, {"_ones", &torch::ones},
      {"_randn", &torch::randn}, {"_rand", &torch::rand}};
  for (const auto& [name, make] : factories) {
    m.def(name, [make = make](const std::vector<std::int64_t>& s, std::optional<torch::ScalarType> dt,
                              const std::string& dev) { return make(sizes_of(s), options_of(dt, dev)); },
          py::call_guard<RequireRun>());
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

  m.def("cuda_synchronize", [] { torch::cuda::synchronize(); });

  // --- Training: grad mode, parameters, losses, optimizers, autocast, loss scaling, graphs ---
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

  namespace optim = torch::optim;
  py::class_<optim::Optimizer>(m, "_Optimizer")
      .def("step", &optim::Optimizer::step, py::call_guard<RequireRun>())
      .def("zero_grad", &optim::Optimizer::zero_grad, py::arg("set_to_none") = true, py::call_guard<RequireRun>())
      .def("state_bytes", &optim::Optimizer::state_bytes)
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

  namespace cuda = torch::cuda;
  py::class_<cuda::Stream>(m, "_Stream")
      .def(py::init<>(), py::call_guard<RequireRun>())
      .def_property_readonly("id", &cuda::Stream::id)
      .def("__eq__", [](const cuda::Stream& a, const cuda::Stream& b) { return a == b; }, py::is_operator())
      .def("__hash__", [](const cuda::Stream& s) { return s.id(); })
      .def("wait_event", &cuda::Stream::wait_event, py::call_guard<RequireRun>())
      .def("wait_stream", &cuda::Stream::wait_stream, py::call_guard<RequireRun>())
      .def("record_event", &cuda::Stream::record_event, py::call_guard<RequireRun>())
      .def("synchronize", &cuda::Stream::synchronize, py::call_guard<RequireRun>());
  py::class_<cuda::Event>(m, "_Event")
      .def(py::init<>())
      .def("record", [](cuda::Event& e, std::optional<cuda::Stream> s) {
        if (s) {
          e.record(*s);
        } else {
          e.record();
        }
      }, py::arg("stream") = py::none(), py::call_guard<RequireRun>())
      .def("wait", [](const cuda::Event& e, std::optional<cuda::Stream> s) {
        e.wait(s.value_or(cuda::current_stream()));
      }, py::arg("stream") = py::none(), py::call_guard<RequireRun>())
      .def("synchronize", &cuda::Event::synchronize, py::call_guard<RequireRun>())
      .def_property_readonly("recorded", &cuda::Event::recorded);
  m.def("current_stream", &cuda::current_stream);
  m.def("default_stream", [] { return cuda::default_stream(); });
  m.def("set_stream", &cuda::set_current_stream, py::call_guard<RequireRun>());

  py::class_<torch::cuda::CUDAGraph>(m, "CUDAGraph")
      .def(py::init<>())
      .def("capture_begin", &torch::cuda::CUDAGraph::capture_begin, py::call_guard<RequireRun>())
      .def("capture_end", &torch::cuda::CUDAGraph::capture_end, py::call_guard<RequireRun>())
      .def("replay", &torch::cuda::CUDAGraph::replay, py::call_guard<RequireRun>());
  // Policy as code: "op=impl[:precision],..." for the ops launched from now on.
  m.def("set_policy", [](const std::string& text) {
    Diagnostics d;
    const runtime::KernelPolicy policy = runtime::KernelPolicy::parse(text, d, "policy");
    if (!d.empty()) throw InputError(std::move(d));
    runtime::RankContext* ctx = runtime::current_rank();
    if (!ctx) throw std::invalid_argument("no run is going (syntorch.init() starts one)");
    ctx->set_policy(policy);
  });
  m.def("cuda_memory_allocated", &torch::cuda::memory_allocated);
  m.def("cuda_max_memory_allocated", &torch::cuda::max_memory_allocated);
  m.def("cuda_memory_reserved", &torch::cuda::memory_reserved);
  m.def("cuda_max_memory_reserved", &torch::cuda::max_memory_reserved);
  m.def("cuda_empty_cache", &torch::cuda::empty_cache);
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
  m.def("embedding", [](const Tensor& indices, const Tensor& weight) { return torch::embedding(weight, indices); }, py::call_guard<RequireRun>());
  m.def("dropout", &torch::dropout, py::arg("input"), py::arg("p") = 0.5, py::arg("train") = true, py::call_guard<RequireRun>());
  m.def("argmax", &torch::argmax, py::arg("input"), py::arg("dim") = py::none(), py::arg("keepdim") = false, py::call_guard<RequireRun>());
  m.def("cat", &torch::cat, py::arg("tensors"), py::arg("dim") = 0, py::call_guard<RequireRun>());
  m.def("stack", &torch::stack, py::arg("tensors"), py::arg("dim") = 0, py::call_guard<RequireRun>());
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
