#include "cli.hpp"

#include <ostream>
#include <sstream>

#include "commands.hpp"
#include "common.hpp"
#include "syntorch/base/diagnostics.hpp"
#include "syntorch/base/version.hpp"
#include "syntorch/trace/output_file.hpp"

namespace syntorch::cli {

namespace {
// CLI11 reports a mistyped subcommand as a missing one; name the word and the valid choices.
std::string unknown_subcommand(CLI::App& app, const std::vector<std::string>& args) {
  CLI::App* current = &app;
  std::string path = "syntorch";
  for (const auto& a : args) {
    if (a.empty() || a[0] == '-') return {};
    const auto subs = current->get_subcommands([](CLI::App*) { return true; });
    if (subs.empty()) return {};
    CLI::App* next = nullptr;
    std::vector<std::string> names;
    for (CLI::App* s : subs) {
      names.push_back(s->get_name());
      if (s->get_name() == a) next = s;
    }
    if (!next) {
      return "unknown subcommand \"" + clip(a, 200) + "\" for " + path + did_you_mean(a, names) + " (valid: " + join(names) +
             ")";
    }
    current = next;
    path += " " + a;
  }
  return {};
}

// Every option that takes a value refuses an empty one (`--hw ""` silently meant the default,
// `--policy ""` no policy): a rule for the whole command line, not per flag.
void refuse_empty_values(CLI::App& app) {
  const CLI::Validator non_empty(
      [](std::string& value) { return value.empty() ? std::string("expected a value, got an empty string") : ""; },
      "", "NONEMPTY");
  for (CLI::Option* opt : app.get_options([](CLI::Option* o) { return o->get_expected_min() > 0; })) {
    opt->check(non_empty);
  }
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) refuse_empty_values(*sub);
}

// The command line: every subcommand, one table line each.
void build_app(CLI::App& app, Context& ctx) {
  app.set_version_flag("--version", std::string("syntorch ") + kVersion);
  app.require_subcommand(1);
  add_hw_command(app, ctx);
  add_kernel_command(app, ctx);
  add_validate_command(app, ctx);
  add_calibrate_command(app, ctx);
  add_simulate_command(app, ctx);
  add_serve_command(app, ctx);
  add_train_command(app, ctx);
  add_sweep_command(app, ctx);
  add_trace_command(app, ctx);
  add_replay_command(app, ctx);
  add_graph_command(app, ctx);
  app.footer(zoo_models_text());
  refuse_empty_values(app);
}

void collect_paths(CLI::App& app, std::vector<std::string>& prefix, std::vector<std::vector<std::string>>& out) {
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) {
    prefix.push_back(sub->get_name());
    out.push_back(prefix);
    collect_paths(*sub, prefix, out);
    prefix.pop_back();
  }
}
}  // namespace

std::vector<std::vector<std::string>> subcommand_paths() {
  std::ostringstream sink;
  CLI::App app{"syntorch", "syntorch"};
  Context ctx{sink, sink, {}};
  build_app(app, ctx);
  std::vector<std::vector<std::string>> out;
  std::vector<std::string> prefix;
  collect_paths(app, prefix, out);
  return out;
}

int run(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  CLI::App app{"syntorch: a hardware simulator and synthetic trace generator for LLM workloads", "syntorch"};
  Context ctx{out, err, {}};
  build_app(app, ctx);

  if (const std::string bad = unknown_subcommand(app, args); !bad.empty()) {
    err << bad << "\nRun with --help for more information.\n";
    return kExitBadInput;
  }
  // CLI11's vector overload takes the arguments in reverse order.
  std::vector<std::string> rest(args.rbegin(), args.rend());
  try {
    app.parse(rest);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e, out, err) == 0 ? kExitOk : kExitBadInput;  // --help, --version
    // CLI11's message quotes the argument whole: a pasted file would come back in full.
    err << clip(e.what(), 2000) << "\nRun with --help for more information.\n";
    return kExitBadInput;
  }
  if (!ctx.action) return kExitBadInput;
  try {
    return ctx.action();
  } catch (const InputError& e) {
    err << e.diagnostics().to_string();
    return kExitBadInput;
  } catch (const trace::OutputError& e) {
    err << "error: " << e.what() << " (nothing half-written was left)\n";
    return kExitBadInput;
  } catch (const std::overflow_error& e) {
    // Only inputs take a run past the clock: a time, bandwidth or size that makes it last longer.
    err << "error: the run would last longer than the simulator can count (" << e.what()
        << "); a config value or size makes it that slow\n";
    return kExitBadInput;
  } catch (const std::exception& e) {
    err << "internal error: " << e.what() << "\n";
    return kExitInternal;
  }
}

}  // namespace syntorch::cli
