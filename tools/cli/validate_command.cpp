// `syntorch validate FILE.csv [--json] [--hw-dir DIR]`: predicts every row of a measurements file
// (id,op,hw,params,metric,value,unit,source) and compares. Rows it cannot run yet are listed as
// unsupported with the reason, never dropped.

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <ostream>
#include <sstream>

#include "cli.hpp"
#include "commands.hpp"
#include "syntorch/hw/machine.hpp"
#include "syntorch/runtime/op_params.hpp"
#include "syntorch/session/simulate.hpp"
#include "syntorch/runtime/predictor.hpp"

namespace syntorch::cli {

namespace {

struct ValidateOptions {
  std::string file;
  std::string hw_dir = "hw_configs";
  bool json = false;
};

struct Row {
  std::string id, op, hw, params, metric, unit;
  double measured = 0;
  double predicted = 0;
  double error_pct = 0;
  std::string status;  // ok, unsupported, error
  std::string reason;
};

// Splits one CSV line (RFC 4180 quoting).
std::vector<std::string> split_csv(const std::string& line) {
  std::vector<std::string> out(1);
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        out.back() += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        out.back() += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      out.emplace_back();
    } else if (c != '\r') {
      out.back() += c;
    }
  }
  return out;
}

double unit_to_seconds(const std::string& unit) {
  if (unit == "us") return 1e-6;
  if (unit == "ms") return 1e-3;
  if (unit == "s") return 1;
  if (unit == "ns") return 1e-9;
  return 0;
}

// The row's hardware config (loaded once per file); problems go to `d`.
void load_machine(const Row& row, const ValidateOptions& o, std::map<std::string, std::unique_ptr<hw::Machine>>& machines,
                  const std::string& where, Diagnostics& d) {
  const std::string hw_file = (std::filesystem::path(o.hw_dir) / (row.hw + ".json")).string();
  if (!machines.count(row.hw)) {
    try {
      machines[row.hw] = std::make_unique<hw::Machine>(hw::Machine::load(hw_file));
    } catch (const InputError& e) {
      d.append(e.diagnostics());
    }
  }
  if (d.empty() && !machines[row.hw]) d.error(where, "hw", "hardware config failed to load");
}

// A `generate` row: one simulated generation run; the metric is its end-to-end latency (prefill
// plus every output token, as measured end to end). Params: model, tp, pp, batch, input, output,
// dtype, and optionally graph=true|false, micro_batches, framework=eager|native (default native).
void predict_generate_row(Row& row, const ValidateOptions& o, std::map<std::string, std::unique_ptr<hw::Machine>>& machines,
                          const std::string& where) {
  const double scale = unit_to_seconds(row.unit);
  if (row.metric != "e2e_latency" || scale == 0) {
    row.status = "unsupported";
    row.reason = fmt::format("metric {} in {} is not predicted for generate (e2e_latency in ns/us/ms/s is)", row.metric,
                             row.unit);
    return;
  }
  Diagnostics d;
  session::RunSpec spec;
  std::stringstream ss(row.params);
  const std::vector<std::string> keys{"model",  "tp",    "pp",    "batch",         "input",
                                      "output", "dtype", "graph", "micro_batches", "framework"};
  // The shared generate rows are FasterTransformer measurements, a C++ runtime: native unless a
  // row says framework=eager.
  spec.framework = runtime::Framework::native;
  bool have_model = false;
  for (std::string kv; ss >> kv;) {
    const auto eq = kv.find('=');
    const std::string key = kv.substr(0, eq == std::string::npos ? kv.size() : eq);
    const std::string value = eq == std::string::npos ? "" : kv.substr(eq + 1);
    if (eq == std::string::npos) {
      d.error(where, "params", fmt::format("expected key=value, got \"{}\"", kv));
    } else if (std::find(keys.begin(), keys.end(), key) == keys.end() ||
               !session::set_run_parameter(spec, key, value, d, where)) {
      d.error(where, key, fmt::format("generate takes no parameter \"{}\"{} (valid: {})", key, did_you_mean(key, keys),
                                      join(keys)));
    } else {
      have_model = have_model || key == "model";
    }
  }
  if (!have_model && d.empty()) d.error(where, "model", "generate needs model=");
  load_machine(row, o, machines, where, d);
  if (d.empty()) session::validate_run(spec, *machines[row.hw], d, where);
  if (!d.empty()) {
    row.status = "error";
    row.reason = d.items()[0].to_string();
    return;
  }
  try {
    const session::RunReport r = session::simulate_generation(*machines[row.hw], {}, spec);
    if (r.oom) {
      row.status = "error";
      row.reason = fmt::format("simulated out of memory on rank {}", r.engine.oom->rank);
      return;
    }
    row.predicted = r.e2e_s / scale;
    row.error_pct = (row.predicted - row.measured) / row.measured * 100;
    row.status = "ok";
  } catch (const InputError& e) {
    row.status = "error";
    row.reason = e.diagnostics().items().empty() ? "" : e.diagnostics().items()[0].to_string();
  } catch (const std::exception& e) {
    row.status = "error";
    row.reason = e.what();
  }
}

// Predicts one row; fills status, reason, predicted.
void predict_row(Row& row, const ValidateOptions& o, std::map<std::string, std::unique_ptr<hw::Machine>>& machines,
                 std::map<std::string, std::unique_ptr<runtime::Predictor>>& predictors) {
  const std::string where = fmt::format("{} row {}", o.file, row.id);
  const auto kind = runtime::parse_op(row.op);
  if (row.op == "generate") {
    predict_generate_row(row, o, machines, where);
    return;
  }
  if (!kind) {
    row.status = "unsupported";
    row.reason = fmt::format("unknown op \"{}\"", row.op);
    return;
  }
  const double scale = unit_to_seconds(row.unit);
  if (row.metric != "latency" || scale == 0) {
    row.status = "unsupported";
    row.reason = fmt::format("metric {} in {} is not predicted (latency in ns/us/ms/s is)", row.metric, row.unit);
    return;
  }
  std::map<std::string, std::string> params;
  std::stringstream ss(row.params);
  Diagnostics d;
  for (std::string kv; ss >> kv;) {
    const auto eq = kv.find('=');
    if (eq == std::string::npos) {
      d.error(where, "params", fmt::format("expected key=value, got \"{}\"", kv));
      continue;
    }
    if (!params.emplace(kv.substr(0, eq), kv.substr(eq + 1)).second) {
      d.error(where, kv.substr(0, eq), "given twice");
    }
  }
  runtime::OpDesc op;
  op.kind = *kind;
  runtime::op_from_params(params, {"timing", "impl"}, op, d, where);
  runtime::Timing timing = runtime::Timing::device;
  if (auto t = params.find("timing"); t != params.end()) {
    if (t->second == "host") {
      timing = runtime::Timing::host;
    } else if (t->second != "device") {
      d.error(where, "timing", fmt::format("expected host or device, got \"{}\"", t->second));
    }
  }
  runtime::KernelPolicy policy;
  std::string policy_key;
  if (auto i = params.find("impl"); i != params.end()) {
    policy_key = fmt::format("{}={}", row.op, i->second);
    policy = runtime::KernelPolicy::parse(policy_key, d, where);
  }
  load_machine(row, o, machines, where, d);
  if (!d.empty()) {
    row.status = "error";
    row.reason = d.items()[0].to_string();
    return;
  }
  auto& predictor = predictors[row.hw + "|" + policy_key];
  if (!predictor) predictor = std::make_unique<runtime::Predictor>(*machines[row.hw], policy);
  try {
    const runtime::Prediction p = predictor->predict(op, timing);
    row.predicted = p.time_s / scale;
    row.error_pct = (row.predicted - row.measured) / row.measured * 100;
    row.status = "ok";
  } catch (const InputError& e) {
    row.status = "error";
    row.reason = e.diagnostics().items().empty() ? "" : e.diagnostics().items()[0].to_string();
  } catch (const std::exception& e) {
    row.status = "error";
    row.reason = e.what();
  }
}

// The families the fidelity targets are stated for.
std::string family_of(const std::string& op) {
  if (op == "gemm" || op == "bmm") return "gemm";
  if (op == "allreduce" || op == "allgather" || op == "reducescatter" || op == "sendrecv") return "collectives";
  if (op == "attention") return "attention";
  if (op == "generate") return "generate";
  return "layernorm/softmax/gelu";
}

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

int run_validate(const ValidateOptions& o, Context& ctx) {
  std::ifstream in(o.file);
  if (!in) {
    ctx.err << fmt::format("{}: cannot open the file\n", o.file);
    return kExitBadInput;
  }
  std::string line;
  std::getline(in, line);
  const auto header = split_csv(line);
  const std::vector<std::string> expected{"id", "op", "hw", "params", "metric", "value", "unit", "source"};
  if (header.size() < 7 || !std::equal(expected.begin(), expected.begin() + 7, header.begin())) {
    ctx.err << fmt::format("{}:1: expected the header {}, got \"{}\"\n", o.file, join(expected, ","), line);
    return kExitBadInput;
  }
  std::vector<Row> rows;
  Diagnostics bad;
  for (int number = 2; std::getline(in, line); ++number) {
    if (line.empty() || line == "\r") continue;
    const auto f = split_csv(line);
    if (f.size() < 7) {
      bad.error(fmt::format("{}:{}", o.file, number), "", fmt::format("expected at least 7 fields, got {}", f.size()));
      continue;
    }
    Row r;
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
      bad.error(fmt::format("{}:{}", o.file, number), "value", fmt::format("expected a positive finite number, got \"{}\"", f[5]));
      continue;
    }
    rows.push_back(std::move(r));
  }
  if (!bad.empty()) {
    ctx.err << bad.to_string();
    return kExitBadInput;
  }
  std::map<std::string, std::unique_ptr<hw::Machine>> machines;
  std::map<std::string, std::unique_ptr<runtime::Predictor>> predictors;
  for (Row& r : rows) predict_row(r, o, machines, predictors);

  std::map<std::string, std::vector<double>> errors;
  std::map<std::string, std::vector<double>> family_errors;
  for (const Row& r : rows) {
    if (r.status != "ok") continue;
    errors[r.op].push_back(std::fabs(r.error_pct));
    family_errors[family_of(r.op)].push_back(std::fabs(r.error_pct));
  }
  auto summarise = [](const std::map<std::string, std::vector<double>>& by) {
    nlohmann::ordered_json js = nlohmann::ordered_json::object();
    for (const auto& [name, e] : by) {
      js[name] = {{"count", e.size()}, {"median_abs_error_pct", median(e)}, {"p90_abs_error_pct", percentile(e, 0.9)},
                  {"max_abs_error_pct", *std::max_element(e.begin(), e.end())}};
    }
    return js;
  };
  const bool any_error = std::any_of(rows.begin(), rows.end(), [](const Row& r) { return r.status == "error"; });
  if (o.json) {
    nlohmann::ordered_json j;
    auto& jr = j["rows"] = nlohmann::ordered_json::array();
    for (const Row& r : rows) {
      nlohmann::ordered_json x{{"id", r.id}, {"op", r.op}, {"measured", r.measured}};
      x["predicted"] = r.status == "ok" ? nlohmann::ordered_json(r.predicted) : nullptr;
      x["unit"] = r.unit;
      x["error_pct"] = r.status == "ok" ? nlohmann::ordered_json(r.error_pct) : nullptr;
      x["status"] = r.status;
      x["reason"] = r.reason;
      jr.push_back(std::move(x));
    }
    j["summary"] = summarise(errors);
    j["families"] = summarise(family_errors);
    ctx.out << j.dump(2) << "\n";
    return any_error ? kExitBadInput : kExitOk;
  }
  ctx.out << fmt::format("{:<6} {:<10} {:<16} {:>12} {:>12} {:>8}  {}\n", "id", "op", "hw", "measured", "predicted",
                         "error", "note");
  for (const Row& r : rows) {
    const std::string measured = fmt::format("{:.4g} {}", r.measured, r.unit);
    if (r.status == "ok") {
      ctx.out << fmt::format("{:<6} {:<10} {:<16} {:>12} {:>12} {:>7.1f}%\n", r.id, r.op, r.hw, measured,
                             fmt::format("{:.4g} {}", r.predicted, r.unit), r.error_pct);
    } else {
      ctx.out << fmt::format("{:<6} {:<10} {:<16} {:>12} {:>12} {:>8}  {}: {}\n", r.id, r.op, r.hw, measured, "-", "-",
                             r.status, r.reason);
    }
  }
  for (const auto* by : {&errors, &family_errors}) {
    ctx.out << fmt::format("\n{:<24} {:>5} {:>13} {:>10} {:>10}\n", by == &errors ? "op" : "family", "count",
                           "median |err|", "p90 |err|", "max |err|");
    for (const auto& [name, e] : *by) {
      ctx.out << fmt::format("{:<24} {:>5} {:>12.1f}% {:>9.1f}% {:>9.1f}%\n", name, e.size(), median(e),
                             percentile(e, 0.9), *std::max_element(e.begin(), e.end()));
    }
  }
  const auto unsupported = std::count_if(rows.begin(), rows.end(), [](const Row& r) { return r.status == "unsupported"; });
  if (unsupported) ctx.out << fmt::format("{} row(s) unsupported (listed above with the reason)\n", unsupported);
  return any_error ? kExitBadInput : kExitOk;
}

}  // namespace

void add_validate_command(CLI::App& app, Context& ctx) {
  auto o = std::make_shared<ValidateOptions>();
  CLI::App* v = app.add_subcommand("validate", "Predict every row of a measurements CSV and report the errors");
  v->add_option("file", o->file, "Measurements CSV: id,op,hw,params,metric,value,unit,source")->required();
  v->add_option("--hw-dir", o->hw_dir, "Folder of the hardware configs the rows name")->capture_default_str();
  v->add_flag("--json", o->json, "Print JSON");
  v->callback([&ctx, o] { ctx.action = [&ctx, o] { return run_validate(*o, ctx); }; });
}

}  // namespace syntorch::cli
