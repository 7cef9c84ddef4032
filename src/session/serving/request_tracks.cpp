#include "request_tracks.hpp"

#include <fmt/format.h>

#include <functional>
#include <queue>

#include "syntorch/base/units.hpp"

namespace syntorch::session::serving {

namespace {
constexpr std::int32_t kRequestsPid = (1 << 20) + 1;  // after the ranks and the interconnect
}  // namespace

void record_request_tracks(trace::Recorder& recorder, const std::vector<Sequence>& sequences,
                           const std::vector<StepSample>& steps, double start_s,
                           const std::vector<std::string>& engines) {
  if (!recorder.enabled()) return;
  recorder.add_process(kRequestsPid, "requests", -1);  // shown above the ranks
  // The engine's counters, one set per replica.
  struct Counters {
    trace::TrackId running, waiting, kv;
  };
  std::vector<Counters> counters;
  for (std::size_t e = 0; e < std::max<std::size_t>(engines.size(), 1); ++e) {
    const std::string of = engines.empty() ? std::string() : fmt::format(" ({})", engines[e]);
    counters.push_back({recorder.add_counter_track(kRequestsPid, "running" + of, "sequences"),
                        recorder.add_counter_track(kRequestsPid, "waiting" + of, "requests"),
                        recorder.add_counter_track(kRequestsPid, "KV cache used" + of, "%")});
  }
  const auto ps = [start_s](double t) { return units::seconds_to_ps(start_s + t); };
  for (const StepSample& s : steps) {
    const Counters& c = counters[static_cast<std::size_t>(s.replica)];
    recorder.counter(c.running, ps(s.time_s), s.running);
    recorder.counter(c.waiting, ps(s.time_s), s.waiting);
    recorder.counter(c.kv, ps(s.time_s), 100.0 * s.kv_used);
  }
  // Lanes: a request takes the free lane that was freed first (or a new one) at its arrival.
  using Free = std::pair<double, std::int32_t>;  // (free from, lane)
  std::priority_queue<Free, std::vector<Free>, std::greater<>> free;
  std::vector<trace::TrackId> lanes;
  std::string name;
  for (const Sequence& s : sequences) {
    if (!s.finished) continue;
    const double arrival = s.request.arrival_s;
    std::int32_t lane;
    if (!free.empty() && free.top().first <= arrival) {
      lane = free.top().second;
      free.pop();
    } else {
      lane = static_cast<std::int32_t>(lanes.size());
      lanes.push_back(recorder.add_thread_track(kRequestsPid, lane + 1, fmt::format("lane {}", lane)));
    }
    free.push({s.finish_s, lane});
    const trace::TrackId track = lanes[static_cast<std::size_t>(lane)];
    name = fmt::format("request {}", s.request.id);
    recorder.span(track, name, "request", ps(arrival), ps(s.finish_s),
                  {{"input_tokens", s.request.input_tokens},
                   {"output_tokens", s.request.output_tokens},
                   {"ttft_ms", (s.first_token_s - arrival) * 1e3},
                   {"preemptions", s.preemptions},
                   {"prefix_cache_hit_tokens", s.prefix_hit_tokens},
                   {"replica", s.replica}});
    if (s.admitted_s.empty()) continue;
    recorder.span(track, "queued", "request", ps(arrival), ps(s.admitted_s.front()));
    for (std::size_t i = 0; i < s.admitted_s.size(); ++i) {
      const double begin = s.admitted_s[i];
      const double end = i < s.preempted_s.size() ? s.preempted_s[i] : s.finish_s;
      // Before its first token a stay is its prefill; after it, decode (a recomputation after a
      // preemption included).
      const double split = std::clamp(s.first_token_s, begin, end);
      if (split > begin) recorder.span(track, "prefill", "request", ps(begin), ps(split));
      if (end > split) recorder.span(track, "decode", "request", ps(split), ps(end));
      if (i < s.preempted_s.size() && i + 1 < s.admitted_s.size()) {
        // Between a prefill engine and a decode engine: the hand-over (the keys and values pulled,
        // then waiting for admission); else a preemption.
        const bool handover = s.preempted_s[i] == s.handed_over_s;
        recorder.span(track, handover ? "handed over" : "preempted", "request", ps(s.preempted_s[i]),
                      ps(s.admitted_s[i + 1]));
      }
    }
  }
}

}  // namespace syntorch::session::serving
