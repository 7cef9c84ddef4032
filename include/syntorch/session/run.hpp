#pragma once
// A run a program drives as it goes (the Python package's): what it is made of is checked whole
// before anything runs (the machine with its --set overrides, the kernel policy, the framework,
// the recorder: a trace file, the console summary of every op and kernel by name, or both), then
// its engine either takes the calling thread as rank 0's program (attach, finish) or runs one
// program per rank on threads of their own (run_programs). Not movable: the engine points at what
// the run owns.

#include <functional>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "syntorch/hw/machine.hpp"
#include "syntorch/os/host_thread.hpp"
#include "syntorch/runtime/engine.hpp"
#include "syntorch/runtime/policy.hpp"
#include "syntorch/trace/recorder.hpp"

namespace syntorch::session {

// What a program may see thrown into it: its device ran out of memory (a result: the run reports
// it), or its run stopped under it (an earlier failure).
using OutOfMemory = runtime::OutOfMemory;
using RunStopped = os::QueueAborted;

struct RunOptions {
  std::string hw;                 // a hardware config file
  std::vector<std::string> sets;  // "/json/pointer=value" overrides
  std::string framework = "eager";
  std::string trace;              // a trace file to write as the run goes ("" for none)
  std::string policy;             // "op=impl,..." or a policy file ("" for none)
  bool console = false;           // keep the ops and kernels by name for console()
  bool profiling = false;         // the program may open profiler windows (RankContext::trace_window_begin):
                                  // the engine traces even with no trace file or console
};

// What a finished run measured, summed over its ranks.
struct RunStats {
  double simulated_time_s = 0;
  std::uint64_t kernels = 0;
  double flops = 0;
  double hbm_bytes = 0;
  std::vector<std::uint64_t> peak_memory_bytes;  // per rank: peak allocated
  std::vector<std::uint64_t> peak_reserved_bytes;  // per rank: peak reserved by the caching allocator
  std::uint64_t events = 0;
  // A simulated out-of-memory: what the failed request was and what held the memory.
  std::optional<runtime::OomReport> oom;
  std::string device;   // the first device's name
  std::string machine;
  struct Step {
    std::string name;
    double begin_s = 0;
    double end_s = 0;
  };
  std::vector<Step> steps;  // rank 0's top-level record_function spans
};

// What an engine's result measured, summed over its ranks, on `machine`.
RunStats run_stats(const runtime::EngineResult& result, const hw::Machine& machine);

class Run {
 public:
  // Throws InputError for a bad config, override, framework or policy.
  explicit Run(const RunOptions& options);
  ~Run();
  Run(const Run&) = delete;
  Run& operator=(const Run&) = delete;

  // The calling thread becomes the one rank's program until finish(). A run runs once: attach or
  // run_programs, not both, not twice (std::logic_error).
  void attach();
  // Ends the attached program, waits for the simulation and says what it measured; the same
  // answer (or the same exception) on every later call.
  RunStats finish();
  bool finished() const { return result_.has_value() || error_ != nullptr; }

  // `world` ranks, each running `program` on a thread of its own (identical ranks simulated once
  // with `mirror`: rank 0's program stands for every rank); returns when the simulation ends.
  RunStats run_programs(int world, const std::function<void(int rank)>& program, bool mirror);

  std::string console() const { return console_text_.str(); }
  const hw::Machine& machine() const { return *machine_; }

 private:
  RunStats stats(const runtime::EngineResult& r) const;

  std::unique_ptr<hw::Machine> machine_;
  runtime::KernelPolicy policy_;
  runtime::EngineOptions engine_options_;
  std::ostringstream console_text_;  // before the recorder, which writes to it when it finishes
  trace::Recorder recorder_;
  std::unique_ptr<runtime::Engine> engine_;  // the attached one
  std::optional<runtime::EngineResult> result_;
  std::exception_ptr error_;  // why finishing failed
  bool ran_ = false;          // run_programs was called
};

// Run around every wait of a program's thread (for room in its queue, or for its turn), on that
// thread: a program holding a lock the others need to go on (Python's) gives it up while it
// waits. Per thread; none by default, and none again after clear.
void set_program_wait_hooks(void (*before)(), void (*after)());
void clear_program_wait_hooks();

}  // namespace syntorch::session
