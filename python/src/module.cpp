// _syntorch: the C++ simulator behind `import syntorch.torch as torch`. A Session is a run (the
// session library's) whose program is the Python thread; the torch layer's Tensor and functions
// are bound as they are, so a Python program issues the same ops a C++ one does. The Python
// package (python/syntorch) gives them PyTorch's module layout, and nn.Module its Python form.
// Each area binds its names in a file of its own (bindings.hpp).

#include "bindings.hpp"

#include "syntorch/base/diagnostics.hpp"
#include "syntorch/session/run.hpp"

using namespace syntorch;
using namespace syntorch::python;

PYBIND11_MODULE(_syntorch, m) {
  m.doc() = "syntorch's simulator, bound for the syntorch Python package";

  // Errors of PyTorch's kind: shape and argument errors are RuntimeError, a simulated OOM is
  // torch.cuda.OutOfMemoryError (a RuntimeError), bad configs and flags ValueError.
  static py::exception<session::OutOfMemory> oom(m, "OutOfMemoryError", PyExc_RuntimeError);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const session::OutOfMemory& e) {
      oom(e.what());
    } catch (const torch::Error& e) {
      PyErr_SetString(PyExc_RuntimeError, e.what());
    } catch (const InputError& e) {
      PyErr_SetString(PyExc_ValueError, e.diagnostics().to_string().c_str());
    } catch (const session::RunStopped&) {
      PyErr_SetString(PyExc_RuntimeError, "the simulation has stopped (an earlier out-of-memory)");
    }
  });

  bind_session(m);
  bind_distributed(m);
  bind_tensor(m);
  bind_autograd(m);
  bind_functions(m);
  bind_reductions(m);
  bind_optim(m);
  bind_cuda(m);
  bind_aten(m);
  bind_compile(m);
}
