// The binary's outputs when they cannot be written: past the file-size limit (ulimit -f) a trace
// is an error with nothing half-written left, not a SIGXFSZ kill; a closed or full standard
// output is an error, not a silent exit 0.

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

namespace {

namespace fs = std::filesystem;

#if defined(SYNTORCH_BINARY)
int shell(const std::string& command) {
  const int status = std::system(("cd '" + std::string(SYNTORCH_SOURCE_DIR) + "' && " + command).c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
#endif

TEST(OutputLimits, ATracePastTheFileSizeLimitIsAnErrorAndLeavesNothing) {
#if !defined(SYNTORCH_BINARY)
  GTEST_SKIP() << "the syntorch binary is not known to this test build";
#else
  const fs::path dir = fs::temp_directory_path() / ("syntorch_limits_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string trace = (dir / "big.json").string();
  const int code = shell("(ulimit -f 200; '" + std::string(SYNTORCH_BINARY) +
                         "' simulate --model gpt3-1.3b --hw hw_configs/dgx_h100.json --tp 2 --trace '" + trace +
                         "' >/dev/null 2>&1)");
  EXPECT_EQ(code, 2);
  EXPECT_TRUE(fs::is_empty(dir)) << "left behind in " << dir.string();
  fs::remove_all(dir);
#endif
}

TEST(OutputLimits, AFullOrClosedStandardOutputIsAnError) {
#if !defined(SYNTORCH_BINARY)
  GTEST_SKIP() << "the syntorch binary is not known to this test build";
#else
  const std::string show = "'" + std::string(SYNTORCH_BINARY) + "' hw show hw_configs/dgx_h100.json";
  EXPECT_EQ(shell(show + " >/dev/null 2>&1"), 0);
  EXPECT_EQ(shell(show + " >/dev/full 2>/dev/null"), 2);
  EXPECT_EQ(shell(show + " >&- 2>/dev/null"), 2);
#endif
}

}  // namespace
