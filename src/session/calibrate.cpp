#include "syntorch/session/calibrate.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <functional>
#include <numeric>
#include <optional>

#include "syntorch/base/diagnostics.hpp"
#include "syntorch/base/json.hpp"

namespace syntorch::session {

namespace {

namespace fs = std::filesystem;

// A field's value: its leading number and the unit text after it ("3.35 TB/s" -> 3.35, " TB/s").
struct Quantity {
  double number = 0;
  std::string unit;
};

std::optional<Quantity> parse_quantity(const std::string& text) {
  Quantity q;
  const char* begin = text.data();
  const char* end = text.data() + text.size();
  const auto [p, ec] = std::from_chars(begin, end, q.number);
  if (ec != std::errc{} || !(q.number > 0) || !std::isfinite(q.number)) return std::nullopt;
  q.unit.assign(p, end);
  return q;
}

std::string quantity_text(const Quantity& q, double scale) { return fmt::format("{:.6g}{}", q.number * scale, q.unit); }

double squared_log_error(const ValidationRow& r) {
  const double l = std::log(r.predicted / r.measured);
  return l * l;
}

// Evaluates parameter sets: every row of the config's hardware predicted with the overrides.
class Objective {
 public:
  Objective(const CalibrateOptions& o, std::string hw, std::vector<Quantity> start)
      : o_(o), hw_(std::move(hw)), start_(std::move(start)) {}

  std::vector<hw::Override> overrides(const std::vector<double>& log_scale) const {
    std::vector<hw::Override> sets;
    for (std::size_t i = 0; i < start_.size(); ++i) {
      sets.push_back({o_.params[i], quantity_text(start_[i], std::exp(log_scale[i]))});
    }
    return sets;
  }

  std::vector<ValidationRow> rows(const std::vector<double>& log_scale) {
    ++evaluations_;
    ValidateOptions v;
    v.file = o_.measurements;
    v.hw_dir = o_.hw_dir;
    v.only_hw = {hw_};
    v.config_files[hw_] = o_.config;
    v.overrides[hw_] = overrides(log_scale);
    return validate_measurements(v).rows;
  }

  // Mean squared log error over the rows that ran at the start; a row that stops running (the
  // config refuses the values) costs as much as a factor of e^10 off.
  double cost(const std::vector<double>& log_scale, const std::vector<std::string>& ran) {
    double sum = 0;
    for (const ValidationRow& r : rows(log_scale)) {
      if (std::find(ran.begin(), ran.end(), r.id) == ran.end()) continue;
      sum += r.status == "ok" ? squared_log_error(r) : 100.0;
    }
    return sum / static_cast<double>(ran.size());
  }

  int evaluations() const { return evaluations_; }

 private:
  const CalibrateOptions& o_;
  std::string hw_;
  std::vector<Quantity> start_;
  int evaluations_ = 0;
};

// Nelder-Mead over log scale factors bounded to [-bound, bound], from 0 with steps of `step`.
std::vector<double> nelder_mead(std::size_t dims, const std::function<double(const std::vector<double>&)>& f,
                                int max_evaluations, int& used) {
  const double bound = std::log(16.0), step = 0.2;
  auto clamp = [&](std::vector<double> x) {
    for (double& v : x) v = std::clamp(v, -bound, bound);
    return x;
  };
  std::vector<std::vector<double>> simplex(dims + 1, std::vector<double>(dims, 0.0));
  for (std::size_t i = 0; i < dims; ++i) simplex[i + 1][i] = step;
  std::vector<double> cost;
  for (const auto& x : simplex) cost.push_back(f(x));
  used = static_cast<int>(simplex.size());
  while (used < max_evaluations) {
    std::vector<std::size_t> order(simplex.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return cost[a] < cost[b]; });
    const std::size_t best = order.front(), worst = order.back(), second = order[order.size() - 2];
    if (cost[worst] - cost[best] < 1e-9) break;
    std::vector<double> centroid(dims, 0.0);
    for (std::size_t i : order) {
      if (i == worst) continue;
      for (std::size_t d = 0; d < dims; ++d) centroid[d] += simplex[i][d] / static_cast<double>(dims);
    }
    auto along = [&](double t) {
      std::vector<double> x(dims);
      for (std::size_t d = 0; d < dims; ++d) x[d] = centroid[d] + t * (simplex[worst][d] - centroid[d]);
      return clamp(std::move(x));
    };
    const std::vector<double> reflected = along(-1.0);
    const double fr = f(reflected);
    ++used;
    if (fr < cost[best]) {
      const std::vector<double> expanded = along(-2.0);
      const double fe = f(expanded);
      ++used;
      if (fe < fr) simplex[worst] = expanded, cost[worst] = fe;
      else simplex[worst] = reflected, cost[worst] = fr;
      continue;
    }
    if (fr < cost[second]) {
      simplex[worst] = reflected;
      cost[worst] = fr;
      continue;
    }
    const std::vector<double> contracted = along(fr < cost[worst] ? -0.5 : 0.5);
    const double fc = f(contracted);
    ++used;
    if (fc < std::min(fr, cost[worst])) {
      simplex[worst] = contracted;
      cost[worst] = fc;
      continue;
    }
    for (std::size_t i : order) {  // shrink towards the best
      if (i == best) continue;
      for (std::size_t d = 0; d < dims; ++d) simplex[i][d] = simplex[best][d] + 0.5 * (simplex[i][d] - simplex[best][d]);
      cost[i] = f(simplex[i]);
      ++used;
    }
  }
  const auto best = static_cast<std::size_t>(std::min_element(cost.begin(), cost.end()) - cost.begin());
  return simplex[best];
}

double rms_log(const std::vector<ValidationRow>& rows) {
  double sum = 0;
  std::size_t n = 0;
  for (const ValidationRow& r : rows) {
    if (r.status != "ok") continue;
    sum += squared_log_error(r);
    ++n;
  }
  return n ? std::sqrt(sum / static_cast<double>(n)) : 0;
}

}  // namespace

std::vector<hw::Override> CalibrationReport::overrides() const {
  std::vector<hw::Override> sets;
  for (const FittedParam& p : params) sets.push_back({p.pointer, p.after});
  return sets;
}

CalibrationReport calibrate(const CalibrateOptions& o) {
  Diagnostics d;
  if (o.params.empty()) d.error("--params", "", "name at least one config field to fit (a JSON pointer)");
  if (o.max_evaluations < 1 || o.max_evaluations > 100000) {
    d.error("--max-evaluations", "", fmt::format("expected 1..100000, got {}", o.max_evaluations));
  }
  std::vector<Quantity> start;
  for (const std::string& pointer : o.params) {
    const std::optional<std::string> text = hw::config_field(o.config, pointer, d);
    if (!text) continue;
    const std::optional<Quantity> q = parse_quantity(*text);
    if (!q) {
      d.error(o.config, pointer, fmt::format("expected a positive number or quantity to scale, got \"{}\"", *text));
      continue;
    }
    start.push_back(*q);
  }
  if (!d.empty()) throw InputError(std::move(d));
  CalibrationReport report;
  report.hw = fs::path(o.config).stem().string();
  Objective objective(o, report.hw, start);
  const std::vector<double> zero(start.size(), 0.0);
  report.before = objective.rows(zero);
  std::vector<std::string> ran;
  for (const ValidationRow& r : report.before) {
    if (r.status == "ok") ran.push_back(r.id);
  }
  if (ran.empty()) {
    d.error(o.measurements, "hw",
            fmt::format("no row runs on {} (rows name it as hw={}; {} row(s) name it, none predicted)", o.config,
                        report.hw, report.before.size()));
    throw InputError(std::move(d));
  }
  int used = 0;
  const std::vector<double> best = nelder_mead(
      start.size(), [&](const std::vector<double>& x) { return objective.cost(x, ran); }, o.max_evaluations, used);
  report.after = objective.rows(best);
  report.evaluations = objective.evaluations();
  for (std::size_t i = 0; i < start.size(); ++i) {
    report.params.push_back({o.params[i], quantity_text(start[i], 1.0), quantity_text(start[i], std::exp(best[i])),
                             std::exp(best[i])});
  }
  report.rms_log_before = rms_log(report.before);
  report.rms_log_after = rms_log(report.after);
  return report;
}

std::string fitted_config_json(const CalibrationReport& r, const std::string& config, const std::string& out_file,
                               const std::string& measurements) {
  Json doc = Json::object();
  const fs::path out_dir = fs::absolute(out_file).parent_path();
  doc["extends"] = fs::absolute(config).lexically_relative(out_dir).generic_string();
  Json notes = Json::array();
  std::vector<std::string> ids;
  for (const ValidationRow& row : r.after) {
    if (row.status == "ok") ids.push_back(row.id);
  }
  notes.push_back(fmt::format("Fitted by syntorch calibrate to {} rows of {} ({}): rms log error {:.3f} before, {:.3f} "
                              "after.",
                              ids.size(), fs::path(measurements).filename().string(), join(ids), r.rms_log_before,
                              r.rms_log_after));
  for (const ValidationRow& row : r.after) {
    if (row.status == "ok") notes.push_back(fmt::format("{}: measured {:.6g} {}, fitted {:.6g} ({:+.1f}%)", row.id,
                                                        row.measured, row.unit, row.predicted, row.error_pct));
  }
  doc["notes"] = notes;
  for (const FittedParam& p : r.params) {
    const std::optional<Quantity> q = parse_quantity(p.after);
    // A number stays a JSON number; a quantity stays a string with its unit.
    if (q && q->unit.empty()) doc[Json::json_pointer(p.pointer)] = q->number;
    else doc[Json::json_pointer(p.pointer)] = p.after;
  }
  return doc.dump(2) + "\n";
}

}  // namespace syntorch::session
