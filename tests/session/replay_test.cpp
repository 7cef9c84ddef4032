// Replaying Chakra execution traces: ASTRA-sim's workload form, syntorch's own traces back to the
// run they came from, dependencies between compute and communication kept, bad traces named.

#include <gtest/gtest.h>
#include <google/protobuf/util/delimited_message_util.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "et_def.pb.h"
#include "run_helpers.hpp"
#include "syntorch/session/replay.hpp"
#include "syntorch/session/simulate.hpp"
#include "syntorch/session/train.hpp"
#include "syntorch/trace/open_trace_writer.hpp"
#include "syntorch/trace/recorder.hpp"

namespace syntorch::session {
namespace {

namespace fs = std::filesystem;
namespace et = ChakraProtoMsg;

std::string config(const std::string& name) { return std::string(SYNTORCH_SOURCE_DIR) + "/hw_configs/" + name; }

fs::path fresh_dir(const std::string& name) {
  const fs::path d = fs::temp_directory_path() / ("syntorch_replay_" + name);
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

// A node as Chakra's converter writes it.
et::Node node(std::uint64_t id, const std::string& name, et::NodeType type, std::vector<std::uint64_t> deps = {},
              std::uint64_t duration_us = 0) {
  et::Node n;
  n.set_id(id);
  n.set_name(name);
  n.set_type(type);
  for (std::uint64_t d : deps) n.add_data_deps(d);
  n.set_duration_micros(duration_us);
  et::AttributeProto* cpu = n.add_attr();
  cpu->set_name("is_cpu_op");
  cpu->set_bool_val(false);
  return n;
}

void attr(et::Node& n, const std::string& name, std::int64_t v) {
  et::AttributeProto* a = n.add_attr();
  a->set_name(name);
  a->set_int64_val(v);
}

void write_rank(const fs::path& file, const std::vector<et::Node>& nodes) {
  std::ofstream out(file, std::ios::binary);
  et::GlobalMetadata meta;
  meta.set_version("0.0.4");
  ASSERT_TRUE(google::protobuf::util::SerializeDelimitedToOstream(meta, &out));
  for (const et::Node& n : nodes) ASSERT_TRUE(google::protobuf::util::SerializeDelimitedToOstream(n, &out));
}

ReplayReport replay(const fs::path& workload, const std::string& hw = config("dgx_h100.json")) {
  ReplayOptions o;
  o.run.hw = hw;
  o.run.framework = "native";
  o.workload = workload.string();
  return simulate_replay(o);
}

// Why a replay of `workload` is refused ("" when it is not).
std::string message(const fs::path& workload) {
  try {
    replay(workload);
  } catch (const InputError& e) {
    return e.diagnostics().to_string();
  }
  return std::string();
}

TEST(Replay, AstraSimsMicrobenchmarkFormRunsOnTheMachinesNetwork) {
  // As ASTRA-sim's examples/workload/microbenchmarks: one collective node per rank, id 0, no group.
  const fs::path d = fresh_dir("micro");
  double times[2] = {};
  int k = 0;
  for (const auto& [name, type] : {std::pair{"all_reduce", 0}, std::pair{"all_gather", 2}}) {
    for (int r = 0; r < 4; ++r) {
      et::Node n = node(0, std::string(name) + "_4npus_1MB", et::COMM_COLL_NODE);
      attr(n, "comm_type", type);
      attr(n, "comm_size", 1 << 20);
      write_rank(d / (std::string(name) + "." + std::to_string(r) + ".et"), {n});
    }
    const ReplayReport rep = replay(d / (std::string(name) + ".et"));
    EXPECT_EQ(rep.ranks, 4);
    EXPECT_EQ(rep.nodes.at("collective"), 4u);
    times[k++] = rep.stats.simulated_time_s;
  }
  // 1 MiB over four H100s: tens of microseconds; an all-reduce moves about twice an all-gather's data.
  EXPECT_GT(times[0], 10e-6);
  EXPECT_LT(times[0], 100e-6);
  EXPECT_GT(times[0], times[1]);
}

TEST(Replay, ComputeNodesTakeTheirRecordedTimeAndDependenciesAreKept) {
  const fs::path d = fresh_dir("deps");
  // Per rank: A (200 us), then an all-reduce after A, then B (200 us) after A only, then C after the
  // all-reduce and B: the all-reduce overlaps B. With B after the all-reduce, they run in turn.
  for (const bool serial : {false, true}) {
    for (int r = 0; r < 2; ++r) {
      et::Node a = node(1, "A", et::COMP_NODE, {}, 200);
      et::Node ar = node(2, "allreduce", et::COMM_COLL_NODE, {1});
      attr(ar, "comm_type", 0);
      attr(ar, "comm_size", 256 << 20);
      et::Node b = node(3, "B", et::COMP_NODE, serial ? std::vector<std::uint64_t>{2} : std::vector<std::uint64_t>{1}, 200);
      et::Node c = node(4, "C", et::COMP_NODE, {2, 3}, 10);
      write_rank(d / (std::string(serial ? "s" : "o") + "." + std::to_string(r) + ".et"), {a, ar, b, c});
    }
  }
  const ReplayReport overlapped = replay(d / "o.et");
  const ReplayReport serial = replay(d / "s.et");
  EXPECT_EQ(overlapped.stats.kernels, 6u);
  EXPECT_NEAR(overlapped.recorded_compute_s, 2 * 410e-6, 1e-9);
  EXPECT_GT(overlapped.stats.simulated_time_s, 410e-6);
  // The all-reduce of 256 MiB takes longer than B: overlapped saves about B's 200 us.
  EXPECT_LT(overlapped.stats.simulated_time_s + 150e-6, serial.stats.simulated_time_s);
}

TEST(Replay, SyntorchsOwnTracesReplayToTheRunTheyCameFrom) {
  const fs::path d = fresh_dir("own");
  const hw::Machine machine = hw::Machine::load(config("dgx_h100.json"));
  RunSpec spec;
  spec.model = session_testing::model("gpt3-1.3b");
  spec.tp = 2;
  spec.pp = 2;
  spec.batch = 2;
  spec.input_tokens = 128;
  spec.output_tokens = 3;
  spec.framework = runtime::Framework::native;
  trace::Recorder recorder;
  recorder.attach(trace::open_trace_writer((d / "run.et").string(), std::nullopt));
  const RunReport run = simulate_generation(machine, runtime::KernelPolicy{}, spec, &recorder);
  recorder.finish();
  const ReplayReport rep = replay(d / "run.et");
  EXPECT_EQ(rep.ranks, 4);
  EXPECT_GT(rep.nodes.at("send"), 0u);
  EXPECT_GT(rep.nodes.at("collective"), 0u);
  EXPECT_NEAR(rep.stats.simulated_time_s, run.e2e_s, 0.01 * run.e2e_s);
  // Byte-identical answers from the same inputs.
  EXPECT_EQ(replay(d / "run.et").stats.simulated_time_s, rep.stats.simulated_time_s);
}

TEST(Replay, BadTracesAreNamed) {
  const fs::path d = fresh_dir("bad");
  // A group the groups file lacks, and a collective the replay cannot run.
  for (int r = 0; r < 2; ++r) {
    et::Node a = node(1, "ar", et::COMM_COLL_NODE);
    attr(a, "comm_type", 0);
    attr(a, "comm_size", 1024);
    et::AttributeProto* pg = a.add_attr();
    pg->set_name("pg_name");
    pg->set_string_val("7");
    et::Node g = node(2, "gather", et::COMM_COLL_NODE, {1});
    attr(g, "comm_type", 3);
    write_rank(d / ("g." + std::to_string(r) + ".et"), {a, g});
  }
  std::string m = message(d / "g.et");
  EXPECT_NE(m.find("node 1 (ar): process group '7' is not in the groups file"), std::string::npos) << m;
  EXPECT_NE(m.find("node 2 (gather): comm_type 3 is not a collective the replay runs"), std::string::npos) << m;
  // A dependency on a node the file does not hold; a cycle; a missing rank; more ranks than devices.
  write_rank(d / "dep.0.et", {node(1, "x", et::COMP_NODE, {9})});
  EXPECT_NE(message(d / "dep.et").find("node 1 (x) depends on node 9, which the file does not hold"),
            std::string::npos);
  write_rank(d / "cyc.0.et", {node(1, "x", et::COMP_NODE, {2}), node(2, "y", et::COMP_NODE, {1})});
  EXPECT_NE(message(d / "cyc.et").find("is in a dependency cycle"), std::string::npos) << message(d / "cyc.et");
  write_rank(d / "gap.0.et", {node(1, "x", et::COMP_NODE)});
  write_rank(d / "gap.2.et", {node(1, "x", et::COMP_NODE)});
  EXPECT_NE(message(d / "gap.et").find("rank 1 is not there"), std::string::npos) << message(d / "gap.et");
  for (int r = 0; r < 9; ++r) write_rank(d / ("big." + std::to_string(r) + ".et"), {node(1, "x", et::COMP_NODE)});
  EXPECT_NE(message(d / "big.et").find("the trace has 9 ranks; the machine"), std::string::npos);
  std::ofstream(d / "junk.0.et") << "not a trace at all";
  EXPECT_NE(message(d / "junk.et").find("is not a Chakra execution trace"), std::string::npos);
  EXPECT_NE(message(d / "none.et").find("no such file"), std::string::npos);
}

}  // namespace
}  // namespace syntorch::session

namespace syntorch::session {
namespace {

TEST(Replay, RanksWhoseCommunicationCannotMeetAreRefusedBeforeRunning) {
  const fs::path d = fresh_dir("mismatch");
  // Rank 0 all-reduces twice, rank 1 once.
  for (int r = 0; r < 2; ++r) {
    std::vector<et::Node> nodes;
    for (int k = 0; k < (r == 0 ? 2 : 1); ++k) {
      et::Node n = node(static_cast<std::uint64_t>(k + 1), "ar", et::COMM_COLL_NODE);
      attr(n, "comm_type", 0);
      attr(n, "comm_size", 1024);
      nodes.push_back(n);
    }
    write_rank(d / ("c." + std::to_string(r) + ".et"), nodes);
  }
  std::string m = message(d / "c.et");
  EXPECT_NE(m.find("all ranks: rank 0 runs 2 collectives and rank 1 runs 1"), std::string::npos) << m;
  // A send whose receive wants another size.
  et::Node send = node(1, "send", et::COMM_SEND_NODE);
  attr(send, "comm_dst", 1);
  attr(send, "comm_size", 4096);
  et::Node recv = node(1, "recv", et::COMM_RECV_NODE);
  attr(recv, "comm_src", 0);
  attr(recv, "comm_size", 1024);
  write_rank(d / "p.0.et", {send});
  write_rank(d / "p.1.et", {recv});
  m = message(d / "p.et");
  EXPECT_NE(m.find("rank 0 to rank 1: 1 sends (4096 bytes in all) against 1 receives (1024 bytes)"), std::string::npos)
      << m;
  // A groups file naming ranks the trace lacks, or one twice; a duration past a year; a NaN size.
  write_rank(d / "g.0.et", {node(1, "x", et::COMP_NODE)});
  write_rank(d / "g.1.et", {node(1, "x", et::COMP_NODE)});
  std::ofstream(d / "g.comm_groups.json") << R"({"1": [0, 5]})";
  EXPECT_NE(message(d / "g.et").find("names rank 5, past the trace's 2 ranks"), std::string::npos) << message(d / "g.et");
  std::ofstream(d / "g.comm_groups.json") << R"({"1": [0, 0]})";
  EXPECT_NE(message(d / "g.et").find("rank 0 is listed twice"), std::string::npos) << message(d / "g.et");
  write_rank(d / "long.0.et", {node(1, "x", et::COMP_NODE, {}, std::uint64_t{1} << 62)});
  EXPECT_NE(message(d / "long.et").find("expected at most a year"), std::string::npos) << message(d / "long.et");
  et::Node nan = node(1, "ar", et::COMM_COLL_NODE);
  et::AttributeProto* size = nan.add_attr();
  size->set_name("comm_size");
  size->set_double_val(std::nan(""));
  write_rank(d / "nan.0.et", {nan});
  EXPECT_NE(message(d / "nan.et").find("attribute comm_size is nan"), std::string::npos) << message(d / "nan.et");
}

}  // namespace
}  // namespace syntorch::session
