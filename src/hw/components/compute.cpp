#include <fmt/format.h>

#include "components.hpp"

namespace syntorch::hw::detail {

namespace {
// Reads {"fp16": 4096, ...}: operations per cycle per unit, by dtype.
std::map<DType, double> read_ops_table(ObjectReader& r, std::string_view key, bool required) {
  std::map<DType, double> out;
  const Json* table = r.raw(key);
  const std::string path = child_pointer(r.pointer(), key);
  if (!table) {
    if (required) {
      r.context().error(r.pointer(), fmt::format("missing required field \"{}\" (operations per cycle per unit by "
                                                 "dtype, e.g. {{\"fp16\": 4096}}) in a compute component", key));
    }
    return out;
  }
  if (!table->is_object()) {
    r.context().error(path, "expected an object of dtype -> operations per cycle, e.g. {\"fp16\": 4096}, got " +
                                describe_json(*table));
    return out;
  }
  for (auto it = table->begin(); it != table->end(); ++it) {
    const std::string entry = child_pointer(path, it.key());
    const auto dtype = parse_dtype(it.key());
    if (!dtype) {
      r.context().error(entry, fmt::format("unknown dtype \"{}\"{} (valid: {})", it.key(),
                                           did_you_mean(it.key(), dtype_names()), join(dtype_names())));
      continue;
    }
    if (!it.value().is_number() || !(it.value().get<double>() > 0)) {
      r.context().error(entry, "expected a positive number of operations per cycle per unit, got " +
                                   describe_json(it.value()));
      continue;
    }
    out[*dtype] = it.value().get<double>();
  }
  return out;
}
}  // namespace

void parse_compute(ObjectReader& r, ComponentSpec& out) {
  ComputeSpec c;
  c.units = r.count("count", true, 1).value_or(0);
  c.clock_hz = r.frequency("clock", true).value_or(0);
  c.matrix_ops_per_cycle = read_ops_table(r, "matrix_ops_per_cycle", false);
  c.vector_ops_per_cycle = read_ops_table(r, "vector_ops_per_cycle", true);
  c.shared_memory_bytes = r.size("shared_memory", false).value_or(0);
  out.body = std::move(c);
}

}  // namespace syntorch::hw::detail
