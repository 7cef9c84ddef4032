#include "syntorch/trace/chakra_writer.hpp"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "et_def.pb.h"
#include "syntorch/trace/recorder.hpp"
#include "trace_test_util.hpp"

namespace syntorch::trace {
namespace {

namespace et = ChakraProtoMsg;
using testing::protoc_decode;
using testing::read_file;
using testing::ScratchDir;
using testing::SimLikeTrace;
using testing::kUs;

// The varint32-length-delimited messages of a .et file, as raw bytes.
std::vector<std::string> messages_of(const std::string& bytes) {
  std::vector<std::string> out;
  std::size_t at = 0;
  while (at < bytes.size()) {
    std::uint64_t length = 0;
    for (int shift = 0;; shift += 7) {
      const auto c = static_cast<unsigned char>(bytes.at(at++));
      length |= static_cast<std::uint64_t>(c & 0x7F) << shift;
      if ((c & 0x80) == 0) break;
    }
    out.push_back(bytes.substr(at, length));
    at += length;
  }
  EXPECT_EQ(at, bytes.size());
  return out;
}

struct RankFile {
  et::GlobalMetadata meta;
  std::vector<et::Node> nodes;
};

RankFile read_rank(const std::filesystem::path& path) {
  RankFile r;
  const auto messages = messages_of(read_file(path));
  EXPECT_GE(messages.size(), 1u);
  if (messages.empty()) return r;
  EXPECT_TRUE(r.meta.ParseFromString(messages[0]));
  for (std::size_t i = 1; i < messages.size(); ++i) {
    et::Node n;
    EXPECT_TRUE(n.ParseFromString(messages[i]));
    r.nodes.push_back(std::move(n));
  }
  return r;
}

const et::AttributeProto* attr(const et::Node& n, const std::string& name) {
  for (const auto& a : n.attr()) {
    if (a.name() == name) return &a;
  }
  ADD_FAILURE() << "node " << n.name() << " has no attribute " << name;
  return nullptr;
}

class ChakraFiles : public ::testing::Test {
 protected:
  void write_sample() {
    Recorder rec;
    rec.attach(std::make_unique<ChakraWriter>(dir_ / "run.et"));
    SimLikeTrace sample;
    sample.write(rec);
    rec.finish();
  }
  ScratchDir dir_;
};

TEST_F(ChakraFiles, OneFilePerRankWithDeviceStreamsPlusTheCommGroups) {
  write_sample();
  // The interconnect process has no stream, so no file.
  EXPECT_EQ(dir_.listing(), "run.0.et run.1.et run.comm_groups.json");
  EXPECT_EQ(ChakraWriter::rank_path("traces/run.et", 3), "traces/run.3.et");
  EXPECT_EQ(ChakraWriter::rank_path("traces/run", 3), "traces/run.3.et");
  EXPECT_EQ(ChakraWriter::comm_groups_path("traces/run.et"), "traces/run.comm_groups.json");
}

TEST_F(ChakraFiles, EachFileIsMetadataThenOneNodePerDeviceSpanInStreamOrder) {
  write_sample();
  const RankFile r0 = read_rank(dir_ / "run.0.et");
  EXPECT_EQ(r0.meta.version(), "0.0.4");
  ASSERT_EQ(r0.nodes.size(), 5u);  // gemm, allreduce, send, memcpy, allgather; host spans are not nodes
  const std::vector<std::string> names{"gemm_128x128", "allreduce", "send", "memcpy HtoD", "allgather"};
  const std::vector<et::NodeType> types{et::COMP_NODE, et::COMM_COLL_NODE, et::COMM_SEND_NODE, et::COMP_NODE,
                                        et::COMM_COLL_NODE};
  for (std::size_t i = 0; i < r0.nodes.size(); ++i) {
    const et::Node& n = r0.nodes[i];
    EXPECT_EQ(n.id(), i + 1);  // numbered from 1, as the simulator numbers device spans
    EXPECT_EQ(n.name(), names[i]);
    EXPECT_EQ(n.type(), types[i]) << n.name();
    if (i == 0) {
      EXPECT_EQ(n.data_deps_size(), 0);
    } else {
      ASSERT_EQ(n.data_deps_size(), 1) << n.name();
      EXPECT_EQ(n.data_deps(0), i) << n.name();
    }
    EXPECT_EQ(n.ctrl_deps_size(), 0);
  }
  EXPECT_EQ(r0.nodes[0].start_time_micros(), 2u);
  EXPECT_EQ(r0.nodes[0].duration_micros(), 3u);  // 2.5 us rounds to nearest (half up)
  EXPECT_EQ(r0.nodes[1].start_time_micros(), 6u);
  EXPECT_EQ(r0.nodes[1].duration_micros(), 6u);
  const RankFile r1 = read_rank(dir_ / "run.1.et");
  ASSERT_EQ(r1.nodes.size(), 4u);
  EXPECT_EQ(r1.nodes[2].type(), et::COMM_RECV_NODE);
  EXPECT_EQ(r1.nodes[3].data_deps(0), 3u);
}

TEST_F(ChakraFiles, KernelAndCopyNodesCarryOpsBytesAndAreGpuOps) {
  write_sample();
  const RankFile r = read_rank(dir_ / "run.0.et");
  const et::Node& gemm = r.nodes[0];
  EXPECT_EQ(attr(gemm, "num_ops")->value_case(), et::AttributeProto::kInt64Val);
  EXPECT_EQ(attr(gemm, "num_ops")->int64_val(), 1'500'000'000);
  EXPECT_EQ(attr(gemm, "tensor_size")->value_case(), et::AttributeProto::kUint64Val);
  EXPECT_EQ(attr(gemm, "tensor_size")->uint64_val(), 2'500'000u);
  EXPECT_EQ(attr(gemm, "is_cpu_op")->value_case(), et::AttributeProto::kBoolVal);
  EXPECT_FALSE(attr(gemm, "is_cpu_op")->bool_val());
  const et::Node& copy = r.nodes[3];
  EXPECT_EQ(attr(copy, "num_ops")->int64_val(), 0);
  EXPECT_EQ(attr(copy, "tensor_size")->uint64_val(), 65536u);
  EXPECT_FALSE(attr(copy, "is_cpu_op")->bool_val());
}

TEST_F(ChakraFiles, CollectivesCarryTypeSizeAndGroupNamedInOrderOfFirstAppearance) {
  write_sample();
  const RankFile r0 = read_rank(dir_ / "run.0.et");
  const RankFile r1 = read_rank(dir_ / "run.1.et");
  const et::Node& ar = r0.nodes[1];
  EXPECT_EQ(attr(ar, "comm_type")->value_case(), et::AttributeProto::kInt64Val);
  EXPECT_EQ(attr(ar, "comm_type")->int64_val(), et::ALL_REDUCE);
  EXPECT_EQ(attr(ar, "comm_size")->value_case(), et::AttributeProto::kInt64Val);
  EXPECT_EQ(attr(ar, "comm_size")->int64_val(), 1 << 20);
  EXPECT_EQ(attr(ar, "pg_name")->value_case(), et::AttributeProto::kStringVal);
  EXPECT_EQ(attr(ar, "pg_name")->string_val(), "1");  // from 1: ASTRA-sim reserves 0 for all ranks
  const et::Node& ag = r0.nodes[4];
  EXPECT_EQ(attr(ag, "comm_type")->int64_val(), et::ALL_GATHER);
  EXPECT_EQ(attr(ag, "pg_name")->string_val(), "2");
  EXPECT_EQ(attr(r1.nodes[1], "pg_name")->string_val(), "1");  // the same group on every rank

  const nlohmann::json groups = nlohmann::json::parse(read_file(dir_ / "run.comm_groups.json"));
  EXPECT_EQ(groups, nlohmann::json::parse(R"({"1": [0, 1], "2": [0]})"));
}

TEST_F(ChakraFiles, SendAndRecvCarrySourceDestinationTagAndSize) {
  write_sample();
  for (const char* file : {"run.0.et", "run.1.et"}) {
    const RankFile r = read_rank(dir_ / file);
    ASSERT_GE(r.nodes.size(), 3u) << file;
    const et::Node& n = r.nodes[2];
    for (const char* name : {"comm_src", "comm_dst", "comm_tag"}) {
      EXPECT_EQ(attr(n, name)->value_case(), et::AttributeProto::kInt32Val) << name;
    }
    EXPECT_EQ(attr(n, "comm_src")->int32_val(), 0);
    EXPECT_EQ(attr(n, "comm_dst")->int32_val(), 1);
    EXPECT_EQ(attr(n, "comm_tag")->int32_val(), 7);
    EXPECT_EQ(attr(n, "comm_size")->int64_val(), 65536);
  }
}

TEST_F(ChakraFiles, ProtocDecodesTheMetadataAndANode) {
  write_sample();
  const auto messages = messages_of(read_file(dir_ / "run.0.et"));
  ASSERT_EQ(messages.size(), 6u);
  testing::write_file(dir_ / "meta.bin", messages[0]);
  testing::write_file(dir_ / "node.bin", messages[2]);
  const std::string meta = protoc_decode("ChakraProtoMsg.GlobalMetadata", "et_def.proto", dir_ / "meta.bin");
  EXPECT_NE(meta.find("version: \"0.0.4\""), std::string::npos) << meta;
  const std::string node = protoc_decode("ChakraProtoMsg.Node", "et_def.proto", dir_ / "node.bin");
  EXPECT_NE(node.find("id: 2\n"), std::string::npos) << node;
  EXPECT_NE(node.find("name: \"allreduce\""), std::string::npos) << node;
  EXPECT_NE(node.find("type: COMM_COLL_NODE"), std::string::npos) << node;
  EXPECT_NE(node.find("data_deps: 1"), std::string::npos) << node;
  EXPECT_NE(node.find("start_time_micros: 6"), std::string::npos) << node;
  EXPECT_NE(node.find("duration_micros: 6"), std::string::npos) << node;
  EXPECT_NE(node.find("name: \"comm_type\"\n  int64_val: 0"), std::string::npos) << node;
  EXPECT_NE(node.find("name: \"comm_size\"\n  int64_val: 1048576"), std::string::npos) << node;
  EXPECT_NE(node.find("name: \"pg_name\"\n  string_val: \"1\""), std::string::npos) << node;
}

TEST_F(ChakraFiles, FilesAppearOnlyAtFinishAndNotAtAllWithoutIt) {
  {
    Recorder rec;
    rec.attach(std::make_unique<ChakraWriter>(dir_ / "run.et"));
    SimLikeTrace sample;
    sample.write(rec);
    EXPECT_EQ(dir_.listing(), "run.0.et.partial run.1.et.partial run.comm_groups.json.partial");
  }
  EXPECT_EQ(dir_.listing(), "");
}

TEST_F(ChakraFiles, RankFilesAreStreamedAsSpansArrive) {
  Recorder rec;
  rec.attach(std::make_unique<ChakraWriter>(dir_ / "run.et"));
  rec.add_process(trace::pid_of_rank(0), "rank 0");
  const TrackId s = rec.add_thread_track(trace::pid_of_rank(0), 1, "stream 0");
  const std::string long_name(1000, 'k');
  for (int i = 0; i < 2000; ++i) rec.span(s, long_name, "kernel", i * kUs, i * kUs + 1);
  // 2 MB of nodes passed through a 64 KiB buffer: most are on disk already.
  EXPECT_GT(std::filesystem::file_size(dir_ / "run.0.et.partial"), 1'500'000u);
  rec.finish();
  EXPECT_EQ(read_rank(dir_ / "run.0.et").nodes.size(), 2000u);
}

TEST_F(ChakraFiles, ACollectiveWithoutAKnownTypeIsAnError) {
  Recorder rec;
  rec.attach(std::make_unique<ChakraWriter>(dir_ / "run.et"));
  rec.add_process(trace::pid_of_rank(0), "rank 0");
  const TrackId s = rec.add_thread_track(trace::pid_of_rank(0), 1, "stream 0");
  try {
    rec.span(s, "mystery", "collective", 0, 1, {{"comm_type", "allmystery"}});
    FAIL() << "expected an exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("allmystery"), std::string::npos) << e.what();
  }
  EXPECT_THROW(rec.span(s, "bad group", "collective", 0, 1, {{"comm_type", "allreduce"}, {"group", "0,x"}}),
               std::invalid_argument);
}

TEST_F(ChakraFiles, EveryCollectiveNameMapsToChakrasEnum) {
  Recorder rec;
  rec.attach(std::make_unique<ChakraWriter>(dir_ / "run.et"));
  rec.add_process(trace::pid_of_rank(0), "rank 0");
  const TrackId s = rec.add_thread_track(trace::pid_of_rank(0), 1, "stream 0");
  const std::map<std::string, et::CollectiveCommType> expected{
      {"allreduce", et::ALL_REDUCE}, {"allgather", et::ALL_GATHER}, {"reducescatter", et::REDUCE_SCATTER},
      {"broadcast", et::BROADCAST},  {"alltoall", et::ALL_TO_ALL},  {"barrier", et::BARRIER}};
  for (const auto& [name, type] : expected) rec.span(s, name, "collective", 0, 1, {{"comm_type", name}});
  // Unnamed args (no group) mean the whole world: no pg_name.
  rec.finish();
  const RankFile r = read_rank(dir_ / "run.0.et");
  ASSERT_EQ(r.nodes.size(), expected.size());
  for (const et::Node& n : r.nodes) {
    EXPECT_EQ(attr(n, "comm_type")->int64_val(), expected.at(n.name())) << n.name();
    for (const auto& a : n.attr()) EXPECT_NE(a.name(), "pg_name");
  }
  EXPECT_EQ(read_file(dir_ / "run.comm_groups.json"), "{}\n");
}

TEST_F(ChakraFiles, OtherStreamSpansAndHostSpansAreNotNodes) {
  Recorder rec;
  rec.attach(std::make_unique<ChakraWriter>(dir_ / "run.et"));
  rec.add_process(trace::pid_of_rank(0), "rank 0");
  const TrackId host = rec.add_thread_track(trace::pid_of_rank(0), 0, "host: torch ops");
  const TrackId s = rec.add_thread_track(trace::pid_of_rank(0), 1, "stream 0");
  rec.span(host, "gemm on the host track", "kernel", 0, 1);
  rec.span(s, "wait", "sync", 0, 1);
  rec.span(s, "put", "p2p", 0, 1);
  rec.span(s, "k", "kernel", 0, 1);
  rec.finish();
  const RankFile r = read_rank(dir_ / "run.0.et");
  ASSERT_EQ(r.nodes.size(), 1u);
  EXPECT_EQ(r.nodes[0].name(), "k");
  EXPECT_EQ(r.nodes[0].id(), 1u);
}

TEST_F(ChakraFiles, SeqNamesNodesAndAfterAddsTheDependencyAcrossStreams) {
  // As the simulator emits them: every device span numbered ("seq", per rank, from 1); a send
  // after the computation producing its data; the compute stream's wait for a receive.
  Recorder rec;
  rec.attach(std::make_unique<ChakraWriter>(dir_ / "run.et"));
  rec.add_process(trace::pid_of_rank(0), "rank 0");
  const TrackId compute = rec.add_thread_track(trace::pid_of_rank(0), 1, "stream 0");
  const TrackId sends = rec.add_thread_track(trace::pid_of_rank(0), 2, "stream: sends");
  const TrackId receives = rec.add_thread_track(trace::pid_of_rank(0), 3, "stream: receives");
  rec.span(compute, "layer 0", "scope", 0, 3 * kUs);  // not a node, no seq
  rec.span(receives, "recv", "p2p", 0, 2 * kUs, {{"src", 1}, {"dst", 0}, {"seq", std::uint64_t{1}}});
  rec.span(compute, "wait for recv", "wait", 1 * kUs, 2 * kUs, {{"seq", std::uint64_t{2}}, {"after", std::uint64_t{1}}});
  rec.span(compute, "gemm", "kernel", 2 * kUs, 3 * kUs, {{"flops", 1e6}, {"seq", std::uint64_t{3}}});
  rec.span(sends, "send", "p2p", 3 * kUs, 4 * kUs,
           {{"src", 0}, {"dst", 1}, {"seq", std::uint64_t{4}}, {"after", std::uint64_t{3}}});
  rec.span(compute, "gemm", "kernel", 3 * kUs, 5 * kUs, {{"flops", 1e6}, {"seq", std::uint64_t{5}}});
  rec.finish();
  const RankFile r = read_rank(dir_ / "run.0.et");
  ASSERT_EQ(r.nodes.size(), 5u);
  std::vector<std::uint64_t> ids;
  for (const auto& n : r.nodes) ids.push_back(n.id());
  EXPECT_EQ(ids, (std::vector<std::uint64_t>{1, 2, 3, 4, 5}));
  const auto deps = [&](std::size_t i) {
    return std::vector<std::uint64_t>(r.nodes[i].data_deps().begin(), r.nodes[i].data_deps().end());
  };
  EXPECT_EQ(deps(0), std::vector<std::uint64_t>{});      // recv: first on its stream
  EXPECT_EQ(deps(1), std::vector<std::uint64_t>{1});     // the wait: after the recv
  EXPECT_EQ(deps(2), std::vector<std::uint64_t>{2});     // gemm: after the wait (its stream)
  EXPECT_EQ(deps(3), std::vector<std::uint64_t>{3});     // send: after the gemm (across streams)
  EXPECT_EQ(deps(4), std::vector<std::uint64_t>{3});     // gemm: stream order; "after" absent
  const et::Node& wait = r.nodes[1];
  EXPECT_EQ(wait.type(), et::COMP_NODE);
  EXPECT_EQ(wait.duration_micros(), 0u);
  EXPECT_EQ(wait.start_time_micros(), 1u);
  EXPECT_EQ(attr(wait, "num_ops")->int64_val(), 0);
  EXPECT_EQ(attr(wait, "tensor_size")->uint64_val(), 0u);
}

TEST_F(ChakraFiles, ASeqThatDoesNotIncreaseOrAnAfterThatIsNotEarlierIsAnError) {
  Recorder rec;
  rec.attach(std::make_unique<ChakraWriter>(dir_ / "run.et"));
  rec.add_process(trace::pid_of_rank(0), "rank 0");
  const TrackId s = rec.add_thread_track(trace::pid_of_rank(0), 1, "stream 0");
  rec.span(s, "a", "kernel", 0, 1, {{"seq", std::uint64_t{5}}});
  EXPECT_THROW(rec.span(s, "b", "kernel", 1, 2, {{"seq", std::uint64_t{5}}}), std::invalid_argument);
  EXPECT_THROW(rec.span(s, "c", "kernel", 1, 2, {{"seq", std::uint64_t{7}}, {"after", std::uint64_t{9}}}),
               std::invalid_argument);
  rec.span(s, "d", "kernel", 1, 2);  // no seq: the next number
  rec.finish();
  const RankFile r = read_rank(dir_ / "run.0.et");
  ASSERT_EQ(r.nodes.size(), 2u);
  EXPECT_EQ(r.nodes[1].id(), 6u);
}

TEST(ChakraWriter, AnUnwritableDirectoryThrowsAtConstruction) {
  EXPECT_THROW(ChakraWriter("/nonexistent-dir-for-syntorch/run.et"), std::runtime_error);
}

}  // namespace
}  // namespace syntorch::trace
