#pragma once
// A kernel lowered onto one device: a grid of identical tiles (CTAs), what one tile costs in
// arithmetic and memory traffic, and why this implementation and tile were chosen. The
// Executor runs it on the simulator; nothing here is a time prediction by itself.

#include <cstdint>
#include <string>
#include <vector>

#include "syntorch/runtime/op.hpp"

namespace syntorch::runtime {

struct Kernel {
  std::string name;   // e.g. "gemm 128x256x32"
  std::string impl;   // e.g. "cublasLt", "flash_v2", "ring"
  std::string tile;   // tile shape or "" when not tiled that way
  std::uint32_t device = 0;
  OpKind op = OpKind::gemm;            // the op it computes (part of)
  std::uint64_t tiles = 0;             // CTAs in the grid
  std::uint32_t tiles_per_unit = 1;    // CTAs resident on one unit at once
  double tile_compute_s = 0;           // arithmetic time of one tile alone on one unit
  // The busiest unit's arithmetic over what identical tiles of tile_compute_s would give it
  // (>= 1): CTAs of uneven work (causal attention, a batch of different lengths) finish at
  // different times, and the last ones dispatched set the kernel's tail.
  double imbalance = 1;
  double tile_hbm_bytes = 0;           // HBM bytes one tile moves, on average, after cache reuse
  double flops = 0;                    // useful work (for achieved FLOP/s)
  double hbm_bytes = 0;                // total HBM traffic
  double hbm_write_bytes = 0;          // of which written (writes take longer on HBM: write_efficiency)
  // Device memory the implementation needs beyond the op's inputs and outputs: held while the op
  // runs (unfused attention's scores), or left for the op's backward (its probabilities).
  double workspace_bytes = 0;
  double saved_bytes = 0;
  std::vector<std::string> why;        // the dispatcher's reasons, in order
};

}  // namespace syntorch::runtime
