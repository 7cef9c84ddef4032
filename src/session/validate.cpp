#include "syntorch/session/validate.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <memory>
#include <sstream>

#include "syntorch/base/csv.hpp"
#include "syntorch/base/input_file.hpp"
#include "syntorch/base/key_value.hpp"
#include "syntorch/hw/machine.hpp"
#include "syntorch/runtime/op_params.hpp"
#include "syntorch/runtime/predictor.hpp"
#include "syntorch/session/graph_run.hpp"
#include "syntorch/session/serving/serve.hpp"
#include "syntorch/session/simulate.hpp"
#include "syntorch/session/train.hpp"

namespace syntorch::session {

namespace {

double unit_to_seconds(const std::string& unit) {
  if (unit == "us") return 1e-6;
  if (unit == "ms") return 1e-3;
  if (unit == "s") return 1;
  if (unit == "ns") return 1e-9;
  return 0;
}

void mark(ValidationRow& row, const char* status, std::string reason) {
  row.status = status;
  row.reason = std::move(reason);
}

// A row that could not run: the first problem is its reason.
void fail(ValidationRow& row, const Diagnostics& d) { mark(row, "error", d.items().empty() ? "" : d.items()[0].to_string()); }

// Runs `predict` (which returns seconds) and records the prediction, or the error it throws.
template <class Predict>
void record(ValidationRow& row, double unit_s, Predict&& predict) {
  try {
    row.predicted = predict() / unit_s;
    row.error_pct = (row.predicted - row.measured) / row.measured * 100;
    row.status = "ok";
  } catch (const InputError& e) {
    fail(row, e.diagnostics());
  } catch (const std::exception& e) {
    mark(row, "error", e.what());
  }
}

// What a generate row can measure, from its run.
struct GenerateMetric {
  const char* name;
  bool per_second;  // a rate in tokens/s, else a time
  double (*value)(const RunReport& report, const RunSpec& spec);
};

constexpr GenerateMetric kGenerateMetrics[] = {
    {"e2e_latency", false, [](const RunReport& r, const RunSpec&) { return r.e2e_s; }},
    {"ttft", false, [](const RunReport& r, const RunSpec&) { return r.ttft_s; }},
    {"tpot", false, [](const RunReport& r, const RunSpec&) { return r.tpot_s; }},
    // Generated tokens (batch x output) over the end-to-end time, as TensorRT-LLM's and vLLM's
    // benchmarks report them; per GPU: over the tp x pp devices.
    {"output_throughput", true, [](const RunReport& r, const RunSpec&) { return r.tokens_per_s; }},
    {"output_throughput_per_gpu", true,
     [](const RunReport& r, const RunSpec& s) { return r.tokens_per_s / static_cast<double>(s.tp * s.pp); }},
};

// What a serve row can measure, from its run (serving/metrics.hpp's definitions).
struct ServeMetric {
  const char* name;
  const char* unit_kind;  // "tokens/s", "req/s", or "" for a time
  double (*value)(const serving::ServeMetrics& m);
};

constexpr ServeMetric kServeMetrics[] = {
    {"output_tokens_per_s", "tokens/s", [](const serving::ServeMetrics& m) { return m.output_throughput; }},
    // MLPerf's Server "completed tokens per second": output tokens of completed requests over the run.
    {"completed_tokens_per_s", "tokens/s", [](const serving::ServeMetrics& m) { return m.output_throughput; }},
    {"total_tokens_per_s", "tokens/s", [](const serving::ServeMetrics& m) { return m.total_token_throughput; }},
    {"requests_per_s", "req/s", [](const serving::ServeMetrics& m) { return m.request_throughput; }},
    {"ttft_mean", "", [](const serving::ServeMetrics& m) { return m.ttft_s.mean; }},
    {"ttft_median", "", [](const serving::ServeMetrics& m) { return m.ttft_s.median; }},
    {"ttft_p99", "", [](const serving::ServeMetrics& m) { return m.ttft_s.p99; }},
    {"tpot_mean", "", [](const serving::ServeMetrics& m) { return m.tpot_s.mean; }},
    {"tpot_p99", "", [](const serving::ServeMetrics& m) { return m.tpot_s.p99; }},
    {"itl_mean", "", [](const serving::ServeMetrics& m) { return m.itl_s.mean; }},
    {"itl_p99", "", [](const serving::ServeMetrics& m) { return m.itl_s.p99; }},
    {"e2e_mean", "", [](const serving::ServeMetrics& m) { return m.e2e_s.mean; }},
};

std::string serve_metrics_text() {
  std::vector<std::string> names;
  for (const ServeMetric& g : kServeMetrics) names.push_back(fmt::format("{} in {}", g.name, *g.unit_kind ? g.unit_kind : "ns/us/ms/s"));
  return join(names);
}

std::string generate_metrics_text() {
  std::vector<std::string> names;
  for (const GenerateMetric& g : kGenerateMetrics) {
    names.push_back(fmt::format("{} in {}", g.name, g.per_second ? "tokens/s" : "ns/us/ms/s"));
  }
  return join(names);
}

// What a file's rows share: their configs (each loaded once) and predictors (one per config and
// policy).
class Validator {
 public:
  explicit Validator(const ValidateOptions& o) : o_(o) {}

  void predict(ValidationRow& row) {
    const std::string where = fmt::format("{} row {}", o_.file, row.id);
    if (row.op == "generate") {
      predict_generate(row, where);
    } else if (row.op == "train") {
      predict_train(row, where);
    } else if (row.op == "serve") {
      predict_serve(row, where);
    } else if (row.op == "graph") {
      predict_graph(row, where);
    } else if (row.op.starts_with("pytorch_")) {
      mark(row, "unsupported",
           "a real PyTorch model's row (torchvision's): python -m syntorch.pytorch validate FILE runs it through the bridge");
    } else {
      predict_op(row, where);
    }
  }

 private:
  // The row's hardware config; problems go to `d`.
  const hw::Machine* machine(const ValidationRow& row, const std::string& where, Diagnostics& d) {
    const auto own = o_.config_files.find(row.hw);
    const std::string hw_file =
        own != o_.config_files.end() ? own->second : (std::filesystem::path(o_.hw_dir) / (row.hw + ".json")).string();
    if (!machines_.count(row.hw)) {
      try {
        const auto set = o_.overrides.find(row.hw);
        machines_[row.hw] = std::make_unique<hw::Machine>(
            hw::Machine::load(hw_file, set != o_.overrides.end() ? set->second : std::vector<hw::Override>{}));
      } catch (const InputError& e) {
        d.append(e.diagnostics());
      }
    }
    if (d.empty() && !machines_[row.hw]) d.error(where, "hw", "hardware config failed to load");
    return machines_[row.hw].get();
  }

  static std::vector<KeyValue> params(const ValidationRow& row, const std::string& where, Diagnostics& d) {
    KeyValueFormat format;
    format.separator = ' ';
    format.path = "params";
    format.keys_are_paths = true;
    return parse_key_values(row.params, format, d, where);
  }

  // A `generate` row: one simulated generation run and one of its metrics (kGenerateMetrics).
  // Params: model, tp, pp, batch, input, output, dtype, and optionally cuda_graphs=true|false,
  // micro_batches, framework=eager|native (default native).
  void predict_generate(ValidationRow& row, const std::string& where) {
    const GenerateMetric* metric = nullptr;
    for (const GenerateMetric& g : kGenerateMetrics) {
      if (row.metric == g.name) metric = &g;
    }
    const double scale = !metric ? 0 : metric->per_second ? (row.unit == "tokens/s" ? 1 : 0) : unit_to_seconds(row.unit);
    if (scale == 0) {
      mark(row, "unsupported",
           fmt::format("metric {} in {} is not predicted for generate ({} are)", row.metric, row.unit,
                       generate_metrics_text()));
      return;
    }
    RunSpec spec;
    // The shared generate rows are FasterTransformer measurements, a C++ runtime: native unless a
    // row says framework=eager.
    spec.framework = runtime::Framework::native;
    runtime::KernelPolicy policy;
    const hw::Machine* m =
        read_run(row, where, "generate", spec, policy, run_parameter_keys(), set_run_parameter, validate_run);
    if (!m) return;
    const RunReport* report = run_once(runs_, row, [&] { return simulate_generation(*m, policy, spec); });
    if (report) record(row, scale, [&] { return metric->value(*report, spec); });
  }

  // A `train` row: one simulated training run (session::simulate_training) and its
  // iteration_time (in s/ms) or tflops_per_gpu (in TFLOPS, model FLOPs as Megatron counts them).
  // Params: those of set_train_parameter (sp as 0/1 or false/true).
  void predict_train(ValidationRow& row, const std::string& where) {
    const bool tflops = row.metric == "tflops_per_gpu" && row.unit == "TFLOPS";
    const double scale = row.metric == "iteration_time" ? unit_to_seconds(row.unit) : tflops ? 1.0 : 0.0;
    if (scale == 0) {
      mark(row, "unsupported", fmt::format("metric {} in {} is not predicted for train (iteration_time in ms/s and "
                                           "tflops_per_gpu in TFLOPS are)",
                                           row.metric, row.unit));
      return;
    }
    TrainSpec spec;
    runtime::KernelPolicy policy;
    const hw::Machine* m =
        read_run(row, where, "train", spec, policy, train_parameter_keys(), set_train_parameter, validate_train);
    if (!m) return;
    const TrainReport* report = run_once(train_runs_, row, [&] { return simulate_training(*m, policy, spec); });
    if (report) record(row, scale, [&] { return tflops ? report->tflops_per_gpu : report->iteration_s; });
  }

  // A run row's params read into `spec` by `set` (false for a key it does not take), model=
  // required, policy= the run's kernel policy as --policy takes it (op=impl,... or a JSON/YAML
  // file beside the measurements file), and the spec
  // checked against the row's machine by `validate`: that machine, or null after marking the row
  // failed.
  template <class Spec, class Set, class Validate>
  const hw::Machine* read_run(ValidationRow& row, const std::string& where, const char* family, Spec& spec,
                              runtime::KernelPolicy& policy, const std::vector<std::string>& keys, Set&& set,
                              Validate&& validate) {
    Diagnostics d;
    bool have_model = false;
    for (const KeyValue& kv : params(row, where, d)) {
      if (kv.key == "policy") {
        policy = runtime::KernelPolicy::load(kv.value, d, where + ": policy",
                                             std::filesystem::path(o_.file).parent_path().string());
      } else if (!set(spec, kv.key, kv.value, d, where)) {
        std::vector<std::string> valid = keys;
        valid.emplace_back("policy");
        d.error(where, kv.key, fmt::format("{} takes no parameter \"{}\"{} (valid: {})", family, kv.key,
                                           did_you_mean(kv.key, valid), join(valid)));
      } else {
        have_model = have_model || kv.key == "model";
      }
    }
    if (!have_model && d.empty()) d.error(where, "model", fmt::format("{} needs model=", family));
    const hw::Machine* m = machine(row, where, d);
    if (d.empty()) validate(spec, *m, d, where);
    if (!d.empty()) {
      fail(row, d);
      return nullptr;
    }
    return m;
  }

  // A kernel or collective row: its latency by the Predictor. Params: the op's shape, dtype, and
  // optionally timing=device|host|events and impl= (the policy's implementation for the op, with
  // a collective's protocol after a colon).
  void predict_op(ValidationRow& row, const std::string& where) {
    const auto kind = runtime::parse_op(row.op);
    if (!kind) {
      mark(row, "unsupported", fmt::format("unknown op \"{}\"", row.op));
      return;
    }
    const double scale = unit_to_seconds(row.unit);
    if (row.metric != "latency" || scale == 0) {
      mark(row, "unsupported",
           fmt::format("metric {} in {} is not predicted (latency in ns/us/ms/s is)", row.metric, row.unit));
      return;
    }
    Diagnostics d;
    std::map<std::string, std::string> values;
    for (KeyValue& kv : params(row, where, d)) values.emplace(std::move(kv.key), std::move(kv.value));
    runtime::OpDesc op;
    op.kind = *kind;
    runtime::op_from_params(values, {"timing", "impl"}, op, d, where);
    runtime::Timing timing = runtime::Timing::device;
    if (auto t = values.find("timing"); t != values.end()) {
      if (const auto parsed = runtime::parse_timing(t->second)) {
        timing = *parsed;
      } else {
        d.error(where, "timing", fmt::format("expected {}, got \"{}\"", join(runtime::timing_names(), ", "), t->second));
      }
    }
    runtime::KernelPolicy policy;
    std::string policy_key;
    if (auto i = values.find("impl"); i != values.end()) {
      policy_key = fmt::format("{}={}", row.op, i->second);
      policy = runtime::KernelPolicy::parse(policy_key, d, where);
    }
    const hw::Machine* m = machine(row, where, d);
    if (!d.empty()) {
      fail(row, d);
      return;
    }
    record(row, scale, [&] {
      // A row seen before (a file may repeat one) is predicted once.
      const std::string key = fmt::format("{}|{}|{}", row.hw, row.op, row.params);
      if (const auto seen = op_times_.find(key); seen != op_times_.end()) return seen->second;
      auto& predictor = predictors_[row.hw + "|" + policy_key];
      if (!predictor) predictor = std::make_unique<runtime::Predictor>(*m, policy);
      return op_times_[key] = predictor->predict(op, timing).time_s;
    });
  }

  // A `serve` row: one simulated serving run (serving::serve) and one of its metrics
  // (kServeMetrics). Params: those of the serving table (syntorch serve's flags without the
  // dashes; replicas= and router= for a deployment of several behind a router).
  void predict_serve(ValidationRow& row, const std::string& where) {
    const ServeMetric* metric = nullptr;
    for (const ServeMetric& g : kServeMetrics) {
      if (row.metric == g.name) metric = &g;
    }
    const double scale = !metric ? 0 : *metric->unit_kind ? (row.unit == metric->unit_kind ? 1 : 0) : unit_to_seconds(row.unit);
    if (scale == 0) {
      mark(row, "unsupported", fmt::format("metric {} in {} is not predicted for serve ({} are)", row.metric, row.unit,
                                           serve_metrics_text()));
      return;
    }
    serving::ServeSpec spec;
    runtime::KernelPolicy policy;
    const std::vector<std::string> keys = parameter_keys(serving::serving_parameters());
    const hw::Machine* m = read_run(
        row, where, "serve", spec, policy, keys,
        [](serving::ServeSpec& s, const std::string& k, const std::string& v, Diagnostics& d, const std::string& w) {
          return set_parameter(serving::serving_parameters(), s, k, v, d, w);
        },
        serving::validate_serve);
    if (!m) return;
    const serving::ServeReport* report = run_once(serve_runs_, row, [&] { return serving::serve(*m, policy, spec); });
    if (!report) return;
    record(row, scale, [&] { return metric->value(report->metrics); });
  }

  // A `graph` row: a model's IR (graph=, relative to the measurements file) run once on the
  // row's machine, as `simulate --graph` runs it; metric latency in a time unit. Params also
  // framework=eager|native (default eager: the graph of a PyTorch program) and policy=.
  void predict_graph(ValidationRow& row, const std::string& where) {
    const double scale = row.metric == "latency" ? unit_to_seconds(row.unit) : 0;
    if (scale == 0) {
      mark(row, "unsupported", fmt::format("metric {} in {} is not predicted for graph (latency in ns/us/ms/s is)",
                                           row.metric, row.unit));
      return;
    }
    Diagnostics d;
    const std::string dir = std::filesystem::path(o_.file).parent_path().string();
    std::string file;
    runtime::Framework framework = runtime::Framework::eager;
    runtime::KernelPolicy policy;
    for (const KeyValue& kv : params(row, where, d)) {
      if (kv.key == "graph") {
        file = (std::filesystem::path(dir) / kv.value).string();
      } else if (kv.key == "framework" && (kv.value == "eager" || kv.value == "native")) {
        framework = kv.value == "eager" ? runtime::Framework::eager : runtime::Framework::native;
      } else if (kv.key == "framework") {
        d.error(where, "framework", fmt::format("expected eager or native, got \"{}\"", kv.value));
      } else if (kv.key == "policy") {
        policy = runtime::KernelPolicy::load(kv.value, d, where + ": policy", dir);
      } else {
        const std::vector<std::string> valid{"graph", "framework", "policy"};
        d.error(where, kv.key, fmt::format("graph takes no parameter \"{}\"{} (valid: {})", kv.key,
                                           did_you_mean(kv.key, valid), join(valid)));
      }
    }
    if (file.empty() && d.empty()) d.error(where, "graph", "graph needs graph= (an IR file)");
    const hw::Machine* m = d.empty() ? machine(row, where, d) : nullptr;
    if (!d.empty()) {
      fail(row, d);
      return;
    }
    const GraphRunReport* report = run_once(graph_runs_, row, [&] {
      return simulate_graph(*m, policy, load_graph(file), framework);
    });
    if (!report) return;
    record(row, scale, [&] { return report->stats.simulated_time_s; });
  }

  // A simulated run rows share: its report, or why there is none.
  template <class Report>
  struct Run {
    std::shared_ptr<const Report> report;
    std::string error;
  };

  // Rows of one run (its metrics, or a file that repeats rows) simulate it once: the run's
  // report, or null after marking the row with the run's error (a simulated OOM is one here).
  template <class Report, class Simulate>
  static const Report* run_once(std::map<std::string, Run<Report>>& runs, ValidationRow& row, Simulate&& simulate) {
    Run<Report>& run = runs[row.hw + "|" + row.params];
    if (!run.report && run.error.empty()) {
      try {
        run.report = std::make_shared<const Report>(simulate());
        if constexpr (requires { run.report->oom_reason; }) {
          if (run.report->oom) run.error = "out of memory: " + run.report->oom_reason;
        } else if constexpr (requires { run.report->stats.oom; }) {
          if (run.report->stats.oom) {
            run.error = fmt::format("simulated out of memory: {} bytes requested for {}",
                                    run.report->stats.oom->requested_bytes, run.report->stats.oom->requested_for);
          }
        } else if (run.report->oom) {
          run.error = fmt::format("simulated out of memory on rank {}", run.report->engine.oom->rank);
        }
      } catch (const InputError& e) {
        run.error = e.diagnostics().items().empty() ? "" : e.diagnostics().items()[0].to_string();
      } catch (const std::exception& e) {
        run.error = e.what();
      }
    }
    if (!run.error.empty()) {
      mark(row, "error", run.error);
      return nullptr;
    }
    return run.report.get();
  }

  const ValidateOptions& o_;
  std::map<std::string, std::unique_ptr<hw::Machine>> machines_;
  std::map<std::string, std::unique_ptr<runtime::Predictor>> predictors_;
  std::map<std::string, Run<RunReport>> runs_;          // by hw and params
  std::map<std::string, Run<TrainReport>> train_runs_;  // by hw and params
  std::map<std::string, Run<serving::ServeReport>> serve_runs_;  // by hw and params
  std::map<std::string, Run<GraphRunReport>> graph_runs_;  // by hw and params
  std::map<std::string, double> op_times_;   // by hw, op and params: seconds
};

double percentile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  if (v.empty()) return 0;
  // Nearest rank.
  const auto rank = static_cast<std::size_t>(std::ceil(q * static_cast<double>(v.size())));
  return v[std::clamp<std::size_t>(rank, 1, v.size()) - 1];
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  if (v.empty()) return 0;
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

ErrorSummary summarise(const std::vector<double>& e) {
  return {e.size(), median(e), percentile(e, 0.9), *std::max_element(e.begin(), e.end())};
}

}  // namespace

bool ValidationReport::any_error() const {
  return std::any_of(rows.begin(), rows.end(), [](const ValidationRow& r) { return r.status == "error"; });
}

std::size_t ValidationReport::unsupported() const {
  return static_cast<std::size_t>(
      std::count_if(rows.begin(), rows.end(), [](const ValidationRow& r) { return r.status == "unsupported"; }));
}

std::string validation_family(const std::string& op) {
  if (op == "gemm" || op == "bmm") return "gemm";
  if (op == "allreduce" || op == "allgather" || op == "reducescatter" || op == "sendrecv") return "collectives";
  if (op == "attention" || op == "paged_attention") return "attention";
  if (op == "generate") return "generate";
  if (op == "train") return "train";
  if (op == "serve") return "serve";
  if (op == "graph") return "graph";
  return "layernorm/softmax/gelu";
}

ValidationReport validate_measurements(const ValidateOptions& o) {
  Diagnostics bad;
  const std::optional<std::string> text = read_input_file(o.file, "a measurements CSV", bad);
  if (!text) throw InputError(std::move(bad));
  std::istringstream in(*text);
  std::string line;
  std::getline(in, line);
  const auto header = split_csv_line(line);
  const std::vector<std::string> expected{"id", "op", "hw", "params", "metric", "value", "unit", "source"};
  if (header != expected) {
    bad.error(o.file + ":1", "", fmt::format("expected the header {}, got \"{}\"", join(expected, ","), line));
    throw InputError(std::move(bad));
  }
  ValidationReport report;
  for (int number = 2; std::getline(in, line); ++number) {
    if (line.empty() || line == "\r") continue;
    bool unterminated = false;
    const auto f = split_csv_line(line, &unterminated);
    if (unterminated) {
      bad.error(fmt::format("{}:{}", o.file, number), "", "a quoted field is not closed on its line");
      continue;
    }
    if (f.size() != expected.size()) {
      bad.error(fmt::format("{}:{}", o.file, number), "",
                fmt::format("expected {} fields ({}), got {}", expected.size(), join(expected, ","), f.size()));
      continue;
    }
    ValidationRow r;
    r.id = f[0];
    r.op = f[1];
    r.hw = f[2];
    r.params = f[3];
    r.metric = f[4];
    r.unit = f[6];
    try {
      std::size_t used = 0;
      r.measured = std::stod(f[5], &used);
      if (used != f[5].size() || !(r.measured > 0) || !std::isfinite(r.measured)) throw std::invalid_argument("value");
    } catch (const std::exception&) {
      bad.error(fmt::format("{}:{}", o.file, number), "value",
                fmt::format("expected a positive finite number, got \"{}\"", f[5]));
      continue;
    }
    if (o.only_hw.empty() || o.only_hw.count(r.hw)) report.rows.push_back(std::move(r));
  }
  if (!bad.empty()) throw InputError(std::move(bad));

  Validator validator(o);
  for (ValidationRow& r : report.rows) validator.predict(r);
  std::map<std::string, std::vector<double>> errors, family_errors;
  for (const ValidationRow& r : report.rows) {
    if (r.status != "ok") continue;
    errors[r.op].push_back(std::fabs(r.error_pct));
    family_errors[validation_family(r.op)].push_back(std::fabs(r.error_pct));
  }
  for (const auto& [name, e] : errors) report.by_op[name] = summarise(e);
  for (const auto& [name, e] : family_errors) report.by_family[name] = summarise(e);
  return report;
}

}  // namespace syntorch::session
