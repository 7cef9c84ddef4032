// Studies are checked whole before anything runs: how many points they make, and where their
// results would go.

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "syntorch/base/diagnostics.hpp"
#include "syntorch/session/study.hpp"

namespace {

using namespace syntorch;
namespace fs = std::filesystem;

std::string study(const std::string& name, const std::string& text) {
  const fs::path dir = fs::temp_directory_path() / ("syntorch_study_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  fs::copy(fs::path(SYNTORCH_SOURCE_DIR) / "hw_configs" / "h100_sxm5_80gb.json", dir / "h100.json",
           fs::copy_options::overwrite_existing);
  std::ofstream(dir / name) << text;
  return (dir / name).string();
}

std::string problems(const std::string& path) {
  try {
    session::load_study(path);
  } catch (const InputError& e) {
    return e.diagnostics().to_string();
  }
  return "";
}

std::string values(int n) {
  std::string v = "[";
  for (int i = 1; i <= n; ++i) v += (i > 1 ? ", " : "") + std::to_string(i);
  return v + "]";
}

TEST(Study, TooManyPointsAreRefusedWithTheirCountBeforeAnythingRuns) {
  const std::string axes = "axes:\n  - {param: batch, values: " + values(100) + "}\n  - {param: input_tokens, values: " +
                           values(100) + "}\n  - {param: output_tokens, values: " + values(100) + "}\n" +
                           "  - {param: tp, values: " + values(100) + "}\n";
  const std::string base = "base: {hw: h100.json, model: gpt3-125m}\n";
  const std::string text = problems(study("big.yaml", base + axes));
  EXPECT_NE(text.find("100000000 points (100 x 100 x 100 x 100): more than the 100000"), std::string::npos) << text;
  // Asked for, the same study is accepted (and not expanded here).
  EXPECT_EQ(problems(study("asked.yaml", base + "max_points: 200000000\n" + axes)), "");
}

TEST(Study, ANameThatWouldLeaveTheSweepsFolderIsRefused) {
  const std::string text =
      problems(study("escape.yaml", "name: ../../etc\nbase: {hw: h100.json, model: gpt3-125m}\n"
                                    "axes:\n  - {param: batch, values: [1, 2]}\n"));
  EXPECT_NE(text.find("/name: expected a name for a folder under sweeps/"), std::string::npos) << text;
}

}  // namespace
