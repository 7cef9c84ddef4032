#include "layout_checks.hpp"

#include <fmt/format.h>

namespace syntorch::models {

void check_decoder_layout(const DecoderShape& c, const RunLayout& l, Diagnostics& d, const std::string& where) {
  const double elements = static_cast<double>(l.batch) * static_cast<double>(l.tokens) * static_cast<double>(c.widest);
  if (elements > 0x1p52) {
    d.error(where, "batch", fmt::format("batch {} x {} tokens of {} is beyond what the simulator can size (2^52 "
                                        "elements per tensor)", l.batch, l.tokens, c.name));
  }
  if (c.heads % l.tp != 0) {
    d.error(where, "tp", fmt::format("{} has {} heads, which do not split over tp {}", c.name, c.heads, l.tp));
  }
  if (c.ffn % l.tp != 0) {
    d.error(where, "tp", fmt::format("{}'s MLP width {} does not split over tp {}", c.name, c.ffn, l.tp));
  }
  if (c.layers % l.pp != 0) {
    d.error(where, "pp", fmt::format("{} has {} layers, which do not split evenly over pp {}", c.name, c.layers, l.pp));
  }
}

}  // namespace syntorch::models
