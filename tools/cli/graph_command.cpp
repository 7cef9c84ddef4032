// `syntorch graph export --model M [--batch B] [--seq S] [--dtype D] [--hw FILE] [--set ...] -o FILE`:
// a zoo model's forward pass written as a syntorch IR (docs/ir.md), which `simulate --graph` runs
// back and Python's syntorch.ir loads.

#include <fmt/format.h>

#include "cli.hpp"
#include "commands.hpp"
#include "common.hpp"
#include "syntorch/base/dtype.hpp"
#include "syntorch/session/graph_export.hpp"

namespace syntorch::cli {

namespace {

struct ExportFlags {
  std::string model;
  std::int64_t batch = 1;
  std::int64_t seq = 128;
  std::string dtype = "fp16";
  std::string hw;
  std::vector<std::string> sets;
  std::string out;
  bool train = false;
};

int run_export(const ExportFlags& f, Context& ctx) {
  if (f.train) {
    ctx.err << "--train: graph export writes the forward pass only so far (the backward and optimizer ops of a "
               "training step are not recorded yet); export without --train\n";
    return kExitBadInput;
  }
  session::GraphExportSpec spec;
  spec.model = f.model;
  spec.batch = f.batch;
  spec.seq = f.seq;
  Diagnostics d;
  const std::optional<DType> dtype = parse_dtype(f.dtype);
  if (!dtype) {
    ctx.err << fmt::format("--dtype: expected fp32, fp16 or bf16, got \"{}\"\n", f.dtype);
    return kExitBadInput;
  }
  spec.dtype = *dtype;
  session::RunOptions machine;
  machine.hw = f.hw.empty() ? default_hw_config("h100_sxm5_80gb.json") : f.hw;
  machine.sets = f.sets;
  machine.framework = "native";
  session::GraphExport e;
  try {
    e = session::export_graph(machine, spec);
  } catch (const InputError& x) {
    ctx.err << x.diagnostics().to_string();
    return kExitBadInput;
  } catch (const std::invalid_argument& x) {
    ctx.err << "error: " << x.what() << "\n";
    return kExitBadInput;
  }
  if (e.stats.oom) {
    ctx.err << fmt::format("OUT OF MEMORY: {} does not fit one device of {} ({} requested for {}); export on a "
                           "device with more memory (--set /components/gpu/components/hbm/size=1TiB)\n",
                           f.model, e.stats.machine, size(e.stats.oom->requested_bytes), e.stats.oom->requested_for);
    return kExitOom;
  }
  if (e.constants > 0) {
    ctx.err << fmt::format("{}: {} tensors the forward read came from ops the torch layer's recorder does not record "
                           "yet (their kernels would be missing from the graph); the model cannot be exported yet\n",
                           f.model, e.constants);
    return kExitBadInput;
  }
  try {
    session::save_graph(e, f.out);
  } catch (const InputError& x) {
    ctx.err << x.diagnostics().to_string();
    return kExitBadInput;
  }
  ctx.out << fmt::format("{}: {} forward over {} x {} tokens ({}): {} nodes, {} weights, {} tensors\n", f.out,
                         e.ir.model, f.batch, f.seq, f.dtype, e.ir.nodes.size(), e.ir.weights.size(),
                         e.ir.tensors.size());
  return kExitOk;
}

}  // namespace

void add_graph_command(CLI::App& app, Context& ctx) {
  CLI::App* g = app.add_subcommand("graph", "Model graphs (syntorch IR): export a zoo model's");
  g->require_subcommand(1);
  auto f = std::make_shared<ExportFlags>();
  CLI::App* e = g->add_subcommand("export", "Write a zoo model's forward pass as a syntorch IR JSON file");
  e->add_option("--model", f->model, "A zoo model or a model config JSON (as simulate --model)")->required();
  e->add_option("--batch", f->batch, "Sequences (default 1)");
  e->add_option("--seq", f->seq, "Tokens per sequence (default 128)");
  e->add_option("--dtype", f->dtype, "fp32, fp16 or bf16 (default fp16)");
  e->add_option("--hw", f->hw, "The machine the model is built on (default hw_configs/h100_sxm5_80gb.json)");
  e->add_option("--set", f->sets, "Override a config field: /json/pointer=value (repeatable)");
  e->add_option("-o,--out", f->out, "The IR file to write")->required();
  e->add_flag("--train", f->train, "A training step's graph (not recorded yet: refused)");
  e->callback([&ctx, f] { ctx.action = [&ctx, f] { return run_export(*f, ctx); }; });
}

}  // namespace syntorch::cli
