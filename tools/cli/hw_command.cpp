// `syntorch hw validate FILE...` and `syntorch hw show FILE [--set /path=value]...`.

#include <fmt/format.h>

#include <ostream>

#include "cli.hpp"
#include "commands.hpp"
#include "common.hpp"
#include "syntorch/session/hardware.hpp"

namespace syntorch::cli {

namespace {

struct HwOptions {
  std::vector<std::string> files;
  std::string file;
  std::vector<std::string> sets;
};

int validate(const HwOptions& o, Context& ctx) {
  int rc = kExitOk;
  for (const auto& f : o.files) {
    try {
      const session::HardwareSummary m = session::check_hardware(f);
      ctx.out << fmt::format("ok: {}: {} ({} device(s), {} link(s))\n", f, m.name, m.devices, m.links);
    } catch (const InputError& e) {
      ctx.err << e.diagnostics().to_string();
      ctx.err << fmt::format("invalid: {}: {} problem(s)\n", f, e.diagnostics().size());
      rc = kExitBadInput;
    }
  }
  return rc;
}

int show(const HwOptions& o, Context& ctx) {
  try {
    ctx.out << session::describe_hardware(o.file, o.sets);
  } catch (const InputError& e) {
    ctx.err << e.diagnostics().to_string();
    return kExitBadInput;
  }
  ctx.out << fmt::format("\nRun a model on it: syntorch simulate --model NAME --hw {}\n{}\n", o.file, zoo_models_text());
  return kExitOk;
}

}  // namespace

void add_hw_command(CLI::App& app, Context& ctx) {
  auto opts = std::make_shared<HwOptions>();
  CLI::App* hw = app.add_subcommand("hw", "Hardware configs: validate them, or show what they describe");
  hw->require_subcommand(1);

  CLI::App* val = hw->add_subcommand("validate", "Check hardware configs and report every problem (exit 2 if any)");
  val->add_option("files", opts->files, "Hardware config JSON files")->required();
  val->callback([&ctx, opts] { ctx.action = [&ctx, opts] { return validate(*opts, ctx); }; });

  CLI::App* sh = hw->add_subcommand("show", "Print a config's devices, peak FLOP/s, memories, links and topology");
  sh->add_option("file", opts->file, "Hardware config JSON file")->required();
  sh->add_option("--set", opts->sets, "Override a config field: /json/pointer=value (repeatable)");
  sh->callback([&ctx, opts] { ctx.action = [&ctx, opts] { return show(*opts, ctx); }; });
}

}  // namespace syntorch::cli
