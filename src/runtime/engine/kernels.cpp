// A rank's kernels on its streams: started through the executor, accounted when done (time by
// what bounded it, FLOPs by op, HBM bytes), and shown on the stream's track.

#include <cmath>

#include "rank.hpp"

namespace syntorch::runtime::detail {

void Rank::start_kernel(const LoweredKernel& kernel, os::Stream& stream) {
  Slot& slot = slots_[stream.index()];
  slot.kernel = &kernel;
  slot.flow_id = begin_item(stream.index(), core_.sim.now());
  core_.executor->launch(kernel.kernel, device_, slot.run, sim::handler<&Rank::on_kernel_done>(), this,
                         stream.index());
}

void Rank::on_kernel_done(std::uint64_t stream) {
  Slot& slot = slots_[stream];
  const KernelRun& run = slot.run;
  const Kernel& k = slot.kernel->kernel;
  const sim::TimePs took = run.end_ps - run.start_ps;
  const bool compute_bound = run.compute_ps >= run.memory_ps;
  (compute_bound ? result_.compute_bound_ps : result_.memory_bound_ps) += took;
  result_.flops += k.flops;
  result_.flops_by_op[static_cast<std::size_t>(k.op)] += k.flops;
  result_.hbm_bytes += k.hbm_bytes;
  ++result_.kernels;
  result_.device_finish_ps = run.end_ps;
  if (trace_device_) {
    // "op" only when the kernel is not simply named after it, "tile" only for tiled kernels.
    trace::Arg args[7] = {{"impl", k.impl},
                          {"flops", static_cast<std::uint64_t>(std::llround(k.flops))},
                          {"hbm_bytes", static_cast<std::uint64_t>(std::llround(k.hbm_bytes))},
                          {"bound", compute_bound ? "compute" : "memory"},
                          {"why", slot.kernel->why},
                          {"op", op_name(k.op)},
                          {"tile", k.tile}};
    std::size_t n = 5;
    if (k.name != op_name(k.op)) args[n++] = args[5];
    if (!k.tile.empty()) args[n++] = args[6];
    last_seq_[stream] = tracer_->device_span(index_, static_cast<std::uint32_t>(stream), k.name, "kernel",
                                                  run.start_ps, run.end_ps, slot.flow_id,
                                                  std::span<const trace::Arg>(args, n));
  }
  slot.kernel = nullptr;
  slot.flow_id = 0;
  end_item(static_cast<std::uint32_t>(stream), run.end_ps);
  streams_[stream]->finish_current_and_continue();
}

}  // namespace syntorch::runtime::detail
