// `syntorch serve`: what vllm bench serve prints, JSON with its names, bad flags named (exit 2), an
// engine that cannot start (exit 3).

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "run_cli.hpp"

namespace {

using namespace syntorch::cli;
using namespace syntorch::cli::testing;

TEST(ServeCli, PrintsWhatABenchmarkOfTheEnginePrints) {
  const Result r = run_cli({"serve", "--model", "llama3-8b", "--hw", "hw_configs/dgx_h100.json", "--rate", "10",
                            "--requests", "40", "--input-len", "256", "--output-len", "32", "--slo", "ttft=1s,tpot=50ms"});
  ASSERT_EQ(r.code, kExitOk) << r.err << r.out;
  for (const char* line : {"request throughput", "output token throughput", "TTFT", "TPOT", "ITL", "E2EL", "goodput",
                           "KV pool", "preemptions", "sequences per step"}) {
    EXPECT_NE(r.out.find(line), std::string::npos) << line << "\n" << r.out;
  }
}

TEST(ServeCli, JsonCarriesTheParametersAsRunAndTheMetricsByName) {
  const Result r = run_cli({"serve", "--model", "llama3-8b", "--engine", "trtllm", "--requests", "20", "--rate", "5",
                            "--json"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["status"], "ok");
  EXPECT_EQ(j["parameters"]["engine"], "trtllm");
  EXPECT_EQ(j["parameters"]["block_size"], 32);  // the profile's default, as run
  EXPECT_EQ(j["completed"], 20);
  for (const char* key : {"request_throughput", "output_throughput", "ttft_s", "tpot_s", "itl_s", "e2el_s", "kv_cache",
                          "batch_sizes", "series"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  EXPECT_GT(j["ttft_s"]["p99"].get<double>(), 0);
}

TEST(ServeCli, ACapacitySearchPrintsItsProbesAndDrawsThem) {
  const std::string chart = (std::filesystem::temp_directory_path() / "syntorch_capacity.svg").string();
  const Result r = run_cli({"serve", "--model", "llama3-8b", "--requests", "60", "--input-len", "512", "--output-len",
                            "32", "--slo", "ttft=200ms", "--capacity", "--probes", "4", "--chart", chart});
  ASSERT_EQ(r.code, kExitOk) << r.err << r.out;
  EXPECT_NE(r.out.find("saturated (all requests at once)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("capacity:"), std::string::npos) << r.out;
  std::ifstream in(chart);
  std::string svg((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(svg.find("TTFT p99"), std::string::npos);
  const Result bad = run_cli({"serve", "--model", "llama3-8b", "--capacity", "--chart", chart});
  EXPECT_EQ(bad.code, kExitBadInput);
  EXPECT_NE(bad.err.find("--slo"), std::string::npos) << bad.err;
  const Result chart_alone = run_cli({"serve", "--model", "llama3-8b", "--chart", chart});
  EXPECT_EQ(chart_alone.code, kExitBadInput);
  EXPECT_NE(chart_alone.err.find("give --capacity too"), std::string::npos) << chart_alone.err;
}

TEST(ServeCli, BadFlagsAreNamedAndExitTwo) {
  const Result r = run_cli({"serve", "--model", "llama3-8b", "--engine", "tgi", "--arrival", "bursty", "--tp", "3"});
  EXPECT_EQ(r.code, kExitBadInput);
  EXPECT_NE(r.err.find("--engine"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--arrival"), std::string::npos) << r.err;
}

TEST(ServeCli, AnEngineWithNoRoomForItsKvCacheExitsThree) {
  const Result r = run_cli({"serve", "--model", "llama3-70b", "--hw", "hw_configs/dgx_h100.json", "--tp", "2",
                            "--requests", "4", "--input-len", "4096", "--gpu-memory-utilization", "0.8"});
  EXPECT_EQ(r.code, kExitOom) << r.err << r.out;
  EXPECT_NE(r.out.find("OUT OF MEMORY"), std::string::npos) << r.out;
}

}  // namespace
