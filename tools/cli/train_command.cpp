// `syntorch train --model M [--hw FILE] --tp N --pp N --dp N --global-batch B --micro-batch b --seq S
// [--recompute none|selective|full] [--sequence-parallel] [--zero 1] [--overlap-grad-reduce] [--overlap-param-gather]
// [--hidden-dropout P] [--attention-dropout P] [--optimizer adamw|sgd]
// [--schedule 1f1b|gpipe] [--dtype bf16|fp16|fp32] [--replicas one|all] [--policy P] [--set path=value]...
// [--trace FILE [--trace-ranks 0-7,64]] [--json]`:
// one training iteration (after a warm-up one) of a zoo model; prints what Megatron-LM prints and
// each stage's memory. A plan that does not fit is a simulated out-of-memory (exit 3).

#include <fmt/format.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>

#include "cli.hpp"
#include "commands.hpp"
#include "common.hpp"
#include "parameter_flags.hpp"
#include "syntorch/base/units.hpp"
#include "syntorch/session/parameters.hpp"
#include "syntorch/session/report_json.hpp"
#include "syntorch/session/workload.hpp"
#include "syntorch/session/train.hpp"
#include "syntorch/trace/recorder.hpp"

namespace syntorch::cli {

namespace {

struct TrainFlags {
  ParameterFlags params;  // session::training_parameters()
  std::string hw;
  std::string policy;
  std::vector<std::string> sets;
  TraceFlags trace;
  bool json = false;
};

const char* recompute_name(models::Recompute r) {
  return r == models::Recompute::full ? "full" : r == models::Recompute::selective ? "selective" : "none";
}

// The purposes a training stage's memory is reported under, in order.
constexpr os::MemoryUse kPurposes[] = {os::MemoryUse::weights, os::MemoryUse::gradients,
                                       os::MemoryUse::optimizer_state, os::MemoryUse::activations,
                                       os::MemoryUse::workspace, os::MemoryUse::other};

void print_stages(std::ostream& out, const session::TrainReport& r, const hw::Machine& m) {
  out << fmt::format("  peak memory per stage (of {} per device; each purpose at its own peak)\n",
                     size(static_cast<std::uint64_t>(m.devices()[0].memory.size_bytes)));
  for (const session::StageMemory& st : r.stages) {
    std::string parts;
    for (os::MemoryUse u : kPurposes) {
      const std::uint64_t b = st.peak_by_use[static_cast<std::size_t>(u)];
      if (b == 0) continue;
      parts += fmt::format("{}{} {}", parts.empty() ? "" : ", ", os::memory_use_name(u), size(b));
    }
    out << fmt::format("    stage {:<3} {:>10}: {}\n", st.stage, size(st.peak_bytes), parts);
  }
}

void print_oom(std::ostream& out, const session::TrainReport& r, const session::TrainSpec& s) {
  const runtime::OomReport& oom = *r.engine.oom;
  const os::AllocatorStats& m = oom.memory;
  out << fmt::format("OUT OF MEMORY on pipeline stage {} (rank {}, {}): {} requested for {}; the device has {}\n",
                     oom.rank / (s.tp * s.dp), oom.rank, oom.device_name, size(oom.requested_bytes), oom.requested_for,
                     size(m.capacity_bytes));
  print_oom_holders(out, oom);
  out << fmt::format("  more tensor or pipeline parallel ranks (now tp {} x pp {}), recomputation (now {}), the "
                     "distributed optimizer (zero {}), sequence parallelism or a smaller micro-batch would fit it\n",
                     s.tp, s.pp, recompute_name(s.recompute), s.zero);
}

void print_report(std::ostream& out, const session::TrainReport& r, const session::TrainSpec& s, const hw::Machine& m,
                  double wall_s) {
  const int gpus = s.tp * s.pp * s.dp;
  out << fmt::format("{} training on {}: tp {} x pp {}{} x dp {} = {} GPU{}, global batch {} ({} micro-batch{} of {} "
                     "per replica), seq {}, {}, recompute {}{}, {}, {}{}\n",
                     s.model->name(), m.name(), s.tp, s.pp, s.vp > 1 ? fmt::format(" (vp {})", s.vp) : "", s.dp, gpus,
                     gpus == 1 ? "" : "s", r.global_batch,
                     r.micro_batches, r.micro_batches == 1 ? "" : "es", s.micro_batch, s.seq, dtype_name(s.dtype),
                     recompute_name(s.recompute), s.sequence_parallel ? ", sequence parallel" : "",
                     s.gpipe ? "GPipe" : "1F1B", s.adam ? "AdamW" : "SGD",
                     s.zero == 1 ? " (distributed optimizer)" : "");
  out << fmt::format("  iteration time          {:.3f} s\n", r.iteration_s);
  out << fmt::format("  throughput              {:.0f} tokens/s ({:.1f} per GPU)\n", r.tokens_per_s,
                     r.tokens_per_s / gpus);
  out << fmt::format("  model TFLOP/s per GPU   {:.1f} (MFU {:.1f}%, HFU {:.1f}%)\n", r.tflops_per_gpu, r.mfu * 100,
                     r.hfu * 100);
  if (s.pp > 1) {
    out << fmt::format("  pipeline bubble         {:.1f}% of an ideal iteration ((pp-1)/(vp m+pp-1) with {} micro-batches{})\n",
                       r.bubble_fraction * 100, r.micro_batches,
                       s.vp > 1 ? fmt::format(", {} chunks per rank", s.vp) : "");
  }
  out << fmt::format("  exposed communication   {:.3f} s per GPU (collectives on the compute stream)\n",
                     r.exposed_communication_s);
  if (r.overlapped_communication_s > 0) {
    out << fmt::format("  overlapped collectives  {:.3f} s per GPU (on a communication stream: {})\n",
                       r.overlapped_communication_s,
                       s.overlap_param_gather ? "gradient buckets under the backward, parameter gathers under the "
                                                     "next forward"
                                                   : "gradient buckets under the backward");
  }
  print_stages(out, r, m);
  std::uint64_t kernels = 0;
  for (const auto& rank : r.engine.ranks) kernels += rank.mirror_of < 0 ? rank.kernels : 0;
  if (r.simulated_replicas < s.dp) {
    out << fmt::format("  data-parallel replicas  {} of {} simulated; the others mirror replica 0 (identical programs: "
                       "they join its collectives, which move every member's bytes; --replicas all runs them all)\n",
                       r.simulated_replicas, s.dp);
  }
  out << fmt::format("  simulated {} kernels ({} events) on {} ranks, a warm-up iteration of {} micro-batch{} and the "
                     "measured one, in {:.2f} s\n",
                     kernels, r.engine.events, r.engine.simulated_ranks, r.warmup_micro_batches,
                     r.warmup_micro_batches == 1 ? "" : "es", wall_s);
}

int run_train(const TrainFlags& o, Context& ctx) {
  Diagnostics d;
  session::TrainSpec spec;
  apply_parameter_flags(session::training_parameters(), o.params, spec, d);
  Diagnostics flags;
  if (!spec.trace_ranks.empty() && o.trace.file.empty()) {
    flags.error("flags", "trace_ranks", "names the ranks a trace file shows; give --trace FILE too");
  }
  const std::string hw_file = o.hw.empty() ? default_hw_config("dgx_h100.json") : o.hw;
  session::RunSetup setup = session::load_run_setup(hw_file, o.sets, o.policy, d, "--policy");
  const std::optional<hw::Machine>& machine = setup.machine;
  const runtime::KernelPolicy& policy = setup.policy;
  if (d.empty() && flags.empty()) session::validate_train(spec, *machine, flags, "flags");
  for (const auto& x : flags.items()) {
    std::string flag = x.path;
    for (char& c : flag) c = c == '_' ? '-' : c;
    d.error(flag.empty() ? "flags" : "--" + flag, "", x.message);
  }
  d.add_dropped(flags.dropped());
  if (!d.empty()) {
    ctx.err << d.to_string();
    return kExitBadInput;
  }
  trace::Recorder recorder;
  if (!open_trace(o.trace, recorder, ctx)) return kExitBadInput;
  const auto start = std::chrono::steady_clock::now();
  const session::TrainReport report =
      session::simulate_training(*machine, policy, spec, &recorder, trace_level(o.trace));
  const double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (o.json) {
    ctx.out << session::training_report_json(report, spec, machine->config().file)
                   .dump(2, ' ', false, nlohmann::json::error_handler_t::replace)
            << "\n";
  } else if (report.oom) {
    print_oom(ctx.out, report, spec);
    print_stages(ctx.out, report, *machine);
  } else {
    print_report(ctx.out, report, spec, *machine, wall_s);
  }
  if (!finish_trace(o.trace, recorder, ctx, o.json)) return kExitBadInput;
  return report.oom ? kExitOom : kExitOk;
}

}  // namespace

void add_train_command(CLI::App& app, Context& ctx) {
  auto o = std::make_shared<TrainFlags>();
  CLI::App* s = app.add_subcommand("train", "Simulate a training iteration of a model from the zoo (Megatron-style "
                                            "tensor, pipeline and data parallelism)");
  add_parameter_flags(*s, session::training_parameters(), o->params);
  s->add_option("--hw", o->hw, "Hardware config JSON file (default hw_configs/dgx_h100.json); a run uses its first "
                "tp x pp x dp GPUs");
  s->add_option("--policy", o->policy, "Kernel policy: op=impl[:precision],... or a JSON/YAML file");
  s->add_option("--set", o->sets, "Override a config field: /json/pointer=value (repeatable)");
  add_trace_flags(*s, o->trace);
  s->add_flag("--json", o->json, "Print JSON");
  s->footer(zoo_models_text());
  s->callback([&ctx, o] { ctx.action = [&ctx, o] { return run_train(*o, ctx); }; });
}

}  // namespace syntorch::cli
