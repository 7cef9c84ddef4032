// `syntorch trace FILE`: summarises a trace file syntorch wrote, by its extension: Chrome JSON
// (.json, .json.gz), Perfetto protobuf (.pftrace), Chakra execution traces (.et: one rank file,
// or the workload name "run.et" for every "run.<rank>.et"), or the kernel CSV (.csv). Prints per
// track (process and thread or counter name) the number of events and the first and last times,
// then the totals. A missing, unreadable or malformed file is an error naming it (exit 2).

#include <memory>
#include <ostream>
#include <string>

#include "cli.hpp"
#include "commands.hpp"
#include "syntorch/trace/trace_file.hpp"

namespace syntorch::cli {

namespace {

struct TraceOptions {
  std::string file;
};

int summarize(const TraceOptions& o, Context& ctx) {
  try {
    ctx.out << trace::format_trace_summary(trace::summarize_trace_file(o.file));
    return kExitOk;
  } catch (const trace::TraceFileError& e) {
    ctx.err << "error: " << e.what() << "\n";
    return kExitBadInput;
  }
}

}  // namespace

void add_trace_command(CLI::App& app, Context& ctx) {
  auto opts = std::make_shared<TraceOptions>();
  CLI::App* cmd = app.add_subcommand(
      "trace", "Summarise a trace file (.json, .json.gz, .pftrace, .et, .csv): events and times per track");
  cmd->add_option("file", opts->file, "Trace file; for Chakra, a rank file or the workload name (run.et)")
      ->required();
  cmd->callback([&ctx, opts] { ctx.action = [&ctx, opts] { return summarize(*opts, ctx); }; });
}

}  // namespace syntorch::cli
