// `syntorch train`: the report, JSON that repeats itself, a plan that does not fit (exit 3 naming
// its pipeline stage) and bad flags (exit 2 naming the flag).

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

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
  // As JSON: the stage, and what held the memory as simulate reports it.
  const Result j = run_cli({"train", "--model", "gpt3-175b", "--hw", "hw_configs/dgx_h100.json", "--tp", "4", "--pp",
                            "2", "--global-batch", "2", "--json"});
  EXPECT_EQ(j.code, 3) << j.err;
  const auto json = nlohmann::json::parse(j.out);
  EXPECT_EQ(json["status"], "oom");
  EXPECT_TRUE(json["oom"].contains("stage"));
  EXPECT_FALSE(json["oom"]["largest"].empty());
  EXPECT_TRUE(json["oom"]["allocated_by_use"].contains("weights"));
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
  r = run_cli({"train", "--model", "gpt:layers=4,hidden=1024,heads=16,vocab=50304", "--dp", "2", "--replicas", "some"});
  EXPECT_EQ(r.code, kExitBadInput);
  EXPECT_NE(r.err.find("--replicas"), std::string::npos) << r.err;
  r = run_cli({"train", "--model", "gpt:layers=4,hidden=1024,heads=16,vocab=50304", "--dp", "2", "--trace-ranks", "0-9",
               "--trace", (std::filesystem::temp_directory_path() / "syntorch_never_written.json").string()});
  EXPECT_EQ(r.code, kExitBadInput);
  EXPECT_NE(r.err.find("--trace-ranks"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("rank 2 is outside"), std::string::npos) << r.err;
  // Zero sizes and a model that cannot train: exit 2 naming the flag, before anything runs.
  r = run_cli({"train", "--model", "gpt:layers=4,hidden=1024,heads=16,vocab=50304", "--dp", "0"});
  EXPECT_EQ(r.code, kExitBadInput);
  EXPECT_NE(r.err.find("--dp"), std::string::npos) << r.err;
  r = run_cli({"train", "--model", "gpt:layers=4,hidden=1024,heads=16,vocab=50304", "--tp", "0"});
  EXPECT_EQ(r.code, kExitBadInput);
  EXPECT_NE(r.err.find("--tp"), std::string::npos) << r.err;
  r = run_cli({"train", "--model", "mixtral-8x7b", "--tp", "8"});
  EXPECT_EQ(r.code, kExitBadInput);
  EXPECT_NE(r.err.find("--model"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("mixture of experts"), std::string::npos) << r.err;
  r = run_cli({"train", "--model", "gpt:layers=4,hidden=1024,heads=16,vocab=50304", "--dp", "2", "--trace-ranks", "1-"});
  EXPECT_EQ(r.code, kExitBadInput);
  EXPECT_NE(r.err.find("expected ranks and ranges"), std::string::npos) << r.err;
}

// Data-parallel replicas are mirrored and the report says so; a trace shows the ranks asked for,
// and naming a rank of a mirrored replica simulates it.
TEST(TrainCli, MirroredReplicasAreReportedAndTraceRanksPicksTheTracks) {
  const auto trace = std::filesystem::temp_directory_path() / "syntorch_train_trace_ranks.json";
  Result r = run_cli({"train", "--model", "gpt:layers=2,hidden=1024,heads=16,vocab=50304", "--dp", "4",
                      "--trace", trace.string(), "--trace-ranks", "3"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("data-parallel replicas  2 of 4 simulated"), std::string::npos) << r.out;
  std::ifstream in(trace);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("rank 3 ("), std::string::npos);
  EXPECT_EQ(text.find("rank 0 ("), std::string::npos) << "rank 0 runs but is not shown";
  std::filesystem::remove(trace);
}

}  // namespace
