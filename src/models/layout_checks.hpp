#pragma once
// The layout checks every decoder-only model shares: tensors the simulator can size, heads and
// the MLP width split over tensor parallelism, layers over pipeline stages.

#include <cstdint>
#include <string>

#include "syntorch/base/diagnostics.hpp"
#include "syntorch/models/model.hpp"

namespace syntorch::models {

struct DecoderShape {
  const std::string& name;
  std::int64_t widest;  // the widest per-token tensor (hidden, heads x head_dim, MLP width)
  std::int64_t heads, ffn, layers;
};

void check_decoder_layout(const DecoderShape& shape, const RunLayout& layout, Diagnostics& diagnostics,
                          const std::string& where);

}  // namespace syntorch::models
