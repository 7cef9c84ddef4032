// Runs from Python, through session::Run: a Session is a run whose program is the Python thread
// that made it; run_ranks runs one Python program per rank, each on a thread of its own. Also the
// current rank's index and world size, and the kernel policy for the ops launched from now on;
// and a zoo model's generation, training or serving run from its parameters (syntorch.simulate,
// train, serve).

#include "bindings.hpp"

#include "syntorch/parallel/distributed.hpp"
#include "syntorch/session/graph_run.hpp"
#include "syntorch/session/replay.hpp"
#include "syntorch/session/parameters.hpp"
#include "syntorch/session/run.hpp"
#include "syntorch/session/serving/serve.hpp"
#include "syntorch/session/simulate.hpp"
#include "syntorch/session/train.hpp"
#include "syntorch/session/workload.hpp"

namespace syntorch::python {

namespace {

session::RunOptions run_options(const std::string& hw, const std::vector<std::string>& sets, const std::string& framework,
                                const std::string& trace, const std::string& policy, bool console) {
  // Python programs may profile (torch.profiler.profile) unless console is off (large runs that
  // save the tracing's cost): then their runs trace only into a trace file.
  return {.hw = hw, .sets = sets, .framework = framework, .trace = trace, .policy = policy, .console = console,
          .profiling = console};
}

// What trace_manager.stats() returns.
py::dict stats_dict(const session::RunStats& s) {
  py::dict out;
  out["simulated_time_s"] = s.simulated_time_s;
  out["kernels"] = s.kernels;
  out["flops"] = s.flops;
  out["hbm_bytes"] = s.hbm_bytes;
  out["peak_memory_bytes"] = py::cast(s.peak_memory_bytes);
  out["events"] = s.events;
  out["out_of_memory"] = s.oom.has_value();
  out["device"] = s.device;
  out["machine"] = s.machine;
  py::list steps;
  for (const auto& step : s.steps) {
    py::dict d;
    d["name"] = step.name;
    d["begin_s"] = step.begin_s;
    d["end_s"] = step.end_s;
    steps.append(d);
  }
  out["steps"] = steps;
  return out;
}

// One run whose program is the Python thread that made it.
class Session {
 public:
  Session(const std::string& hw, const std::vector<std::string>& sets, const std::string& framework,
          const std::string& trace, const std::string& policy, bool console)
      : run_(run_options(hw, sets, framework, trace, policy, console)) {
    run_.attach();
  }

  // Ends the program, waits for the simulation and returns what it measured.
  py::dict finish() {
    session::RunStats stats;
    {
      py::gil_scoped_release release;  // the simulation touches no Python object
      stats = run_.finish();
    }
    return stats_dict(stats);
  }
  bool finished() const { return run_.finished(); }
  std::string console() const { return run_.console(); }

 private:
  session::Run run_;
};

// Each rank's program is a Python call on a thread of its own, holding the interpreter's lock
// while it runs Python and giving it up whenever its queue or its turn makes it wait; the
// simulation runs on the caller's thread.
// Per thread: PyEval_SaveThread and PyEval_RestoreThread pair up on the thread that waits.
thread_local PyThreadState* t_saved_state = nullptr;
void release_interpreter() { t_saved_state = PyEval_SaveThread(); }
void reacquire_interpreter() {
  PyEval_RestoreThread(t_saved_state);
  t_saved_state = nullptr;
}

py::dict run_ranks(const std::string& hw, const std::vector<std::string>& sets, const std::string& framework,
                   const std::string& trace, const std::string& policy, bool console, int world,
                   const py::function& program, bool mirror) {
  session::Run run(run_options(hw, sets, framework, trace, policy, console));
  session::RunStats stats;
  {
    py::gil_scoped_release release;
    stats = run.run_programs(world, [&](int rank) {
      py::gil_scoped_acquire gil;
      session::set_program_wait_hooks(&release_interpreter, &reacquire_interpreter);
      struct Reset {
        ~Reset() { session::clear_program_wait_hooks(); }
      } reset;
      try {
        program(rank);
      } catch (py::error_already_set& e) {
        // A simulated OOM is a result (the rank holds its report); anything else fails the run,
        // naming the rank. The Python error goes here, with the interpreter's lock held.
        if (e.matches(py::module_::import("_syntorch").attr("OutOfMemoryError"))) return;
        throw std::runtime_error("rank " + std::to_string(rank) + ": " + e.what());
      }
    }, mirror);
  }
  py::dict out = stats_dict(stats);
  out["console"] = run.console();
  return out;
}

// A parameter table as Python sees it: (key, alias, kind, unit, help, default) per entry.
template <class Spec>
py::list parameter_list(const std::vector<session::Parameter<Spec>>& table) {
  static constexpr const char* kKinds[] = {"int", "float", "bool", "choice", "str"};
  const Spec defaults{};
  py::list out;
  for (const session::Parameter<Spec>& p : table) {
    std::string shown(p.default_text);
    if (shown.empty() && !p.required) {
      const nlohmann::ordered_json v = p.value(defaults);
      shown = v.is_string() ? v.get<std::string>() : v.dump();
    }
    out.append(py::make_tuple(std::string(p.key), std::string(p.alias), kKinds[static_cast<int>(p.kind)],
                              std::string(p.unit), std::string(p.help), shown));
  }
  return out;
}

// syntorch.simulate and syntorch.train: one workload run; its report as JSON text.
std::string run_workload(const std::string& kind, const std::string& hw, const std::vector<std::string>& sets,
                         const std::string& policy, const std::string& trace,
                         const std::vector<std::pair<std::string, std::string>>& params) {
  if (kind != "generate" && kind != "train" && kind != "serve" && kind != "capacity") {
    throw std::invalid_argument("run_workload: kind must be \"generate\", \"train\", \"serve\" or \"capacity\", got \"" +
                                kind + "\"");
  }
  session::WorkloadRequest request{hw, sets, policy, trace, params};
  py::gil_scoped_release release;  // the simulation touches no Python object
  const nlohmann::ordered_json report = kind == "train"   ? session::run_training(request)
                                        : kind == "serve" ? session::run_serving(request)
                                        : kind == "capacity" ? session::run_serving_capacity(request)
                                                          : session::run_generation(request);
  return report.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// syntorch.simulate_graph: a model's graph file run on one device; its report as JSON text.
std::string run_graph(const std::string& graph, const std::string& hw, const std::vector<std::string>& sets,
                      const std::string& policy, const std::string& trace, const std::string& framework) {
  session::RunOptions options;
  options.hw = hw;
  options.sets = sets;
  options.policy = policy;
  options.trace = trace;
  options.framework = framework;
  py::gil_scoped_release release;  // the simulation touches no Python object
  const session::GraphRunReport report = session::simulate_graph(options, graph);
  return session::graph_report_json(report, graph).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// syntorch.replay: a Chakra execution trace replayed; its report as JSON text.
std::string run_replay(const std::string& workload, const std::string& hw, const std::vector<std::string>& sets,
                       const std::string& policy, const std::string& trace, const std::string& framework,
                       const std::string& comm_groups) {
  session::ReplayOptions options;
  options.run.hw = hw;
  options.run.sets = sets;
  options.run.policy = policy;
  options.run.trace = trace;
  options.run.framework = framework;
  options.workload = workload;
  options.comm_groups = comm_groups;
  py::gil_scoped_release release;
  const session::ReplayReport report = session::simulate_replay(options);
  return session::replay_report_json(report, workload).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace

void bind_session(py::module_& m) {
  m.def("run_replay", &run_replay, py::arg("workload"), py::arg("hw"), py::arg("set"), py::arg("policy"),
        py::arg("trace"), py::arg("framework"), py::arg("comm_groups"));
  m.def("run_graph", &run_graph, py::arg("graph"), py::arg("hw"), py::arg("set"), py::arg("policy"), py::arg("trace"),
        py::arg("framework"));
  m.def("run_workload", &run_workload, py::arg("kind"), py::arg("hw"), py::arg("set"), py::arg("policy"),
        py::arg("trace"), py::arg("params"));
  m.def("workload_parameters", [](const std::string& kind) {
    if (kind == "serve") return parameter_list(session::serving::serving_parameters());
    return kind == "train" ? parameter_list(session::training_parameters())
                           : parameter_list(session::generation_parameters());
  });
  m.def("run_ranks", &run_ranks, py::arg("hw"), py::arg("set"), py::arg("framework"), py::arg("trace"),
        py::arg("policy"), py::arg("console"), py::arg("world"), py::arg("program"), py::arg("mirror") = false);
  m.def("current_rank_index", &parallel::get_rank);
  m.def("current_world_size", &parallel::get_world_size);
  py::class_<Session>(m, "Session")
      .def(py::init<const std::string&, const std::vector<std::string>&, const std::string&, const std::string&,
                    const std::string&, bool>(),
           py::arg("hw"), py::arg("set"), py::arg("framework"), py::arg("trace"), py::arg("policy"),
           py::arg("console"))
      .def("finish", &Session::finish)
      .def("console", &Session::console)
      .def_property_readonly("finished", &Session::finished);
  // Policy as code: "op=impl[:precision],..." for the ops launched from now on.
  m.def("set_policy", [](const std::string& text) {
    if (!torch::cuda::is_available()) throw std::invalid_argument("no run is going (syntorch.init() starts one)");
    torch::cuda::set_kernel_policy(text);
  });
}

}  // namespace syntorch::python
