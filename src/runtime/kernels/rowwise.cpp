// LayerNorm, RMSNorm and softmax over the last dimension: memory-bound kernels with one CTA per
// row (several short rows per CTA). Their efficiency depends on the row size through physical
// effects: short rows pack into CTAs; a row up to 1024 elements stays in one warp's registers
// (the persistent kernels: one read, one write); a longer softmax row is read twice from global
// memory (online softmax: max and sum in one pass, normalise in a second); a normalisation row
// stays on chip in a CTA's registers and shared memory, with fewer CTAs resident per unit as rows
// grow, down to one CTA holding a whole unit; a row beyond that is read again, from L2 while the
// rows in flight fit there.

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

#include "kernels.hpp"
#include "syntorch/base/units.hpp"

namespace syntorch::runtime::detail {

namespace {
// PyTorch's softmax and norm kernels keep a row of up to 1024 elements in one warp's registers
// (its persistent kernels) and use block-wide kernels beyond: a library rule, not a hardware one.
constexpr std::uint64_t kPersistentCols = 1024;
}  // namespace

std::vector<Kernel> lower_rowwise(const OpDesc& op, const LowerContext& cx, RowCost alg) {
  const hw::Device& d = cx.device;
  const double e = element_bytes(cx.dtype);
  const double rate = unit_vector_ops_per_s(d, DType::fp32);
  if (rate == 0) unsupported(cx, "row-wise kernels need fp32 vector throughput (vector_ops_per_cycle.fp32)");
  const std::uint64_t rows_per_tile = std::max<std::uint64_t>(1, 1024 / op.cols);
  Kernel k;
  k.device = cx.device_index;
  k.impl = "fused";
  k.name = std::string(op_name(op.kind));
  k.tiles = (op.rows + rows_per_tile - 1) / rows_per_tile;
  k.tiles_per_unit = d.compute.resident_tiles_per_unit;
  const double row_bytes = static_cast<double>(op.cols) * e;
  int hbm_reads = 1;
  if (op.cols > kPersistentCols && alg.global_passes > 1) {
    // The second pass finds the row in L2 only if input and output together fit there.
    const double footprint = (alg.inputs + 1.0) * static_cast<double>(op.rows) * row_bytes;
    hbm_reads = footprint <= d.cache.size_bytes ? 1 : alg.global_passes;
    k.why.push_back(fmt::format("rows of {} elements: {} passes over global memory, {}", op.cols, alg.global_passes,
                                hbm_reads == 1 ? "the second from L2" : "each from HBM"));
  } else {
    // A CTA holds its rows on chip in fp32 for the reduction, in registers and shared memory.
    // As many CTAs stay resident on a unit as its on-chip storage holds (down to one CTA using
    // the whole unit); a row too long for a whole unit is read again, from L2 while the rows
    // in flight fit there.
    const double on_chip = d.compute.shared_memory_bytes + d.compute.register_file_bytes;
    const double footprint = static_cast<double>(rows_per_tile * op.cols) * std::max(e, 4.0) * alg.inputs;
    const auto fit = on_chip > 0 ? static_cast<std::uint64_t>(on_chip / footprint) : std::uint64_t{k.tiles_per_unit};
    if (fit == 0) {
      k.tiles_per_unit = 1;
      const std::uint64_t in_flight = std::min<std::uint64_t>(k.tiles, d.compute.units);
      const bool hit = static_cast<double>(in_flight * rows_per_tile) * row_bytes * alg.inputs <= d.cache.size_bytes;
      hbm_reads = hit ? 1 : 2;
      k.why.push_back(fmt::format("a row needs {} in fp32, more than a unit's {} of registers and shared memory: "
                                  "read twice, {}",
                                  units::format_size(footprint), units::format_size(on_chip),
                                  hit ? "the second time from L2" : "both from HBM"));
    } else {
      k.tiles_per_unit = static_cast<std::uint32_t>(std::min<std::uint64_t>(k.tiles_per_unit, fit));
      k.why.push_back(fmt::format("rows of {} stay on chip ({} in fp32 per CTA, {} CTA(s) per unit): {}, one write",
                                  units::format_size(row_bytes), units::format_size(footprint), k.tiles_per_unit,
                                  alg.inputs == 1 ? "one read" : fmt::format("each of {} inputs read once", alg.inputs)));
    }
  }
  k.tile_compute_s = static_cast<double>(rows_per_tile * op.cols) * alg.ops_per_element / rate;
  k.hbm_bytes = static_cast<double>(op.rows) * row_bytes * (hbm_reads * alg.inputs + 1);  // real rows only
  k.hbm_write_bytes = static_cast<double>(op.rows) * row_bytes;
  k.tile_hbm_bytes = k.hbm_bytes / static_cast<double>(k.tiles);
  k.flops = static_cast<double>(op.rows * op.cols) * alg.ops_per_element;
  k.why.insert(k.why.begin(), fmt::format("{} rows in {} CTAs of {} row(s), {} resident per unit", op.rows, k.tiles,
                                          rows_per_tile, k.tiles_per_unit));
  return {std::move(k)};
}

std::vector<Kernel> lower_embedding(const OpDesc& op, const LowerContext& cx) {
  const hw::Device& d = cx.device;
  const double e = element_bytes(cx.dtype);
  const double rate = unit_vector_ops_per_s(d, DType::fp32);
  if (rate == 0) unsupported(cx, "elementwise kernels need fp32 vector throughput (vector_ops_per_cycle.fp32)");
  // One CTA gathers one token's row from the table and writes it out.
  Kernel k;
  k.device = cx.device_index;
  k.impl = "fused";
  k.name = std::string(op_name(op.kind));
  k.tiles_per_unit = d.compute.resident_tiles_per_unit;
  k.tiles = op.rows;
  k.tile_compute_s = static_cast<double>(op.cols) / rate;
  k.tile_hbm_bytes = 2.0 * static_cast<double>(op.cols) * e;
  k.hbm_bytes = k.tile_hbm_bytes * static_cast<double>(k.tiles);
  k.hbm_write_bytes = k.hbm_bytes / 2;
  k.flops = 0;
  k.why.push_back(fmt::format("gather: {} rows of {} from a {}-row table", op.rows, op.cols, op.vocab));
  return {std::move(k)};
}

}  // namespace syntorch::runtime::detail
