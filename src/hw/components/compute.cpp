#include <cstdio>
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
    // Bounded so that a peak (units x clock x this) stays a finite number: the largest matrix
    // engines run tens of thousands of operations a cycle.
    constexpr double kMostOpsPerCycle = 1e9;
    if (!it.value().is_number() || !(it.value().get<double>() > 0) || !(it.value().get<double>() <= kMostOpsPerCycle)) {
      r.context().error(entry, fmt::format("expected a positive number of operations per cycle per unit, at most {:g}, "
                                           "got {}", kMostOpsPerCycle, describe_json(it.value())));
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
  c.register_file_bytes = r.size("register_file", false).value_or(0);
  if (const Json* tiles = r.raw("gemm_tiles")) {
    const std::string path = child_pointer(r.pointer(), "gemm_tiles");
    if (!tiles->is_array() || tiles->empty()) {
      r.context().error(path, "expected a list of tile shapes like [\"128x256x32\"], got " + describe_json(*tiles));
    } else {
      for (std::size_t i = 0; i < tiles->size(); ++i) {
        const Json& t = (*tiles)[i];
        GemmTile tile;
        char extra = 0;
        if (!t.is_string() ||
            std::sscanf(t.get_ref<const std::string&>().c_str(), "%ux%ux%u%c", &tile.m, &tile.n, &tile.k, &extra) != 3 ||
            tile.m == 0 || tile.n == 0 || tile.k == 0 || tile.m > 4096 || tile.n > 4096 || tile.k > 4096) {
          r.context().error(child_pointer(path, i), "expected a tile shape MxNxK like \"128x256x32\", got " + describe_json(t));
          continue;
        }
        c.gemm_tiles.push_back(tile);
      }
    }
  } else if (!c.matrix_ops_per_cycle.empty()) {
    r.context().error(r.pointer(), "missing required field \"gemm_tiles\" (the CTA tile shapes its matrix units run, "
                                   "like [\"128x256x32\", \"128x128x32\"]) in a compute component with matrix_ops_per_cycle");
  }
  c.matrix_efficiency = r.fraction("matrix_efficiency", false).value_or(1.0);
  c.vector_efficiency = r.fraction("vector_efficiency", false).value_or(1.0);
  c.unit_bandwidth_bytes_per_s = r.bandwidth("unit_bandwidth", false).value_or(0);
  c.tile_cluster = r.count("tile_cluster", false, 1).value_or(1);
  c.kernel_overhead_s = r.time("kernel_overhead", false).value_or(0);
  c.resident_tiles_per_unit = r.count("resident_tiles_per_unit", false, 1).value_or(1);
  c.async_matrix = r.boolean("async_matrix", false).value_or(false);
  c.special_ops_per_cycle = r.number("special_ops_per_cycle", false, 0).value_or(0);
  c.sync_matrix_efficiency = r.fraction("sync_matrix_efficiency", false).value_or(1.0);
  c.async_softmax_overlap = r.share("async_softmax_overlap", false).value_or(1.0);
  // The design's own form: "metadata": {"ops_supported": ["matmul", "add"]} restricts what the unit
  // may run. The names are the runtime's to check (hw knows no ops); here only their form.
  if (const Json* metadata = r.raw("metadata")) {
    const std::string path = child_pointer(r.pointer(), "metadata");
    if (!metadata->is_object()) {
      r.context().error(path, "expected an object such as {\"ops_supported\": [\"matmul\", \"add\"]}, got " +
                                  describe_json(*metadata));
    } else {
      ObjectReader m(*metadata, path, r.context(), "a compute component's metadata");
      if (auto ops = m.strings("ops_supported", false)) {
        if (ops->empty()) m.error("ops_supported", "expected at least one op name; leave the key out to allow every op");
        c.ops_supported = std::move(*ops);
        c.ops_supported_pointer = child_pointer(path, "ops_supported");
      }
      m.finish();
    }
  }
  out.body = std::move(c);
}

}  // namespace syntorch::hw::detail
