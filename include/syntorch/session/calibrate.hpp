#pragma once
// Calibration: fitting named fields of a hardware config to a file of measurements by least
// squares, so that a user with their own GPU can make a config predict what they measured. The
// rows used are those whose hw names the config (its file name without .json); the cost is the
// mean squared log ratio of predicted to measured (relative errors, so microsecond kernels and
// second-long runs weigh alike); the fit runs Nelder-Mead (derivative-free: predictions are
// piecewise in the parameters) on log scale factors of the fields, each bounded to 1/16..16x.

#include <string>
#include <vector>

#include "syntorch/session/validate.hpp"

namespace syntorch::session {

struct CalibrateOptions {
  std::string config;                // the hardware config to fit
  std::string measurements;          // a measurements CSV (as validate reads)
  std::vector<std::string> params;   // JSON pointers of the fields to fit: numbers or quantities ("3.35 TB/s")
  std::string hw_dir = "hw_configs";  // where the configs other rows would name are (unused rows are skipped)
  int max_evaluations = 200;         // predictions of every row, at most
};

struct FittedParam {
  std::string pointer;
  std::string before;  // as the config has it
  std::string after;   // as a --set value ("3.1 TB/s")
  double scale = 1;    // after / before
};

struct CalibrationReport {
  std::string hw;  // the rows' hardware name
  std::vector<FittedParam> params;
  std::vector<ValidationRow> before, after;  // the rows used, predicted before and after the fit
  double rms_log_before = 0, rms_log_after = 0;  // root mean squared log(predicted / measured)
  int evaluations = 0;
  // The fitted values as --set overrides of the config.
  std::vector<hw::Override> overrides() const;
};

// Throws InputError naming the file, pointer or option for a config that does not load, a
// field that is absent or not a number or a quantity, a measurements file that cannot be read,
// no row that runs on the config, or bad options.
CalibrationReport calibrate(const CalibrateOptions& options);

// A config that extends `config` (by a path relative to where it is written) with the fitted
// fields and notes naming the rows and their residuals, as JSON text.
std::string fitted_config_json(const CalibrationReport& report, const std::string& config, const std::string& out_file,
                               const std::string& measurements);

}  // namespace syntorch::session
