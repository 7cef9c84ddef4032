#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>


#include "run_cli.hpp"
#include "syntorch/base/version.hpp"

namespace syntorch::cli {
namespace {

using testing::Result;
using testing::run_cli;

TEST(Cli, VersionPrintsTheProjectVersion) {
  const Result r = run_cli({"--version"});
  EXPECT_EQ(r.code, kExitOk);
  EXPECT_NE(r.out.find(kVersion), std::string::npos);
}

TEST(Cli, EverySubcommandHasHelp) {
  const auto paths = subcommand_paths();  // the CLI's own list: a new subcommand is covered too
  for (const char* expected : {"hw", "kernel", "validate", "simulate", "sweep", "trace"}) {
    EXPECT_NE(std::find(paths.begin(), paths.end(), std::vector<std::string>{expected}), paths.end()) << expected;
  }
  EXPECT_NE(std::find(paths.begin(), paths.end(), std::vector<std::string>{"hw", "show"}), paths.end());
  std::vector<std::vector<std::string>> all = paths;
  all.push_back({});
  for (std::vector<std::string> args : all) {
    std::string name = "syntorch";
    for (const auto& w : args) name += " " + w;
    args.push_back("--help");
    const Result r = run_cli(args);
    EXPECT_EQ(r.code, kExitOk) << name;
    EXPECT_EQ(r.err, "") << name;
    // CLI11's usage line names the command: "Usage: syntorch hw show [OPTIONS] ...".
    EXPECT_NE(r.out.find("Usage: " + name), std::string::npos) << name << ":\n" << r.out;
  }
}

TEST(Cli, ValidateAcceptsEveryBundledConfig) {
  std::vector<std::string> args{"hw", "validate"};
  for (const char* name : {"a100_sxm4_80gb", "h100_sxm5_80gb", "h200_sxm_141gb", "b200_sxm", "mi300x", "dgx_a100",
                           "dgx_h100", "hgx_h200", "simple_gpu", "npu_systolic_4x"}) {
    args.push_back(std::string("hw_configs/") + name + ".json");
  }
  const Result r = run_cli(args);
  EXPECT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 10);
}

TEST(Cli, ValidateReportsBadConfigsAndExitsTwo) {
  const Result r = run_cli({"hw", "validate", "hw_configs/dgx_h100.json", "tests/bad_configs/multiple_errors.json"});
  EXPECT_EQ(r.code, kExitBadInput);
  EXPECT_NE(r.out.find("ok: hw_configs/dgx_h100.json"), std::string::npos);
  EXPECT_NE(r.err.find("tests/bad_configs/multiple_errors.json:/components/x/type: unknown component type"),
            std::string::npos) << r.err;
  EXPECT_NE(r.err.find("3 problem(s)"), std::string::npos);
}

TEST(Cli, ShowPrintsDevicesPeaksLinksAndTopology) {
  const Result r = run_cli({"hw", "show", "hw_configs/dgx_h100.json"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  for (const char* needle : {"NVIDIA DGX H100", "gpu[0..7]", "3.35 TB/s", "989 TFLOP/s", "1.98 PFLOP/s",
                             "nvlink[0..7]", "450 GB/s", "nvswitch", "Topology: routes from gpu[0]",
                             "nvlink[0] > nvswitch > nvlink[1]"}) {
    EXPECT_NE(r.out.find(needle), std::string::npos) << needle << "\n" << r.out;
  }
}

TEST(Cli, HelpAndShowNameTheZoosModels) {
  const Result show = run_cli({"hw", "show", "hw_configs/dgx_h100.json"});
  ASSERT_EQ(show.code, kExitOk) << show.err;
  for (const char* needle : {"syntorch simulate --model NAME --hw hw_configs/dgx_h100.json", "Models (--model): ",
                             "gpt3-175b", "llama3.1-405b", "mixtral-8x7b"}) {
    EXPECT_NE(show.out.find(needle), std::string::npos) << needle << "\n" << show.out;
  }
  for (const std::vector<std::string>& help : {std::vector<std::string>{"--help"}, {"simulate", "--help"},
                                                {"train", "--help"}}) {
    const Result r = run_cli(help);
    EXPECT_EQ(r.code, kExitOk) << help[0];
    EXPECT_NE(r.out.find("llama3.1-405b"), std::string::npos) << help[0] << "\n" << r.out;
  }
  const Result typo = run_cli({"simulate", "--model", "llama3-405b"});
  EXPECT_EQ(typo.code, kExitBadInput);
  EXPECT_NE(typo.err.find("unknown model \"llama3-405b\", did you mean \"llama3.1-405b\"?"), std::string::npos)
      << typo.err;
}

TEST(Cli, UtilisationNeverPassesTheDevicesPeak) {
  // Matrix units slower than the vector units (a what-if config may say so): decode's GEMVs run on
  // the vector units, and the utilisation divides by the faster; a policy that runs the GEMMs in
  // int8 is measured against the int8 peak.
  const std::string npu = "hw_configs/npu_systolic_4x.json";
  const std::string slow = "/components/npu/components/mxu/matrix_ops_per_cycle/bf16=1.5";
  for (const std::vector<std::string>& extra : {std::vector<std::string>{"--set", slow},
                                                {"--set", slow, "--policy", "gemm=auto:int8,bmm=auto:int8"}}) {
    std::vector<std::string> args{"simulate", "--model", "gpt3-125m", "--hw", npu, "--dtype", "bf16",
                                  "--input-tokens", "1", "--output-tokens", "16", "--json"};
    args.insert(args.end(), extra.begin(), extra.end());
    const Result r = run_cli(args);
    ASSERT_EQ(r.code, kExitOk) << r.err;
    const double mfu = nlohmann::json::parse(r.out).at("mfu").get<double>();
    EXPECT_GT(mfu, 0) << extra.back();
    EXPECT_LE(mfu, 1.0) << extra.back();
  }
  // An ops value whose peak would not be a number is refused where it is given.
  const Result huge = run_cli({"hw", "show", npu, "--set", "/components/npu/components/mxu/matrix_ops_per_cycle/bf16=1e300"});
  EXPECT_EQ(huge.code, kExitBadInput);
  EXPECT_NE(huge.err.find("matrix_ops_per_cycle/bf16: expected a positive number of operations per cycle per unit, at "
                          "most 1e+09, got 1e+300"),
            std::string::npos)
      << huge.err;
  EXPECT_EQ(huge.out.find("inf"), std::string::npos) << huge.out;
}

TEST(Cli, ShowAppliesSetOverrides) {
  const Result r = run_cli({"hw", "show", "hw_configs/dgx_h100.json", "--set",
                            "/components/gpu/components/hbm/bandwidth=6.7 TB/s"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_NE(r.out.find("6.7 TB/s"), std::string::npos);
}

TEST(Cli, ConfigsThatAreNotFilesOrNestTooDeepOrRepeatAKeyAreRefused) {
  const auto dir = std::filesystem::temp_directory_path() / ("syntorch_cli_inputs_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string fifo = (dir / "fifo.json").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const std::string deep = (dir / "deep.json").string();
  std::ofstream(deep) << R"({"name": "x", "notes": )" << std::string(200'000, '[') << std::string(200'000, ']') << "}";
  const std::string twice = (dir / "twice.json").string();
  std::ofstream(twice) << R"({"name": "a", "components": {"gpu": {"type": "group", "count": 1, "count": 2}}, "name": "b"})";
  std::filesystem::create_symlink("/dev/zero", dir / "zero.json");
  const std::string zero = (dir / "zero.json").string();
  struct Case {
    std::string file;
    std::vector<std::string> messages;
  };
  for (const Case& c : std::vector<Case>{
           {fifo, {fifo + ": is a FIFO, not a regular file (expected a JSON hardware config)"}},
           {"/dev/zero", {"/dev/zero: is a character device, not a regular file"}},
           {zero, {zero + ": is a character device, not a regular file"}},
           {deep, {deep + ": nested deeper than 64 levels"}},
           {twice,
            {twice + ":/components/gpu/count: key \"count\" given twice in one object",
             twice + ":/name: key \"name\" given twice in one object"}}}) {
    const Result r = run_cli({"hw", "validate", c.file});
    EXPECT_EQ(r.code, kExitBadInput) << c.file;
    for (const std::string& m : c.messages) EXPECT_NE(r.err.find(m), std::string::npos) << m << "\ngot: " << r.err;
  }
  std::filesystem::remove_all(dir);
}

TEST(Cli, BadInputExitsTwoWithAClearMessage) {
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  for (const auto& c : std::vector<Case>{
           {{"hw", "show", "no_such.json"}, "no_such.json: no such file (expected a JSON hardware config)"},
           {{"hw", "show", "hw_configs/dgx_h100.json", "--set", "oops"}, "--set oops: expected /json/pointer=value"},
           {{"hw", "show", "hw_configs/dgx_h100.json", "--set", "/components/gpu/count=0"},
            "--set:/components/gpu/count: expected an integer >= 1, got 0"},
           {{"hw", "show"}, "file is required"},
           {{"hw", "show", "hw_configs/dgx_h100.json", "--set", "/components/gpu/count=1e999"},
            "--set:/components/gpu/count: expected an integer >= 1, got \"1e999\""},
           {{"hw", "show", "hw_configs/dgx_h100.json", "--set", "/components/pcie/endpoints/99999999999999999999999/x=1"},
            "names no object in the config"},
           {{"hw", "show", "hw_configs"}, "hw_configs: is a folder, not a regular file (expected a JSON hardware config)"},
           {{"hw", "frobnicate"}, "unknown subcommand \"frobnicate\" for syntorch hw (valid: validate, show)"},
           {{"hw", "shwo", "x.json"}, "unknown subcommand \"shwo\" for syntorch hw, did you mean \"show\"?"},
           {{"hw", "show", "hw_configs/dgx_h100.json", "--colour"}, "--colour"},
           {{}, "A subcommand is required"},
           {{"simulate", "--model", "gpt3-125m", "--hw", ""}, "--hw: expected a value, got an empty string"},
           {{"simulate", "--model", "gpt3-125m", "--policy", ""}, "--policy: expected a value, got an empty string"},
           {{"simulate", "--model", "gpt3-125m", "--trace", ""}, "--trace: expected a value, got an empty string"},
           {{"simulate", "--model", "gpt3-125m", "--micro-batches", ""}, "--micro-batches: expected a value"},
           {{"kernel", "gemm", "--hw", "hw_configs/h100_sxm5_80gb.json", "--m", "8", "--n", "8", "--k", "8", "--algo", ""},
            "--algo: expected a value, got an empty string"},
           {{"sweep", "studies/gpu_generations_13b.yaml", "--jobs", "-1"}, "--jobs: Value -1 not in range 1 to 4096"},
           {{"hw", "show", "hw_configs/h200_sxm_141gb.json", "--set", "/components/gpu/components/hbm/bandwidth=3.35 B/s"},
            "bandwidth must be between 1 MB/s and 1 EB/s"},
           {{"hw", "show", "hw_configs/h100_sxm5_80gb.json", "--set", "/components/host/sync_latency=1e12 s"},
            "time must be at most 10 s"}}) {
    const Result r = run_cli(c.args);
    EXPECT_EQ(r.code, kExitBadInput) << c.message;
    EXPECT_NE((r.out + r.err).find(c.message), std::string::npos) << "expected: " << c.message << "\ngot: " << r.err;
  }
}

}  // namespace
}  // namespace syntorch::cli
