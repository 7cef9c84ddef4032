#include "syntorch/session/calibrate.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <unordered_set>
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

// A field's value: its leading number and the unit text after it ("3.35 TB/s" -> 3.35, " TB/s"),
// and its text as the config has it.
struct Quantity {
  double number = 0;
  std::string unit;
  std::string text;
  bool integer = false;  // a JSON integer (a count): scaling cannot fit it
};

std::optional<Quantity> parse_quantity(const std::string& text) {
  Quantity q;
  q.text = text;
  const char* begin = text.data();
  const char* end = text.data() + text.size();
  const auto [p, ec] = std::from_chars(begin, end, q.number);
  if (ec != std::errc{} || !(q.number > 0) || !std::isfinite(q.number)) return std::nullopt;
  q.unit.assign(p, end);
  if (!q.unit.empty() && q.unit.front() != ' ') return std::nullopt;  // "256x128x32" is no quantity
  q.integer = q.unit.empty() && text.find_first_of(".eE") == std::string::npos;
  return q;
}

std::string quantity_text(const Quantity& q, double scale) {
  return scale == 1.0 ? q.text : fmt::format("{:.10g}{}", q.number * scale, q.unit);
}

// A row's squared log error; a prediction that is no positive finite number counts as failed.
std::optional<double> squared_log_error(const ValidationRow& r) {
  if (r.status != "ok" || !(r.predicted > 0) || !std::isfinite(r.predicted)) return std::nullopt;
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
  double cost(const std::vector<double>& log_scale, const std::unordered_set<std::string>& ran, std::size_t ran_rows) {
    double sum = 0;
    for (const ValidationRow& r : rows(log_scale)) {
      if (!ran.count(r.id)) continue;
      sum += squared_log_error(r).value_or(100.0);
    }
    return sum / static_cast<double>(ran_rows);
  }

  int evaluations() const { return evaluations_; }

 private:
  const CalibrateOptions& o_;
  std::string hw_;
  std::vector<Quantity> start_;
  int evaluations_ = 0;
};

// Nelder-Mead over log scale factors bounded to [-log 16, upper[d]], from 0 with steps of `step`
// (down, for a field already at its upper bound).
std::vector<double> nelder_mead(const std::vector<double>& upper,
                                const std::function<double(const std::vector<double>&)>& f, int max_evaluations,
                                int& used) {
  const std::size_t dims = upper.size();
  const double lower = -std::log(16.0), step = 0.2;
  auto clamp = [&](std::vector<double> x) {
    for (std::size_t d = 0; d < dims; ++d) x[d] = std::clamp(x[d], lower, upper[d]);
    return x;
  };
  std::vector<std::vector<double>> simplex(dims + 1, std::vector<double>(dims, 0.0));
  for (std::size_t i = 0; i < dims; ++i) simplex[i + 1][i] = upper[i] >= step ? step : -step;
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
    const std::optional<double> e = squared_log_error(r);
    if (!e) continue;
    sum += *e;
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
  std::vector<double> upper;  // log scale bounds: 16x, or 1 for an efficiency (a fraction at most 1)
  for (std::size_t i = 0; i < o.params.size(); ++i) {
    const std::string& pointer = o.params[i];
    if (std::find(o.params.begin(), o.params.begin() + static_cast<std::ptrdiff_t>(i), pointer) !=
        o.params.begin() + static_cast<std::ptrdiff_t>(i)) {
      d.error("--params", "", fmt::format("{} is named twice", pointer));
      continue;
    }
    const std::optional<std::string> text = hw::config_field(o.config, pointer, d);
    if (!text) continue;
    const std::optional<Quantity> q = parse_quantity(*text);
    if (!q) {
      d.error(o.config, pointer, fmt::format("expected a positive number or quantity to scale, got \"{}\"", *text));
      continue;
    }
    if (q->integer) {
      d.error(o.config, pointer, fmt::format("{} is a count (an integer): scaling cannot fit it; fit the rates and "
                                             "efficiencies it multiplies instead", *text));
      continue;
    }
    const bool fraction = pointer.size() >= 10 && pointer.compare(pointer.size() - 10, 10, "efficiency") == 0;
    upper.push_back(fraction ? std::min(std::log(16.0), -std::log(q->number)) : std::log(16.0));
    start.push_back(*q);
  }
  if (!d.empty()) throw InputError(std::move(d));
  CalibrationReport report;
  report.hw = fs::path(o.config).stem().string();
  Objective objective(o, report.hw, start);
  const std::vector<double> zero(start.size(), 0.0);
  report.before = objective.rows(zero);
  std::unordered_set<std::string> ran;  // the ids of the rows that ran, looked up once a row an evaluation
  std::size_t ran_rows = 0;              // and how many rows they are (a file may repeat an id)
  for (const ValidationRow& r : report.before) {
    if (r.status == "ok") {
      ran.insert(r.id);
      ++ran_rows;
    }
  }
  if (ran.empty()) {
    d.error(o.measurements, "hw",
            fmt::format("no row runs on {} (rows name it as hw={}; {} row(s) name it, none predicted{})", o.config,
                        report.hw, report.before.size(),
                        report.before.empty() ? ""
                                              : fmt::format("; {}: {}", report.before[0].id, report.before[0].reason)));
    throw InputError(std::move(d));
  }
  int used = 0;
  const std::vector<double> best = nelder_mead(
      upper, [&](const std::vector<double>& x) { return objective.cost(x, ran, ran_rows); }, o.max_evaluations, used);
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
  const fs::path out_dir = fs::weakly_canonical(fs::absolute(out_file)).parent_path();
  doc["extends"] = fs::weakly_canonical(fs::absolute(config)).lexically_relative(out_dir).generic_string();
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
    if (row.status == "ok") notes.push_back(fmt::format("{}: measured {:.6g} {}, fitted {:.6g} {} ({:+.1f}%)", row.id,
                                                        row.measured, row.unit, row.predicted, row.unit,
                                                        row.error_pct));
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
