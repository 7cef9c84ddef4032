// `syntorch train`: the report, JSON that repeats itself, a plan that does not fit (exit 3 naming
// its pipeline stage) and bad flags (exit 2 naming the flag).

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "run_cli.hpp"

namespace {

using namespace syntorch::cli;
using namespace syntorch::cli::testing;

const std::vector<std::string> kSmall{"train", "--model", "gpt:layers=4,hidden=1024,heads=16,vocab=50304", "--hw",
                                      "hw_configs/dgx_h100.json", "--tp", "2", "--pp", "2", "--dp", "2",
                                      "--global-batch", "8", "--seq", "1024"};

TEST(TrainCli, ReportsWhatMegatronPrintsAndEachStagesMemory) {
  const Result r = run_cli(kSmall);
  ASSERT_EQ(r.code, kExitOk) << r.err << r.out;
  for (const char* what : {"iteration time", "tokens/s", "model TFLOP/s per GPU", "MFU", "HFU", "pipeline bubble",
                           "exposed communication", "stage 0", "stage 1", "weights", "gradients", "optimizer state",
                           "activations"}) {
    EXPECT_NE(r.out.find(what), std::string::npos) << what << "\n" << r.out;
  }
}

TEST(TrainCli, JsonIsTheSameOnEveryRun) {
  std::vector<std::string> args = kSmall;
  args.push_back("--json");
  const Result a = run_cli(args);
  const Result b = run_cli(args);
  ASSERT_EQ(a.code, kExitOk) << a.err;
  EXPECT_EQ(a.out, b.out);
  const auto j = nlohmann::json::parse(a.out);
  EXPECT_EQ(j["status"], "ok");
  EXPECT_EQ(j["micro_batches"], 4);
  EXPECT_GT(j["iteration_time_s"].get<double>(), 0);
  EXPECT_EQ(j["stages"].size(), 2u);
}

TEST(TrainCli, APlanThatDoesNotFitExitsThreeNamingItsStage) {
  const Result r = run_cli({"train", "--model", "gpt3-175b", "--hw", "hw_configs/dgx_h100.json", "--tp", "4", "--pp",
                            "2", "--global-batch", "2"});
  EXPECT_EQ(r.code, 3) << r.err << r.out;
  EXPECT_NE(r.out.find("OUT OF MEMORY on pipeline stage"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("largest live allocations"), std::string::npos) << r.out;
}

TEST(TrainCli, BadFlagsExitTwoNamingTheFlag) {
  Result r = run_cli({"train", "--model", "gpt:layers=4,hidden=1024,heads=16,vocab=50304", "--dp", "2",
                      "--global-batch", "7"});  // 7 sequences over dp 2
  EXPECT_EQ(r.code, kExitBadInput);
  EXPECT_NE(r.err.find("--global-batch"), std::string::npos) << r.err;
  r = run_cli({"train", "--model", "gpt3-175b", "--recompute", "sometimes"});
  EXPECT_EQ(r.code, kExitBadInput);
  EXPECT_NE(r.err.find("--recompute"), std::string::npos) << r.err;
  r = run_cli({"train", "--model", "gpt3-175b", "--tp", "8", "--pp", "2"});  // 16 GPUs on the 8 of dgx_h100
  EXPECT_EQ(r.code, kExitBadInput);
  EXPECT_NE(r.err.find("needs 16 devices"), std::string::npos) << r.err;
}

}  // namespace
