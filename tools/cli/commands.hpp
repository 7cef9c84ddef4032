#pragma once
// Each subcommand registers itself on the app and records what to run once flags are parsed.

#include <CLI/CLI.hpp>
#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

namespace syntorch::cli {

struct Context {
  std::ostream& out;
  std::ostream& err;
  std::function<int()> action;  // set by the subcommand that was chosen
};

void add_hw_command(CLI::App& app, Context& ctx);
void add_kernel_command(CLI::App& app, Context& ctx);
void add_validate_command(CLI::App& app, Context& ctx);
void add_calibrate_command(CLI::App& app, Context& ctx);
void add_simulate_command(CLI::App& app, Context& ctx);
void add_serve_command(CLI::App& app, Context& ctx);
void add_train_command(CLI::App& app, Context& ctx);
void add_sweep_command(CLI::App& app, Context& ctx);
void add_trace_command(CLI::App& app, Context& ctx);
void add_replay_command(CLI::App& app, Context& ctx);
void add_graph_command(CLI::App& app, Context& ctx);

// `syntorch replay` as `simulate --graph run.et` runs it (replay_command.cpp).
int run_replay_workload(const std::string& workload, const std::string& hw, const std::vector<std::string>& sets,
                        const std::string& policy, const std::string& framework, const std::string& trace,
                        const std::string& comm_groups, bool json, Context& ctx);

}  // namespace syntorch::cli
