// `syntorch simulate --graph FILE`: a model's graph (syntorch IR) as the workload: its report, a
// trace, the same answer twice, OOM as a result, and bad input named.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "run_cli.hpp"

namespace {

using namespace syntorch::cli;
using namespace syntorch::cli::testing;

const char* kGpt = "examples/graphs/gpt2_2layer_ir.json";

TEST(GraphCli, AnIrRunsAndReportsItsTimeKernelsMemoryAndOps) {
  const Result r = run_cli({"simulate", "--graph", kGpt});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  for (const char* what : {"GPT2-2layer", "111 nodes, 29 weights", "simulated time", "kernels", "peak memory",
                           "ATen ops                111 (22 kinds)"}) {
    EXPECT_NE(r.out.find(what), std::string::npos) << what << "\n" << r.out;
  }
  const Result a = run_cli({"simulate", "--graph", kGpt, "--json", "--hw", "hw_configs/dgx_a100.json"});
  const Result b = run_cli({"simulate", "--graph", kGpt, "--json", "--hw", "hw_configs/dgx_a100.json"});
  ASSERT_EQ(a.code, kExitOk) << a.err;
  EXPECT_EQ(a.out, b.out);
  const nlohmann::json j = nlohmann::json::parse(a.out);
  EXPECT_EQ(j["status"], "ok");
  EXPECT_EQ(j["nodes"], 111);
  EXPECT_EQ(j["aten"]["by_op"]["aten::addmm"], 8);  // qkv, proj, fc, out per layer
  EXPECT_GT(j["simulated_time_s"].get<double>(), 0);
  EXPECT_TRUE(j["aten"]["unmodelled"].empty()) << j["aten"].dump();
  // An H100 runs it faster than an A100.
  const Result h = run_cli({"simulate", "--graph", kGpt, "--json"});
  EXPECT_LT(nlohmann::json::parse(h.out)["simulated_time_s"].get<double>(), j["simulated_time_s"].get<double>());
}

TEST(GraphCli, TheNativeFrameworkSkipsPythonDispatchAndATraceIsWritten) {
  const Result eager = run_cli({"simulate", "--graph", kGpt, "--json"});
  const Result native = run_cli({"simulate", "--graph", kGpt, "--json", "--framework", "native"});
  ASSERT_EQ(native.code, kExitOk) << native.err;
  EXPECT_LT(nlohmann::json::parse(native.out)["simulated_time_s"].get<double>(),
            nlohmann::json::parse(eager.out)["simulated_time_s"].get<double>());
  const std::string trace = (std::filesystem::temp_directory_path() / "syntorch_graph_trace.json").string();
  const Result t = run_cli({"simulate", "--graph", kGpt, "--trace", trace});
  ASSERT_EQ(t.code, kExitOk) << t.err;
  std::ifstream in(trace);
  const nlohmann::json events = nlohmann::json::parse(in);
  EXPECT_NE(events.dump().find("aten::addmm"), std::string::npos);
  std::filesystem::remove(trace);
}

TEST(GraphCli, AGraphTooBigForTheDeviceIsAnOutOfMemoryResult) {
  const Result r = run_cli({"simulate", "--graph", kGpt, "--set", "/components/gpu/components/hbm/size=200 MiB"});
  EXPECT_EQ(r.code, kExitOom) << r.err << r.out;
  EXPECT_NE(r.out.find("OUT OF MEMORY"), std::string::npos) << r.out;
}

TEST(GraphCli, BadInputIsNamed) {
  Result r = run_cli({"simulate", "--graph", "no/such/graph.json"});
  EXPECT_EQ(r.code, kExitBadInput);
  EXPECT_NE(r.err.find("no/such/graph.json: no such file (expected a syntorch IR JSON file)"), std::string::npos)
      << r.err;
  r = run_cli({"simulate", "--graph", kGpt, "--model", "gpt3-125m"});
  EXPECT_EQ(r.code, kExitBadInput);
  EXPECT_NE(r.err.find("excludes"), std::string::npos) << r.err;
  r = run_cli({"simulate", "--graph", kGpt, "--batch", "4"});
  EXPECT_EQ(r.code, kExitBadInput) << r.err;
  const std::string bad = (std::filesystem::temp_directory_path() / "syntorch_bad_ir.json").string();
  std::ofstream(bad) << R"({"format": "syntorch-ir", "version": 1, "model": "x", "producer": {}, "inputs": ["a"],
    "outputs": [], "weights": [], "tensors": {"a": {"shape": [2], "dtype": "float128"}}, "nodes": []})";
  r = run_cli({"simulate", "--graph", bad});
  EXPECT_EQ(r.code, kExitBadInput);
  EXPECT_NE(r.err.find("/tensors/a/dtype: expected a PyTorch dtype"), std::string::npos) << r.err;
  std::filesystem::remove(bad);
  r = run_cli({"simulate"});
  EXPECT_EQ(r.code, kExitBadInput);
  EXPECT_NE(r.err.find("--model"), std::string::npos) << r.err;
}

}  // namespace

namespace {

using namespace syntorch::cli;
using namespace syntorch::cli::testing;

// `syntorch replay`: a run's own Chakra trace back through the simulator, also as simulate --graph.
TEST(ReplayCli, ARunsChakraTraceReplaysAndSimulateGraphTakesItToo) {
  const std::string dir = (std::filesystem::temp_directory_path() / "syntorch_replay_cli").string();
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string et = dir + "/run.et";
  // A Chakra trace holds the device's work, not the host's cudaMalloc calls: the run leaves them out.
  const Result sim = run_cli({"simulate", "--model", "gpt3-125m", "--tp", "2", "--output-tokens", "2", "--framework",
                              "native", "--trace", et, "--json", "--set", "/components/host/device_malloc=0 us", "--set",
                              "/components/host/device_free=0 us"});
  ASSERT_EQ(sim.code, kExitOk) << sim.err;
  const double e2e = nlohmann::json::parse(sim.out)["e2e_ms"].get<double>() * 1e-3;
  const Result r = run_cli({"replay", et});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  for (const char* what : {"2 ranks", "collective", "compute", "simulated time", "recorded span"}) {
    EXPECT_NE(r.out.find(what), std::string::npos) << what << "\n" << r.out;
  }
  const Result j = run_cli({"replay", et, "--json"});
  const nlohmann::json rep = nlohmann::json::parse(j.out);
  EXPECT_NEAR(rep["simulated_time_s"].get<double>(), e2e, 0.01 * e2e);
  const Result g = run_cli({"simulate", "--graph", et, "--json"});
  ASSERT_EQ(g.code, kExitOk) << g.err;
  EXPECT_EQ(nlohmann::json::parse(g.out)["simulated_time_s"], rep["simulated_time_s"]);
  const Result bad = run_cli({"replay", dir + "/none.et"});
  EXPECT_EQ(bad.code, kExitBadInput);
  EXPECT_NE(bad.err.find("none.et"), std::string::npos) << bad.err;
  const Result missing = run_cli({"replay"});
  EXPECT_EQ(missing.code, kExitBadInput);
  std::filesystem::remove_all(dir);
}

}  // namespace

namespace {

using namespace syntorch::cli;
using namespace syntorch::cli::testing;

// `syntorch graph export`: a zoo model's forward as an IR that simulate --graph runs back.
TEST(GraphExportCli, AZooModelsForwardIsWrittenAndRunsBack) {
  const std::string out = (std::filesystem::temp_directory_path() / "syntorch_export_cli.json").string();
  const Result r = run_cli({"graph", "export", "--model", "llama3.2-1b", "--batch", "2", "--seq", "64", "-o", out});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_NE(r.out.find("llama3.2-1b forward over 2 x 64 tokens (fp16)"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("constants"), std::string::npos) << r.out;
  const Result g = run_cli({"simulate", "--graph", out, "--json", "--hw", "hw_configs/h100_sxm5_80gb.json"});
  ASSERT_EQ(g.code, kExitOk) << g.err;
  const nlohmann::json j = nlohmann::json::parse(g.out);
  EXPECT_EQ(j["model"], "llama3.2-1b");
  EXPECT_GT(j["aten"]["by_op"]["aten::linear"].get<int>(), 0);
  EXPECT_GT(j["aten"]["by_op"]["syntorch::rotary_embedding_"].get<int>(), 0);
  EXPECT_TRUE(j["aten"]["unmodelled"].empty() && j["aten"]["generic_elementwise"].empty()) << j["aten"].dump();
  std::filesystem::remove(out);
}

TEST(GraphExportCli, BadRequestsExitTwo) {
  const std::string out = (std::filesystem::temp_directory_path() / "syntorch_export_bad.json").string();
  Result r = run_cli({"graph", "export", "--model", "gpt3-125m", "--train", "-o", out});
  EXPECT_EQ(r.code, kExitBadInput);
  EXPECT_NE(r.err.find("--train"), std::string::npos) << r.err;
  r = run_cli({"graph", "export", "--model", "gpt3-126m", "-o", out});
  EXPECT_EQ(r.code, kExitBadInput);
  EXPECT_NE(r.err.find("did you mean"), std::string::npos) << r.err;
  r = run_cli({"graph", "export", "--model", "gpt3-125m", "--dtype", "fp8", "-o", out});
  EXPECT_EQ(r.code, kExitBadInput);
  r = run_cli({"graph", "export", "--model", "gpt3-125m"});
  EXPECT_EQ(r.code, kExitBadInput);
  r = run_cli({"graph", "export", "--model", "gpt3-125m", "-o", "/no/such/dir/x.json"});
  EXPECT_EQ(r.code, kExitBadInput);
  EXPECT_NE(r.err.find("/no/such/dir/x.json"), std::string::npos) << r.err;
  r = run_cli({"graph"});
  EXPECT_EQ(r.code, kExitBadInput);
}

}  // namespace
