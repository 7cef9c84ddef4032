#include "syntorch/session/sweep.hpp"

#include "syntorch/session/serving/serve.hpp"

#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <ostream>
#include <thread>

#include "syntorch/hw/config_loader.hpp"
#include "syntorch/base/input_file.hpp"
#include "syntorch/hw/machine.hpp"
#include "syntorch/session/graph_run.hpp"
#include "syntorch/session/metrics.hpp"
#include "syntorch/session/simulate.hpp"
#include "syntorch/runtime/op_params.hpp"
#include "syntorch/runtime/predictor.hpp"

namespace syntorch::session {

namespace fs = std::filesystem;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Machines by (file, overrides), shared by every point of one run_points call that uses them (a
// Machine is immutable); the call owns it, so nothing outlives the sweep.
class MachineCache {
 public:
  std::shared_ptr<const hw::Machine> get(const std::string& file, const std::vector<std::string>& sets) {
    std::string key = file;
    for (const auto& s : sets) key += "\n" + s;
    {
      std::lock_guard lock(mutex_);
      if (auto it = machines_.find(key); it != machines_.end()) return it->second;
    }
    Diagnostics d;
    const auto overrides = hw::parse_overrides(sets, d);
    if (!d.empty()) throw InputError(std::move(d));
    auto m = std::make_shared<const hw::Machine>(hw::Machine::load(file, overrides));
    std::lock_guard lock(mutex_);
    return machines_.emplace(std::move(key), std::move(m)).first->second;
  }

 private:
  std::mutex mutex_;
  std::map<std::string, std::shared_ptr<const hw::Machine>> machines_;
};

runtime::KernelPolicy policy_of(const std::map<std::string, std::string>& params, const fs::path& dir) {
  Diagnostics d;
  const auto it = params.find("policy");
  runtime::KernelPolicy p =
      runtime::KernelPolicy::load(it == params.end() ? "" : it->second, d, "policy", dir.string());
  if (!d.empty()) throw InputError(std::move(d));
  return p;
}

void simulate(const Study& study, const Point& point, MachineCache& machines, SweepRow& row) {
  const auto& p = point.params;
  const fs::path dir = fs::path(study.file).parent_path();
  const auto machine = machines.get((dir / p.at("hw")).string(), point.sets);
  session::RunSpec spec;
  Diagnostics d;
  for (const auto& [key, value] : p) session::set_run_parameter(spec, key, value, d, "point");  // hw, policy: not run parameters
  if (!d.empty()) throw InputError(std::move(d));
  row.metrics.assign(simulate_metrics().size(), kNaN);
  const std::size_t devices = machine->devices().size();
  if (static_cast<std::size_t>(spec.tp) * static_cast<std::size_t>(spec.pp) > devices) {
    row.status = "skipped";
    row.reason = fmt::format("tp {} x pp {} needs {} devices; the machine has {}", spec.tp, spec.pp, spec.tp * spec.pp, devices);
    return;
  }
  if (!session::validate_run(spec, *machine, d, "point")) {
    row.status = "error";
    row.reason = d.items()[0].message;
    return;
  }
  const session::RunReport r = session::simulate_generation(*machine, policy_of(p, dir), spec);
  if (r.oom) {
    const auto& oom = *r.engine.oom;
    row.status = "oom";
    row.reason = fmt::format("out of memory on rank {}: {} B requested for {}, {} B already allocated", oom.rank,
                             oom.requested_bytes, oom.requested_for, oom.memory.allocated_bytes);
    for (std::size_t i = 0; i < generation_metrics().size(); ++i) {  // what it held when it ran out
      if (generation_metrics()[i].info.name == "peak_memory_bytes") row.metrics[i] = generation_metrics()[i].value(r, spec);
    }
    return;
  }
  row.status = "ok";
  row.metrics.clear();
  for (const GenerationMetric& m : generation_metrics()) row.metrics.push_back(m.value(r, spec));
}

void kernel(const Study& study, const Point& point, MachineCache& machines, SweepRow& row) {
  const auto& p = point.params;
  const fs::path dir = fs::path(study.file).parent_path();
  const auto machine = machines.get((dir / p.at("hw")).string(), point.sets);
  row.metrics.assign(kernel_metrics().size(), kNaN);
  runtime::OpDesc op;
  Diagnostics d;
  if (!kernel_op_of(p, op, d)) {
    row.status = "error";
    row.reason = d.items()[0].message;
    return;
  }
  runtime::Predictor predictor(*machine, policy_of(p, dir));
  const runtime::Timing timing =
      p.count("timing") ? runtime::parse_timing(p.at("timing")).value_or(runtime::Timing::device) : runtime::Timing::device;
  const runtime::Prediction r = predictor.predict(op, timing);
  row.status = "ok";
  row.bound = r.bound;
  row.metrics.clear();
  for (const KernelMetric& m : kernel_metric_table()) row.metrics.push_back(m.value(r));
}

// A serving run at the point: its parameters through the serving table, its metrics.
void serve_point(const Study& study, const Point& point, MachineCache& machines, SweepRow& row) {
  const auto& p = point.params;
  const fs::path dir = fs::path(study.file).parent_path();
  const auto machine = machines.get((dir / p.at("hw")).string(), point.sets);
  serving::ServeSpec spec;
  Diagnostics d;
  for (const auto& [key, value] : p) {
    if (key != "hw" && key != "policy") set_parameter(serving::serving_parameters(), spec, key, value, d, "point");
  }
  if (d.empty()) serving::validate_serve(spec, *machine, d, "point");
  if (!d.empty()) throw InputError(std::move(d));
  const serving::ServeReport r = serving::serve(*machine, policy_of(p, dir), spec);
  row.metrics.clear();
  if (r.oom) {
    row.status = "oom";
    row.reason = r.oom_reason;
    row.metrics.assign(serve_metrics().size(), kNaN);
    return;
  }
  row.status = "ok";
  for (const ServingMetric& m : serving_metric_table()) row.metrics.push_back(m.value(r.metrics));
}

// A model's graph at the point: the IR run on the point's machine (simulate --graph).
void graph_point(const Study& study, const Point& point, SweepRow& row) {
  const auto& p = point.params;
  const fs::path dir = fs::path(study.file).parent_path();
  RunOptions o;
  o.hw = (dir / p.at("hw")).string();
  o.sets = point.sets;
  if (const auto it = p.find("policy"); it != p.end()) {
    o.policy = exists_no_throw(dir / it->second) ? (dir / it->second).string() : it->second;
  }
  if (const auto it = p.find("framework"); it != p.end()) o.framework = it->second;
  const GraphRunReport r = simulate_graph(o, (dir / p.at("graph")).string());
  row.metrics.clear();
  if (r.stats.oom) {
    row.status = "oom";
    row.reason = fmt::format("{} requested for {}", r.stats.oom->requested_bytes, r.stats.oom->requested_for);
    row.metrics.assign(graph_metrics().size(), kNaN);
    return;
  }
  row.status = "ok";
  for (const GraphMetric& m : graph_metric_table()) row.metrics.push_back(m.value(r));
}

std::string format_duration(double s) {
  if (!std::isfinite(s) || s < 0) return "--";
  const auto total = static_cast<long>(s + 0.5);
  return total >= 3600 ? fmt::format("{}h{:02}m", total / 3600, total / 60 % 60) : fmt::format("{}:{:02}", total / 60, total % 60);
}

// One point (thread-safe).
SweepRow run_point(const Study& study, const Point& point, std::size_t index, MachineCache& machines) {
  SweepRow row;
  row.index = index;
  row.axis_values = point.axis_values;
  try {
    switch (study.kind) {
      case StudyKind::simulate: simulate(study, point, machines, row); break;
      case StudyKind::serve: serve_point(study, point, machines, row); break;
      case StudyKind::kernel: kernel(study, point, machines, row); break;
      case StudyKind::graph: graph_point(study, point, row); break;
    }
  } catch (const InputError& e) {
    row.status = "error";
    row.reason = e.diagnostics().items().empty() ? "invalid input" : e.diagnostics().items()[0].message;
  } catch (const std::exception& e) {
    row.status = "error";
    row.reason = e.what();
  }
  if (row.metrics.empty()) {
    row.metrics.assign(study_metrics(study.kind).size(), kNaN);
  }
  return row;
}

}  // namespace

std::vector<SweepRow> run_points(const Study& study, const std::vector<Point>& points, const std::vector<std::size_t>& which_in,
                            const SweepOptions& o) {
  std::vector<std::size_t> which = which_in;
  if (which.empty()) {
    for (std::size_t i = 0; i < points.size(); ++i) which.push_back(i);
  }
  std::vector<SweepRow> rows(which.size());
  MachineCache machines;  // outlives the workers, which are joined below
  std::atomic<std::size_t> next{0};
  std::atomic<std::size_t> done{0};
  auto worker = [&] {
    while (!(o.stop && o.stop->load())) {
      const std::size_t k = next.fetch_add(1);
      if (k >= which.size()) return;
      rows[k] = run_point(study, points[which[k]], which[k], machines);
      done.fetch_add(1);
    }
  };
  const int jobs = std::max(1, std::min<int>(o.jobs, static_cast<int>(which.size())));
  std::vector<std::thread> threads;
  for (int j = 0; j < jobs; ++j) threads.emplace_back(worker);

  const auto start = std::chrono::steady_clock::now();
  auto report = [&](bool final) {
    if (!o.progress) return;
    const std::size_t n = done.load();
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const double rate = elapsed > 0 ? static_cast<double>(n) / elapsed : 0;
    const double eta = rate > 0 ? static_cast<double>(which.size() - n) / rate : -1;
    if (o.progress_is_terminal) {
      constexpr int kWidth = 30;
      const int filled = which.empty() ? kWidth : static_cast<int>(kWidth * n / which.size());
      *o.progress << fmt::format("\r[{}{}] {}/{} points  {:.1f}/s  ETA {}  ", std::string(filled, '#'),
                                 std::string(kWidth - filled, '.'), n, which.size(), rate, format_duration(eta));
      if (final) *o.progress << "\n";
    } else {
      *o.progress << fmt::format("sweep: {}/{} points done, {:.1f}/s, {} elapsed, ETA {}\n", n, which.size(), rate,
                                 format_duration(elapsed), format_duration(eta));
    }
    o.progress->flush();
  };
  auto last_line = std::chrono::steady_clock::now();
  std::size_t reported = 0;
  while (done.load() < which.size()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    const auto now = std::chrono::steady_clock::now();
    if (o.progress_is_terminal) {
      report(false);
    } else if (done.load() != reported && now - last_line > std::chrono::seconds(5)) {
      report(false);
      reported = done.load();
      last_line = now;
    }
    if (o.stop && o.stop->load()) break;
  }
  for (auto& t : threads) t.join();
  report(true);
  for (std::size_t k = 0; k < rows.size(); ++k) {
    if (rows[k].status.empty()) {
      rows[k].index = which[k];
      rows[k].axis_values = points[which[k]].axis_values;
      rows[k].status = "not run";
      rows[k].reason = "interrupted before this point started";
      rows[k].metrics.assign(study_metrics(study.kind).size(), kNaN);
    }
  }
  return rows;
}

}  // namespace syntorch::session
