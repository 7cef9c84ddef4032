#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "run_cli.hpp"

namespace syntorch::cli {
namespace {

using testing::Result;
using testing::run_cli;

TEST(KernelCli, GemmJsonReportsTimeThroughputImplementationAndWhy) {
  const Result r = run_cli({"kernel", "gemm", "--hw", "hw_configs/a100_sxm4_80gb.json", "--m", "8192", "--n", "8192",
                            "--k", "8192", "--dtype", "fp16", "--json"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_GT(j["time_us"].get<double>(), 3000);
  EXPECT_LT(j["time_us"].get<double>(), 4500);
  EXPECT_GT(j["tflops"].get<double>(), 240);
  EXPECT_EQ(j["bound"], "compute");
  EXPECT_FALSE(j["tile"].get<std::string>().empty());
  EXPECT_FALSE(j["kernels"][0]["why"].empty());
}

TEST(KernelCli, TextOutputForAttentionAndCollectives) {
  Result r = run_cli({"kernel", "attention", "--hw", "hw_configs/h100_sxm5_80gb.json", "--batch", "8", "--heads", "32",
                      "--kv-heads", "8", "--seq-q", "2048", "--seq-kv", "2048", "--head-dim", "128", "--causal",
                      "--policy", "attention=flash_v3", "--dtype", "bf16"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_NE(r.out.find("flash_v3"), std::string::npos) << r.out;
  r = run_cli({"kernel", "allreduce", "--hw", "hw_configs/dgx_h100.json", "--ranks", "8", "--bytes", "256MiB",
               "--algo", "ring", "--timing", "host"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_NE(r.out.find("algorithm       ring"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("host timing"), std::string::npos) << r.out;
}

TEST(KernelCli, BadInputExitsTwoNamingTheFlag) {
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const std::string hw = "hw_configs/a100_sxm4_80gb.json";
  for (const auto& c : std::vector<Case>{
           {{"kernel", "gemm", "--hw", hw, "--m", "0", "--n", "8", "--k", "8"}, "gemm needs m > 0"},
           {{"kernel", "gemm", "--hw", hw, "--m", "-5", "--n", "8", "--k", "8"}, "--m: expected a non-negative integer"},
           {{"kernel", "gemm", "--hw", hw, "--m", "8", "--n", "8"}, "gemm needs k > 0"},
           {{"kernel", "gemm", "--hw", hw, "--m", "8", "--n", "8", "--k", "8", "--rows", "3"}, "--rows: gemm takes no parameter \"rows\" (valid: m, n, k, dtype)"},
           {{"kernel", "gemm", "--hw", hw, "--m", "8", "--n", "8", "--k", "8", "--dtype", "fp17"}, "unknown dtype \"fp17\""},
           {{"kernel", "gemm", "--hw", hw, "--m", "8", "--n", "8", "--k", "8", "--dtype", "fp8"}, "fp8 is not supported"},
           {{"kernel", "gemm", "--hw", hw, "--m", "8", "--n", "8", "--k", "8", "--policy", "gemm=magic"}, "unknown implementation \"magic\""},
           {{"kernel", "gem", "--hw", hw}, "unknown op \"gem\", did you mean \"gemm\"?"},
           {{"kernel", "attention", "--hw", hw, "--batch", "1", "--heads", "6", "--kv-heads", "4", "--seq-q", "8",
             "--seq-kv", "8", "--head-dim", "64"}, "must be a multiple of kv-heads"},
           {{"kernel", "allreduce", "--hw", "hw_configs/dgx_a100.json", "--ranks", "8", "--bytes", "1MiB", "--algo", "in_switch"},
            "in_switch allreduce needs a switch with in_switch_reduction"},
           {{"kernel", "allreduce", "--hw", hw, "--ranks", "8", "--bytes", "1MiB"}, "--ranks: 8 ranks requested but hw_configs/a100_sxm4_80gb.json has 1 device"},
           {{"kernel", "gemm", "--hw", "hw_configs/a100_sxm4_80gb.json", "--m", "0", "--n", "8", "--k", "8"},
            "--m: gemm needs m > 0"},
           {{"kernel", "gemm", "--hw", "hw_configs/a100_sxm4_80gb.json", "--m", "64", "--n", "64", "--k", "64", "--policy",
             "gemm=tiled:fp8"},
            "--policy: gpu[0]: fp8 is not supported"},
           {{"kernel", "gemm", "--hw", hw, "--m", "8", "--n", "8", "--k", "8", "--timing", "wall"}, "--timing"},
           {{"kernel", "softmax", "--hw", hw, "--rows", "2147483648", "--cols", "2147483648", "--dtype", "fp32"},
            "cannot be simulated"}}) {
    const Result r = run_cli(c.args);
    EXPECT_EQ(r.code, kExitBadInput) << c.message << "\n" << r.out;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << "expected: " << c.message << "\ngot: " << r.err;
  }
}

TEST(ValidateCli, PredictsRowsListsUnsupportedOnesAndSummarises) {
  const Result r = run_cli({"validate", "tests/data/measurements_small.csv", "--json"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["rows"].size(), 6u);
  EXPECT_EQ(j["rows"][0]["status"], "ok");
  EXPECT_LT(std::abs(j["rows"][0]["error_pct"].get<double>()), 10.0);
  EXPECT_EQ(j["rows"][3]["status"], "ok");  // a generate row: a whole simulated generation
  EXPECT_GT(j["rows"][3]["predicted"].get<double>(), 100.0);
  EXPECT_EQ(j["rows"][4]["status"], "ok");  // impl= is a policy entry
  EXPECT_EQ(j["rows"][5]["status"], "unsupported");
  EXPECT_FALSE(j["rows"][5]["reason"].get<std::string>().empty());
  EXPECT_EQ(j["summary"]["gemm"]["count"], 1);
  EXPECT_TRUE(j["summary"].contains("allreduce"));
  const Result text = run_cli({"validate", "tests/data/measurements_small.csv"});
  EXPECT_NE(text.out.find("median |err|"), std::string::npos);
  EXPECT_NE(text.out.find("unsupported"), std::string::npos);
}

TEST(ValidateCli, MalformedFilesExitTwo) {
  EXPECT_EQ(run_cli({"validate", "no_such.csv"}).code, kExitBadInput);
  EXPECT_EQ(run_cli({"validate", "hw_configs/dgx_a100.json"}).code, kExitBadInput);
  const Result inf = run_cli({"validate", "tests/data/measurements_bad_values.csv"});
  EXPECT_EQ(inf.code, kExitBadInput);
  EXPECT_NE(inf.err.find("expected a positive finite number, got \"inf\""), std::string::npos) << inf.err;
}

}  // namespace
}  // namespace syntorch::cli
