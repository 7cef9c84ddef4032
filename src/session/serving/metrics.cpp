#include "syntorch/session/serving/metrics.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace syntorch::session::serving {

namespace {
double percentile(const std::vector<double>& sorted, double p) {
  const double rank = p / 100.0 * static_cast<double>(sorted.size() - 1);
  const std::size_t lo = static_cast<std::size_t>(std::floor(rank));
  const std::size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (rank - static_cast<double>(lo)) * (sorted[hi] - sorted[lo]);
}
}  // namespace

Distribution distribution_of(std::vector<double>& values) {
  Distribution d;
  if (values.empty()) return d;
  std::sort(values.begin(), values.end());
  d.mean = std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(values.size());
  d.median = percentile(values, 50);
  d.p90 = percentile(values, 90);
  d.p99 = percentile(values, 99);
  d.max = values.back();
  return d;
}

ServeMetrics compute_metrics(const std::vector<Sequence>& sequences, const Slo& slo) {
  ServeMetrics m;
  std::vector<double> ttft, tpot, itl, e2e;
  double first_arrival = std::numeric_limits<double>::infinity(), last_finish = 0;
  for (const Sequence& s : sequences) {
    m.preemptions += s.preemptions;
    m.prefix_hit_tokens += s.prefix_hit_tokens;
    m.proposed_tokens += s.proposed_tokens;
    m.accepted_tokens += s.accepted_tokens;
    first_arrival = std::min(first_arrival, s.request.arrival_s);
    if (!s.finished) continue;
    ++m.completed;
    m.input_tokens += s.request.input_tokens;
    m.output_tokens += s.generated;
    last_finish = std::max(last_finish, s.finish_s);
    const double t = s.first_token_s - s.request.arrival_s;
    const double latency = s.finish_s - s.request.arrival_s;
    ttft.push_back(t);
    e2e.push_back(latency);
    double per_token = 0;
    if (s.generated > 1) {
      per_token = (latency - t) / static_cast<double>(s.generated - 1);
      tpot.push_back(per_token);
    }
    for (float g : s.token_gaps_s) itl.push_back(g);
    const bool good = (slo.ttft_s <= 0 || t <= slo.ttft_s) && (slo.tpot_s <= 0 || per_token <= slo.tpot_s) &&
                      (slo.e2e_s <= 0 || latency <= slo.e2e_s);
    m.good += good ? 1 : 0;
  }
  m.duration_s = m.completed > 0 ? last_finish - first_arrival : 0;
  if (m.duration_s > 0) {
    m.request_throughput = static_cast<double>(m.completed) / m.duration_s;
    m.output_throughput = static_cast<double>(m.output_tokens) / m.duration_s;
    m.total_token_throughput = static_cast<double>(m.input_tokens + m.output_tokens) / m.duration_s;
    m.goodput = static_cast<double>(m.good) / m.duration_s;
  }
  m.ttft_s = distribution_of(ttft);
  m.tpot_s = distribution_of(tpot);
  m.itl_s = distribution_of(itl);
  m.e2e_s = distribution_of(e2e);
  return m;
}

}  // namespace syntorch::session::serving
