#include "outputs.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "svg_chart.hpp"
#include "html_report.hpp"
#include "syntorch/base/units.hpp"
#include "syntorch/session/hardware.hpp"
#include "syntorch/session/metrics.hpp"

namespace syntorch::sweep {

namespace fs = std::filesystem;

namespace {

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string out(1, '"');
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  out += '"';
  return out;
}

// Whole values as integers, others in the shortest form that reads back exactly.
std::string number(double v) {
  if (!std::isfinite(v)) return "";
  if (v == std::floor(v) && std::fabs(v) < 0x1p53) return fmt::format("{}", static_cast<std::int64_t>(v));
  return fmt::format("{}", v);
}

nlohmann::ordered_json json_number(double v) {
  if (!std::isfinite(v)) return nullptr;
  if (v == std::floor(v) && std::fabs(v) < 0x1p53) return static_cast<std::int64_t>(v);
  return v;
}

void write_file(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  out.close();
  if (!out) throw std::runtime_error(fmt::format("{}: cannot write the file", path.string()));
}

const std::vector<std::string>& metric_names(const session::Study& s) {
  return session::study_metrics(s.kind);
}

const session::Metric& metric(const std::string& name) {
  const session::Metric* m = session::find_metric(name);
  if (!m) throw std::logic_error("sweep outputs: metric " + name + " is in no metric table");
  return *m;
}

// A table's cell: 4 significant digits, without an exponent from 0.001 to 10^15 (a whole number
// from 10^4 up), so a column reads at a glance.
std::string shown_number(double v) {
  if (!std::isfinite(v)) return "";
  const double a = std::fabs(v);
  if (a == 0) return "0";
  if (a >= 1e4 && a < 1e15) return fmt::format("{:.0f}", v);
  if (a < 1e-3 || a >= 1e15) return fmt::format("{:.3e}", v);
  const int digits = static_cast<int>(std::floor(std::log10(a))) + 1;  // before the point
  return fmt::format("{:.{}f}", v, std::max(0, 4 - digits));
}

// A value of an axis as a number when it is one (plain, or a quantity with units, then in SI base
// units), with its unit ("" for a plain number).
std::optional<std::pair<double, std::string>> numeric(const std::string& v) {
  char* end = nullptr;
  const double d = std::strtod(v.c_str(), &end);
  if (end != v.c_str() && *end == '\0' && std::isfinite(d)) return std::pair{d, std::string()};
  using Parse = std::optional<double> (*)(std::string_view);
  const std::pair<Parse, const char*> quantities[] = {{units::parse_bandwidth_bytes_per_s, "B/s"},
                                                      {units::parse_size_bytes, "B"},
                                                      {units::parse_frequency_hz, "Hz"},
                                                      {units::parse_time_s, "s"},
                                                      {units::parse_flops_per_s, "FLOP/s"}};
  for (const auto& [parse, unit] : quantities) {
    if (auto q = parse(v)) return std::pair{*q, std::string(unit)};
  }
  return std::nullopt;
}

// How a value shows in plots: hardware configs by their file name without folder or extension.
std::string display(const session::Axis& a, const std::string& v) {
  return !a.hw_field && a.key == "hw" ? fs::path(v).stem().string() : v;
}

}  // namespace

void prepare_output_dir(const std::string& dir_text) {
  const fs::path dir(dir_text);
  std::error_code ec;
  fs::create_directories(dir / "plots", ec);
  if (ec) throw std::runtime_error(fmt::format("{}: cannot create the folder: {}", dir.string(), ec.message()));
  const fs::path probe = dir / ".syntorch-write-test";
  {
    std::ofstream out(probe);
    out << "ok";
    out.close();
    if (!out) throw std::runtime_error(fmt::format("{}: cannot write in the folder", dir.string()));
  }
  fs::remove(probe, ec);
}

OutputFiles write_outputs(const session::Study& s, const std::vector<session::SweepRow>& rows, const std::string& dir_text) {
  const fs::path dir(dir_text);
  prepare_output_dir(dir_text);
  const auto& metrics = metric_names(s);
  OutputFiles files;

  // results.csv
  std::string csv;
  std::vector<std::string> header;
  for (const session::Axis& a : s.axes) header.push_back(a.name);
  header.insert(header.end(), {"status", "reason"});
  header.insert(header.end(), metrics.begin(), metrics.end());
  if (s.kind == session::StudyKind::kernel) header.push_back("bound");
  for (std::size_t i = 0; i < header.size(); ++i) {
    if (i) csv += ',';
    csv += csv_field(header[i]);
  }
  csv += "\n";
  // The page's table: each metric under its label and the unit it is shown in, 4 significant
  // digits (the CSV and JSON keep every digit, in the metric's own unit).
  report::Table table;
  table.header = header;
  for (std::size_t m = 0; m < metrics.size(); ++m) {
    const session::Metric& info = metric(metrics[m]);
    table.header[s.axes.size() + 2 + m] = fmt::format("{} ({})", info.label, info.shown_unit);
  }
  for (const session::SweepRow& r : rows) {
    std::vector<std::string> cells = r.axis_values;
    cells.push_back(r.status);
    cells.push_back(r.reason);
    std::vector<std::string> shown = cells;
    for (std::size_t m = 0; m < r.metrics.size(); ++m) {
      cells.push_back(number(r.metrics[m]));
      shown.push_back(shown_number(r.metrics[m] * metric(metrics[m]).shown_per_unit));
    }
    if (s.kind == session::StudyKind::kernel) {
      cells.push_back(r.bound);
      shown.push_back(r.bound);
    }
    for (std::size_t i = 0; i < cells.size(); ++i) {
      if (i) csv += ',';
      csv += csv_field(cells[i]);
    }
    csv += "\n";
    table.rows.push_back(std::move(shown));
  }
  files.csv = (dir / "results.csv").string();
  write_file(files.csv, csv);

  // results.json
  nlohmann::ordered_json j;
  j["study"] = s.name;
  j["description"] = s.description;
  j["kind"] = session::study_kind_name(s.kind);
  auto& axes = j["axes"] = nlohmann::ordered_json::array();
  for (const session::Axis& a : s.axes) axes.push_back({{"name", a.name}, {a.hw_field ? "hw" : "param", a.key}, {"values", a.values}});
  auto& jrows = j["rows"] = nlohmann::ordered_json::array();
  for (const session::SweepRow& r : rows) {
    nlohmann::ordered_json row;
    for (std::size_t a = 0; a < s.axes.size(); ++a) {
      // A value that is a plain number is written as one (quantities like "3.35 TB/s" stay text).
      const std::string& v = r.axis_values[a];
      char* end = nullptr;
      const double d = std::strtod(v.c_str(), &end);
      if (!v.empty() && end != v.c_str() && *end == '\0' && std::isfinite(d)) row[s.axes[a].name] = json_number(d);
      else row[s.axes[a].name] = v;
    }
    row["status"] = r.status;
    row["reason"] = r.reason;
    for (std::size_t m = 0; m < metrics.size(); ++m) {
      row[metrics[m]] = json_number(r.metrics[m]);
    }
    if (s.kind == session::StudyKind::kernel) row["bound"] = r.bound;
    jrows.push_back(std::move(row));
  }
  files.json = (dir / "results.json").string();
  write_file(files.json, j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");

  // Plots: each chosen metric over the first axis, one series per combination of the others
  // (zipped axes: one series over the zipped points).
  std::vector<std::pair<std::string, std::string>> plots;
  const session::Axis& first = s.axes.front();
  bool numeric_x = !s.zip;
  std::vector<double> xs;
  std::string x_unit;  // the values' common unit; values of different kinds are categories
  for (const std::string& v : first.values) {
    const auto n = numeric(v);
    if (n && xs.empty()) x_unit = n->second;
    numeric_x = numeric_x && n.has_value() && n->second == x_unit;
    xs.push_back(n ? n->first : 0);
  }
  std::vector<std::string> categories;
  for (std::size_t i = 0; i < first.values.size(); ++i) {
    if (!s.zip) {
      categories.push_back(display(first, first.values[i]));
      continue;
    }
    std::string label;
    for (const session::Axis& a : s.axes) label += fmt::format("{}{}={}", label.empty() ? "" : " ", a.name, display(a, a.values[i]));
    categories.push_back(label);
  }
  for (const std::string& m : s.metrics) {
    const auto mi = static_cast<std::size_t>(std::find(metrics.begin(), metrics.end(), m) - metrics.begin());
    report::Chart chart;
    const session::Metric& info = metric(m);
    chart.title = fmt::format("{}: {} by {}", s.name, info.label, s.zip ? "layout" : first.name);
    chart.x_label = s.zip ? "layout" : first.name;
    chart.y_label = std::string(info.label);
    chart.y_unit = std::string(info.si_unit);  // the ticks carry it, SI-prefixed: "2 TB/s", "150 us"
    if (numeric_x) chart.x_unit = x_unit;
    if (!numeric_x) chart.x_categories = categories;
    // Values spread over decades (batch 1..512, m 1..16384) read better on a log axis.
    if (numeric_x) {
      const auto [lo, hi] = std::minmax_element(xs.begin(), xs.end());
      chart.log_x = *lo > 0 && *hi / *lo >= 100;
    }
    std::map<std::string, std::size_t> series_of;
    for (const session::SweepRow& r : rows) {
      if (r.status != "ok" || !std::isfinite(r.metrics[mi])) continue;
      std::string label;
      for (std::size_t a = 1; !s.zip && a < s.axes.size(); ++a) {
        label += fmt::format("{}{}={}", a > 1 ? ", " : "", s.axes[a].name, display(s.axes[a], r.axis_values[a]));
      }
      if (label.empty()) label = std::string(info.label);
      auto [it, fresh] = series_of.try_emplace(label, chart.series.size());
      if (fresh) chart.series.push_back({label, {}, {}});
      const auto xi = static_cast<std::size_t>(std::find(first.values.begin(), first.values.end(), r.axis_values[0]) -
                                               first.values.begin());
      chart.series[it->second].x.push_back(numeric_x ? xs[xi] : static_cast<double>(xi));
      chart.series[it->second].y.push_back(r.metrics[mi] * info.si_per_unit);
    }
    const std::string name = fmt::format("plots/{}.svg", m);
    write_file(dir / name, report::render_chart_svg(chart));
    files.plots.push_back((dir / name).string());
    plots.emplace_back(chart.title, name);
  }
  if (s.kind == session::StudyKind::kernel) {
    // A roofline of the base machine's first device, in the base dtype.
    try {
      std::string hw = s.base.count("hw") ? s.base.at("hw") : "";
      for (const session::Axis& a : s.axes) {
        if (!a.hw_field && a.key == "hw") hw = a.values.front();
      }
      const DType dtype = s.base.count("dtype") ? parse_dtype(s.base.at("dtype")).value_or(DType::fp16) : DType::fp16;
      const session::DevicePeaks peaks =
          session::device_peaks((fs::path(s.file).parent_path() / hw).string(), s.sets, dtype);
      report::Roofline roof;
      roof.title = fmt::format("{}: roofline of {} ({}, {})", s.name, peaks.device, peaks.machine, dtype_name(dtype));
      roof.peak_flops_per_s = peaks.flops_per_s;
      roof.peak_bytes_per_s = peaks.memory_bytes_per_s;
      const auto fi = static_cast<std::size_t>(std::find(metrics.begin(), metrics.end(), "flops_per_byte") - metrics.begin());
      for (const session::SweepRow& r : rows) {
        if (r.status != "ok" || !std::isfinite(r.metrics[fi])) continue;
        std::string label;
        for (std::size_t a = 0; a < s.axes.size(); ++a) {
          label += fmt::format("{}{}={}", a ? " " : "", s.axes[a].name, display(s.axes[a], r.axis_values[a]));
        }
        roof.points.push_back({label, r.metrics[fi], r.metrics[1] * 1e12});
      }
      write_file(dir / "plots/roofline.svg", report::render_roofline_svg(roof));
      files.plots.push_back((dir / "plots/roofline.svg").string());
      plots.emplace_back(roof.title, "plots/roofline.svg");
    } catch (const std::exception&) {
      // The study validated its machines; nothing to add if the roofline cannot be drawn.
    }
  }
  std::size_t ok = 0;
  for (const session::SweepRow& r : rows) ok += r.status == "ok";
  const std::string description =
      fmt::format("{}{}{} points: {} ok, {} not ok (see status and reason in the table).", s.description,
                  s.description.empty() ? "" : " ", rows.size(), ok, rows.size() - ok);
  files.html = (dir / "index.html").string();
  write_file(files.html, report::render_index_html(s.name, description, plots, table));
  return files;
}

}  // namespace syntorch::sweep
