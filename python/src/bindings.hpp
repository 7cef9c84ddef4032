#pragma once
// What the extension's files share: the helpers that turn Python's arguments into the torch
// layer's, and one bind_* function per area, each adding its names to the module.

#include <pybind11/functional.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "syntorch/torch/torch.hpp"

namespace syntorch::python {

namespace py = pybind11;

// Ops launch on the run attached to this thread: without one (the run ended with stats(), or
// another thread) they would silently run nowhere, so they refuse. A call guard.
struct RequireRun {
  RequireRun();
};

inline torch::IntArrayRef sizes_of(const std::vector<std::int64_t>& v) { return torch::IntArrayRef(v); }

// PyTorch's *size or (size,) arguments (view(2, 3), view((2, 3)), view(torch.Size)): integers,
// numpy's included (operator.index); a TypeError naming what came otherwise. Parsed here, not in
// Python: views are the most frequent calls a model makes.
std::vector<std::int64_t> ints_of(const py::args& args);

// A dtype (None: the default) and a device name ("cpu", "cuda", "cuda:N") as TensorOptions.
torch::TensorOptions options_of(std::optional<torch::ScalarType> dtype, const std::string& device);

// "torch.float16" and the like.
std::string dtype_repr(torch::ScalarType t);

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

// One per area, in the order the module adds them.
void bind_session(py::module_& m);      // runs: Session, run_ranks, the current rank, the policy
void bind_distributed(py::module_& m);  // torch.distributed
void bind_tensor(py::module_& m);       // dtypes, Tensor, factories
void bind_autograd(py::module_& m);     // grad mode, backward, checkpoint, parameters
void bind_functions(py::module_& m);    // the torch functions
void bind_reductions(py::module_& m);   // reductions, scans, sorts, gathers, scatters
void bind_optim(py::module_& m);        // optimizers, autocast, GradScaler, record_function
void bind_cuda(py::module_& m);         // torch.cuda, torch.backends
void bind_aten(py::module_& m);
void bind_compile(py::module_& m);      // torch.compile's compiled regions

}  // namespace syntorch::python
