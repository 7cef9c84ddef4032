// The traces a simulated run writes, opened by the tools users open them with: ASTRA-sim replays
// the Chakra files (every rank must finish) and Perfetto's trace_processor loads the .pftrace and
// Chrome JSON (no error or data-loss stat, every flow arrives). The readers are prebuilt beside
// the project (../shared/tools/readers); a build without them skips this.

#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <string>

namespace {

namespace fs = std::filesystem;

TEST(RealReaders, AstraSimAndTraceProcessorReadATp2Pp2RunsTraces) {
#if !defined(SYNTORCH_BINARY)
  GTEST_SKIP() << "the syntorch binary is not known to this test build";
#else
  const fs::path check = fs::path(SYNTORCH_SOURCE_DIR) / ".." / "shared" / "tools" / "readers" / "check.sh";
  if (!fs::exists(check)) GTEST_SKIP() << "no readers at " << check.string();
  const std::string command = "cd '" + std::string(SYNTORCH_SOURCE_DIR) + "' && bash '" + check.string() + "' '" +
                              SYNTORCH_BINARY + "' 2>&1";
  std::string out;
  FILE* pipe = ::popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::array<char, 4096> buf{};
  while (std::fgets(buf.data(), static_cast<int>(buf.size()), pipe) != nullptr) out += buf.data();
  const int status = ::pclose(pipe);
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  if (code == 2) GTEST_SKIP() << "the readers cannot run here: " << out;
  EXPECT_EQ(code, 0) << out;
  EXPECT_NE(out.find("ASTRA-sim: 4/4 ranks finished"), std::string::npos) << out;
  EXPECT_NE(out.find("run.pftrace: 0 error stats"), std::string::npos) << out;
  EXPECT_NE(out.find("run.json: 0 error stats"), std::string::npos) << out;
#endif
}

}  // namespace
