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

}  // namespace syntorch::hw
