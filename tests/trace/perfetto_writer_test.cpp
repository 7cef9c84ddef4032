#include "syntorch/trace/perfetto_writer.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "perfetto_trace.pb.h"
#include "syntorch/trace/chrome_json_writer.hpp"
#include "syntorch/trace/recorder.hpp"
#include "trace_test_util.hpp"

namespace syntorch::trace {
namespace {

namespace pp = perfetto::protos;
using testing::count_of;
using testing::kNs;
using testing::kUs;
using testing::protoc_decode;
using testing::read_file;
using testing::ScratchDir;
using testing::SimLikeTrace;

// Splits a .pftrace into its packets, checking the framing (field 1, length-delimited).
std::vector<pp::TracePacket> packets_of(const std::string& bytes) {
  std::vector<pp::TracePacket> out;
  std::size_t at = 0;
  while (at < bytes.size()) {
    EXPECT_EQ(static_cast<unsigned char>(bytes[at]), 0x0A) << "at byte " << at;
    ++at;
    std::uint64_t length = 0;
    for (int shift = 0;; shift += 7) {
      const auto c = static_cast<unsigned char>(bytes.at(at++));
      length |= static_cast<std::uint64_t>(c & 0x7F) << shift;
      if ((c & 0x80) == 0) break;
    }
    pp::TracePacket p;
    EXPECT_TRUE(p.ParseFromArray(bytes.data() + at, static_cast<int>(length)));
    out.push_back(std::move(p));
    at += length;
  }
  EXPECT_EQ(at, bytes.size());
  return out;
}

// What trace_processor makes of the packets: interned strings resolved in file order, then
// track events sorted by timestamp (ties kept in file order), slices opened and closed on a
// stack per track.
struct Slice {
  std::string track, name, category;
  std::uint64_t begin_ns = 0, end_ns = 0;
  std::size_t depth = 0;
  std::vector<std::uint64_t> flow_ids, terminating_flow_ids;
  std::map<std::string, std::string> args;  // values as text
};

struct Model {
  std::map<std::uint64_t, std::string> track_names;  // uuid -> thread or counter name
  std::map<std::uint64_t, std::vector<double>> counters;
  std::vector<Slice> slices;  // in order of completion
  std::vector<std::string> problems;

  explicit Model(const std::vector<pp::TracePacket>& packets) {
    std::map<std::uint64_t, std::string> names, categories, annotation_names, string_values;
    struct Pending {
      std::uint64_t ts;
      std::size_t order;
      Slice slice;
      pp::TrackEvent::Type type;
      std::uint64_t track;
    };
    std::vector<Pending> events;
    for (std::size_t i = 0; i < packets.size(); ++i) {
      const pp::TracePacket& p = packets[i];
      for (const auto& e : p.interned_data().event_names()) names[e.iid()] = e.name();
      for (const auto& e : p.interned_data().event_categories()) categories[e.iid()] = e.name();
      for (const auto& e : p.interned_data().debug_annotation_names()) annotation_names[e.iid()] = e.name();
      for (const auto& e : p.interned_data().debug_annotation_string_values()) string_values[e.iid()] = e.str();
      if (p.has_track_descriptor()) {
        const auto& d = p.track_descriptor();
        track_names[d.uuid()] = d.has_thread() ? d.thread().thread_name() : d.name();
      }
      if (!p.has_track_event()) continue;
      const auto& te = p.track_event();
      if (!track_names.count(te.track_uuid())) problems.push_back("event before its track descriptor");
      if (te.type() == pp::TrackEvent::TYPE_COUNTER) {
        counters[te.track_uuid()].push_back(te.has_counter_value() ? static_cast<double>(te.counter_value())
                                                                   : te.double_counter_value());
        continue;
      }
      Pending ev{p.timestamp(), i, {}, te.type(), te.track_uuid()};
      ev.slice.track = track_names[te.track_uuid()];
      if (te.has_name_iid()) {
        if (!names.count(te.name_iid())) problems.push_back("name iid used before it is interned");
        ev.slice.name = names[te.name_iid()];
      }
      for (auto c : te.category_iids()) ev.slice.category += categories[c];
      for (const auto& a : te.debug_annotations()) {
        std::string v;
        if (a.has_string_value()) v = a.string_value();
        if (a.has_string_value_iid()) {
          if (!string_values.count(a.string_value_iid())) problems.push_back("string value iid used before it is interned");
          v = string_values[a.string_value_iid()];
        }
        if (a.has_uint_value()) v = std::to_string(a.uint_value());
        if (a.has_int_value()) v = std::to_string(a.int_value());
        if (a.has_double_value()) v = fmt::format("{}", a.double_value());
        if (a.has_bool_value()) v = a.bool_value() ? "true" : "false";
        ev.slice.args[annotation_names[a.name_iid()]] = v;
      }
      ev.slice.flow_ids.assign(te.flow_ids().begin(), te.flow_ids().end());
      ev.slice.terminating_flow_ids.assign(te.terminating_flow_ids().begin(), te.terminating_flow_ids().end());
      if ((p.sequence_flags() & 2) == 0 && te.type() != pp::TrackEvent::TYPE_SLICE_END) {
        problems.push_back("an event using interned data without SEQ_NEEDS_INCREMENTAL_STATE");
      }
      events.push_back(std::move(ev));
    }
    std::stable_sort(events.begin(), events.end(), [](const Pending& a, const Pending& b) { return a.ts < b.ts; });
    std::map<std::uint64_t, std::vector<Slice>> stacks;
    for (Pending& e : events) {
      auto& stack = stacks[e.track];
      switch (e.type) {
        case pp::TrackEvent::TYPE_SLICE_BEGIN:
          e.slice.begin_ns = e.ts;
          e.slice.depth = stack.size();
          stack.push_back(std::move(e.slice));
          break;
        case pp::TrackEvent::TYPE_SLICE_END:
          if (stack.empty()) {
            problems.push_back("slice end with no open slice");
            break;
          }
          stack.back().end_ns = e.ts;
          slices.push_back(std::move(stack.back()));
          stack.pop_back();
          break;
        case pp::TrackEvent::TYPE_INSTANT:
          e.slice.begin_ns = e.slice.end_ns = e.ts;
          e.slice.depth = stack.size();
          slices.push_back(std::move(e.slice));
          break;
        default: problems.push_back("unexpected event type");
      }
    }
    for (const auto& [track, stack] : stacks) {
      if (!stack.empty()) problems.push_back("a slice never ends on " + track_names[track]);
    }
  }

  const Slice* find(const std::string& track, const std::string& name, std::size_t nth = 0) const {
    for (const Slice& s : slices) {
      if (s.track == track && s.name == name && nth-- == 0) return &s;
    }
    return nullptr;
  }
};

std::string sample_bytes(PerfettoWriter::Options options = {}) {
  std::stringstream out;
  PerfettoWriter writer(out, options);
  Recorder rec;
  rec.attach(writer);
  SimLikeTrace sample;
  sample.write(rec);
  rec.finish();
  return out.str();
}

TEST(PerfettoWriter, EveryPacketIsOnOneSequenceAndTheFirstClearsIncrementalState) {
  const auto packets = packets_of(sample_bytes());
  ASSERT_GT(packets.size(), 10u);
  EXPECT_EQ(packets[0].sequence_flags(), 3u);
  EXPECT_TRUE(packets[0].first_packet_on_sequence());
  for (std::size_t i = 0; i < packets.size(); ++i) {
    EXPECT_EQ(packets[i].trusted_packet_sequence_id(), PerfettoWriter::kSequenceId) << "packet " << i;
    if (i > 0) {
      EXPECT_FALSE(packets[i].has_first_packet_on_sequence()) << "packet " << i;
      EXPECT_EQ(packets[i].sequence_flags() & 1u, 0u) << "packet " << i;
    }
    if (packets[i].has_interned_data() && i > 0) {
      EXPECT_EQ(packets[i].sequence_flags(), 2u) << "packet " << i;
    }
  }
}

TEST(PerfettoWriter, ProtocDecodesTheFileAsATrace) {
  ScratchDir dir;
  const auto path = dir / "run.pftrace";
  {
    Recorder rec;
    rec.attach(std::make_unique<PerfettoWriter>(path));
    SimLikeTrace sample;
    sample.write(rec);
    rec.finish();
  }
  const std::string text = protoc_decode("perfetto.protos.Trace", "perfetto_trace.proto", path);
  // Processes, threads and counters.
  EXPECT_NE(text.find("process_name: \"rank 0 (H100)\""), std::string::npos) << text;
  EXPECT_NE(text.find("process_name: \"rank 1 (H100)\""), std::string::npos);
  EXPECT_NE(text.find("process_name: \"interconnect\""), std::string::npos);
  EXPECT_EQ(count_of(text, "thread_name: \"host: torch ops\""), 2u);
  EXPECT_EQ(count_of(text, "thread_name: \"stream 0\""), 2u);
  EXPECT_NE(text.find("pid: 1048576"), std::string::npos);
  EXPECT_NE(text.find("tid: 1000"), std::string::npos);
  EXPECT_EQ(count_of(text, "unit: UNIT_SIZE_BYTES"), 2u);
  EXPECT_EQ(count_of(text, "unit_name: \"units\""), 2u);
  EXPECT_EQ(count_of(text, "unit_name: \"bytes/s\""), 1u);
  // Sequence.
  EXPECT_EQ(count_of(text, "first_packet_on_sequence: true"), 1u);
  EXPECT_EQ(count_of(text, "sequence_flags: 3"), 1u);
  EXPECT_EQ(count_of(text, "trusted_packet_sequence_id: 7"), count_of(text, "packet {"));
  // Slices: as many begins as ends; 15 spans in all.
  EXPECT_EQ(count_of(text, "type: TYPE_SLICE_BEGIN"), 15u);
  EXPECT_EQ(count_of(text, "type: TYPE_SLICE_END"), 15u);
  EXPECT_EQ(count_of(text, "type: TYPE_INSTANT"), 2u);
  EXPECT_EQ(count_of(text, "type: TYPE_COUNTER"), 9u);
  // Interned names, each once.
  EXPECT_EQ(count_of(text, "name: \"gemm_128x128\""), 1u);
  EXPECT_EQ(count_of(text, "name: \"kernel\""), 1u);
  EXPECT_EQ(count_of(text, "name: \"hbm_bytes\""), 1u);
  EXPECT_NE(text.find("event_names {"), std::string::npos);
  EXPECT_NE(text.find("event_categories {"), std::string::npos);
  EXPECT_NE(text.find("debug_annotation_names {"), std::string::npos);
  // Values.
  EXPECT_NE(text.find("counter_value: 4096"), std::string::npos);  // whole values as varints
  EXPECT_NE(text.find("counter_value: 132"), std::string::npos);
  // String arguments are interned once and referred to by iid.
  EXPECT_EQ(count_of(text, "str: \"[8, 1024] x [1024, 4096]\""), 1u);
  EXPECT_NE(text.find("debug_annotation_string_values {"), std::string::npos);
  EXPECT_NE(text.find("string_value_iid: "), std::string::npos);
  EXPECT_NE(text.find("double_value: 2500000"), std::string::npos);
  // Flows: two per rank, each id on both its slices as a flow id (none terminating: the reader
  // links slices carrying an id in the order it reads them).
  EXPECT_EQ(count_of(text, "flow_ids: "), 8u);
  EXPECT_EQ(count_of(text, "terminating_flow_ids: "), 0u);
}

TEST(PerfettoWriter, SlicesNestAsTheSpansDidEvenWhenParentAndChildBeginInTheSameNanosecond) {
  const Model m(packets_of(sample_bytes()));
  EXPECT_TRUE(m.problems.empty()) << m.problems.front();
  const Slice* scope = m.find("host: torch ops", "layer 0");
  const Slice* linear = m.find("host: torch ops", "aten::linear");
  const Slice* all_reduce = m.find("host: torch ops", "all_reduce");
  ASSERT_TRUE(scope && linear && all_reduce);
  EXPECT_EQ(scope->depth, 0u);
  EXPECT_EQ(scope->begin_ns, 1000u);
  EXPECT_EQ(scope->end_ns, 20000u);
  EXPECT_EQ(scope->category, "scope");
  EXPECT_EQ(linear->depth, 1u);
  EXPECT_EQ(linear->begin_ns, 1000u);
  EXPECT_EQ(linear->end_ns, 5000u);
  EXPECT_EQ(linear->args.at("shape"), "[8, 1024] x [1024, 4096]");
  EXPECT_EQ(all_reduce->depth, 1u);
  const Slice* gemm = m.find("stream 0", "gemm_128x128");
  ASSERT_NE(gemm, nullptr);
  EXPECT_EQ(gemm->depth, 0u);
  EXPECT_EQ(gemm->begin_ns, 2000u);
  EXPECT_EQ(gemm->end_ns, 4500u);
  EXPECT_EQ(gemm->category, "kernel");
  EXPECT_EQ(gemm->args.at("op"), "gemm");
  EXPECT_EQ(gemm->args.at("flops"), "1500000000.4");
  EXPECT_EQ(gemm->args.at("bound"), "compute");
  const Slice* alloc = m.find("memory: alloc/free", "weights");
  ASSERT_NE(alloc, nullptr);
  EXPECT_EQ(alloc->begin_ns, 1000u);
  EXPECT_EQ(alloc->category, "alloc");
  EXPECT_EQ(alloc->args.at("bytes"), "4096");
}

TEST(PerfettoWriter, FlowEndpointsBindToTheSpansThatEncloseThem) {
  const Model m(packets_of(sample_bytes()));
  for (std::size_t rank = 0; rank < 2; ++rank) {
    const Slice* linear = m.find("host: torch ops", "aten::linear", rank);
    const Slice* gemm = m.find("stream 0", "gemm_128x128", rank);
    const Slice* all_reduce = m.find("host: torch ops", "all_reduce", rank);
    const Slice* collective = m.find("stream 0", "allreduce", rank);
    ASSERT_TRUE(linear && gemm && all_reduce && collective);
    ASSERT_EQ(linear->flow_ids.size(), 1u);
    EXPECT_TRUE(linear->terminating_flow_ids.empty());
    EXPECT_EQ(gemm->flow_ids, linear->flow_ids);
    ASSERT_EQ(all_reduce->flow_ids.size(), 1u);
    EXPECT_EQ(collective->flow_ids, all_reduce->flow_ids);
    EXPECT_NE(linear->flow_ids, all_reduce->flow_ids);
  }
}

TEST(PerfettoWriter, AFlowEndpointNoSpanEnclosesBecomesAnInstantCarryingIt) {
  std::stringstream out;
  {
    PerfettoWriter writer(out);
    Recorder rec;
    rec.attach(writer);
    rec.add_process(3, "rank 3");
    const TrackId ops = rec.add_thread_track(3, 0, "ops");
    const TrackId stream = rec.add_thread_track(3, 1, "stream 0");
    rec.flow_begin(41, ops, 50 * kNs);
    rec.span(ops, "late op", "op", 100 * kNs, 200 * kNs);  // does not enclose 50 ns
    rec.flow_step(41, stream, 300 * kNs);                   // no span follows at all
    rec.flow_end(41, ops, 400 * kNs);
    rec.instant(ops, "mark", "note", 450 * kNs);            // an instant does not take the flow
    rec.finish();
  }
  const Model m(packets_of(out.str()));
  EXPECT_TRUE(m.problems.empty());
  const Slice* begin = m.find("ops", "flow");
  const Slice* step = m.find("stream 0", "flow");
  const Slice* end = m.find("ops", "flow", 1);
  ASSERT_TRUE(begin && step && end);
  EXPECT_EQ(begin->begin_ns, 50u);
  EXPECT_EQ(begin->flow_ids, std::vector<std::uint64_t>{41});
  EXPECT_EQ(step->begin_ns, 300u);
  EXPECT_EQ(step->flow_ids, std::vector<std::uint64_t>{41});
  EXPECT_EQ(end->begin_ns, 400u);
  EXPECT_EQ(end->flow_ids, std::vector<std::uint64_t>{41});
  EXPECT_TRUE(m.find("ops", "late op")->flow_ids.empty());
}

TEST(PerfettoWriter, DeepTiesAndZeroLengthSpansStillNest) {
  std::stringstream out;
  {
    PerfettoWriter writer(out);
    Recorder rec;
    rec.attach(writer);
    rec.add_process(0, "p");
    const TrackId t = rec.add_thread_track(0, 1, "t");
    // step [0,10] > layer [0,6] > op [0,3] > zero [0,0]; then op2 [3,6]; then layer2 [6,10] > op3 [6,10].
    // Times are sub-nanosecond apart where noted: 0 ps and 400 ps both fall in ns 0.
    rec.span(t, "zero", "k", 400, 400);
    rec.span(t, "op", "op", 400, 3 * kNs);
    rec.span(t, "op2", "op", 3 * kNs, 6 * kNs);
    rec.span(t, "layer", "scope", 0, 6 * kNs);
    rec.span(t, "op3", "op", 6 * kNs, 10 * kNs);
    rec.span(t, "layer2", "scope", 6 * kNs, 10 * kNs);
    rec.span(t, "step", "scope", 0, 10 * kNs);
    rec.finish();
  }
  const Model m(packets_of(out.str()));
  EXPECT_TRUE(m.problems.empty());
  const std::map<std::string, std::size_t> depth{{"step", 0}, {"layer", 1}, {"op", 2},   {"zero", 3},
                                                 {"op2", 2},  {"layer2", 1}, {"op3", 2}};
  for (const auto& [name, d] : depth) {
    const Slice* s = m.find("t", name);
    ASSERT_NE(s, nullptr) << name;
    EXPECT_EQ(s->depth, d) << name;
  }
  EXPECT_EQ(m.find("t", "op2")->begin_ns, 3u);
  EXPECT_EQ(m.find("t", "zero")->end_ns, 0u);
}

TEST(PerfettoWriter, AStepScopeOverThousandsOfKernelsNestsWithItsFirstLayerAndKernel) {
  // The simulator's device scopes: a step begins with its first layer, which begins with its
  // first kernel (the same picosecond), and each arrives after everything it encloses.
  std::stringstream out;
  constexpr int kLayers = 96, kKernels = 40;
  const std::string why(120, 'w');
  {
    PerfettoWriter writer(out);
    Recorder rec;
    rec.attach(writer);
    rec.add_process(0, "p");
    const TrackId t = rec.add_thread_track(0, 1, "stream 0");
    TimePs now = 5 * kUs;
    for (int l = 0; l < kLayers; ++l) {
      const TimePs layer_begin = now;
      for (int k = 0; k < kKernels; ++k) {
        // Distinct reasons, so interning does not shrink the output below the window.
        const std::string reason = fmt::format("{} {} {}", why, l, k);
        rec.span(t, fmt::format("kernel {}", k), "kernel", now, now + 1500, {{"why", reason}, {"flops", 1e9}});
        now += 1500;
      }
      rec.span(t, fmt::format("layer {}", l), "scope", layer_begin, now);
    }
    rec.span(t, "decode", "scope", 5 * kUs, now);
    rec.finish();
  }
  EXPECT_GT(out.str().size(), 8 * PerfettoWriter::Options{}.reorder_window_bytes);  // far more than the window
  const Model m(packets_of(out.str()));
  EXPECT_TRUE(m.problems.empty());
  EXPECT_EQ(m.find("stream 0", "decode")->depth, 0u);
  EXPECT_EQ(m.find("stream 0", "layer 0")->depth, 1u);
  EXPECT_EQ(m.find("stream 0", "layer 95")->depth, 1u);
  EXPECT_EQ(m.find("stream 0", "kernel 0")->depth, 2u);
  EXPECT_EQ(m.find("stream 0", "kernel 0", 95)->depth, 2u);
  EXPECT_EQ(m.slices.size(), static_cast<std::size_t>(kLayers * kKernels + kLayers + 1));
}

TEST(PerfettoWriter, TopLevelSlicesAreWrittenAsTheyArriveBeyondTheWindow) {
  std::stringstream out;
  PerfettoWriter writer(out);
  Recorder rec;
  rec.attach(writer);
  rec.add_process(0, "p");
  const TrackId t = rec.add_thread_track(0, 1, "stream 0");
  for (int i = 0; i < 50'000; ++i) rec.span(t, "k", "kernel", i * kUs, i * kUs + 10, {{"flops", 1e9}});
  // Ends go out at once, begins once 64 KiB of them are held (about 2,700): nearly all is out.
  EXPECT_GT(writer.packets_written(), 95'000u);
  rec.finish();
  EXPECT_EQ(writer.packets_written(), 100'000u + 3u);  // + descriptors and the interned names
  const Model m(packets_of(out.str()));
  EXPECT_TRUE(m.problems.empty());
  EXPECT_EQ(m.slices.size(), 50'000u);
}

TEST(PerfettoWriter, ASmallReorderWindowStillWritesEveryEventOnce) {
  PerfettoWriter::Options tiny;
  tiny.reorder_window_bytes = 64;
  const std::string bytes = sample_bytes(tiny);
  const Model m(packets_of(bytes));
  EXPECT_TRUE(m.problems.empty());
  EXPECT_EQ(m.slices.size(), 15u + 2u);
  // Same packets, possibly in another order.
  EXPECT_EQ(packets_of(bytes).size(), packets_of(sample_bytes()).size());
}

TEST(PerfettoWriter, CounterTracksCarryTheirUnitAndValues) {
  const auto packets = packets_of(sample_bytes());
  const Model m(packets);
  std::uint64_t allocated = 0, link = 0;
  for (const auto& p : packets) {
    if (!p.has_track_descriptor() || !p.track_descriptor().has_counter()) continue;
    const auto& d = p.track_descriptor();
    EXPECT_TRUE(d.has_parent_uuid());
    if (d.name() == "HBM allocated" && allocated == 0) {
      allocated = d.uuid();
      EXPECT_EQ(d.counter().unit(), pp::CounterDescriptor::UNIT_SIZE_BYTES);
    }
    if (d.name() == "nvlink 0->1") {
      link = d.uuid();
      EXPECT_EQ(d.counter().unit_name(), "bytes/s");
    }
  }
  EXPECT_EQ(m.counters.at(allocated), (std::vector<double>{0, 4096}));
  EXPECT_EQ(m.counters.at(link), (std::vector<double>{4.5e11}));
}

TEST(PerfettoWriter, ThreadTracksHangUnderTheirProcessTrack) {
  const auto packets = packets_of(sample_bytes());
  std::map<std::int32_t, std::uint64_t> process_uuid;
  for (const auto& p : packets) {
    if (p.has_track_descriptor() && p.track_descriptor().has_process()) {
      process_uuid[p.track_descriptor().process().pid()] = p.track_descriptor().uuid();
    }
  }
  ASSERT_EQ(process_uuid.size(), 3u);
  std::set<std::uint64_t> uuids;
  for (const auto& p : packets) {
    if (!p.has_track_descriptor()) continue;
    const auto& d = p.track_descriptor();
    EXPECT_TRUE(uuids.insert(d.uuid()).second) << "uuid " << d.uuid() << " used twice";
    EXPECT_NE(d.uuid(), 0u);
    if (d.has_thread()) {
      EXPECT_EQ(d.parent_uuid(), process_uuid.at(d.thread().pid()));
    }
  }
}

TEST(PerfettoWriter, IsSmallerThanChromeJsonOfTheSameEvents) {
  std::stringstream json;
  {
    ChromeJsonWriter writer(json);
    Recorder rec;
    rec.attach(writer);
    SimLikeTrace sample;
    sample.write(rec);
    rec.finish();
  }
  EXPECT_LT(sample_bytes().size() * 2, json.str().size());
}

class PerfettoFile : public ::testing::Test {
 protected:
  ScratchDir dir_;
};

TEST_F(PerfettoFile, TheFileAppearsOnlyAtFinish) {
  const auto path = dir_ / "t.pftrace";
  Recorder rec;
  auto& writer = rec.attach(std::make_unique<PerfettoWriter>(path));
  SimLikeTrace sample;
  sample.write(rec);
  EXPECT_FALSE(std::filesystem::exists(path));
  EXPECT_EQ(dir_.listing(), "t.pftrace.partial");
  rec.finish();
  EXPECT_EQ(dir_.listing(), "t.pftrace");
  EXPECT_EQ(read_file(path), sample_bytes());
  EXPECT_GT(static_cast<PerfettoWriter&>(writer).bytes_written(), 0u);
}

TEST_F(PerfettoFile, AWriterDestroyedWithoutFinishLeavesNothing) {
  {
    Recorder rec;
    rec.attach(std::make_unique<PerfettoWriter>(dir_ / "t.pftrace"));
    SimLikeTrace sample;
    sample.write(rec);
  }
  EXPECT_EQ(dir_.listing(), "");
}

}  // namespace
}  // namespace syntorch::trace
