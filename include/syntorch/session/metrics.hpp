#pragma once
// The numbers a run reports, declared once: each metric's name (a study's metric, a results
// column), the unit its value is in, what it measures, how it is shown to a reader (a table's
// unit) and in SI units (a plot's ticks, "2 TB/s"), and how it is read off a run's result. Studies,
// sweeps and their reports take every metric from these tables.

#include <span>
#include <string_view>

#include "syntorch/runtime/predictor.hpp"
#include "syntorch/session/graph_run.hpp"
#include "syntorch/session/serving/metrics.hpp"
#include "syntorch/session/simulate.hpp"

namespace syntorch::session {

struct Metric {
  std::string_view name;        // "tpot_ms"
  std::string_view unit;        // of the value: "ms", "tokens/s", "B", "1" (a fraction)
  std::string_view label;       // "time per output token"
  std::string_view definition;  // what it measures, in a sentence
  std::string_view shown_unit;  // a table's unit: "ms", "GB" for bytes, "%" for fractions
  double shown_per_unit;        // value x shown_per_unit is in shown_unit
  std::string_view si_unit;     // a plot's unit, SI prefixes added to it: "s", "B", "B/s", "FLOP/s"
  double si_per_unit;           // value x si_per_unit is in si_unit
};

// A generation run's metric: its value from the run's report and spec.
struct GenerationMetric {
  Metric info;
  double (*value)(const RunReport& report, const RunSpec& spec);
};

// A kernel's metric: its value from the prediction.
struct KernelMetric {
  Metric info;
  double (*value)(const runtime::Prediction& prediction);
};

// A serving run's metric: its value from the run's metrics (serving/metrics.hpp).
struct ServingMetric {
  Metric info;
  double (*value)(const serving::ServeMetrics& metrics);
};

// A graph run's metric (`simulate --graph`): its value from the run's report.
struct GraphMetric {
  Metric info;
  double (*value)(const GraphRunReport& report);
};

std::span<const GenerationMetric> generation_metrics();
std::span<const GraphMetric> graph_metric_table();
std::span<const KernelMetric> kernel_metric_table();
std::span<const ServingMetric> serving_metric_table();

// The metric of either table by name; nullptr when there is none.
const Metric* find_metric(std::string_view name);

}  // namespace syntorch::session
