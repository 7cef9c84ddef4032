#pragma once
// Helpers the subcommands share.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>

#include "cli.hpp"
#include "commands.hpp"
#include "syntorch/session/run.hpp"

namespace syntorch::trace {
class Recorder;
}

namespace syntorch::cli {

// The trace flags of the commands that run a simulation.
struct TraceFlags {
  std::string file;                   // --trace
  std::string format;                 // --trace-format ("" = from the extension)
  std::string level = "kernel";       // --trace-level
};
// What held the memory at a simulated OOM: its live bytes by purpose, then the largest tensors.
void print_oom_holders(std::ostream& out, const runtime::OomReport& oom);
// Bytes as a size ("1.5 GB").
std::string size(std::uint64_t bytes);

// Registers --trace, --trace-format and --trace-level on a command.
void add_trace_flags(CLI::App& command, TraceFlags& flags);
// Attaches the writer the flags ask for to `recorder` (or the console summary); false after
// printing the flag's problem to ctx.err.
bool open_trace(const TraceFlags& flags, trace::Recorder& recorder, Context& ctx);
runtime::TraceLevel trace_level(const TraceFlags& flags);
// After the run: finishes the trace file (false after printing why it could not be written) and
// says where it is (unless JSON is printed).
bool finish_trace(const TraceFlags& flags, trace::Recorder& recorder, Context& ctx, bool json);

// "Models (--model): gpt3-125m, ..." wrapped to the terminal's usual width: what --help and
// `hw show` tell a newcomer the zoo holds.
std::string zoo_models_text();

// The bundled config a command uses when --hw is not given: hw_configs/<name> in the working
// directory, else next to the syntorch binary's build tree.
std::string default_hw_config(const std::string& name);

}  // namespace syntorch::cli
