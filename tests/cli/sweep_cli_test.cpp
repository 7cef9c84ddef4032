// `syntorch sweep`: studies parsed and validated whole, points run in parallel, failed points as
// rows, results as CSV, JSON, SVG plots and index.html, bad studies named by line and key.

#include <gtest/gtest.h>
#include <fmt/format.h>
#include <cmath>

#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "run_cli.hpp"

namespace {

using namespace syntorch::cli;
using namespace syntorch::cli::testing;
namespace fs = std::filesystem;

std::string read(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

fs::path fresh_dir(const std::string& name) {
  const fs::path dir = fs::path(::testing::TempDir()) / name;
  fs::remove_all(dir);
  return dir;
}

TEST(SweepCli, RunsEveryPointAndKeepsFailedOnesAsRows) {
  const fs::path out = fresh_dir("sweep_small");
  const Result r = run_cli({"sweep", "tests/data/studies/small.yaml", "--jobs", "2", "--out", out.string()});
  ASSERT_EQ(r.code, kExitOk) << r.err << r.out;
  const auto j = nlohmann::json::parse(read(out / "results.json"));
  ASSERT_EQ(j["rows"].size(), 6u);  // 3 tp x 2 HBM sizes
  std::map<std::string, int> status;
  for (const auto& row : j["rows"]) ++status[row["status"].get<std::string>()];
  EXPECT_EQ(status["ok"], 2);       // tp 1 and 2 with 80 GB
  EXPECT_EQ(status["oom"], 2);      // 100 MB of HBM
  EXPECT_EQ(status["skipped"], 2);  // tp 16 on 8 GPUs
  for (const auto& row : j["rows"]) {
    if (row["status"] == "ok") {
      EXPECT_GT(row["tokens_per_s"].get<double>(), 0);
      EXPECT_EQ(row["HBM size"], "80 GB");
    } else {
      EXPECT_FALSE(row["reason"].get<std::string>().empty());
      EXPECT_TRUE(row["tpot_ms"].is_null());
    }
  }
  const std::string csv = read(out / "results.csv");
  EXPECT_EQ(csv.substr(0, csv.find('\n')),
            "tp,HBM size,status,reason,ttft_ms,tpot_ms,e2e_ms,tokens_per_s,tokens_per_s_per_gpu,peak_memory_bytes,mfu,"
            "compute_ms,memory_ms,communication_ms,launch_idle_ms");
  for (const char* plot : {"plots/tpot_ms.svg", "plots/tokens_per_s.svg"}) {
    const std::string svg = read(out / plot);
    EXPECT_NE(svg.find("<svg"), std::string::npos) << plot;
    EXPECT_NE(svg.find("HBM size=80 GB"), std::string::npos) << plot;  // a series per value of the second axis
  }
  const std::string html = read(out / "index.html");
  EXPECT_NE(html.find("plots/tpot_ms.svg"), std::string::npos);
  EXPECT_LT(html.find("plots/tpot_ms.svg"), html.find("<table"));
  EXPECT_NE(r.out.find("2 ok"), std::string::npos) << r.out;
  // The page's table: labels with units, bytes in GB, 4 significant digits (the CSV keeps them all).
  for (const char* header : {"time per output token (ms)", "peak memory per device (GB)", "model FLOPs utilisation (%)"}) {
    EXPECT_NE(html.find(header), std::string::npos) << header;
  }
  for (const auto& row : j["rows"]) {
    if (row["status"] != "ok") continue;
    const double tpot = row["tpot_ms"].get<double>();
    const int digits = static_cast<int>(std::floor(std::log10(tpot))) + 1;
    const std::string shown = fmt::format("<td class=\"num\">{:.{}f}</td>", tpot, std::max(0, 4 - digits));
    EXPECT_NE(html.find(shown), std::string::npos) << shown;
    EXPECT_NE(csv.find(fmt::format("{}", tpot)), std::string::npos);  // every digit
  }
  // The plots' ticks carry their units.
  EXPECT_NE(read(out / "plots/tpot_ms.svg").find(" ms</text>"), std::string::npos);
}

TEST(SweepCli, OneJobAndTwoJobsGiveTheSameResults) {
  const fs::path a = fresh_dir("sweep_j1"), b = fresh_dir("sweep_j2");
  ASSERT_EQ(run_cli({"sweep", "tests/data/studies/zip.yaml", "--jobs", "1", "--out", a.string()}).code, kExitOk);
  ASSERT_EQ(run_cli({"sweep", "tests/data/studies/zip.yaml", "--jobs", "2", "--out", b.string()}).code, kExitOk);
  EXPECT_EQ(read(a / "results.csv"), read(b / "results.csv"));
  const auto j = nlohmann::json::parse(read(a / "results.json"));
  ASSERT_EQ(j["rows"].size(), 3u);  // zipped: (4,1), (2,2), (1,4)
  EXPECT_EQ(j["rows"][1]["tp"], 2);  // plain numbers as numbers
  EXPECT_EQ(j["rows"][1]["pp"], 2);
  EXPECT_EQ(read(a / "plots/tpot_ms.svg"), read(b / "plots/tpot_ms.svg"));
}

TEST(SweepCli, KernelStudiesDrawARoofline) {
  const fs::path out = fresh_dir("sweep_kernel");
  const Result r = run_cli({"sweep", "tests/data/studies/kernel.yaml", "--out", out.string()});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  const auto j = nlohmann::json::parse(read(out / "results.json"));
  ASSERT_EQ(j["rows"].size(), 6u);
  EXPECT_EQ(j["rows"][0]["status"], "ok");
  EXPECT_EQ(j["rows"][0]["bound"], "memory");
  EXPECT_EQ(j["rows"][5]["status"], "error");  // fp8 on an A100
  EXPECT_NE(j["rows"][5]["reason"].get<std::string>().find("fp8"), std::string::npos);
  EXPECT_NE(read(out / "plots/roofline.svg").find("<svg"), std::string::npos);
}

TEST(SweepCli, ABadStudyIsRejectedWholeWithLinesAndKeys) {
  const fs::path out = fresh_dir("sweep_bad");
  const Result r = run_cli({"sweep", "tests/data/studies/bad.yaml", "--out", out.string()});
  EXPECT_EQ(r.code, kExitBadInput);
  for (const char* message :
       {"bad.yaml:4:/base/model: unknown model \"gpt3-176b\", did you mean \"gpt3-175b\"?",
        "bad.yaml:5:/base/batch: expected a positive integer, got \"many\"",
        "bad.yaml:10:/axes/1/values: expected a non-empty list of values",
        "bad.yaml:12:/axes/2/valuez: unknown key \"valuez\", did you mean \"values\"?",
        "bad.yaml:14:/axes/3/values/1: unknown dtype \"fp17\"",
        "bad.yaml:15:/combine: expected product or zip, got \"cartesian\""}) {
    EXPECT_NE(r.err.find(message), std::string::npos) << "expected: " << message << "\ngot:\n" << r.err;
  }
  EXPECT_FALSE(fs::exists(out));  // nothing ran
}

TEST(SweepCli, AnUnknownConfigFieldIsNamedWithItsLine) {
  const fs::path dir = fresh_dir("sweep_badfield");
  fs::create_directories(dir);
  std::ofstream(dir / "s.yaml") << "base: {hw: " << fs::absolute("hw_configs/dgx_a100.json").string()
                                << ", model: gpt3-125m}\naxes:\n  - hw: /components/gpu/components/hbm/bandwidth\n"
                                   "    values: [2 TB/s, fast]\n";
  const Result r = run_cli({"sweep", (dir / "s.yaml").string(), "--out", (dir / "out").string()});
  EXPECT_EQ(r.code, kExitBadInput);
  EXPECT_NE(r.err.find("s.yaml:4:/axes/0/values/1"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("expected a bandwidth"), std::string::npos) << r.err;
  // A path that names no field of the config.
  std::ofstream(dir / "p.yaml") << "base: {hw: " << fs::absolute("hw_configs/dgx_a100.json").string()
                                << ", model: gpt3-125m}\naxes:\n  - hw: /components/gpu/components/hbm/bandwith\n"
                                   "    values: [2 TB/s]\n";
  const Result p = run_cli({"sweep", (dir / "p.yaml").string(), "--out", (dir / "out").string()});
  EXPECT_EQ(p.code, kExitBadInput);
  EXPECT_NE(p.err.find("p.yaml:4:/axes/0/values/0"), std::string::npos) << p.err;
  EXPECT_NE(p.err.find("unknown key \"bandwith\""), std::string::npos) << p.err;
  EXPECT_FALSE(fs::exists(dir / "out"));
}

TEST(SweepCli, AxisNamesMustNotClashWithOutputColumnsOrEachOther) {
  const fs::path dir = fresh_dir("sweep_names");
  fs::create_directories(dir);
  std::ofstream(dir / "n.yaml") << "base: {hw: " << fs::absolute("hw_configs/dgx_a100.json").string()
                                << ", model: gpt3-125m}\naxes:\n  - {param: batch, name: status, values: [1]}\n"
                                   "  - {param: tp, name: x, values: [1]}\n  - {param: pp, name: x, values: [1]}\n";
  const Result r = run_cli({"sweep", (dir / "n.yaml").string(), "--out", (dir / "out").string()});
  EXPECT_EQ(r.code, kExitBadInput);
  EXPECT_NE(r.err.find("n.yaml:3:/axes/0/name: \"status\" is an output column"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("n.yaml:5:/axes/2/name: two axes are named \"x\""), std::string::npos) << r.err;
}

TEST(SweepCli, AnUnwritableOutputFolderIsAnErrorBeforeAnyPointRuns) {
  const Result r = run_cli({"sweep", "tests/data/studies/zip.yaml", "--out", "/proc/no/such/place"});
  EXPECT_EQ(r.code, kExitBadInput);
  EXPECT_NE(r.err.find("--out: /proc/no/such/place"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("points done"), std::string::npos) << r.err;
}

TEST(SweepCli, MissingFilesAndMalformedYamlExitTwo) {
  EXPECT_EQ(run_cli({"sweep", "no_such_study.yaml"}).code, kExitBadInput);
  const fs::path dir = fresh_dir("sweep_malformed");
  fs::create_directories(dir);
  std::ofstream(dir / "m.yaml") << "base: [unclosed\n";
  const Result r = run_cli({"sweep", (dir / "m.yaml").string()});
  EXPECT_EQ(r.code, kExitBadInput);
  EXPECT_NE(r.err.find("malformed YAML"), std::string::npos) << r.err;
}

#if defined(SYNTORCH_BINARY)
TEST(SweepCli, UnderMpiTwoRanksSplitThePointsAndRankZeroWritesThemAll) {
  if (std::system("command -v mpirun > /dev/null 2>&1") != 0) GTEST_SKIP() << "mpirun is not installed";
  const fs::path out = fresh_dir("sweep_mpi");
  const std::string cmd = std::string("ASAN_OPTIONS=detect_leaks=0 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 ") +
                          "mpirun --oversubscribe -x ASAN_OPTIONS " +
                          "-np 2 " + SYNTORCH_BINARY + " sweep tests/data/studies/zip.yaml --jobs 1 --out " + out.string() +
                          " > " + (fs::path(::testing::TempDir()) / "mpi.log").string() + " 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << read(fs::path(::testing::TempDir()) / "mpi.log");
  const auto j = nlohmann::json::parse(read(out / "results.json"));
  ASSERT_EQ(j["rows"].size(), 3u);
  for (const auto& row : j["rows"]) EXPECT_EQ(row["status"], "ok");
  EXPECT_NE(read(fs::path(::testing::TempDir()) / "mpi.log").find("on each of 2 MPI ranks"), std::string::npos);
}
#endif

}  // namespace

#if defined(SYNTORCH_BINARY)
namespace {
TEST(SweepCli, CtrlCStopsStartingPointsAndKeepsTheFinishedOnes) {
  if (std::system("command -v timeout > /dev/null 2>&1") != 0) GTEST_SKIP() << "timeout is not installed";
  const fs::path dir = fresh_dir("sweep_interrupt");
  fs::create_directories(dir);
  // Enough points, each a fraction of a second, that the interrupt lands midway.
  constexpr int kPoints = 50 * 60;
  std::ofstream(dir / "long.yaml") << "base: {hw: " << fs::absolute("hw_configs/h100_sxm5_80gb.json").string()
                                   << ", model: gpt3-125m, input_tokens: 32, output_tokens: 8}\naxes:\n"
                                      "  - {hw: /components/gpu/components/hbm/bandwidth, values: [";
  {
    std::ofstream append(dir / "long.yaml", std::ios::app);
    for (int i = 0; i < 50; ++i) append << (i ? ", " : "") << "\"" << 1000 + 50 * i << " GB/s\"";
    append << "]}\n  - {param: batch, values: [";
    for (int i = 0; i < 60; ++i) append << (i ? ", " : "") << 1 + i;
    append << "]}\n";
  }
  const std::string cmd = std::string("timeout --preserve-status -s INT 3 ") + SYNTORCH_BINARY + " sweep " +
                          (dir / "long.yaml").string() + " --jobs 1 --out " + (dir / "out").string() + " > " +
                          (dir / "log").string() + " 2>&1";
  const int status = std::system(cmd.c_str());
  ASSERT_TRUE(WIFEXITED(status)) << read(dir / "log");
  EXPECT_EQ(WEXITSTATUS(status), 130) << read(dir / "log");
  const auto j = nlohmann::json::parse(read(dir / "out" / "results.json"));
  ASSERT_EQ(j["rows"].size(), static_cast<std::size_t>(kPoints));
  int ok = 0, not_run = 0;
  for (const auto& row : j["rows"]) {
    ok += row["status"] == "ok";
    not_run += row["status"] == "not run";
  }
  EXPECT_GT(ok, 0);
  EXPECT_GT(not_run, 0);
  EXPECT_EQ(ok + not_run, kPoints);
  EXPECT_NE(read(dir / "log").find("interrupted"), std::string::npos) << read(dir / "log");
}
}  // namespace
#endif
