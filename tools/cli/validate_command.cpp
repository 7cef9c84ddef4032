// `syntorch validate FILE.csv [--json] [--hw-dir DIR]`: prints session::validate_measurements'
// report, a line per row (rows it cannot run yet listed as unsupported with the reason) and the
// error summaries per op and per family.

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
#include "syntorch/session/validate.hpp"

namespace syntorch::cli {

namespace {

struct ValidateOptions {
  session::ValidateOptions run;
  bool json = false;
};

nlohmann::ordered_json to_json(const std::map<std::string, session::ErrorSummary>& by) {
  nlohmann::ordered_json js = nlohmann::ordered_json::object();
  for (const auto& [name, e] : by) {
    js[name] = {{"count", e.count}, {"median_abs_error_pct", e.median_abs_pct}, {"p90_abs_error_pct", e.p90_abs_pct},
                {"max_abs_error_pct", e.max_abs_pct}};
  }
  return js;
}

int run_validate(const ValidateOptions& o, Context& ctx) {
  const session::ValidationReport report = session::validate_measurements(o.run);  // InputError -> exit 2 in run()
  const int exit_code = report.any_error() ? kExitBadInput : kExitOk;
  if (o.json) {
    nlohmann::ordered_json j;
    auto& jr = j["rows"] = nlohmann::ordered_json::array();
    for (const session::ValidationRow& r : report.rows) {
      nlohmann::ordered_json x{{"id", r.id}, {"op", r.op}, {"measured", r.measured}};
      x["predicted"] = r.status == "ok" ? nlohmann::ordered_json(r.predicted) : nullptr;
      x["unit"] = r.unit;
      x["error_pct"] = r.status == "ok" ? nlohmann::ordered_json(r.error_pct) : nullptr;
      x["status"] = r.status;
      x["reason"] = r.reason;
      jr.push_back(std::move(x));
    }
    j["summary"] = to_json(report.by_op);
    j["families"] = to_json(report.by_family);
    ctx.out << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    return exit_code;
  }
  ctx.out << fmt::format("{:<6} {:<10} {:<16} {:>12} {:>12} {:>8}  {}\n", "id", "op", "hw", "measured", "predicted",
                         "error", "note");
  for (const session::ValidationRow& r : report.rows) {
    // The table's columns are cut (a row's id may be a pasted megabyte); the JSON keeps them whole.
    const std::string id = clip(r.id, 60), op = clip(r.op, 60), hw = clip(r.hw, 60), unit = clip(r.unit, 60);
    const std::string measured = fmt::format("{:.4g} {}", r.measured, unit);
    if (r.status == "ok") {
      ctx.out << fmt::format("{:<6} {:<10} {:<16} {:>12} {:>12} {:>7.1f}%\n", id, op, hw, measured,
                             fmt::format("{:.4g} {}", r.predicted, unit), r.error_pct);
    } else {
      ctx.out << fmt::format("{:<6} {:<10} {:<16} {:>12} {:>12} {:>8}  {}: {}\n", id, op, hw, measured, "-", "-",
                             r.status, clip(r.reason, 2000));
    }
  }
  for (const auto* by : {&report.by_op, &report.by_family}) {
    ctx.out << fmt::format("\n{:<24} {:>5} {:>13} {:>10} {:>10}\n", by == &report.by_op ? "op" : "family", "count",
                           "median |err|", "p90 |err|", "max |err|");
    for (const auto& [name, e] : *by) {
      ctx.out << fmt::format("{:<24} {:>5} {:>12.1f}% {:>9.1f}% {:>9.1f}%\n", name, e.count, e.median_abs_pct,
                             e.p90_abs_pct, e.max_abs_pct);
    }
  }
  if (const std::size_t unsupported = report.unsupported()) {
    ctx.out << fmt::format("{} row(s) unsupported (listed above with the reason)\n", unsupported);
  }
  return exit_code;
}

}  // namespace

void add_validate_command(CLI::App& app, Context& ctx) {
  auto o = std::make_shared<ValidateOptions>();
  CLI::App* v = app.add_subcommand("validate", "Predict every row of a measurements CSV and report the errors");
  v->add_option("file", o->run.file, "Measurements CSV: id,op,hw,params,metric,value,unit,source")->required();
  v->add_option("--hw-dir", o->run.hw_dir, "Folder of the hardware configs the rows name")->capture_default_str();
  v->add_flag("--json", o->json, "Print JSON");
  v->callback([&ctx, o] { ctx.action = [&ctx, o] { return run_validate(*o, ctx); }; });
}

}  // namespace syntorch::cli
