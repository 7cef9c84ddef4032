#include "cli.hpp"

#include <ostream>

#include "commands.hpp"
#include "syntorch/base/diagnostics.hpp"
#include "syntorch/base/version.hpp"

namespace syntorch::cli {

int run(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  CLI::App app{"syntorch: a hardware simulator and synthetic trace generator for LLM workloads", "syntorch"};
  app.set_version_flag("--version", std::string("syntorch ") + kVersion);
  app.require_subcommand(1);
  Context ctx{out, err, {}};
  add_hw_command(app, ctx);

  // CLI11's vector overload takes the arguments in reverse order.
  std::vector<std::string> rest(args.rbegin(), args.rend());
  try {
    app.parse(rest);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e, out, err);
    return code == 0 ? kExitOk : kExitBadInput;
  }
  if (!ctx.action) return kExitBadInput;
  try {
    return ctx.action();
  } catch (const InputError& e) {
    err << e.diagnostics().to_string();
    return kExitBadInput;
  } catch (const std::exception& e) {
    err << "internal error: " << e.what() << "\n";
    return kExitInternal;
  }
}

}  // namespace syntorch::cli
