#pragma once
// A what-if study as a YAML file: a base run and the axes to vary, parsed and validated whole
// before anything runs (every problem named with its YAML line and key), then expanded into
// points (a cartesian product of the axes, or the axes zipped).
//
//   name: hbm-bandwidth-decode
//   kind: simulate                  # or kernel, serve, graph
//   base: {hw: ../hw_configs/dgx_h100.json, model: gpt3-175b, tp: 8, batch: 8, ...}
//   set: {/components/nvlink/latency: 1 us}            # fixed config overrides (optional)
//   axes:
//     - {name: HBM bandwidth, hw: /components/gpu/components/hbm/bandwidth, values: [3.35 TB/s, 6.7 TB/s]}
//     - {param: batch, values: [1, 8, 32]}
//   combine: product                # or zip
//   metrics: [tpot_ms, tokens_per_s]   # what the plots show
//
// Paths to hardware configs are relative to the study file.

#include <map>
#include <string>
#include <vector>

#include "syntorch/base/diagnostics.hpp"
#include "syntorch/runtime/op.hpp"

namespace syntorch::session {

enum class StudyKind { simulate, kernel, serve, graph };

// One varied quantity: a hardware config field by JSON pointer, or a run parameter.
struct Axis {
  std::string name;    // the column it becomes
  bool hw_field = false;
  std::string key;     // the JSON pointer (hw_field) or the parameter
  std::vector<std::string> values;
  int line = 0;
};

struct Study {
  std::string file;
  std::string name;
  std::string description;
  StudyKind kind = StudyKind::simulate;
  std::map<std::string, std::string> base;  // parameter -> value (as text)
  std::vector<std::string> sets;            // fixed "/pointer=value" overrides
  std::vector<Axis> axes;
  bool zip = false;
  std::vector<std::string> metrics;         // plotted, in order
};

// One point of a study: the value of every axis, and the resulting parameters and overrides.
struct Point {
  std::vector<std::string> axis_values;
  std::map<std::string, std::string> params;
  std::vector<std::string> sets;
};

// Parameters a study may set, by kind.
const std::vector<std::string>& simulate_parameters();
const std::vector<std::string>& kernel_parameters();
const std::vector<std::string>& serve_parameters();
const std::vector<std::string>& graph_parameters();  // hw, policy, graph (an IR file), framework
const std::vector<std::string>& study_parameters(StudyKind kind);
// The metrics the rows carry, by kind.
const std::vector<std::string>& simulate_metrics();
const std::vector<std::string>& kernel_metrics();
const std::vector<std::string>& serve_metrics();
const std::vector<std::string>& graph_metrics();
const std::vector<std::string>& study_metrics(StudyKind kind);
// The kind's name in study files and results ("simulate", "kernel", "serve", "graph").
const char* study_kind_name(StudyKind kind);

// Reads and validates a study; throws InputError listing every problem ("file:line: /key: ...").
Study load_study(const std::string& path);

std::vector<Point> expand(const Study& study);

// The op a kernel study's point runs, from its parameters (hw, op, policy and timing aside; the
// shape keys of other ops, which a study may vary for them, ignored); false with the problem in
// `d`, under the key that is wrong.
bool kernel_op_of(const std::map<std::string, std::string>& params, runtime::OpDesc& op, Diagnostics& d);

}  // namespace syntorch::session
