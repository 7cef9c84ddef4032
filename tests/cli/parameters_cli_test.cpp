// Every run parameter, declared once in its table, reaches every front end: a CLI flag with help
// that changes the run, the JSON report's field, a study axis and a measurement row's key. A
// parameter added to a table without a sample here fails the test.

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "run_cli.hpp"
#include "syntorch/session/parameters.hpp"
#include "syntorch/session/simulate.hpp"
#include "syntorch/session/study.hpp"
#include "syntorch/session/train.hpp"

namespace syntorch::cli {
namespace {

using testing::Result;
using testing::run_cli;
using Samples = std::map<std::string, std::map<std::string, std::string>>;

std::string hw(const char* name) { return std::string(SYNTORCH_SOURCE_DIR) + "/hw_configs/" + name; }

// Runs `command` with `base` and then `sample` as flags and returns its JSON report.
nlohmann::json run_json(const std::string& command, std::map<std::string, std::string> flags,
                        const std::map<std::string, std::string>& sample, const std::vector<std::string>& extra) {
  for (const auto& [k, v] : sample) flags[k] = v;
  std::vector<std::string> args{command, "--json"};
  for (const auto& [k, v] : flags) {
    args.push_back(session::parameter_flag(k));
    if (v != "") args.push_back(v);  // "": a switch
  }
  args.insert(args.end(), extra.begin(), extra.end());
  const Result r = run_cli(args);
  EXPECT_EQ(r.code, kExitOk) << r.err;
  return r.code == kExitOk ? nlohmann::json::parse(r.out) : nlohmann::json::object();
}

template <class Spec>
void every_parameter_reaches_every_front_end(const std::string& command,
                                             const std::vector<session::Parameter<Spec>>& table,
                                             const std::map<std::string, std::string>& base, const Samples& samples,
                                             const std::vector<std::string>& front_end_keys,
                                             const std::vector<std::string>& extra) {
  const Result help = run_cli({command, "--help"});
  ASSERT_EQ(help.code, kExitOk);
  for (const session::Parameter<Spec>& p : table) {
    const std::string key(p.key);
    SCOPED_TRACE(command + " " + key);
    const std::string flag = session::parameter_flag(key);
    EXPECT_TRUE(help.out.find(flag + " ") != std::string::npos || help.out.find(flag + ",") != std::string::npos)
        << "no flag in --help";
    EXPECT_NE(std::find(front_end_keys.begin(), front_end_keys.end(), key), front_end_keys.end())
        << "not a study or measurement key";
    const auto sample = samples.find(key);
    ASSERT_NE(sample, samples.end()) << "give the new parameter a sample value in this test";
    // The value the flag should run with, as the table reads it.
    Spec expected;
    Diagnostics d;
    for (const auto& [k, v] : base) session::find_parameter(table, k)->parse(expected, v, d, "base", k);
    for (const auto& [k, v] : sample->second) {
      session::find_parameter(table, k)->parse(expected, v.empty() ? "true" : v, d, "sample", k);
    }
    ASSERT_TRUE(d.empty()) << d.to_string();
    const nlohmann::json report = run_json(command, base, sample->second, extra);
    ASSERT_TRUE(report.contains(key)) << report.dump();
    EXPECT_EQ(report[key], nlohmann::json::parse(p.value(expected).dump()));
    EXPECT_NE(p.value(expected), p.value(Spec{})) << "the sample should differ from the default";
  }
}

TEST(Parameters, EveryGenerationParameterReachesEveryFrontEnd) {
  const Samples samples = {
      {"model", {{"model", "gpt3-350m"}}},   {"tp", {{"tp", "2"}}},
      {"pp", {{"pp", "2"}}},                 {"ep", {{"model", "llama:layers=2,hidden=256,heads=4,kv_heads=4,ffn=512,vocab=1024,experts=4,top_k=2"}, {"tp", "2"}, {"ep", "2"}}},
      {"expert_skew", {{"expert_skew", "0.5"}}}, {"max_num_tokens", {{"max_num_tokens", "16"}}},
      {"batch", {{"batch", "2"}}},           {"input_tokens", {{"input_tokens", "24"}}},
      {"output_tokens", {{"output_tokens", "3"}}}, {"micro_batches", {{"micro_batches", "1"}}},
      {"dtype", {{"dtype", "bf16"}}},        {"kv_dtype", {{"kv_dtype", "fp8"}}},
      {"cuda_graphs", {{"cuda_graphs", ""}}}, {"framework", {{"framework", "native"}}},
      {"ranks", {{"ranks", "one"}, {"tp", "2"}}},
  };
  // A study's axes are the run's parameters, and the machine and policy.
  const std::vector<std::string> keys = session::run_parameter_keys();
  for (const std::string& k : session::simulate_parameters()) {
    EXPECT_TRUE(std::find(keys.begin(), keys.end(), k) != keys.end() || k == "hw" || k == "policy") << k;
  }
  every_parameter_reaches_every_front_end<session::RunSpec>(
      "simulate", session::generation_parameters(),
      {{"model", "gpt3-125m"}, {"input_tokens", "16"}, {"output_tokens", "2"}}, samples, session::simulate_parameters(),
      {"--hw", hw("dgx_a100.json")});
}

// A switch given as --flag=false is off, as CLI11's bool flags take it.
TEST(Parameters, ASwitchGivenFalseIsOff) {
  for (const char* given : {"--cuda-graphs=false", "--cuda-graphs=0"}) {
    const Result r = run_cli({"simulate", "--json", "--model", "gpt3-125m", "--output-tokens", "2", given});
    ASSERT_EQ(r.code, kExitOk) << r.err;
    EXPECT_EQ(nlohmann::json::parse(r.out)["cuda_graphs"], false) << given;
  }
  const Result on = run_cli({"simulate", "--json", "--model", "gpt3-125m", "--output-tokens", "2", "--cuda-graphs"});
  ASSERT_EQ(on.code, kExitOk) << on.err;
  EXPECT_EQ(nlohmann::json::parse(on.out)["cuda_graphs"], true);
}

TEST(Parameters, EveryTrainingParameterReachesEveryFrontEnd) {
  const std::string trace = (std::filesystem::temp_directory_path() / "parameters_cli_test.json").string();
  const Samples samples = {
      {"model", {{"model", "gpt3-350m"}}},
      {"tp", {{"tp", "2"}}},
      {"pp", {{"pp", "2"}}},
      {"dp", {{"dp", "2"}}},
      {"global_batch", {{"global_batch", "2"}}},
      {"micro_batch", {{"micro_batch", "2"}}},
      {"vp", {{"vp", "2"}, {"pp", "3"}, {"global_batch", "3"}}},
      {"seq", {{"seq", "96"}}},
      {"dtype", {{"dtype", "fp16"}}},
      {"recompute", {{"recompute", "selective"}}},
      {"sequence_parallel", {{"sequence_parallel", ""}, {"tp", "2"}}},
      {"zero", {{"zero", "1"}, {"dp", "2"}}},
      {"overlap_grad_reduce", {{"overlap_grad_reduce", ""}, {"dp", "2"}}},
      {"overlap_param_gather", {{"overlap_param_gather", ""}, {"overlap_grad_reduce", ""}, {"zero", "1"}, {"dp", "2"}}},
      {"hidden_dropout", {{"hidden_dropout", "0.2"}}},
      {"attention_dropout", {{"attention_dropout", "0"}}},
      {"optimizer", {{"optimizer", "sgd"}}},
      {"schedule", {{"schedule", "gpipe"}, {"pp", "2"}}},
      {"replicas", {{"replicas", "all"}, {"dp", "2"}}},
      {"trace_ranks", {{"trace_ranks", "0"}}},
  };
  // Measurement rows take these keys (studies do not sweep training yet).
  every_parameter_reaches_every_front_end<session::TrainSpec>(
      "train", session::training_parameters(), {{"model", "gpt3-125m"}, {"seq", "64"}}, samples,
      session::train_parameter_keys(), {"--hw", hw("dgx_a100.json"), "--trace", trace});
  std::filesystem::remove(trace);
}

}  // namespace
}  // namespace syntorch::cli
