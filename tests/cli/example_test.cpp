// The examples, run as a user runs them: the xpuruntime training loop prints its steps, the
// captured step beats the eager one, and bad flags are refused.

#include <gtest/gtest.h>

#include <cstdio>
#include <regex>
#include <string>
#include <vector>

namespace {

#if defined(SYNTORCH_EXAMPLE_TRAIN)
struct ExampleRun {
  int status = 0;
  std::string out;
};

ExampleRun run_example(const std::vector<std::string>& args) {
  std::string command = "cd '" + std::string(SYNTORCH_SOURCE_DIR) + "' && '" + SYNTORCH_EXAMPLE_TRAIN + "'";
  for (const auto& a : args) command += " '" + a + "'";
  command += " 2>&1";
  ExampleRun r;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (!pipe) return {-1, ""};
  char buffer[4096];
  std::size_t n;
  while ((n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) r.out.append(buffer, n);
  const int status = ::pclose(pipe);
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

double step_ms(const std::string& out, const std::string& name) {
  std::smatch m;
  if (!std::regex_search(out, m, std::regex(name + R"(\s+([0-9.]+) ms)"))) return -1;
  return std::stod(m[1]);
}
#endif

TEST(Examples, TheXpuruntimeTrainingLoopRunsEagerAndCapturedSteps) {
#if !defined(SYNTORCH_EXAMPLE_TRAIN)
  GTEST_SKIP() << "the example is not known to this test build";
#else
  for (const char* dtype : {"bf16", "fp16"}) {
    const ExampleRun r = run_example({"--layers", "2", "--hidden", "256", "--batch", "2", "--seq", "128", "--steps", "2",
                               "--dtype", dtype});
    ASSERT_EQ(r.status, 0) << r.out;
    const double eager = step_ms(r.out, R"(step 1 \(eager\))");
    const double graph = step_ms(r.out, R"(step \(CUDA graph\))");
    ASSERT_GT(eager, 0) << r.out;
    ASSERT_GT(graph, 0) << r.out;
    // A small model is launch-bound: one graph launch beats a launch per kernel.
    EXPECT_LT(graph, eager) << r.out;
  }
  const ExampleRun bad = run_example({"--dtype", "fp8"});
  EXPECT_EQ(bad.status, 2) << bad.out;
  EXPECT_NE(bad.out.find("--dtype"), std::string::npos) << bad.out;
  const ExampleRun missing = run_example({"--hw", "no_such_config.json"});
  EXPECT_EQ(missing.status, 2) << missing.out;
  EXPECT_NE(missing.out.find("no_such_config.json"), std::string::npos) << missing.out;
#endif
}

}  // namespace
