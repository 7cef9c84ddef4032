#include <algorithm>

#include "syntorch/session/serving/serve.hpp"

namespace syntorch::session::serving {

namespace {
using Json = nlohmann::ordered_json;

Json distribution_json(const Distribution& d) {
  return Json{{"mean", d.mean}, {"median", d.median}, {"p90", d.p90}, {"p99", d.p99}, {"max", d.max}};
}
}  // namespace

std::vector<std::pair<std::int64_t, std::int64_t>> batch_size_histogram(const std::vector<StepSample>& steps) {
  std::vector<std::pair<std::int64_t, std::int64_t>> buckets;
  for (const StepSample& s : steps) {
    std::int64_t low = 1;
    while (low * 2 <= s.sequences) low *= 2;
    auto it = std::lower_bound(buckets.begin(), buckets.end(), std::pair<std::int64_t, std::int64_t>{low, 0});
    if (it == buckets.end() || it->first != low) it = buckets.insert(it, {low, 0});
    ++it->second;
  }
  return buckets;
}

Json serve_header_json(bool oom, const std::string& oom_reason, const ServeSpec& spec, const std::string& hw_file) {
  Json j;
  j["status"] = oom ? "oom" : "ok";
  j["hw"] = hw_file;
  Json params = Json::object();
  for (const Parameter<ServeSpec>& p : serving_parameters()) params[std::string(p.key)] = p.value(spec);
  j["parameters"] = params;
  if (oom) j["oom_reason"] = oom_reason;
  return j;
}

Json serve_report_json(const ServeReport& r, const ServeSpec& spec, const std::string& hw_file,
                       std::size_t series_points) {
  Json j = serve_header_json(r.oom, r.oom_reason, spec, hw_file);
  if (r.oom) return j;
  const ServeMetrics& m = r.metrics;
  j["completed"] = m.completed;
  j["duration_s"] = m.duration_s;
  j["total_input_tokens"] = m.input_tokens;
  j["total_output_tokens"] = m.output_tokens;
  j["request_throughput"] = m.request_throughput;
  j["output_throughput"] = m.output_throughput;
  j["total_token_throughput"] = m.total_token_throughput;
  j["ttft_s"] = distribution_json(m.ttft_s);
  j["tpot_s"] = distribution_json(m.tpot_s);
  j["itl_s"] = distribution_json(m.itl_s);
  j["e2el_s"] = distribution_json(m.e2e_s);
  j["goodput"] = m.goodput;
  j["good_requests"] = m.good;
  j["preemptions"] = m.preemptions;
  j["prefix_cache_hit_tokens"] = m.prefix_hit_tokens;
  if (m.proposed_tokens > 0) {
    j["speculative"] = Json{{"proposed_tokens", m.proposed_tokens},
                            {"accepted_tokens", m.accepted_tokens},
                            {"acceptance", static_cast<double>(m.accepted_tokens) / static_cast<double>(m.proposed_tokens)}};
  }
  j["kv_cache"] = Json{{"blocks", r.kv_blocks},
                       {"tokens", r.kv_tokens},
                       {"pool_bytes_per_device", r.kv_pool_bytes},
                       {"weights_bytes_per_device", r.weights_bytes},
                       {"activation_peak_bytes_per_device", r.activation_peak_bytes}};
  j["steps"] = r.steps.size();
  j["steps_reused"] = std::count_if(r.steps.begin(), r.steps.end(), [](const StepSample& s) { return s.reused; });
  Json histogram = Json::array();
  for (const auto& [low, n] : batch_size_histogram(r.steps)) histogram.push_back(Json{{"sequences_from", low}, {"steps", n}});
  j["batch_sizes"] = histogram;
  if (r.replicas.size() > 1) {
    Json replicas = Json::array();
    for (const ReplicaSummary& x : r.replicas) {
      replicas.push_back(Json{{"role", x.role},
                              {"requests", x.requests},
                              {"output_tokens", x.output_tokens},
                              {"preemptions", x.preemptions},
                              {"steps", x.steps},
                              {"kv_used_peak", x.kv_used_peak}});
    }
    j["replicas"] = replicas;
  }
  Json series = Json::array();
  if (series_points > 0 && !r.steps.empty()) {
    const std::size_t stride = std::max<std::size_t>(1, (r.steps.size() + series_points - 1) / series_points);
    for (std::size_t i = 0; i < r.steps.size(); i += stride) {
      const StepSample& s = r.steps[i];
      series.push_back(Json{{"time_s", s.time_s},
                            {"sequences", s.sequences},
                            {"running", s.running},
                            {"tokens", s.tokens},
                            {"prefill_tokens", s.prefill_tokens},
                            {"waiting", s.waiting},
                            {"preempted", s.preempted},
                            {"kv_used", s.kv_used},
                            {"replica", s.replica}});
    }
  }
  j["series"] = series;
  return j;
}

}  // namespace syntorch::session::serving
