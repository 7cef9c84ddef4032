#include "syntorch/session/serving/capacity.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace syntorch::session::serving {

bool meets_slo(const ServeMetrics& m, const Slo& slo) {
  return m.completed > 0 && (slo.ttft_s <= 0 || m.ttft_s.p99 <= slo.ttft_s) &&
         (slo.tpot_s <= 0 || m.tpot_s.p99 <= slo.tpot_s) && (slo.e2e_s <= 0 || m.e2e_s.p99 <= slo.e2e_s);
}

bool validate_capacity(const ServeSpec& s, const hw::Machine& machine, Diagnostics& d, const std::string& where) {
  const std::size_t before = d.size();
  if (s.slo.ttft_s <= 0 && s.slo.tpot_s <= 0 && s.slo.e2e_s <= 0) {
    d.error(where, "slo", "a capacity search needs an objective to meet (e.g. ttft=2s,tpot=100ms)");
  }
  if (s.traffic.arrival == Arrival::offline) {
    d.error(where, "arrival", "a capacity search varies the arrival rate: offline arrivals have none (use poisson, "
                              "gamma or fixed)");
  }
  if (!s.traffic.requests_file.empty()) {
    Diagnostics file;
    bool timed = false;
    load_requests_file(s.traffic.requests_file, timed, file);
    if (timed) {
      d.error(where, "requests_file", "its arrival times fix the rate a capacity search would vary (give a file "
                                      "without times, or use time_scale instead)");
    }
  }
  if (d.size() != before) return false;
  return validate_serve(s, machine, d, where);
}

CapacityReport capacity_search(const hw::Machine& machine, const runtime::KernelPolicy& policy, const ServeSpec& spec,
                               int probes) {
  Diagnostics d;
  if (probes < 1 || probes > kMostProbes) {
    d.error("capacity", "probes", fmt::format("expected 1 to {} probes, got {}", kMostProbes, probes));
  }
  if (!validate_capacity(spec, machine, d, "capacity") || !d.empty()) throw InputError(std::move(d));
  CapacityReport report;
  ServeSpec offline = spec;
  offline.traffic.arrival = Arrival::offline;
  const ServeReport saturated = serve(machine, policy, offline);
  if (saturated.oom) {
    report.oom = true;
    report.oom_reason = saturated.oom_reason;
    return report;
  }
  report.saturation_rate_per_s = saturated.metrics.request_throughput;
  const auto probe = [&](double rate) {
    ServeSpec at = spec;
    at.traffic.rate_per_s = rate;
    CapacityPoint p;
    p.rate_per_s = rate;
    p.metrics = serve(machine, policy, at).metrics;
    p.meets = meets_slo(p.metrics, spec.slo);
    report.points.push_back(p);
    return p.meets;
  };
  // The saturated rate itself, then bisection below it.
  double lo = 0, hi = report.saturation_rate_per_s;
  if (probe(hi)) {
    lo = hi;
  } else {
    for (int i = 1; i < probes; ++i) {
      const double mid = (lo + hi) / 2;
      (probe(mid) ? lo : hi) = mid;
    }
  }
  report.capacity_rate_per_s = lo;
  std::sort(report.points.begin(), report.points.end(),
            [](const CapacityPoint& a, const CapacityPoint& b) { return a.rate_per_s < b.rate_per_s; });
  return report;
}

nlohmann::ordered_json capacity_report_json(const CapacityReport& r, const ServeSpec& spec, const std::string& hw_file) {
  using Json = nlohmann::ordered_json;
  Json j = serve_header_json(r.oom, r.oom_reason, spec, hw_file);
  if (r.oom) return j;
  j["saturation_rate"] = r.saturation_rate_per_s;
  j["capacity_rate"] = r.capacity_rate_per_s;
  Json points = Json::array();
  for (const CapacityPoint& p : r.points) {
    points.push_back(Json{{"rate", p.rate_per_s},
                          {"request_throughput", p.metrics.request_throughput},
                          {"output_throughput", p.metrics.output_throughput},
                          {"ttft_p99_s", p.metrics.ttft_s.p99},
                          {"tpot_p99_s", p.metrics.tpot_s.p99},
                          {"e2el_p99_s", p.metrics.e2e_s.p99},
                          {"goodput", p.metrics.goodput},
                          {"meets_slo", p.meets}});
  }
  j["points"] = points;
  return j;
}

}  // namespace syntorch::session::serving
