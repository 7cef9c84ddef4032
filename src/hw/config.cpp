#include "syntorch/hw/config.hpp"

namespace syntorch::hw {

double ComputeSpec::peak_matrix_ops_per_s(DType t) const {
  auto it = matrix_ops_per_cycle.find(t);
  return it == matrix_ops_per_cycle.end() ? 0.0 : it->second * units * clock_hz;
}

double ComputeSpec::peak_vector_ops_per_s(DType t) const {
  auto it = vector_ops_per_cycle.find(t);
  return it == vector_ops_per_cycle.end() ? 0.0 : it->second * units * clock_hz;
}

const CollectiveProtocol* CollectiveSpec::protocol(std::string_view name) const {
  for (const CollectiveProtocol& p : protocols) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

}  // namespace syntorch::hw
