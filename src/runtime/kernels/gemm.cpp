// GEMM and batched GEMM: a grid of CTA tiles over the output, each running a k-loop on the
// matrix units, in waves over the device's units. Candidates: every tile shape of the device,
// with split-K when the grid would leave units idle, and a GEMV kernel when one side is tiny.

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

#include <map>

#include "kernels.hpp"
#include "syntorch/base/units.hpp"

namespace syntorch::runtime::detail {

namespace {


// in_flight: the tiles that run at once on the device (0: this GEMM's, up to one a unit; a
// grouped GEMM passes all its groups').
Kernel tiled(const OpDesc& op, const LowerContext& cx, const hw::GemmTile& t, std::uint32_t split, double unit_rate,
             bool on_matrix, std::uint64_t in_flight = 0, double a_real_bytes = -1, double b_real_bytes = -1) {
  const hw::Device& d = cx.device;
  const double e = element_bytes(cx.dtype);
  const std::uint64_t tiles_m = ceil_div(op.m, t.m);
  const std::uint64_t tiles_n = ceil_div(op.n, t.n);
  const std::uint64_t k_split = ceil_div(op.k, split);
  const std::uint64_t k_pad = ceil_div(k_split, t.k) * t.k;
  Kernel k;
  k.device = cx.device_index;
  k.tiles = op.batch * tiles_m * tiles_n * split;
  k.tiles_per_unit = 1;
  // Partial tiles cost a whole tile: the hardware computes the padding. A tile is also fed its
  // A and B panels ((tm + tn) x k elements) from L2 at the unit's load bandwidth; the mainloop
  // overlaps the two, so a small tile (low arithmetic intensity) is bound by the feed. The CTAs of
  // a cluster (tile_cluster of them, neighbours across the larger panel: along m when it is B's,
  // along n when it is A's) load that panel once between them, each its share, and multicast it.
  const double math_s = 2.0 * t.m * t.n * static_cast<double>(k_pad) / unit_rate;
  const std::uint64_t neighbours = t.n >= t.m ? tiles_m : tiles_n;
  const std::uint64_t cluster = std::max<std::uint64_t>(1, std::min<std::uint64_t>(d.compute.tile_cluster, neighbours));
  const double shared_panel = static_cast<double>(std::max(t.m, t.n));
  const double panels = static_cast<double>(t.m + t.n) - shared_panel * (1.0 - 1.0 / static_cast<double>(cluster));
  // The feed is the unit's own L2 port, or its share of the L2's aggregate read bandwidth when
  // the tiles in flight together ask for more than the L2 delivers (small tiles on every unit).
  const std::uint64_t slots = std::min<std::uint64_t>(k.tiles, d.compute.units);
  const std::uint64_t sharing = in_flight > 0 ? std::min<std::uint64_t>(in_flight, d.compute.units) : slots;
  double feed_bytes_per_s = d.compute.unit_bandwidth_bytes_per_s;
  bool l2_shared = false;
  if (d.cache.bandwidth_bytes_per_s > 0 && sharing > 0) {
    const double share = d.cache.bandwidth_bytes_per_s / static_cast<double>(sharing);
    if (feed_bytes_per_s == 0 || share < feed_bytes_per_s) {
      feed_bytes_per_s = share;
      l2_shared = true;
    }
  }
  const double feed_s = feed_bytes_per_s > 0 ? panels * static_cast<double>(k_pad) * e / feed_bytes_per_s : 0.0;
  k.tile_compute_s = std::max(math_s, feed_s);
  k.flops = 2.0 * static_cast<double>(op.batch) * static_cast<double>(op.m) * static_cast<double>(op.n) *
            static_cast<double>(op.k);
  // HBM traffic. The tiles of one wave run in lock-step through k and are rasterised as a
  // near-square block of r x c tiles, so each wave reads r A-panels and c B-panels once (L2
  // serves the other tiles of the block). A and B come from HBM only once overall when both fit
  // in the L2 together; otherwise every wave re-reads its panels.
  const double a_matrix = static_cast<double>(op.batch * op.m * op.k) * e;
  const double b_matrix = static_cast<double>(op.batch * op.k * op.n) * e;
  const double a_bytes = a_real_bytes >= 0 ? a_real_bytes : a_matrix;
  const double b_bytes = b_real_bytes >= 0 ? b_real_bytes : b_matrix;
  const double c_bytes = static_cast<double>(op.batch * op.m * op.n) * e;
  const std::uint64_t r = std::min<std::uint64_t>(tiles_m, static_cast<std::uint64_t>(std::ceil(std::sqrt(static_cast<double>(slots)))));
  const std::uint64_t c = std::min<std::uint64_t>(tiles_n, ceil_div(slots, r));
  // A gathered operand's panels shrink with it (neighbouring windows share their elements in L2).
  const double a_share = a_matrix > 0 ? a_bytes / a_matrix : 1.0;
  const double b_share = b_matrix > 0 ? b_bytes / b_matrix : 1.0;
  const double wave_in = (static_cast<double>(r * t.m) * a_share + static_cast<double>(c * t.n) * b_share) *
                         static_cast<double>(k_split) * e;
  const double waves = static_cast<double>(k.tiles) / static_cast<double>(slots);
  double in_bytes = a_bytes + b_bytes;
  if (in_bytes > d.cache.size_bytes) in_bytes = std::max(in_bytes, waves * wave_in);
  // Split-K writes fp32 partial sums and reads them back to reduce.
  const double split_bytes = split > 1 ? 2.0 * static_cast<double>(op.batch * op.m * op.n) * 4.0 * split : 0.0;
  k.hbm_bytes = in_bytes + c_bytes + split_bytes;
  k.hbm_write_bytes = c_bytes + split_bytes / 2;
  k.tile_hbm_bytes = k.hbm_bytes / static_cast<double>(k.tiles);
  k.tile = fmt::format("{}x{}x{}", t.m, t.n, t.k);
  k.impl = split > 1 ? "splitk" : "tiled";
  k.name = fmt::format("{} {}{}", op_name(op.kind), k.tile, split > 1 ? fmt::format(" split-k {}", split) : "");
  k.why.push_back(fmt::format("tile {}{}: {} tiles = {:.2f} waves on {} units", k.tile,
                              split > 1 ? fmt::format(", split-K {}", split) : "", k.tiles, waves, d.compute.units));
  std::string bound = feed_s > math_s ? "L2-feed-bound" : "math-bound";
  if (cluster > 1) bound += fmt::format(" (its larger panel shared by a cluster of {} CTAs)", cluster);
  if (l2_shared && feed_s > math_s) {
    bound += fmt::format("; its feed is its share of the L2's {} over {} tiles in flight",
                         units::format_bandwidth(d.cache.bandwidth_bytes_per_s), sharing);
  }
  k.why.push_back(fmt::format("{} on {} units: {} per unit at the calibrated efficiency; the tile is {}",
                              dtype_name(cx.dtype), on_matrix ? "matrix" : "vector", units::format_flops(unit_rate), bound));
  return k;
}

// One CTA per 64 rows of the large operand, streaming it once; the tiny side stays in L2.
Kernel gemv(const OpDesc& op, const LowerContext& cx) {
  const hw::Device& d = cx.device;
  const double e = element_bytes(cx.dtype);
  const std::uint64_t small = std::min(op.m, op.n);
  const std::uint64_t big = std::max(op.m, op.n);
  const double rate = unit_vector_ops_per_s(d, cx.dtype) > 0 ? unit_vector_ops_per_s(d, cx.dtype)
                                                             : unit_vector_ops_per_s(d, DType::fp32);
  if (rate == 0) unsupported(cx, fmt::format("no vector throughput for {} or fp32 (vector_ops_per_cycle)", dtype_name(cx.dtype)));
  constexpr std::uint64_t kRowsPerTile = 64;
  Kernel k;
  k.device = cx.device_index;
  k.impl = "gemv";
  k.name = fmt::format("{} gemv", op_name(op.kind));
  k.tiles = op.batch * ceil_div(big, kRowsPerTile);
  k.tiles_per_unit = d.compute.resident_tiles_per_unit;
  k.tile_compute_s = 2.0 * static_cast<double>(small * kRowsPerTile * op.k) / rate;
  k.flops = 2.0 * static_cast<double>(op.batch * op.m) * static_cast<double>(op.n) * static_cast<double>(op.k);
  k.hbm_bytes = static_cast<double>(op.batch) * e *
                static_cast<double>(big * op.k + small * op.k + small * big);
  k.hbm_write_bytes = static_cast<double>(op.batch) * e * static_cast<double>(small * big);
  k.tile_hbm_bytes = k.hbm_bytes / static_cast<double>(k.tiles);
  k.why.push_back(fmt::format("GEMV path: min(m, n) = {} is tiny; {} CTAs stream the {}x{} operand once", small,
                              k.tiles, big, op.k));
  return k;
}

// The rate the device multiplies `cx.dtype` at (matrix units, else vector units); throws naming
// what the device has when it has neither.
std::pair<double, bool> rate_for(const LowerContext& cx) {
  const hw::Device& d = cx.device;
  // TF32 allowed on a device without TF32 units: the products run in fp32, as cuBLAS runs them.
  const DType t = cx.dtype == DType::tf32 && unit_matrix_ops_per_s(d, DType::tf32) == 0 ? DType::fp32 : cx.dtype;
  double rate = unit_matrix_ops_per_s(d, t);
  const bool on_matrix = rate > 0;
  if (!on_matrix) rate = unit_vector_ops_per_s(d, t);
  if (rate == 0) {
    unsupported(cx, fmt::format("{} is not supported: the device has no {} throughput (matrix: {}; vector: {})",
                                dtype_name(cx.dtype), dtype_name(cx.dtype),
                                [&] {
                                  std::vector<std::string> s;
                                  for (auto& [t, v] : d.compute.matrix_ops_per_cycle) s.emplace_back(dtype_name(t));
                                  return join(s);
                                }(),
                                [&] {
                                  std::vector<std::string> s;
                                  for (auto& [t, v] : d.compute.vector_ops_per_cycle) s.emplace_back(dtype_name(t));
                                  return join(s);
                                }()));
  }
  return {rate, on_matrix};
}

std::vector<hw::GemmTile> tiles_of(const hw::Device& d) {
  std::vector<hw::GemmTile> tiles = d.compute.gemm_tiles;
  if (tiles.empty()) tiles.push_back(hw::GemmTile{64, 64, 32});  // vector-only devices: a plain blocked loop
  return tiles;
}

// The fastest candidate by estimate_s, its choice explained first.
std::vector<Kernel> pick_fastest(std::vector<Kernel> candidates, const OpDesc& op, const LowerContext& cx) {
  std::size_t best = 0;
  std::vector<double> est;
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    est.push_back(estimate_s(candidates[i], cx.device));
    if (est[i] < est[best]) best = i;
  }
  Kernel k = std::move(candidates[best]);
  k.why.insert(k.why.begin(), fmt::format("policy {}={}: {} of {} candidate kernels, predicted {} alone",
                                          op_name(op.kind), cx.policy.impl,
                                          candidates.size() > 1 ? "fastest" : "the only one", candidates.size(),
                                          units::format_time_s(est[best])));
  return {std::move(k)};
}

}  // namespace

std::pair<double, bool> matmul_rate(const LowerContext& cx) { return rate_for(cx); }
std::vector<hw::GemmTile> tile_shapes(const hw::Device& d) { return tiles_of(d); }
Kernel tiled_gemm(const OpDesc& op, const LowerContext& cx, const hw::GemmTile& t, std::uint32_t split, double a_bytes,
                  double b_bytes) {
  const auto [rate, on_matrix] = rate_for(cx);
  return tiled(op, cx, t, split, rate, on_matrix, 0, a_bytes, b_bytes);
}
std::vector<Kernel> fastest_kernel(std::vector<Kernel> candidates, const OpDesc& op, const LowerContext& cx) {
  return pick_fastest(std::move(candidates), op, cx);
}

std::vector<Kernel> lower_gemm(const OpDesc& op, const LowerContext& cx) {
  const hw::Device& d = cx.device;
  const std::string& impl = cx.policy.impl;
  const auto [rate, on_matrix] = rate_for(cx);
  const std::vector<hw::GemmTile> tiles = tiles_of(d);
  std::vector<Kernel> candidates;
  const bool tiny = std::min(op.m, op.n) <= 16;
  if (impl != "gemv") {
    for (const auto& t : tiles) {
      candidates.push_back(tiled(op, cx, t, 1, rate, on_matrix));
      if (impl == "tiled") continue;
      const std::uint64_t grid = op.batch * ceil_div(op.m, t.m) * ceil_div(op.n, t.n);
      for (std::uint32_t split = 2; split <= 16; split *= 2) {
        // Split K only while the grid leaves units idle and each split keeps a few k-steps.
        if (grid * split > 2ULL * d.compute.units || op.k / split < 4ULL * t.k) break;
        candidates.push_back(tiled(op, cx, t, split, rate, on_matrix));
      }
    }
    if (impl == "splitk") {
      std::erase_if(candidates, [](const Kernel& k) { return k.impl != "splitk"; });
      if (candidates.empty()) {
        for (const auto& t : tiles) candidates.push_back(tiled(op, cx, t, 2, rate, on_matrix));
      }
    }
  }
  if (impl == "gemv" || ((impl == "auto" || impl == "cublasLt") && tiny)) candidates.push_back(gemv(op, cx));
  return pick_fastest(std::move(candidates), op, cx);
}

// One grouped kernel: each group's tiles as its own GEMM would tile them (partial tiles padded
// per group, its weights read once, re-read per wave past L2), all groups' tiles sharing the
// device's waves. Candidates: every tile shape, and the GEMV path when every group is tiny.
std::vector<Kernel> lower_grouped_gemm(const OpDesc& op, const LowerContext& cx) {
  const std::string& impl = cx.policy.impl;
  const auto [rate, on_matrix] = rate_for(cx);
  std::map<std::uint64_t, std::uint64_t> groups_of_rows;  // rows -> groups with that many
  for (std::uint64_t rows : split_sizes(op.m, op.batch, op.splits)) ++groups_of_rows[rows];
  const std::uint64_t largest = groups_of_rows.rbegin()->first;
  auto merged = [&](auto&& one_group) {
    Kernel g;
    double work_s = 0;
    std::uint64_t used = 0;
    for (const auto& [rows, count] : groups_of_rows) {
      if (rows == 0) continue;
      OpDesc part = op;
      part.kind = OpKind::gemm;
      part.batch = 1;
      part.m = rows;
      part.splits.clear();
      Kernel k = one_group(part);
      const std::uint64_t tiles = k.tiles * count;
      const double hbm_bytes = k.hbm_bytes * static_cast<double>(count);
      const double hbm_write_bytes = k.hbm_write_bytes * static_cast<double>(count);
      const double flops = k.flops * static_cast<double>(count);
      if (used == 0) {
        g = k;  // tile shape, implementation and bound are the same for every group
        g.tiles = 0;
        g.hbm_bytes = 0;
        g.hbm_write_bytes = 0;
        g.flops = 0;
        g.why.erase(g.why.begin());  // the per-GEMM wave count, or the GEMV's per-group CTA count
      }
      g.tiles += tiles;
      g.hbm_bytes += hbm_bytes;
      g.hbm_write_bytes += hbm_write_bytes;
      g.flops += flops;
      work_s += k.tile_compute_s * static_cast<double>(k.tiles * count);
      used += count;
    }
    g.tile_compute_s = work_s / static_cast<double>(g.tiles);
    g.tile_hbm_bytes = g.hbm_bytes / static_cast<double>(g.tiles);
    g.name = fmt::format("grouped_gemm {}", g.impl == "gemv" ? "gemv" : g.tile);
    g.why.insert(g.why.begin(),
                 fmt::format("{} of {} groups hold rows ({}..{} each); {} {} tiles in all = {:.2f} waves on {} units; "
                             "each group's weights read once",
                             used, op.batch, groups_of_rows.begin()->first, largest, g.tiles, g.impl == "gemv" ? "GEMV" : g.tile,
                             static_cast<double>(g.tiles) /
                                 static_cast<double>(std::min<std::uint64_t>(g.tiles, cx.device.compute.units)),
                             cx.device.compute.units));
    return g;
  };
  std::vector<Kernel> candidates;
  if (impl != "gemv") {
    for (const hw::GemmTile& t : tiles_of(cx.device)) {
      // Every group's tiles share the waves, and so the L2's aggregate feed.
      std::uint64_t all_tiles = 0;
      for (const auto& [rows, count] : groups_of_rows) all_tiles += count * ceil_div(rows, t.m) * ceil_div(op.n, t.n);
      candidates.push_back(
          merged([&](const OpDesc& part) { return tiled(part, cx, t, 1, rate, on_matrix, std::max<std::uint64_t>(all_tiles, 1)); }));
    }
  }
  if (impl == "gemv" || (impl == "auto" && std::min(largest, op.n) <= 16)) {
    candidates.push_back(merged([&](const OpDesc& part) { return gemv(part, cx); }));
  }
  return pick_fastest(std::move(candidates), op, cx);
}

}  // namespace syntorch::runtime::detail
