#pragma once
// Runs kernels and collective plans on a SimMachine. A kernel takes compute units from its
// device's pool (so concurrent kernels contend for SMs) and moves its HBM traffic as flows on the
// device's HBM resource (so they contend for bandwidth), wave by wave: each phase lasts until
// both its arithmetic and its memory traffic are done. A collective plan is a DAG of transfers
// between devices over the routed links, each after the library's step latency.
// A kernel that starts on a device with nothing else running there and no traffic on its HBM
// runs "solo": its phases are evaluated in closed form (exactly what the flows would give alone)
// and it costs one event. The moment anything else wants that device (another kernel, a transfer
// touching its HBM, share_device()), the solo kernel is converted, at its exact progress, into
// the general form and shares from then on.

#include <cstdint>
#include <vector>

#include "syntorch/hw/sim_machine.hpp"
#include "syntorch/runtime/kernel.hpp"

namespace syntorch::runtime {

// A collective algorithm lowered to transfers. Transfer i moves `bytes` (on the wire) from src to
// dst endpoints; it starts `step_latency` (the library's synchronisation) after the last of its
// `deps` finishes, and not before the transfer it `follows` (the previous chunk on its path,
// which needs no synchronisation: the library keeps several chunks in flight) has finished.
// Transfers with neither start `launch_latency` + `step_latency` after the collective.
inline constexpr std::uint32_t kNoTransfer = 0xffffffffu;
struct Transfer {
  std::uint32_t src_endpoint = 0;
  std::uint32_t dst_endpoint = 0;
  double bytes = 0;
  double rate_cap_bytes_per_s = sim::kUnlimitedRate;  // what the library's channels can push
  std::vector<std::uint32_t> deps;
  std::uint32_t follows = kNoTransfer;
};

struct CollectivePlan {
  std::string algorithm;
  std::string protocol = "simple";  // of the library (NCCL's Simple, LL, LL128)
  std::uint32_t protocol_index = 0;  // its place in the library's protocols (whose channels carry it)
  std::vector<Transfer> transfers;
  double launch_latency_s = 0;
  double step_latency_s = 0;
  double bytes_per_rank = 0;  // payload bytes each rank sends over the whole collective
  std::vector<std::string> why;
};

// How a kernel runs on its device: the units it holds (CTAs spread over units first, stacked up
// to tiles_per_unit beyond that) and up to two phases, the full waves then the partial last wave,
// each lasting until both its arithmetic and its HBM traffic are done. The Executor runs this
// plan; the cost models estimate with it, so the two cannot drift apart.
struct KernelPhases {
  struct Phase {
    double compute_s = 0;
    double bytes = 0;
    double cap_bytes_per_s = sim::kUnlimitedRate;  // what the held units can stream
  };
  std::uint32_t units = 0;
  double waves = 0;
  int count = 0;
  Phase phases[2];
};
KernelPhases plan_phases(const Kernel& kernel, const hw::Device& device);

// What happened to one kernel run (all times in simulated picoseconds).
struct KernelRun {
  sim::TimePs start_ps = 0;
  sim::TimePs end_ps = 0;
  sim::TimePs compute_ps = 0;   // time the arithmetic alone needed (summed over phases)
  sim::TimePs memory_ps = 0;    // time the memory traffic took (summed over phases)
  sim::TimePs overhead_ps = 0;  // fixed per-kernel cost
  std::uint32_t units = 0;      // compute units held
  double waves = 0;
};

class Executor {
 public:
  explicit Executor(hw::SimMachine& hw);
  ~Executor();
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  // Starts `kernel` now on its device (on `device`: a kernel lowered for another device of the
  // same spec); on_done(obj, arg) runs when it ends. `result` is filled in as it runs and must
  // outlive the kernel.
  void launch(const Kernel& kernel, KernelRun& result, sim::EventFn on_done, void* obj, std::uint64_t arg) {
    launch(kernel, kernel.device, result, on_done, obj, arg);
  }
  void launch(const Kernel& kernel, std::uint32_t device, KernelRun& result, sim::EventFn on_done, void* obj,
              std::uint64_t arg);

  // Something other than this executor's kernels is about to use `device` (its SMs or HBM): a
  // solo kernel there leaves the closed form and shares from now on.
  void share_device(std::uint32_t device);

  // Whether kernels alone on their device may run in closed form (on by default). Off, every
  // kernel goes through SMs and HBM flows, so hardware counters see all of them.
  void set_closed_form(bool on) { closed_form_ = on; }

  // Kernels run solo so far, and solo kernels converted to sharing.
  std::uint64_t solo_kernels() const { return solo_kernels_; }
  std::uint64_t converted_kernels() const { return converted_kernels_; }

  // Starts `plan` now; on_done runs when its last transfer arrives.
  void run_collective(const CollectivePlan& plan, sim::EventFn on_done, void* obj, std::uint64_t arg);

 private:
  struct Running;
  struct RunningCollective;
  // Events (member functions scheduled through sim::handler): a slot of running_ or a packed
  // collective transfer.
  void units_granted(std::uint32_t slot);
  void phase_compute_done(std::uint32_t slot);
  void phase_memory_done(std::uint32_t slot);
  void transfer_ready(std::uint64_t packed);
  void transfer_done(std::uint64_t packed);
  void solo_done(std::uint32_t slot);
  void finish(std::uint32_t slot);
  void start_phase(std::uint32_t slot);
  void phase_part_done(std::uint32_t slot);

  hw::SimMachine& hw_;
  std::vector<Running> running_;
  std::vector<std::uint32_t> free_running_;
  std::vector<RunningCollective> collectives_;
  std::vector<std::uint32_t> free_collectives_;
  std::vector<std::uint32_t> running_on_device_;  // kernels of this executor per device
  std::vector<std::uint32_t> solo_on_device_;     // the solo kernel's slot per device, or none
  bool closed_form_ = true;
  std::uint64_t solo_kernels_ = 0;
  std::uint64_t converted_kernels_ = 0;
};

}  // namespace syntorch::runtime
