#pragma once
// A test Sink that logs every call as one line of text, so tests can check what a sink saw and
// in which order.

#include <string>
#include <vector>

#include <fmt/format.h>

#include "syntorch/trace/sink.hpp"

namespace syntorch::trace::testing {

class RecordingSink : public Sink {
 public:
  void begin() override { log.push_back("begin"); }
  void on_process(const ProcessInfo& p) override {
    log.push_back(fmt::format("process {} {} {}", p.pid, p.name, p.sort_index));
  }
  void on_track(const TrackInfo& t) override {
    log.push_back(fmt::format("track {} {} pid={} tid={} {} unit={} sort={}", t.id.index,
                              t.kind == TrackKind::kCounter ? "counter" : "thread", t.pid, t.tid, t.name, t.unit,
                              t.sort_index));
  }
  void on_span(const SpanEvent& e) override {
    std::string args;
    for (const Arg& a : e.args) args += fmt::format(" {}", a.key);
    log.push_back(fmt::format("span {} {} {} {} {}{}", e.track.index, e.name, e.category, e.begin_ps, e.end_ps, args));
  }
  void on_instant(const InstantEvent& e) override {
    log.push_back(fmt::format("instant {} {} {} {}", e.track.index, e.name, e.category, e.ts_ps));
  }
  void on_counter(const CounterEvent& e) override {
    log.push_back(fmt::format("counter {} {} {}", e.track.index, e.ts_ps, e.value));
  }
  void on_flow(const FlowEvent& e) override {
    log.push_back(fmt::format("flow {} {} {} {}", static_cast<int>(e.phase), e.flow_id, e.track.index, e.ts_ps));
  }
  void finish() override { log.push_back("finish"); }

  std::vector<std::string> log;
};

}  // namespace syntorch::trace::testing
