// `syntorch calibrate CONFIG MEASUREMENTS.csv --params /ptr[,/ptr...] [--out FILE] [--max-evaluations N]
// [--json]`: fits the named config fields to the rows measured on CONFIG (session::calibrate) and
// prints each field before and after, the rows' errors before and after, and the --set overrides;
// --out writes a config that extends CONFIG with the fitted values and the residuals in its notes.

#include <fmt/format.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <ostream>

#include "cli.hpp"
#include "commands.hpp"
#include "syntorch/session/calibrate.hpp"
#include "syntorch/trace/output_file.hpp"

namespace syntorch::cli {

namespace {

struct CalibrateCliOptions {
  session::CalibrateOptions run;
  std::string out;
  bool json = false;
};

nlohmann::ordered_json rows_json(const std::vector<session::ValidationRow>& rows) {
  nlohmann::ordered_json j = nlohmann::ordered_json::array();
  for (const session::ValidationRow& r : rows) {
    j.push_back({{"id", r.id},
                 {"measured", r.measured},
                 {"predicted", r.status == "ok" ? nlohmann::ordered_json(r.predicted) : nullptr},
                 {"unit", r.unit},
                 {"error_pct", r.status == "ok" ? nlohmann::ordered_json(r.error_pct) : nullptr},
                 {"status", r.status}});
  }
  return j;
}

int run_calibrate(const CalibrateCliOptions& o, Context& ctx) {
  if (!o.out.empty()) {
    // Before the fit: a folder that is not there, or the config itself, named now.
    namespace fs = std::filesystem;
    std::error_code ec;
    const fs::path out = fs::weakly_canonical(fs::absolute(o.out), ec);
    Diagnostics d;
    if (!fs::is_directory(out.parent_path(), ec)) {
      d.error("--out", "", fmt::format("{}: no folder {} to write it in", o.out, out.parent_path().string()));
    } else if (fs::exists(o.run.config, ec) && fs::equivalent(o.out, o.run.config, ec)) {
      d.error("--out", "", fmt::format("{} is the config being fitted; the fitted config extends it, so write it "
                                       "elsewhere", o.out));
    }
    if (!d.empty()) throw InputError(std::move(d));
  }
  const session::CalibrationReport r = session::calibrate(o.run);  // InputError -> exit 2 in run()
  if (!o.out.empty()) {
    trace::OutputFile file(o.out);
    file.write(session::fitted_config_json(r, o.run.config, o.out, o.run.measurements));
    file.commit();
  }
  if (o.json) {
    nlohmann::ordered_json j;
    j["hw"] = r.hw;
    auto& params = j["params"] = nlohmann::ordered_json::array();
    for (const auto& p : r.params) {
      params.push_back({{"pointer", p.pointer}, {"before", p.before}, {"after", p.after}, {"scale", p.scale}});
    }
    j["rms_log_error_before"] = r.rms_log_before;
    j["rms_log_error_after"] = r.rms_log_after;
    j["evaluations"] = r.evaluations;
    j["before"] = rows_json(r.before);
    j["after"] = rows_json(r.after);
    ctx.out << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    return kExitOk;
  }
  ctx.out << fmt::format("{} rows of {} on {} ({} predictions of every row)\n", r.after.size(), o.run.measurements,
                         o.run.config, r.evaluations);
  for (const auto& p : r.params) {
    ctx.out << fmt::format("  {:<56} {:>14} -> {:<14} (x{:.3f})\n", p.pointer, p.before, p.after, p.scale);
  }
  ctx.out << fmt::format("\n{:<6} {:>14} {:>14} {:>8} {:>14} {:>8}\n", "id", "measured", "before", "error", "after",
                         "error");
  for (std::size_t i = 0; i < r.after.size(); ++i) {
    const auto& b = r.before[i];
    const auto& a = r.after[i];
    auto cell = [](const session::ValidationRow& x) {
      return x.status == "ok" ? fmt::format("{:>14} {:>7.1f}%", fmt::format("{:.4g}", x.predicted), x.error_pct)
                              : fmt::format("{:>14} {:>8}", x.status, "-");
    };
    ctx.out << fmt::format("{:<6} {:>14} {} {}\n", a.id, fmt::format("{:.4g} {}", a.measured, a.unit), cell(b), cell(a));
  }
  ctx.out << fmt::format("\nrms log error {:.3f} -> {:.3f}\n", r.rms_log_before, r.rms_log_after);
  ctx.out << "as overrides:";
  for (const auto& s : r.overrides()) ctx.out << fmt::format(" --set \"{}={}\"", s.pointer, s.value_text);
  ctx.out << "\n";
  if (!o.out.empty()) ctx.out << fmt::format("fitted config written to {}\n", o.out);
  return kExitOk;
}

}  // namespace

void add_calibrate_command(CLI::App& app, Context& ctx) {
  auto o = std::make_shared<CalibrateCliOptions>();
  CLI::App* c = app.add_subcommand("calibrate", "Fit hardware config fields to measurements by least squares");
  c->add_option("config", o->run.config, "The hardware config to fit (rows name it by its file name)")->required();
  c->add_option("measurements", o->run.measurements, "Measurements CSV: id,op,hw,params,metric,value,unit,source")
      ->required();
  c->add_option("--params", o->run.params,
                "Config fields to fit, as JSON pointers (numbers or quantities), comma-separated or repeated")
      ->delimiter(',')
      ->required();
  c->add_option("--max-evaluations", o->run.max_evaluations, "Most predictions of every row")->capture_default_str();
  c->add_option("--hw-dir", o->run.hw_dir, "Folder of the hardware configs")->capture_default_str();
  c->add_option("--out", o->out, "Write a config that extends CONFIG with the fitted values");
  c->add_flag("--json", o->json, "Print JSON");
  c->callback([&ctx, o] { ctx.action = [&ctx, o] { return run_calibrate(*o, ctx); }; });
}

}  // namespace syntorch::cli
