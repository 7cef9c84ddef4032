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
#include "syntorch/base/units.hpp"
#include "syntorch/hw/machine.hpp"
#include "syntorch/session/train.hpp"
#include "syntorch/trace/recorder.hpp"

namespace syntorch::cli {

namespace {

// Sizes and switches bind straight to the spec (its defaults are the flags'); choices given as
// text go through set_train_parameter, as measurement rows and studies do, when given.
struct TrainFlags {
  session::TrainSpec spec;
  std::string model;
  std::string hw;
  std::string recompute, optimizer, schedule, dtype, replicas, trace_ranks;
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

nlohmann::ordered_json report_json(const session::TrainReport& r, const session::TrainSpec& s, const hw::Machine& m) {
  nlohmann::ordered_json j;
  j["status"] = r.oom ? "oom" : "ok";
  j["model"] = s.model->name();
  j["hw"] = m.config().file;
  j["tp"] = s.tp;
  j["pp"] = s.pp;
  j["dp"] = s.dp;
  j["global_batch"] = r.global_batch;
  j["micro_batch"] = s.micro_batch;
  j["micro_batches"] = r.micro_batches;
  j["vp"] = s.vp;
  j["seq"] = s.seq;
  j["dtype"] = std::string(dtype_name(s.dtype));
  j["recompute"] = recompute_name(s.recompute);
  j["sequence_parallel"] = s.sequence_parallel;
  j["zero"] = s.zero;
  j["overlap_grad_reduce"] = s.overlap_grad_reduce;
  j["overlap_param_gather"] = s.overlap_param_gather;
  j["hidden_dropout"] = s.hidden_dropout;
  j["attention_dropout"] = s.attention_dropout;
  j["optimizer"] = s.adam ? "adamw" : "sgd";
  j["schedule"] = s.gpipe ? "gpipe" : "1f1b";
  j["simulated_replicas"] = r.simulated_replicas;
  j["iteration_time_s"] = r.iteration_s;
  j["tokens_per_s"] = r.tokens_per_s;
  j["model_flops_per_iteration"] = r.model_flops;
  j["tflops_per_gpu"] = r.tflops_per_gpu;
  j["mfu"] = r.mfu;
  j["hfu"] = r.hfu;
  j["pipeline_bubble"] = r.bubble_fraction;
  j["exposed_communication_s"] = r.exposed_communication_s;
  j["overlapped_communication_s"] = r.overlapped_communication_s;
  auto& stages = j["stages"] = nlohmann::ordered_json::array();
  for (const session::StageMemory& st : r.stages) {
    nlohmann::ordered_json e;
    e["stage"] = st.stage;
    e["peak_bytes"] = st.peak_bytes;
    for (os::MemoryUse u : kPurposes) {
      e[std::string(os::memory_use_name(u))] = st.peak_by_use[static_cast<std::size_t>(u)];
    }
    stages.push_back(std::move(e));
  }
  if (r.engine.oom) {
    j["oom"] = oom_json(*r.engine.oom);
    j["oom"]["stage"] = r.engine.oom->rank / (s.tp * s.dp);
  }
  return j;
}

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
  session::TrainSpec spec = o.spec;
  Diagnostics flags;
  const std::pair<const char*, const std::string*> given[] = {
      {"model", &o.model},       {"recompute", &o.recompute}, {"optimizer", &o.optimizer},
      {"schedule", &o.schedule}, {"dtype", &o.dtype},         {"replicas", &o.replicas},
      {"trace_ranks", &o.trace_ranks}};
  for (const auto& [key, value] : given) {
    if (!value->empty()) session::set_train_parameter(spec, key, *value, flags, "flags");
  }
  if (!o.trace_ranks.empty() && o.trace.file.empty()) {
    flags.error("flags", "trace_ranks", "names the ranks a trace file shows; give --trace FILE too");
  }
  const runtime::KernelPolicy policy = runtime::KernelPolicy::load(o.policy, d, "--policy");
  const auto overrides = hw::parse_overrides(o.sets, d);
  const std::string hw_file = o.hw.empty() ? default_hw_config("dgx_h100.json") : o.hw;
  std::optional<hw::Machine> machine;
  try {
    machine = hw::Machine::load(hw_file, overrides);
  } catch (const InputError& e) {
    d.append(e.diagnostics());
  }
  if (d.empty() && flags.empty()) session::validate_train(spec, *machine, flags, "flags");
  for (const auto& x : flags.items()) {
    std::string flag = x.path;
    for (char& c : flag) c = c == '_' ? '-' : c;
    d.error(flag.empty() ? "flags" : "--" + flag, "", x.message);
  }
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
    ctx.out << report_json(report, spec, *machine).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
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
  s->add_option("--model", o->model, "a zoo model (gpt3-175b, llama3-70b, ...), a custom shape (gpt:..., llama:...) "
                "or a Hugging Face config.json")->required();
  s->add_option("--hw", o->hw, "Hardware config JSON file (default hw_configs/dgx_h100.json); a run uses its first "
                "tp x pp x dp GPUs");
  s->add_option("--tp", o->spec.tp, "Tensor parallel ranks")->capture_default_str();
  s->add_option("--pp", o->spec.pp, "Pipeline parallel stages")->capture_default_str();
  s->add_option("--dp", o->spec.dp, "Data parallel replicas")->capture_default_str();
  s->add_option("--vp", o->spec.vp, "Virtual stages (model chunks) per pipeline rank: interleaved 1F1B, the bubble "
                "divided by vp (needs pp >= 3 and micro-batches a multiple of pp)")->capture_default_str();
  s->add_option("--global-batch", o->spec.global_batch, "Sequences per iteration (default: micro-batch x dp)");
  s->add_option("--micro-batch", o->spec.micro_batch, "Sequences per micro-batch")->capture_default_str();
  s->add_option("--seq", o->spec.seq, "Sequence length")->capture_default_str();
  s->add_option("--recompute", o->recompute, "Activation recomputation: none, selective (each layer's attention core: "
                "its inputs kept, its forward run again in backward) or full (every layer); default none");
  s->add_flag("--sequence-parallel", o->spec.sequence_parallel, "Shard the activations between TP regions along the "
              "sequence (all-gather / reduce-scatter in place of all-reduce)");
  s->add_option("--zero", o->spec.zero, "1: the distributed optimizer (ZeRO-1: gradients reduce-scattered, master "
                "weights and Adam state sharded over dp, parameters all-gathered)")->capture_default_str();
  s->add_flag("--overlap-grad-reduce", o->spec.overlap_grad_reduce, "Start each data-parallel gradient bucket's "
              "reduction, on a communication stream, as soon as the last micro-batch's backward has made its "
              "gradients (Megatron's --overlap-grad-reduce)");
  s->add_flag("--overlap-param-gather", o->spec.overlap_param_gather, "With --zero 1 and --overlap-grad-reduce: all-gather the updated "
              "parameters on a communication stream after the step, each layer's next forward waiting only for "
              "its own bucket's (Megatron's --overlap-param-gather)");
  s->add_option("--hidden-dropout", o->spec.hidden_dropout, "Dropout probability on the attention and MLP outputs "
                "(Megatron-LM's default 0.1; 0 launches no dropout kernels)")->capture_default_str();
  s->add_option("--attention-dropout", o->spec.attention_dropout, "Dropout probability on the attention "
                "probabilities (Megatron-LM's default 0.1): FlashAttention draws its mask in the kernel, forward and "
                "backward; unfused attention runs a dropout kernel over the probabilities; 0 draws none")
      ->capture_default_str();
  s->add_option("--optimizer", o->optimizer, "adamw (default) or sgd");
  s->add_option("--schedule", o->schedule, "Pipeline schedule: 1f1b (default) or gpipe");
  s->add_option("--dtype", o->dtype, "Parameter and activation dtype: bf16, fp16 or fp32 (fp32 master weights and "
                "gradients either way); default bf16");
  s->add_option("--replicas", o->replicas, "Data-parallel replicas simulated: one (replica 0; the others mirror it "
                "and join its collectives, so data-parallel traffic is exact; the default) or all");
  s->add_option("--trace-ranks", o->trace_ranks, "Ranks the trace shows, as 0-7,64 (default: every simulated rank); "
                "a rank of a mirrored replica has its replica simulated");
  s->add_option("--policy", o->policy, "Kernel policy: op=impl[:precision],... or a JSON/YAML file");
  s->add_option("--set", o->sets, "Override a config field: /json/pointer=value (repeatable)");
  add_trace_flags(*s, o->trace);
  s->add_flag("--json", o->json, "Print JSON");
  s->footer(zoo_models_text());
  s->callback([&ctx, o] { ctx.action = [&ctx, o] { return run_train(*o, ctx); }; });
}

}  // namespace syntorch::cli
