// `syntorch simulate`: the seed's examples, JSON output, OOM exit code and bad input.

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <nlohmann/json.hpp>

#include "run_cli.hpp"

namespace {

using namespace syntorch::cli;
using namespace syntorch::cli::testing;

TEST(SimulateCli, TheSeedExampleOnOneGpuIsAClearOutOfMemory) {
  const Result r = run_cli({"simulate", "--model", "gpt3-175b", "--num_input_tokens", "10", "--num_output_tokens", "20",
                            "--tp", "1"});
  EXPECT_EQ(r.code, 3) << r.err;
  EXPECT_NE(r.out.find("OUT OF MEMORY on rank 0"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("weights"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("largest live allocations"), std::string::npos) << r.out;
}

TEST(SimulateCli, TheSeedExampleOnEightGpusGivesAResult) {
  const Result r = run_cli({"simulate", "--model", "gpt3-175b", "--num_input_tokens", "10", "--num_output_tokens", "20",
                            "--tp", "8", "--hw", "hw_configs/dgx_h100.json"});
  ASSERT_EQ(r.code, kExitOk) << r.err << r.out;
  for (const char* what : {"time to first token", "time per output token", "end-to-end latency", "tokens/s",
                           "model FLOPs utilisation", "peak memory per device", "communication", "launch gaps"}) {
    EXPECT_NE(r.out.find(what), std::string::npos) << what << "\n" << r.out;
  }
}

TEST(SimulateCli, JsonHasTheDocumentedFieldsAndTwoRunsAreIdentical) {
  const std::vector<std::string> args{"simulate", "--model", "gpt3-1.3b", "--hw", "hw_configs/dgx_a100.json", "--tp", "2",
                                      "--pp", "2", "--batch", "4", "--input-tokens", "64", "--output-tokens", "6", "--json"};
  const Result a = run_cli(args);
  const Result b = run_cli(args);
  ASSERT_EQ(a.code, kExitOk) << a.err;
  EXPECT_EQ(a.out, b.out);
  const auto j = nlohmann::json::parse(a.out);
  EXPECT_EQ(j["status"], "ok");
  for (const char* key : {"ttft_ms", "tpot_ms", "e2e_ms", "tokens_per_s", "mfu"}) {
    ASSERT_TRUE(j.contains(key)) << key;
    EXPECT_GT(j[key].get<double>(), 0) << key;
  }
  EXPECT_EQ(j["peak_memory_bytes"].size(), 4u);
  for (const char* key : {"compute_ms", "memory_ms", "communication_ms", "launch_idle_ms"}) {
    EXPECT_TRUE(j["breakdown"].contains(key)) << key;
  }
}

TEST(SimulateCli, OneRanksProgramForIdenticalTensorParallelRanksGivesTheSameRun) {
  // --ranks one: rank 0's program stands for every tensor-parallel rank, which join its
  // collectives: the same times, memory and kernels as every rank running its own.
  std::map<std::string, nlohmann::json> runs;
  for (const char* ranks : {"all", "one"}) {
    const Result r = run_cli({"simulate", "--model", "gpt3-1.3b", "--hw", "hw_configs/dgx_h100.json", "--tp", "8",
                              "--batch", "4", "--input-tokens", "256", "--output-tokens", "4", "--ranks", ranks, "--json"});
    ASSERT_EQ(r.code, kExitOk) << r.err;
    runs[ranks] = nlohmann::json::parse(r.out);
  }
  EXPECT_EQ(runs["one"]["ranks"], "one");
  for (const char* key : {"ttft_ms", "tpot_ms", "e2e_ms", "peak_memory_bytes", "kernels"}) {
    EXPECT_EQ(runs["one"][key], runs["all"][key]) << key;
  }
  // Pipeline stages differ: refused, naming the flag.
  const Result pp = run_cli({"simulate", "--model", "gpt3-1.3b", "--hw", "hw_configs/dgx_h100.json", "--tp", "4",
                             "--pp", "2", "--ranks", "one"});
  EXPECT_EQ(pp.code, 2);
  EXPECT_NE((pp.out + pp.err).find("ranks"), std::string::npos) << pp.out << pp.err;
}

TEST(SimulateCli, OomJsonSaysSoAndExitsThree) {
  const Result r = run_cli({"simulate", "--model", "gpt3-13b", "--hw", "hw_configs/a100_sxm4_80gb.json", "--set",
                            "/components/gpu/components/hbm/size=8 GB", "--json"});
  EXPECT_EQ(r.code, 3) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["status"], "oom");
  EXPECT_GT(j["oom"]["allocated_by_use"]["weights"].get<double>(), 1e9);
  EXPECT_FALSE(j["oom"]["largest"].empty());
}

TEST(SimulateCli, GraphModeAndNativeFrameworkAreFasterThanEagerInADecode) {
  auto tpot = [](std::vector<std::string> extra) {
    std::vector<std::string> args{"simulate", "--model", "gpt3-350m", "--hw", "hw_configs/h100_sxm5_80gb.json",
                                  "--input-tokens", "16", "--output-tokens", "16", "--json"};
    args.insert(args.end(), extra.begin(), extra.end());
    const Result r = run_cli(args);
    EXPECT_EQ(r.code, kExitOk) << r.err;
    return nlohmann::json::parse(r.out)["tpot_ms"].get<double>();
  };
  const double eager = tpot({});
  EXPECT_LT(tpot({"--cuda-graphs"}), eager);
  EXPECT_LT(tpot({"--framework", "native"}), eager);
}

TEST(SimulateCli, WritesAChromeTraceOfTheFourLayers) {
  const std::string path = ::testing::TempDir() + "/simulate_trace.json";
  const Result r = run_cli({"simulate", "--model", "gpt3-125m", "--hw", "hw_configs/dgx_a100.json", "--tp", "2",
                            "--input-tokens", "8", "--output-tokens", "2", "--trace", path, "--trace-level", "hw"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  std::ifstream in(path);
  const auto j = nlohmann::json::parse(in);
  std::map<std::string, int> spans;
  int steps = 0, layers = 0, flow_starts = 0, flow_ends = 0, allocs = 0;
  std::set<std::string> counters, processes, memory_instants;
  for (const auto& e : j["traceEvents"]) {
    const std::string ph = e.value("ph", "");
    if (ph == "X") {
      ++spans[e.value("cat", "")];
      const std::string name = e.value("name", "");
      steps += name == "prefill" || name == "decode";
      layers += name.rfind("layer ", 0) == 0;
      if (e.value("cat", "") == "kernel") {
        EXPECT_TRUE(e["args"].contains("impl"));
        EXPECT_TRUE(e["args"].contains("why"));
        EXPECT_TRUE(e["args"].contains("bound"));
      }
      if (e.value("cat", "") == "op" && name == "aten::matmul") {
        EXPECT_TRUE(e["args"].contains("shape"));
      }
    } else if (ph == "s") {
      ++flow_starts;
    } else if (ph == "f") {
      ++flow_ends;
    } else if (ph == "i") {
      allocs += e.value("cat", "") == "alloc";
      // One memory instant per rank, kind and nanosecond: viewers nest zero-length events of
      // the same time, so same-time allocations (or frees) are one instant.
      const std::string key = std::to_string(e.value("pid", -1)) + " " + e["ts"].dump() + " " + e.value("cat", "");
      EXPECT_TRUE(memory_instants.insert(key).second) << key;
    } else if (ph == "C") {
      counters.insert(e.value("name", ""));
    } else if (ph == "M" && e.value("name", "") == "process_name") {
      processes.insert(e["args"].value("name", ""));
    }
  }
  EXPECT_GT(spans["op"], 100);       // torch ops on the host
  EXPECT_GT(spans["kernel"], 100);   // kernels on the streams
  EXPECT_GT(spans["collective"], 10);
  // On the host track and around the device work on the stream: 2 ranks x (prefill + 1 decode),
  // and 2 ranks x 2 steps x 12 layers, each twice.
  EXPECT_EQ(steps, 2 * 4);
  EXPECT_EQ(layers, 2 * 2 * 2 * 12);
  EXPECT_GT(flow_starts, 100);
  EXPECT_EQ(flow_starts, flow_ends);
  EXPECT_GT(allocs, 100);
  for (const char* c : {"HBM allocated", "HBM reserved", "SMs in use", "HBM bandwidth"}) {
    EXPECT_TRUE(counters.count(c)) << c;
  }
  EXPECT_TRUE(processes.count("rank 0 (gpu[0])"));
  EXPECT_TRUE(processes.count("interconnect"));
  std::remove(path.c_str());
}

TEST(SimulateCli, TracingDoesNotChangeTheResult) {
  const std::vector<std::string> base{"simulate", "--model",        "gpt3-350m", "--hw", "hw_configs/dgx_a100.json",
                                      "--tp",     "2",              "--pp",      "2",    "--batch",
                                      "4",        "--input-tokens", "32",        "--output-tokens", "3", "--json"};
  const Result plain = run_cli(base);
  for (const char* level : {"op", "kernel"}) {
    auto args = base;
    const std::string path = ::testing::TempDir() + "/same.json";
    args.insert(args.end(), {"--trace", path, "--trace-level", level});
    const Result traced = run_cli(args);
    EXPECT_EQ(traced.out, plain.out) << level;
    std::remove(path.c_str());
  }
}

TEST(SimulateCli, BadInputNamesTheFlagAndExitsTwo) {
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  for (const Case& c : std::vector<Case>{
           {{"simulate", "--model", "gpt3-176b"}, "unknown model \"gpt3-176b\", did you mean \"gpt3-175b\"?"},
           {{"simulate", "--model", "gpt3-125m", "--tp", "16"}, "--tp: tp 16 x pp 1 needs 16 devices"},
           {{"simulate", "--model", "gpt3-125m", "--tp", "8"}, "12 heads, which do not split over tp 8"},
           {{"simulate", "--model", "gpt3-125m", "--batch", "0"}, "--batch: expected a positive integer, got \"0\""},
           {{"simulate", "--model", "gpt3-125m", "--dtype", "fp17"}, "unknown dtype \"fp17\""},
           {{"simulate", "--model", "gpt3-125m", "--pp", "5"}, "12 layers, which do not split evenly over pp 5"},
           {{"simulate", "--model", "gpt3-125m", "--hw", "no_such.json"}, "no_such.json"},
           {{"simulate", "--model", "gpt3-125m", "--policy", "gemm=magic"}, "unknown implementation \"magic\""},
           {{"simulate", "--model", "gpt3-125m", "--framework", "jax"}, "--framework"},
           {{"simulate", "--model", "gpt:layers=2,hidden=64"}, "missing heads="}}) {
    const Result r = run_cli(c.args);
    EXPECT_EQ(r.code, kExitBadInput) << c.message << "\n" << r.out << r.err;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << "expected: " << c.message << "\ngot: " << r.err;
  }
}

}  // namespace
