#pragma once
// Predicts one op by running it on the simulator: the Dispatcher lowers it, the Executor runs
// the kernels (or the collective's transfers) on a SimMachine, and the time is read off the
// simulated clock. Device timing is first kernel start to last kernel end, as CUDA events around
// the kernels measure back to back (nccl-tests, benchmark loops); host timing adds what a host
// clock around a synchronised call sees: framework dispatch, one launch call per kernel, launch
// latency and synchronisation, from the host part of the config; events timing is what CUDA
// events recorded around one call on an idle stream see (torch.cuda.Event around a
// torch.distributed call): the host work between the two records shows, the launch latency both
// records pay and the synchronisation after them do not. The simulator and machine are reused
// across predictions.

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "syntorch/hw/sim_machine.hpp"
#include "syntorch/runtime/dispatcher.hpp"
#include "syntorch/runtime/executor.hpp"

namespace syntorch::runtime {

enum class Timing { device, host, events };

std::string_view timing_name(Timing t);
std::optional<Timing> parse_timing(std::string_view name);
const std::vector<std::string>& timing_names();  // device, host, events

struct Prediction {
  double time_s = 0;         // in the requested timing
  double device_time_s = 0;
  double host_overhead_s = 0;  // host timing minus device timing
  double events_overhead_s = 0;  // events timing minus device timing
  double flops = 0;
  double hbm_bytes = 0;
  std::string bound;         // compute, memory, latency, launch or communication
  std::vector<Kernel> kernels;
  std::vector<KernelRun> runs;
  std::optional<CollectivePlan> plan;
};

class Predictor {
 public:
  Predictor(const hw::Machine& machine, KernelPolicy policy);
  ~Predictor();
  Predictor(const Predictor&) = delete;
  Predictor& operator=(const Predictor&) = delete;

  // Throws InputError for invalid shapes or what the device cannot run.
  Prediction predict(const OpDesc& op, Timing timing = Timing::device);

  const Dispatcher& dispatcher() const { return dispatcher_; }

 private:
  Prediction predict_unchecked(const OpDesc& op, Timing timing);
  void run_kernels(Prediction& p);
  void run_collective(Prediction& p);

  const hw::Machine& machine_;
  Dispatcher dispatcher_;
  sim::Simulator sim_;
  std::unique_ptr<hw::SimMachine> hw_;
  std::unique_ptr<Executor> executor_;
};

}  // namespace syntorch::runtime
