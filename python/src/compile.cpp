// torch.compile's compiled regions (syntorch.torch._compile drives them): begin, graph breaks,
// end with what the region did.

#include "bindings.hpp"
#include "syntorch/torch/compile.hpp"

namespace syntorch::python {

void bind_compile(py::module_& m) {
  namespace compile = torch::compile;
  m.def(
      "_compile_begin",
      [](std::uint64_t graph_id, const std::string& name, bool compiling, const std::string& cuda_graph,
         std::uint64_t replay_graph, std::uint64_t replay_plan_hash, double per_graph_s, double per_op_s,
         double per_kernel_s, std::size_t max_fusion_size) {
        compile::RegionOptions o;
        o.graph_id = graph_id;
        o.graph_name = name;
        o.compiling = compiling;
        if (cuda_graph == "record") {
          o.cuda_graph = compile::RegionOptions::CudaGraph::record;
        } else if (cuda_graph == "replay") {
          o.cuda_graph = compile::RegionOptions::CudaGraph::replay;
        } else if (cuda_graph != "none") {
          throw py::value_error("_compile_begin: cuda_graph is one of none, record, replay; got " + cuda_graph);
        }
        o.replay_graph = replay_graph;
        o.replay_plan_hash = replay_plan_hash;
        o.costs = {per_graph_s, per_op_s, per_kernel_s};
        o.fusion.max_fusion_size = max_fusion_size;
        compile::begin_region(o);
      },
      py::arg("graph_id"), py::arg("name"), py::arg("compiling"), py::arg("cuda_graph"), py::arg("replay_graph"), py::arg("replay_plan_hash"),
      py::arg("per_graph_s"), py::arg("per_op_s"), py::arg("per_kernel_s"), py::arg("max_fusion_size"));
  m.def("_compile_break", &compile::graph_break, py::arg("reason"));
  // The model's defaults, stated once (compile.hpp): the front end's settings start from them.
  m.def("_compile_defaults", [] {
    const compile::CompileCosts costs;
    py::dict d;
    d["per_graph_s"] = costs.per_graph_s;
    d["per_op_s"] = costs.per_op_s;
    d["per_kernel_s"] = costs.per_kernel_s;
    d["max_fusion_size"] = compile::FusionOptions{}.max_fusion_size;
    return d;
  });
  m.def("_compile_active", &compile::in_region);
  m.def("_compile_suspend", &compile::suspend_region, py::arg("reason"));
  m.def("_compile_resume", &compile::resume_region);
  m.def("_compile_rank_serial", &compile::rank_serial);
  m.def("_compile_end", [] {
    const compile::RegionStats s = compile::end_region();
    py::dict d;
    d["segments"] = s.segments;
    d["graphs"] = s.graphs;
    d["ops"] = s.ops;
    d["eager_kernels"] = s.eager_kernels;
    d["launched_kernels"] = s.launched_kernels;
    d["generated_kernels"] = s.generated_kernels;
    d["compile_s"] = s.compile_s;
    d["cuda_graph"] = s.cuda_graph;
    d["replayed"] = s.replayed;
    d["plan_hash"] = s.plan_hash;
    d["device_flushes"] = s.device_flushes;
    d["break_reasons"] = s.break_reasons;
    return d;
  });
}

}  // namespace syntorch::python
