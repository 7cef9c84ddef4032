#include "syntorch/session/run.hpp"

#include <stdexcept>

#include "syntorch/base/diagnostics.hpp"
#include "syntorch/hw/config_loader.hpp"
#include "syntorch/os/host_thread.hpp"
#include "syntorch/trace/console_summary.hpp"
#include "syntorch/trace/open_trace_writer.hpp"

namespace syntorch::session {

Run::Run(const RunOptions& o) {
  Diagnostics d;
  const std::vector<hw::Override> overrides = hw::parse_overrides(o.sets, d);
  if (!d.empty()) throw InputError(std::move(d));
  machine_ = std::make_unique<hw::Machine>(hw::Machine::load(o.hw, overrides));
  if (o.framework != "eager" && o.framework != "native") {
    throw std::invalid_argument("framework must be \"eager\" or \"native\", got \"" + o.framework + "\"");
  }
  engine_options_.framework = o.framework == "eager" ? runtime::Framework::eager : runtime::Framework::native;
  Diagnostics pd;
  policy_ = runtime::KernelPolicy::load(o.policy, pd, "policy");
  if (!pd.empty()) throw InputError(std::move(pd));
  if (!o.trace.empty()) recorder_.attach(trace::open_trace_writer(o.trace, std::nullopt));
  if (o.console) recorder_.attach(std::make_unique<trace::ConsoleSummary>(console_text_, 12));
  if (recorder_.enabled() || o.profiling) engine_options_.recorder = &recorder_;
  engine_options_.profiling = o.profiling;
}

Run::~Run() = default;

void Run::attach() {
  if (engine_ || ran_) throw std::logic_error("Run::attach: this run has run already");
  engine_ = std::make_unique<runtime::Engine>(*machine_, policy_, 1, engine_options_);
  engine_->attach();
}

RunStats Run::finish() {
  if (!engine_) throw std::logic_error("Run::finish: nothing is attached");
  if (!result_ && !error_) {
    try {
      result_ = engine_->detach();
      recorder_.finish();
    } catch (...) {
      error_ = std::current_exception();  // the run is over either way
    }
  }
  if (error_) std::rethrow_exception(error_);
  return stats(*result_);
}

RunStats Run::run_programs(int world, const std::function<void(int rank)>& program, bool mirror) {
  // One run, one simulation: its recorder is finished at the end.
  if (engine_ || ran_) throw std::logic_error("Run::run_programs: this run has run already");
  ran_ = true;
  runtime::EngineOptions options = engine_options_;
  if (mirror) options.mirror_of.assign(static_cast<std::size_t>(std::max(world, 0)), 0);
  runtime::Engine engine(*machine_, policy_, world, options);
  const runtime::EngineResult result = engine.run([&](runtime::RankContext& ctx) { program(ctx.rank()); });
  recorder_.finish();
  return stats(result);
}

RunStats Run::stats(const runtime::EngineResult& r) const { return run_stats(r, *machine_); }

RunStats run_stats(const runtime::EngineResult& r, const hw::Machine& machine) {
  RunStats s;
  s.simulated_time_s = static_cast<double>(r.end_ps) * 1e-12;
  for (const auto& rank : r.ranks) {
    s.kernels += rank.kernels;
    s.flops += rank.flops;
    s.hbm_bytes += rank.hbm_bytes;
    s.peak_memory_bytes.push_back(rank.memory.peak_allocated_bytes);
    s.peak_reserved_bytes.push_back(rank.memory.peak_reserved_bytes);
  }
  s.events = r.events;
  s.oom = r.oom;
  s.device = machine.devices().empty() ? "" : machine.devices()[0].name;
  s.machine = machine.name();
  if (!r.ranks.empty()) {
    for (const auto& step : r.ranks[0].steps) {
      s.steps.push_back({step.name, static_cast<double>(step.begin_ps) * 1e-12, static_cast<double>(step.end_ps) * 1e-12});
    }
  }
  return s;
}

void set_program_wait_hooks(void (*before)(), void (*after)()) { os::set_thread_blocking_hooks({before, after}); }
void clear_program_wait_hooks() { os::set_thread_blocking_hooks({}); }

}  // namespace syntorch::session
