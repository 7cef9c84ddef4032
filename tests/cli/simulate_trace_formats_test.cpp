// Traces of a simulated run in every format, decoded by real readers (protoc against the repo's
// .proto files, nlohmann-json, zlib) and checked against the run itself.

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "run_cli.hpp"

namespace {

using namespace syntorch::cli;
using namespace syntorch::cli::testing;
namespace fs = std::filesystem;

std::string read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Runs protoc --decode on `input`, returning its text output.
std::string protoc_decode(const std::string& message, const fs::path& input) {
  const fs::path out = input.string() + ".txt";
  const std::string cmd = "protoc --decode=" + message + " -I " + std::string(SYNTORCH_SOURCE_DIR) + "/src/trace/proto " +
                          (message.rfind("perfetto", 0) == 0 ? "perfetto_trace.proto" : "et_def.proto") + " < " +
                          input.string() + " > " + out.string() + " 2>&1";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << read(out);
  return read(out);
}

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
  return n;
}

const std::vector<std::string> kRun{"simulate",       "--model", "gpt3-125m", "--hw",          "hw_configs/dgx_a100.json",
                                    "--tp",           "2",       "--batch",   "2",             "--input-tokens",
                                    "8",              "--output-tokens",      "2"};

TEST(SimulateTraces, PerfettoFileDecodesWithTheRunsTracksSlicesAndCounters) {
  const fs::path path = fs::path(::testing::TempDir()) / "run.pftrace";
  auto args = kRun;
  args.insert(args.end(), {"--trace", path.string()});
  ASSERT_EQ(run_cli(args).code, kExitOk);
  const std::string text = protoc_decode("perfetto.protos.Trace", path);
  EXPECT_NE(text.find("process_name: \"rank 0 (gpu[0])\""), std::string::npos);
  EXPECT_NE(text.find("process_name: \"rank 1 (gpu[1])\""), std::string::npos);
  EXPECT_NE(text.find("thread_name: \"stream 0\""), std::string::npos);
  EXPECT_NE(text.find("thread_name: \"host: torch ops\""), std::string::npos);
  EXPECT_NE(text.find("name: \"HBM allocated\""), std::string::npos);
  EXPECT_GT(count(text, "type: TYPE_SLICE_BEGIN"), 500u);
  EXPECT_EQ(count(text, "type: TYPE_SLICE_BEGIN"), count(text, "type: TYPE_SLICE_END"));
  EXPECT_GT(count(text, "type: TYPE_COUNTER"), 100u);
  EXPECT_GT(count(text, "flow_ids:"), 100u);
  EXPECT_NE(text.find("name: \"allreduce\""), std::string::npos);  // an interned event name
}

TEST(SimulateTraces, ChakraRankFilesCarryTheRunsCollectiveSizes) {
  const fs::path prefix = fs::path(::testing::TempDir()) / "run.et";
  auto args = kRun;
  args.insert(args.end(), {"--trace", prefix.string()});
  ASSERT_EQ(run_cli(args).code, kExitOk);
  for (int rank : {0, 1}) {
    const fs::path file = fs::path(::testing::TempDir()) / ("run." + std::to_string(rank) + ".et");
    ASSERT_TRUE(fs::exists(file)) << file;
    // Split the length-delimited messages; decode the metadata and every node.
    const std::string data = read(file);
    std::size_t i = 0;
    std::vector<std::string> messages;
    while (i < data.size()) {
      std::uint64_t len = 0;
      int shift = 0;
      while (true) {
        const auto b = static_cast<unsigned char>(data[i++]);
        len |= static_cast<std::uint64_t>(b & 0x7f) << shift;
        shift += 7;
        if (!(b & 0x80)) break;
      }
      messages.push_back(data.substr(i, len));
      i += len;
    }
    ASSERT_GT(messages.size(), 100u);
    int allreduces = 0, comp = 0;
    for (std::size_t m = 1; m < messages.size(); ++m) {
      const fs::path one = fs::path(::testing::TempDir()) / "node.bin";
      std::ofstream(one, std::ios::binary) << messages[m];
      const std::string node = protoc_decode("ChakraProtoMsg.Node", one);
      if (node.find("type: COMM_COLL_NODE") != std::string::npos) {
        ++allreduces;
        // Prefill all-reduces move batch x tokens x d_model in fp16: 2 x 8 x 768 x 2 bytes; decode
        // ones a single token.
        const bool prefill = node.find("int64_val: 24576") != std::string::npos;
        const bool decode = node.find("int64_val: 3072") != std::string::npos;
        EXPECT_TRUE(prefill || decode) << node;
        EXPECT_NE(node.find("name: \"pg_name\""), std::string::npos) << node;
      } else if (node.find("type: COMP_NODE") != std::string::npos) {
        ++comp;
        EXPECT_NE(node.find("name: \"num_ops\""), std::string::npos) << node;
      }
      if (m > 1 && m < 40) {
        EXPECT_NE(node.find("data_deps:"), std::string::npos) << node;  // chained in stream order
      }
      if (m > 60) break;  // the first stretch is enough to check the shapes
    }
    EXPECT_GT(allreduces, 0);
    EXPECT_GT(comp, 10);
  }
  const auto groups = nlohmann::json::parse(read(fs::path(::testing::TempDir()) / "run.comm_groups.json"));
  EXPECT_EQ(groups.begin().value(), nlohmann::json::array({0, 1}));
}

TEST(SimulateTraces, CsvHasARowPerKernelOfTheRun) {
  const fs::path path = fs::path(::testing::TempDir()) / "run.csv";
  auto args = kRun;
  args.insert(args.end(), {"--trace", path.string(), "--json"});
  const Result r = run_cli(args);
  ASSERT_EQ(r.code, kExitOk);
  const auto j = nlohmann::json::parse(r.out);
  const std::string csv = read(path);
  EXPECT_EQ(csv.substr(0, csv.find('\n')), "rank,track,name,op,impl,tile,start_us,duration_us,flops,hbm_bytes,bound");
  EXPECT_EQ(count(csv, "\n") - 1, j["kernels"].get<std::size_t>());
}

TEST(SimulateTraces, ConsoleSummaryListsTopOpsKernelsAndScopes) {
  auto args = kRun;
  args.insert(args.end(), {"--trace-format", "console"});
  const Result r = run_cli(args);
  ASSERT_EQ(r.code, kExitOk) << r.err;
  for (const char* what : {"kernel", "op", "scope", "prefill", "decode", "layer 0"}) {
    EXPECT_NE(r.out.find(what), std::string::npos) << what << "\n" << r.out;
  }
}

TEST(SimulateTraces, UnknownFormatsAndUnwritablePathsExitTwo) {
  auto args = kRun;
  args.insert(args.end(), {"--trace", "/tmp/x.txt"});
  Result r = run_cli(args);
  EXPECT_EQ(r.code, kExitBadInput);
  EXPECT_NE(r.err.find("--trace"), std::string::npos) << r.err;
  args = kRun;
  args.insert(args.end(), {"--trace", "/no/such/dir/x.json"});
  r = run_cli(args);
  EXPECT_EQ(r.code, kExitBadInput);
  EXPECT_NE(r.err.find("--trace"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists("/no/such/dir/x.json"));
}

}  // namespace
