// replay: a kernel of a recorded trace (a compute node of a Chakra execution trace), run for the
// duration the trace recorded (a duration below the device's fixed per-kernel cost takes that
// cost, as any kernel does). It holds every compute unit of its device for that time (a kernel
// that fills the GPU, as recorded kernels of training and inference mostly do), so kernels on
// other streams beside it share the device with it; it moves no modelled HBM traffic. Its FLOPs
// are the recorded ones, for the run's totals.

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "op_type.hpp"

namespace syntorch::runtime::ops {

namespace {
constexpr OpParam kParams[] = {{"duration_ps", "the recorded duration, in picoseconds", &OpDesc::duration_ps},
                               {"elements", "the recorded FLOPs (0 when unknown)", &OpDesc::elements},
                               {"bytes", "the recorded bytes its tensors hold (0 when unknown)", &OpDesc::bytes}};
constexpr std::string_view kImpls[] = {"auto", "recorded"};
}  // namespace

extern constinit const OpType replay_op{
    .kind = OpKind::replay,
    .name = "replay",
    .params = kParams,
    .implementations = kImpls,
    .check = [](const OpDesc&, OpCheck&) {},  // a zero duration is a point carrying dependencies
    .describe =
        [](const OpDesc& op) {
          return fmt::format("replay duration_ps={} flops={} bytes={}", op.duration_ps, op.elements, op.bytes);
        },
    .flops = [](const OpDesc& op) { return static_cast<double>(op.elements); },
    .min_bytes = [](const OpDesc& op) { return static_cast<double>(op.bytes); },
    .lower =
        [](const OpDesc& op, const detail::LowerContext& ctx) {
          Kernel k;
          k.name = "replay";
          k.impl = "recorded";
          k.device = ctx.device_index;
          k.op = OpKind::replay;
          const std::uint64_t units = std::max<std::uint64_t>(ctx.device.compute.units, 1);
          k.tiles = units;
          k.tiles_per_unit = 1;
          // The device adds its fixed per-kernel cost to every kernel; the recorded duration holds it.
          k.tile_compute_s = std::max(0.0, static_cast<double>(op.duration_ps) * 1e-12 - ctx.device.compute.kernel_overhead_s);
          k.flops = static_cast<double>(op.elements);
          k.why.push_back("a recorded kernel: its trace's duration");
          return std::vector<Kernel>{k};
        },
};

}  // namespace syntorch::runtime::ops

namespace syntorch::runtime {

OpDesc replay_op(double duration_s, double flops, double bytes) {
  const auto count = [](double v, double scale) {
    return std::isfinite(v) && v > 0 ? static_cast<std::uint64_t>(std::min(v * scale, 1.8e19)) : std::uint64_t{0};
  };
  OpDesc op;
  op.kind = OpKind::replay;
  op.duration_ps = count(duration_s, 1e12);
  op.elements = count(flops, 1);
  op.bytes = count(bytes, 1);
  return op;
}

}  // namespace syntorch::runtime
