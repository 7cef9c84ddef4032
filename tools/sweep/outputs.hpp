#pragma once
// What a sweep leaves in its output folder: results.csv and results.json (a row per point:
// every axis value, the status and reason, then every metric), a chart per chosen metric (over
// the first axis, one series per value of the other axes) or a roofline for kernel studies, as
// SVG, and index.html showing the plots above the table.

#include <string>
#include <vector>

#include "syntorch/session/sweep.hpp"
#include "syntorch/session/study.hpp"

namespace syntorch::sweep {

struct OutputFiles {
  std::string csv, json, html;
  std::vector<std::string> plots;
};

// Creates `dir` (and its plots folder) and checks a file can be written there; throws
// std::runtime_error naming the folder when not. Run before the points, so a bad --out costs
// nothing.
void prepare_output_dir(const std::string& dir);

// Writes into `dir` (created if needed); throws std::runtime_error naming a file it cannot write.
OutputFiles write_outputs(const session::Study& study, const std::vector<session::SweepRow>& rows, const std::string& dir);

}  // namespace syntorch::sweep
