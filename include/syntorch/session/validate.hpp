#pragma once
// Validation against real hardware: every row of a measurements file
// (id,op,hw,params,metric,value,unit,source) predicted on its hardware config and compared with
// what was measured. Kernel and collective rows run through the Predictor; `generate` rows are
// whole generation runs. Rows that cannot be run yet are kept, as unsupported with the reason.

#include <cstddef>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "syntorch/hw/config_loader.hpp"

namespace syntorch::session {

struct ValidateOptions {
  std::string file;                   // the measurements CSV
  std::string hw_dir = "hw_configs";  // where the configs the rows name (without .json) are
  std::set<std::string> only_hw;      // keep only the rows on these hardware names (all when empty)
  // For a hardware name: the config file to use instead of hw_dir/NAME.json, and --set style
  // overrides applied to it (what calibration tries).
  std::map<std::string, std::string> config_files;
  std::map<std::string, std::vector<hw::Override>> overrides;
};

struct ValidationRow {
  std::string id, op, hw, params, metric, unit;
  double measured = 0;
  double predicted = 0;  // in `unit`, when status is ok
  double error_pct = 0;  // (predicted - measured) / measured, when status is ok
  std::string status;    // ok, unsupported, error
  std::string reason;    // for unsupported and error rows
};

// Absolute errors of the ok rows of one op or family.
struct ErrorSummary {
  std::size_t count = 0;
  double median_abs_pct = 0;
  double p90_abs_pct = 0;  // nearest rank
  double max_abs_pct = 0;
};

struct ValidationReport {
  std::vector<ValidationRow> rows;  // in file order
  std::map<std::string, ErrorSummary> by_op;
  std::map<std::string, ErrorSummary> by_family;  // gemm, attention, collectives, generate, layernorm/softmax/gelu
  bool any_error() const;
  std::size_t unsupported() const;
};

// Reads and predicts every row. Throws InputError for a file that cannot be read, a wrong header
// or malformed rows (each named by file and line); problems of one row (an unknown parameter,
// a config that does not load) make that row an error and the others still run.
ValidationReport validate_measurements(const ValidateOptions& options);

// The family a row's op is summarised under.
std::string validation_family(const std::string& op);

}  // namespace syntorch::session
