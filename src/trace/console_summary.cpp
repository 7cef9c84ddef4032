#include "syntorch/trace/console_summary.hpp"

#include <algorithm>
#include <stdexcept>
#include <utility>

#include <fmt/format.h>

#include "syntorch/base/units.hpp"

namespace syntorch::trace {
namespace {

std::string time_text(TimePs ps) { return units::format_time_ps(ps); }

std::string share_text(TimePs part_ps, TimePs whole_ps) {
  if (whole_ps == 0) return "-";
  return fmt::format("{:.1f}%", 100.0 * static_cast<double>(part_ps) / static_cast<double>(whole_ps));
}

std::string number_text(double v) { return fmt::format("{:.6g}", v); }

// Names in natural order: "layer 2" before "layer 10".
bool natural_less(std::string_view a, std::string_view b) {
  std::size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    if (std::isdigit(static_cast<unsigned char>(a[i])) && std::isdigit(static_cast<unsigned char>(b[j]))) {
      std::size_t ie = i, je = j;
      while (ie < a.size() && std::isdigit(static_cast<unsigned char>(a[ie]))) ++ie;
      while (je < b.size() && std::isdigit(static_cast<unsigned char>(b[je]))) ++je;
      const std::string_view na = a.substr(i, ie - i), nb = b.substr(j, je - j);
      if (na.size() != nb.size()) return na.size() < nb.size();
      if (na != nb) return na < nb;
      i = ie;
      j = je;
      continue;
    }
    if (a[i] != b[j]) return a[i] < b[j];
    ++i;
    ++j;
  }
  return a.size() - i < b.size() - j;
}

// Sorts (name, stats) entries by total time, descending, ties in natural order of names.
template <typename Entry>
void sort_by_total(std::vector<Entry>& entries) {
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    if (a.second->total_ps != b.second->total_ps) return a.second->total_ps > b.second->total_ps;
    return natural_less(a.first, b.first);
  });
}

// Counter values in their unit: sizes in binary units, others as numbers.
std::string value_text(double v, const std::string& unit) {
  if (unit == "bytes") return units::format_size(v);
  if (unit == "bytes/s") return units::format_bandwidth(v);
  return number_text(v);
}

}  // namespace

ConsoleSummary::ConsoleSummary(std::size_t top_n) : top_n_(top_n) {}

ConsoleSummary::ConsoleSummary(std::ostream& out, std::size_t top_n) : out_(&out), top_n_(top_n) {}

void ConsoleSummary::see_time(TimePs begin_ps, TimePs end_ps) noexcept {
  has_time_ = true;
  first_ps_ = std::min(first_ps_, begin_ps);
  last_ps_ = std::max(last_ps_, end_ps);
}

void ConsoleSummary::on_process(const ProcessInfo& process) {
  ++counts_.processes;
  processes_.push_back(process);
}

void ConsoleSummary::on_track(const TrackInfo& track) {
  ++counts_.tracks;
  if (!track.id.valid()) throw std::logic_error("trace::ConsoleSummary: track without an id");
  if (track.id.index >= tracks_.size()) tracks_.resize(track.id.index + 1);
  tracks_[track.id.index].declared = true;
  tracks_[track.id.index].info = track;
}

void ConsoleSummary::on_span(const SpanEvent& span) {
  ++counts_.spans;
  const TimePs dur_ps = span.end_ps >= span.begin_ps ? span.end_ps - span.begin_ps : 0;
  see_time(span.begin_ps, span.begin_ps + dur_ps);

  auto cat = categories_.find(span.category);
  if (cat == categories_.end()) cat = categories_.emplace(std::string(span.category), Category{}).first;
  auto name = cat->second.names.find(span.name);
  if (name == cat->second.names.end()) name = cat->second.names.emplace(std::string(span.name), SpanStats{}).first;

  if (span.track.valid()) cat->second.tracks.insert(span.track.index);
  for (SpanStats* s : {&cat->second.total, &name->second}) {
    ++s->count;
    s->total_ps += dur_ps;
    s->max_ps = std::max(s->max_ps, dur_ps);
  }
}

void ConsoleSummary::on_instant(const InstantEvent& instant) {
  ++counts_.instants;
  see_time(instant.ts_ps, instant.ts_ps);
}

void ConsoleSummary::on_counter(const CounterEvent& counter) {
  ++counts_.counter_samples;
  see_time(counter.ts_ps, counter.ts_ps);
  if (counter.track.index >= tracks_.size()) return;
  CounterStats& c = tracks_[counter.track.index].counter;
  if (c.samples == 0) {
    c.min = c.max = counter.value;
  } else {
    c.min = std::min(c.min, counter.value);
    c.max = std::max(c.max, counter.value);
  }
  c.last = counter.value;
  ++c.samples;
}

void ConsoleSummary::on_flow(const FlowEvent& flow) {
  ++counts_.flow_events;
  see_time(flow.ts_ps, flow.ts_ps);
}

void ConsoleSummary::finish() {
  if (out_ != nullptr) {
    print(*out_);
    out_->flush();
  }
}

std::optional<ConsoleSummary::SpanStats> ConsoleSummary::span_stats(std::string_view category,
                                                                    std::string_view name) const {
  auto cat = categories_.find(category);
  if (cat == categories_.end()) return std::nullopt;
  auto it = cat->second.names.find(name);
  if (it == cat->second.names.end()) return std::nullopt;
  return it->second;
}

std::optional<ConsoleSummary::SpanStats> ConsoleSummary::category_stats(std::string_view category) const {
  auto cat = categories_.find(category);
  if (cat == categories_.end()) return std::nullopt;
  return cat->second.total;
}

std::optional<ConsoleSummary::CounterStats> ConsoleSummary::counter_stats(TrackId track) const {
  if (track.index >= tracks_.size() || !tracks_[track.index].declared ||
      tracks_[track.index].info.kind != TrackKind::kCounter) {
    return std::nullopt;
  }
  return tracks_[track.index].counter;
}

void ConsoleSummary::print(std::ostream& out) const {
  fmt::memory_buffer b;
  auto line = [&b]<typename... Args>(fmt::format_string<Args...> format, Args&&... args) {
    fmt::format_to(fmt::appender(b), format, std::forward<Args>(args)...);
    b.push_back('\n');
  };

  const TimePs span_ps = last_ps() - first_ps();
  line("Trace summary");
  if (has_time_) {
    line("  time span  {} .. {} ({})", time_text(first_ps()), time_text(last_ps()), time_text(span_ps));
  } else {
    line("  time span  (no events)");
  }
  line("  declared   {} processes, {} tracks", counts_.processes, counts_.tracks);
  line("  events     {} spans, {} instants, {} counter samples, {} flow events", counts_.spans, counts_.instants,
       counts_.counter_samples, counts_.flow_events);

  // Categories by total time.
  using CatEntry = std::pair<std::string_view, const SpanStats*>;
  std::vector<CatEntry> cats;
  cats.reserve(categories_.size());
  for (const auto& [name, cat] : categories_) cats.emplace_back(name, &cat.total);
  sort_by_total(cats);

  for (const CatEntry& ce : cats) {
    const Category& cat = categories_.find(ce.first)->second;
    // Shares are of the time the category's tracks span together (a span's share of its tracks'
    // time), so that spans on many tracks (ranks, streams) do not add up past 100%.
    const std::size_t track_count = std::max<std::size_t>(1, cat.tracks.size());
    const TimePs whole_ps = span_ps * static_cast<TimePs>(track_count);
    line("");
    line("  category \"{}\": {} spans on {} track(s), {} total, {} of their time", ce.first, cat.total.count,
         track_count, time_text(cat.total.total_ps), share_text(cat.total.total_ps, whole_ps));

    std::vector<CatEntry> names;
    names.reserve(cat.names.size());
    for (const auto& [name, stats] : cat.names) names.emplace_back(name, &stats);
    sort_by_total(names);
    const std::size_t shown = std::min(top_n_, names.size());

    std::size_t name_width = 4;
    for (std::size_t i = 0; i < shown; ++i) name_width = std::max(name_width, names[i].first.size());
    line("    {:<{}}  {:>10}  {:>10}  {:>10}  {:>7}", "name", name_width, "count", "total", "mean", "share");
    for (std::size_t i = 0; i < shown; ++i) {
      const SpanStats& s = *names[i].second;
      line("    {:<{}}  {:>10}  {:>10}  {:>10}  {:>7}", names[i].first, name_width, s.count,
           time_text(s.total_ps), time_text(s.total_ps / s.count), share_text(s.total_ps, whole_ps));
    }
    if (shown < names.size()) {
      SpanStats rest;
      for (std::size_t i = shown; i < names.size(); ++i) {
        rest.count += names[i].second->count;
        rest.total_ps += names[i].second->total_ps;
      }
      line("    ... {} more names: {} spans, {} total", names.size() - shown, rest.count,
           time_text(rest.total_ps));
    }
  }

  // Counter tracks, in declaration order.
  std::vector<const Track*> counters;
  for (const Track& t : tracks_) {
    if (t.declared && t.info.kind == TrackKind::kCounter) counters.push_back(&t);
  }
  if (!counters.empty()) {
    std::vector<std::string> labels;
    std::size_t label_width = 5;
    for (const Track* t : counters) {
      std::string process = fmt::format("pid {}", t->info.pid);
      for (const ProcessInfo& p : processes_) {
        if (p.pid == t->info.pid) process = p.name;
      }
      labels.push_back(fmt::format("{} / {}", process, t->info.name));
      label_width = std::max(label_width, labels.back().size());
    }
    line("");
    line("  counters");
    line("    {:<{}}  {:>10}  {:>12}  {:>12}  {:>12}  {}", "track", label_width, "samples", "min", "max", "last",
         "unit");
    for (std::size_t i = 0; i < counters.size(); ++i) {
      const CounterStats& c = counters[i]->counter;
      if (c.samples == 0) {
        line("    {:<{}}  {:>10}  {:>12}  {:>12}  {:>12}  {}", labels[i], label_width, 0, "-", "-", "-",
             counters[i]->info.unit);
      } else {
        const std::string& unit = counters[i]->info.unit;
        line("    {:<{}}  {:>10}  {:>12}  {:>12}  {:>12}  {}", labels[i], label_width, c.samples, value_text(c.min, unit),
             value_text(c.max, unit), value_text(c.last, unit), unit);
      }
    }
  }
  out.write(b.data(), static_cast<std::streamsize>(b.size()));
}

}  // namespace syntorch::trace
