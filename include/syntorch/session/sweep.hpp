#pragma once
// Runs the points of a study, in parallel on all cores: each point is one simulation (or one
// kernel prediction) on its own machine and policy. A point that fails is a row with its reason
// (an OOM, a layout the machine cannot hold, a shape the kernel cannot run), never an abort.
// Progress is reported as points finish; a stop request (Ctrl-C) lets running points finish and
// starts no more.

#include <atomic>
#include <cstddef>
#include <iosfwd>
#include <string>
#include <vector>

#include "syntorch/session/study.hpp"

namespace syntorch::session {

// One point's outcome.
struct SweepRow {
  std::size_t index = 0;                 // the point's position in the study
  std::vector<std::string> axis_values;
  std::string status;                    // ok, oom, skipped, error, not run
  std::string reason;
  std::vector<double> metrics;           // by simulate_metrics() or kernel_metrics(); NaN when absent
  std::string bound;                     // kernel studies: compute, memory, ...
};

struct SweepOptions {
  int jobs = 1;
  std::ostream* progress = nullptr;  // where progress goes (nullptr: silent)
  bool progress_is_terminal = false; // a bar redrawn in place, else a line now and then
  const std::atomic<bool>* stop = nullptr;
};

// Runs the points whose indices are in `which` (all when empty); rows come back in index order,
// with "not run" rows for points skipped by a stop request.
std::vector<SweepRow> run_points(const Study& study, const std::vector<Point>& points, const std::vector<std::size_t>& which,
                            const SweepOptions& options);

}  // namespace syntorch::session
