#include "syntorch/session/study.hpp"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "syntorch/base/input_file.hpp"
#include "syntorch/base/utf8.hpp"
#include "syntorch/base/yaml.hpp"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <set>

#include "syntorch/hw/config_loader.hpp"
#include "syntorch/hw/machine.hpp"
#include "syntorch/runtime/predictor.hpp"
#include "syntorch/session/metrics.hpp"
#include "syntorch/session/serving/serve.hpp"
#include "syntorch/session/simulate.hpp"
#include "syntorch/runtime/op_params.hpp"
#include "syntorch/runtime/policy.hpp"

namespace syntorch::session {

namespace {
constexpr std::uint64_t kDefaultMaxStudyPoints = 100'000;
}  // namespace

namespace fs = std::filesystem;

const std::vector<std::string>& simulate_parameters() {
  static const std::vector<std::string> p = [] {
    std::vector<std::string> out{"hw", "policy"};  // the machine and the kernel policy, then the run's own
    for (const std::string& k : run_parameter_keys()) out.push_back(k);
    return out;
  }();
  return p;
}

const std::vector<std::string>& kernel_parameters() {
  static const std::vector<std::string> p = [] {
    std::vector<std::string> out{"hw", "op", "dtype", "policy", "timing"};
    std::set<std::string> seen(out.begin(), out.end());
    for (const std::string& op : runtime::op_names()) {
      for (const std::string& k : runtime::op_param_keys(*runtime::parse_op(op))) {
        if (seen.insert(k).second) out.push_back(k);
      }
    }
    return out;
  }();
  return p;
}

const std::vector<std::string>& serve_parameters() {
  static const std::vector<std::string> p = [] {
    std::vector<std::string> out{"hw", "policy"};
    for (const std::string& k : parameter_keys(serving::serving_parameters())) out.push_back(k);
    return out;
  }();
  return p;
}

const std::vector<std::string>& graph_parameters() {
  static const std::vector<std::string> p{"hw", "policy", "graph", "framework"};
  return p;
}

const std::vector<std::string>& graph_metrics() {
  static const std::vector<std::string> m = [] {
    std::vector<std::string> out;
    for (const GraphMetric& g : graph_metric_table()) out.emplace_back(g.info.name);
    return out;
  }();
  return m;
}

namespace {

// What a study of each kind is: its name, the parameters and metrics it takes, the metrics it
// plots when it names none, and the parameters every point needs.
struct KindSpec {
  StudyKind kind;
  const char* name;
  const std::vector<std::string>& (*parameters)();
  const std::vector<std::string>& (*metrics)();
  std::vector<std::string> default_metrics;
  std::vector<std::string> required;
};

const std::vector<KindSpec>& kind_table() {
  static const std::vector<KindSpec> kinds{
      {StudyKind::simulate, "simulate", simulate_parameters, simulate_metrics, {"tpot_ms", "tokens_per_s", "ttft_ms"},
       {"hw", "model"}},
      {StudyKind::kernel, "kernel", kernel_parameters, kernel_metrics, {"time_us", "tflops"}, {"hw", "op"}},
      {StudyKind::serve, "serve", serve_parameters, serve_metrics,
       {"ttft_p99_ms", "tpot_p99_ms", "output_tokens_per_s"}, {"hw", "model"}},
      {StudyKind::graph, "graph", graph_parameters, graph_metrics, {"time_ms", "achieved_tflops"}, {"hw", "graph"}},
  };
  return kinds;
}

const KindSpec& kind_spec(StudyKind kind) { return kind_table()[static_cast<std::size_t>(kind)]; }

}  // namespace

const std::vector<std::string>& study_parameters(StudyKind kind) { return kind_spec(kind).parameters(); }

const std::vector<std::string>& serve_metrics() {
  static const std::vector<std::string> m = [] {
    std::vector<std::string> out;
    for (const ServingMetric& k : serving_metric_table()) out.emplace_back(k.info.name);
    return out;
  }();
  return m;
}

const std::vector<std::string>& study_metrics(StudyKind kind) { return kind_spec(kind).metrics(); }

const char* study_kind_name(StudyKind kind) { return kind_spec(kind).name; }

const std::vector<std::string>& simulate_metrics() {
  static const std::vector<std::string> m = [] {
    std::vector<std::string> out;
    for (const GenerationMetric& g : generation_metrics()) out.emplace_back(g.info.name);
    return out;
  }();
  return m;
}

const std::vector<std::string>& kernel_metrics() {
  static const std::vector<std::string> m = [] {
    std::vector<std::string> out;
    for (const KernelMetric& k : kernel_metric_table()) out.emplace_back(k.info.name);
    return out;
  }();
  return m;
}

namespace {

// Reports problems as "file:line: /path: message".
class Reporter {
 public:
  Reporter(std::string file, Diagnostics& d) : file_(std::move(file)), d_(d) {}
  void error(const YAML::Node& at, const std::string& path, const std::string& message) {
    const int line = at.IsDefined() && at.Mark().line >= 0 ? at.Mark().line + 1 : 0;
    d_.error(line > 0 ? fmt::format("{}:{}", file_, line) : file_, path, message);
  }
  Diagnostics& diagnostics() { return d_; }

 private:
  std::string file_;
  Diagnostics& d_;
};

std::string kind_of(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Map: return "a mapping";
    case YAML::NodeType::Sequence: return "a list";
    case YAML::NodeType::Scalar: return fmt::format("\"{}\"", n.Scalar());
    case YAML::NodeType::Null: return "nothing";
    default: return "something undefined";
  }
}

void check_keys(Reporter& r, const YAML::Node& map, const std::string& path, const std::vector<std::string>& allowed) {
  for (const auto& kv : map) {
    const std::string key = kv.first.Scalar();
    if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
      r.error(kv.first, path + "/" + key,
              fmt::format("unknown key \"{}\"{} (valid: {})", key, did_you_mean(key, allowed), join(allowed)));
    }
  }
}

bool scalar(Reporter& r, const YAML::Node& n, const std::string& path, std::string& out) {
  if (!n.IsScalar()) {
    r.error(n, path, fmt::format("expected a value, got {}", kind_of(n)));
    return false;
  }
  out = n.Scalar();
  return true;
}

// Checks one parameter's value (text); returns the message when it is bad.
std::string check_parameter(StudyKind kind, const std::string& key, const std::string& value, const fs::path& dir) {
  auto boolean = [&]() -> std::string {
    return value == "true" || value == "false" ? "" : fmt::format("expected true or false, got \"{}\"", value);
  };
  if (key == "hw") {
    const fs::path file = dir / value;
    if (!exists_no_throw(file)) return fmt::format("no hardware config \"{}\" (looked for {})", value, file.string());
    return {};
  }
  if (key == "dtype" || key == "kv_dtype") {
    return parse_dtype(value) ? "" : fmt::format("unknown dtype \"{}\"{} (valid: {})", value, did_you_mean(value, dtype_names()),
                                                join(dtype_names()));
  }
  if (key == "policy") {
    Diagnostics d;
    runtime::KernelPolicy::load(value, d, "policy", dir.string());
    return d.empty() ? "" : d.items()[0].message;
  }
  if (kind == StudyKind::simulate) {
    Diagnostics d;
    session::RunSpec scratch;
    session::set_run_parameter(scratch, key, value, d, "study");
    return d.empty() ? "" : d.items()[0].message;
  }
  if (kind == StudyKind::graph) {
    if (key == "graph") {
      const fs::path file = dir / value;
      return exists_no_throw(file) ? "" : fmt::format("no graph file \"{}\" (looked for {})", value, file.string());
    }
    if (key == "framework") {
      return value == "eager" || value == "native" ? "" : fmt::format("expected eager or native, got \"{}\"", value);
    }
  }
  if (kind == StudyKind::serve) {
    Diagnostics d;
    serving::ServeSpec scratch;
    set_parameter(serving::serving_parameters(), scratch, key, value, d, "study");
    return d.empty() ? "" : d.items()[0].message;
  }
  if (key == "op") {
    return runtime::parse_op(value) ? ""
                                    : fmt::format("unknown op \"{}\"{} (valid: {})", value,
                                                  did_you_mean(value, runtime::op_names()), join(runtime::op_names()));
  }
  if (key == "timing") {
    return runtime::parse_timing(value) ? "" : fmt::format("expected {}, got \"{}\"", join(runtime::timing_names(), ", "), value);
  }
  for (const auto& [flag, help] : runtime::op_flag_help()) {
    if (key == flag) return boolean();  // causal, dropout
  }
  return runtime::parse_count(value) ? "" : fmt::format("expected a non-negative integer, got \"{}\"", value);
}

}  // namespace

Study load_study(const std::string& path) {
  Diagnostics d;
  Reporter r(path, d);
  const std::optional<std::string> text = read_input_file(path, "a YAML study", d, "", std::uint64_t{1} << 20);
  if (!text) throw InputError(std::move(d));
  const std::optional<YAML::Node> parsed = parse_yaml(*text, path, "a YAML study", d);
  if (!parsed) throw InputError(std::move(d));
  const YAML::Node& root = *parsed;
  if (!root.IsMap()) {
    r.error(root, "", fmt::format("expected a mapping with base and axes, got {}", kind_of(root)));
    throw InputError(std::move(d));
  }
  Study s;
  s.file = path;
  const fs::path dir = fs::path(path).parent_path();
  check_keys(r, root, "", {"name", "description", "kind", "base", "set", "axes", "combine", "metrics", "max_points"});
  s.name = fs::path(path).stem().string();
  if (root["name"]) scalar(r, root["name"], "/name", s.name);
  // The name becomes a folder under sweeps/: one plain component.
  const bool control = std::any_of(s.name.begin(), s.name.end(), [](char c) { return static_cast<unsigned char>(c) < 0x20; });
  const bool utf8 = first_invalid_utf8(s.name) == std::string::npos;
  if (s.name.empty() || s.name == "." || s.name == ".." || s.name.find('/') != std::string::npos || control || !utf8 ||
      s.name.size() > 100) {
    std::string shown;  // as a terminal can show it: control bytes, and any byte of a name that is not UTF-8, as \xNN
    for (char c : s.name.substr(0, 100)) {
      const auto b = static_cast<unsigned char>(c);
      shown += b < 0x20 || (!utf8 && b >= 0x80) ? fmt::format("\\x{:02x}", b) : std::string(1, c);
    }
    r.error(root["name"] ? root["name"] : root, "/name",
            fmt::format("expected a name for a folder under sweeps/ (UTF-8 text without \"/\" or control characters, "
                        "not \".\" or \"..\", at most 100 bytes), got \"{}\"", shown));
  }
  std::uint64_t max_points = kDefaultMaxStudyPoints;
  if (const YAML::Node m = root["max_points"]) {
    std::string text;
    if (scalar(r, m, "/max_points", text)) {
      std::uint64_t v = 0;
      const auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
      if (ec != std::errc{} || p != text.data() + text.size() || v == 0 || v > (std::uint64_t{1} << 32)) {
        r.error(m, "/max_points", fmt::format("expected a positive integer up to 2^32, got \"{}\"", text));
      } else {
        max_points = v;
      }
    }
  }
  if (root["description"]) scalar(r, root["description"], "/description", s.description);
  if (const YAML::Node k = root["kind"]) {
    std::string kind;
    if (scalar(r, k, "/kind", kind)) {
      std::vector<std::string> names;
      bool found = false;
      for (const KindSpec& spec : kind_table()) {
        names.emplace_back(spec.name);
        if (kind == spec.name) {
          s.kind = spec.kind;
          found = true;
        }
      }
      if (!found) r.error(k, "/kind", fmt::format("expected {}, got \"{}\"{}", join(names, ", "), kind, did_you_mean(kind, names)));
    }
  }
  const std::vector<std::string>& params = study_parameters(s.kind);
  const std::vector<std::string>& metrics = study_metrics(s.kind);

  // base
  const YAML::Node base = root["base"];
  if (!base) {
    r.error(root, "/base", "missing: the run every point starts from (hw, model, ...)");
  } else if (!base.IsMap()) {
    r.error(base, "/base", fmt::format("expected a mapping of parameters, got {}", kind_of(base)));
  } else {
    check_keys(r, base, "/base", params);
    for (const auto& kv : base) {
      const std::string key = kv.first.Scalar();
      if (std::find(params.begin(), params.end(), key) == params.end()) continue;
      std::string value;
      if (!scalar(r, kv.second, "/base/" + key, value)) continue;
      if (const std::string m = check_parameter(s.kind, key, value, dir); !m.empty()) r.error(kv.second, "/base/" + key, m);
      s.base[key] = value;
    }
  }
  // fixed overrides
  if (const YAML::Node set = root["set"]) {
    if (!set.IsMap()) {
      r.error(set, "/set", fmt::format("expected a mapping of /json/pointer: value, got {}", kind_of(set)));
    } else {
      for (const auto& kv : set) {
        const std::string pointer = kv.first.Scalar();
        std::string value;
        if (pointer.empty() || pointer[0] != '/') {
          r.error(kv.first, "/set", fmt::format("expected a JSON pointer like /components/gpu/count, got \"{}\"", pointer));
        } else if (scalar(r, kv.second, "/set" + pointer, value)) {
          s.sets.push_back(pointer + "=" + value);
        }
      }
    }
  }
  // axes
  const YAML::Node axes = root["axes"];
  std::vector<int> value_lines_first;  // for errors about combined points
  if (!axes) {
    r.error(root, "/axes", "missing: a list of axes ({param: batch, values: [1, 8]} or {hw: /json/pointer, values: [...]})");
  } else if (!axes.IsSequence() || axes.size() == 0) {
    r.error(axes, "/axes", fmt::format("expected a non-empty list of axes, got {}", kind_of(axes)));
  } else {
    std::set<std::string> seen;
    for (std::size_t i = 0; i < axes.size(); ++i) {
      const YAML::Node a = axes[i];
      const std::string where = fmt::format("/axes/{}", i);
      if (!a.IsMap()) {
        r.error(a, where, fmt::format("expected {{param: ..., values: [...]}} or {{hw: /json/pointer, values: [...]}}, got {}",
                                      kind_of(a)));
        continue;
      }
      check_keys(r, a, where, {"name", "param", "hw", "values"});
      Axis axis;
      axis.line = a.Mark().line + 1;
      const bool has_param = static_cast<bool>(a["param"]), has_hw = static_cast<bool>(a["hw"]);
      if (has_param == has_hw) {
        r.error(a, where, "give exactly one of param (a run parameter) or hw (a config field's JSON pointer)");
        continue;
      }
      axis.hw_field = has_hw;
      if (!scalar(r, has_hw ? a["hw"] : a["param"], where + (has_hw ? "/hw" : "/param"), axis.key)) continue;
      if (axis.hw_field && (axis.key.empty() || axis.key[0] != '/')) {
        r.error(a["hw"], where + "/hw", fmt::format("expected a JSON pointer like /components/gpu/count, got \"{}\"", axis.key));
        continue;
      }
      if (!axis.hw_field && std::find(params.begin(), params.end(), axis.key) == params.end()) {
        r.error(a["param"], where + "/param",
                fmt::format("unknown parameter \"{}\"{} (valid: {})", axis.key, did_you_mean(axis.key, params), join(params)));
        continue;
      }
      axis.name = axis.key;
      if (a["name"]) scalar(r, a["name"], where + "/name", axis.name);
      if (!seen.insert(axis.key).second) r.error(a, where, fmt::format("\"{}\" is varied by two axes", axis.key));
      // The name is a column of the results: it must not repeat another axis's or an output's.
      const YAML::Node named = a["name"] ? a["name"] : (has_hw ? a["hw"] : a["param"]);
      if (axis.name.empty()) {
        r.error(named, where + "/name", "expected a column name, got an empty one");
      } else if (axis.name == "status" || axis.name == "reason" || axis.name == "bound" ||
                 std::find(metrics.begin(), metrics.end(), axis.name) != metrics.end()) {
        r.error(named, where + "/name", fmt::format("\"{}\" is an output column; give the axis another name", axis.name));
      } else if (!seen.insert("name:" + axis.name).second) {
        r.error(named, where + "/name", fmt::format("two axes are named \"{}\"; names are the results' columns", axis.name));
      }
      const YAML::Node values = a["values"];
      if (!values || !values.IsSequence() || values.size() == 0) {
        r.error(values ? values : a, where + "/values", "expected a non-empty list of values");
        continue;
      }
      for (std::size_t j = 0; j < values.size(); ++j) {
        std::string v;
        const std::string vpath = fmt::format("{}/values/{}", where, j);
        if (!scalar(r, values[j], vpath, v)) continue;
        if (!axis.hw_field) {
          if (const std::string m = check_parameter(s.kind, axis.key, v, dir); !m.empty()) r.error(values[j], vpath, m);
        }
        axis.values.push_back(v);
      }
      s.axes.push_back(std::move(axis));
    }
  }
  if (const YAML::Node c = root["combine"]) {
    std::string combine;
    if (scalar(r, c, "/combine", combine)) {
      if (combine == "zip") {
        s.zip = true;
        for (const Axis& a : s.axes) {
          if (a.values.size() != s.axes.front().values.size()) {
            r.error(c, "/combine", fmt::format("zip needs axes of equal length; \"{}\" has {} values, \"{}\" {}",
                                               s.axes.front().name, s.axes.front().values.size(), a.name, a.values.size()));
            break;
          }
        }
      } else if (combine != "product") {
        r.error(c, "/combine", fmt::format("expected product or zip, got \"{}\"", combine));
      }
    }
  }
  if (const YAML::Node m = root["metrics"]) {
    if (!m.IsSequence() || m.size() == 0) {
      r.error(m, "/metrics", "expected a non-empty list of metric names");
    } else {
      for (std::size_t i = 0; i < m.size(); ++i) {
        std::string name;
        if (!scalar(r, m[i], fmt::format("/metrics/{}", i), name)) continue;
        if (std::find(metrics.begin(), metrics.end(), name) == metrics.end()) {
          r.error(m[i], fmt::format("/metrics/{}", i),
                  fmt::format("unknown metric \"{}\"{} (valid: {})", name, did_you_mean(name, metrics), join(metrics)));
        } else {
          s.metrics.push_back(name);
        }
      }
    }
  } else {
    s.metrics = kind_spec(s.kind).default_metrics;
  }
  // Required parameters: in the base or varied by an axis.
  auto given = [&](const std::string& key) {
    return s.base.count(key) || std::any_of(s.axes.begin(), s.axes.end(), [&](const Axis& a) { return !a.hw_field && a.key == key; });
  };
  for (const std::string& key : kind_spec(s.kind).required) {
    if (base && base.IsMap() && !given(key)) r.error(base, fmt::format("/base/{}", key), "missing (in base or as an axis)");
  }
  // Kernel studies: the op's shape from the base with each axis value in turn (the others at their
  // first; zipped axes together), so that a value no point can run with (k: 0) is refused here, at
  // the line that gives it, rather than by every point.
  if (d.empty() && s.kind == StudyKind::kernel) {
    auto shape_problems = [&](std::size_t axis, std::size_t value) {
      std::map<std::string, std::string> params = s.base;
      for (std::size_t b = 0; b < s.axes.size(); ++b) {
        if (!s.axes[b].hw_field) params[s.axes[b].key] = s.axes[b].values[s.zip || b == axis ? value : 0];
      }
      Diagnostics od;
      runtime::OpDesc op;
      kernel_op_of(params, op, od);
      return od;
    };
    // Where a problem with one parameter was given: an axis's value, else the base's. A problem
    // that names no parameter is a rule between several (causal needs seq_q <= seq_kv): other
    // combinations may keep it, so the points that break it say so in their rows instead.
    auto report = [&](const Diagnostic& problem, std::size_t axis, std::size_t value) {
      if (problem.path.empty()) return;
      std::string key = problem.path;  // the op's own spelling (seq-q) as a study writes it (seq_q)
      std::replace(key.begin(), key.end(), '-', '_');
      for (std::size_t b = 0; b < s.axes.size(); ++b) {
        if (s.axes[b].hw_field || s.axes[b].key != key) continue;
        const std::size_t j = s.zip || b == axis ? value : 0;
        r.error(axes[b]["values"][j], fmt::format("/axes/{}/values/{}", b, j), problem.message);
        return;
      }
      const YAML::Node at = base && base.IsMap() && base[key] ? base[key] : base;
      r.error(at, "/base/" + key, problem.message);
    };
    const std::size_t none = s.axes.size();
    const std::size_t firsts = s.zip ? s.axes.front().values.size() : 1;
    for (std::size_t j = 0; j < firsts; ++j) {
      const Diagnostics problems = shape_problems(none, j);
      for (const Diagnostic& x : problems.items()) report(x, none, j);
    }
    for (std::size_t a = 0; d.empty() && !s.zip && a < s.axes.size(); ++a) {
      if (s.axes[a].hw_field) continue;
      for (std::size_t j = 1; j < s.axes[a].values.size(); ++j) {
        const Diagnostics problems = shape_problems(a, j);
        for (const Diagnostic& x : problems.items()) report(x, a, j);
      }
    }
  }
  // Config fields: every value must load with the base config (and the fixed overrides).
  if (d.empty()) {
    std::vector<std::string> hw_files;
    if (s.base.count("hw")) hw_files.push_back(s.base.at("hw"));
    for (const Axis& a : s.axes) {
      if (!a.hw_field && a.key == "hw") hw_files = a.values;
    }
    for (const std::string& hw : hw_files) {
      const std::string file = (dir / hw).string();
      Diagnostics od;
      auto overrides = hw::parse_overrides(s.sets, od);
      try {
        if (od.empty()) hw::Machine::load(file, overrides);
      } catch (const InputError& e) {
        od.append(e.diagnostics());
      }
      for (const auto& x : od.items()) r.error(root["set"] ? root["set"] : root, "/set", x.to_string());
      if (od.dropped() > 0) {
        r.error(root["set"] ? root["set"] : root, "/set", fmt::format("... and {} more problems", od.dropped()));
      }
      for (const Axis& a : s.axes) {
        if (!a.hw_field) continue;
        for (std::size_t j = 0; j < a.values.size(); ++j) {
          Diagnostics vd;
          std::vector<std::string> sets = s.sets;
          sets.push_back(a.key + "=" + a.values[j]);
          auto o = hw::parse_overrides(sets, vd);
          try {
            if (vd.empty()) hw::Machine::load(file, o);
          } catch (const InputError& e) {
            vd.append(e.diagnostics());
          }
          if (!vd.empty()) {
            const YAML::Node v = axes[&a - s.axes.data()]["values"][j];
            r.error(v, fmt::format("/axes/{}/values/{}", &a - s.axes.data(), j),
                    fmt::format("with {}: {}", hw, vd.items()[0].message));
          }
        }
      }
    }
  }
  if (d.empty() && !s.axes.empty()) {
    // Say the point count before anything runs, and refuse more than asked for.
    std::uint64_t points = s.zip ? s.axes.front().values.size() : 1;
    std::vector<std::string> sizes;
    for (const Axis& a : s.axes) {
      sizes.push_back(std::to_string(a.values.size()));
      if (!s.zip) points = points > (std::uint64_t{1} << 40) / std::max<std::size_t>(1, a.values.size())
                               ? std::uint64_t{1} << 40
                               : points * a.values.size();
    }
    if (points > max_points) {
      r.error(root["axes"], "/axes",
              fmt::format("{} points ({}{}): more than the {} a study may run (raise max_points to run them, or split "
                          "the study)",
                          points >= (std::uint64_t{1} << 40) ? "over 2^40" : std::to_string(points), join(sizes, " x "),
                          s.zip ? ", zipped" : "", max_points));
    }
  }
  if (!d.empty()) throw InputError(std::move(d));
  return s;
}

std::vector<Point> expand(const Study& s) {
  std::vector<Point> points;
  auto make = [&](const std::vector<std::size_t>& idx) {
    Point p;
    p.params = s.base;
    p.sets = s.sets;
    for (std::size_t a = 0; a < s.axes.size(); ++a) {
      const Axis& axis = s.axes[a];
      const std::string& v = axis.values[idx[a]];
      p.axis_values.push_back(v);
      if (axis.hw_field) p.sets.push_back(axis.key + "=" + v);
      else p.params[axis.key] = v;
    }
    points.push_back(std::move(p));
  };
  if (s.axes.empty()) return points;
  if (s.zip) {
    for (std::size_t i = 0; i < s.axes.front().values.size(); ++i) make(std::vector<std::size_t>(s.axes.size(), i));
    return points;
  }
  std::vector<std::size_t> idx(s.axes.size(), 0);
  while (true) {
    make(idx);
    std::size_t a = s.axes.size();
    while (a > 0) {
      --a;
      if (++idx[a] < s.axes[a].values.size()) break;
      idx[a] = 0;
      if (a == 0) return points;
    }
  }
}

bool kernel_op_of(const std::map<std::string, std::string>& params, runtime::OpDesc& op, Diagnostics& d) {
  const auto kind = params.count("op") ? runtime::parse_op(params.at("op")) : std::nullopt;
  if (!kind) {
    d.error("point", "op", "expected an op");
    return false;
  }
  op.kind = *kind;
  std::map<std::string, std::string> shape;
  std::vector<std::string> ignored;
  const auto own = runtime::op_param_keys(op.kind);
  for (const auto& [k, v] : params) {
    if (k == "hw" || k == "op" || k == "policy" || k == "timing") continue;
    shape[k] = v;
    if (k != "dtype" && std::find(own.begin(), own.end(), k) == own.end()) ignored.push_back(k);
  }
  return runtime::op_from_params(shape, ignored, op, d, "point");
}

}  // namespace syntorch::session
