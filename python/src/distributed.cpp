// torch.distributed over the run's ranks: process groups and parallel::'s collectives.

#include "bindings.hpp"

#include "syntorch/parallel/distributed.hpp"

namespace syntorch::python {

void bind_distributed(py::module_& m) {
  py::class_<parallel::ProcessGroup>(m, "_ProcessGroup")
      .def_readonly("ranks", &parallel::ProcessGroup::ranks)
      .def_readonly("rank", &parallel::ProcessGroup::rank)
      .def("size", &parallel::ProcessGroup::size);
  m.def("dist_new_group", &parallel::new_group);
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
}

}  // namespace syntorch::python
