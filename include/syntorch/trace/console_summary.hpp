#pragma once
// A Sink that aggregates a trace into a readable table, like the seed's
// trace_manager.dump(format='console'): the trace's time span, event counts per kind, and per
// span category the top N names by total time (count, total, mean, and share of the time the
// category's tracks span together), plus each counter track's sample count, minimum, maximum and
// last value (sizes and bandwidths in their units).
// Memory grows with the number of distinct (category, name) pairs and tracks, not with events.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <ostream>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "syntorch/trace/sink.hpp"

namespace syntorch::trace {

class ConsoleSummary final : public Sink {
 public:
  struct SpanStats {
    std::uint64_t count = 0;
    TimePs total_ps = 0;
    TimePs max_ps = 0;
  };
  struct CounterStats {
    std::uint64_t samples = 0;
    double min = 0;
    double max = 0;
    double last = 0;
  };
  struct EventCounts {
    std::uint64_t processes = 0;
    std::uint64_t tracks = 0;
    std::uint64_t spans = 0;
    std::uint64_t instants = 0;
    std::uint64_t counter_samples = 0;
    std::uint64_t flow_events = 0;
  };

  // finish() prints nothing; call print() when wanted.
  explicit ConsoleSummary(std::size_t top_n = 10);
  // finish() prints the summary to `out`, which must outlive the summary's finish().
  explicit ConsoleSummary(std::ostream& out, std::size_t top_n = 10);

  void on_process(const ProcessInfo& process) override;
  void on_track(const TrackInfo& track) override;
  void on_span(const SpanEvent& span) override;
  void on_instant(const InstantEvent& instant) override;
  void on_counter(const CounterEvent& counter) override;
  void on_flow(const FlowEvent& flow) override;
  void finish() override;

  // Writes the table. Deterministic: categories by total time (descending, then by name), names
  // likewise; counter tracks in declaration order.
  void print(std::ostream& out) const;

  const EventCounts& counts() const noexcept { return counts_; }
  // Earliest and latest time of any event (span ends included); both 0 when there are none.
  TimePs first_ps() const noexcept { return has_time_ ? first_ps_ : 0; }
  TimePs last_ps() const noexcept { return has_time_ ? last_ps_ : 0; }
  std::optional<SpanStats> span_stats(std::string_view category, std::string_view name) const;
  std::optional<SpanStats> category_stats(std::string_view category) const;
  std::optional<CounterStats> counter_stats(TrackId track) const;

 private:
  struct StringHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
  };
  template <typename V>
  using StringMap = std::unordered_map<std::string, V, StringHash, std::equal_to<>>;

  struct Category {
    SpanStats total;
    StringMap<SpanStats> names;
    std::set<std::uint32_t> tracks;  // the tracks its spans are on
  };
  struct Track {
    bool declared = false;
    TrackInfo info;
    CounterStats counter;
  };

  void see_time(TimePs begin_ps, TimePs end_ps) noexcept;

  std::ostream* out_ = nullptr;
  std::size_t top_n_;
  EventCounts counts_;
  bool has_time_ = false;
  TimePs first_ps_ = std::numeric_limits<TimePs>::max();
  TimePs last_ps_ = 0;
  StringMap<Category> categories_;
  std::vector<ProcessInfo> processes_;
  std::vector<Track> tracks_;
};

}  // namespace syntorch::trace
