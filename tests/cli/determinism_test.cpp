// Determinism across processes: the same inputs give byte-identical outputs from separate runs of
// the binary (fresh address spaces, thread timings and hash seeds), and the same as in-process.

#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <string>
#include <vector>

#include "run_cli.hpp"

namespace syntorch::cli {
namespace {

#if defined(SYNTORCH_BINARY)
std::string run_binary(const std::vector<std::string>& args) {
  std::string command = "cd '" + std::string(SYNTORCH_SOURCE_DIR) + "' && '" + SYNTORCH_BINARY + "'";
  for (const auto& a : args) command += " '" + a + "'";
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return "popen failed";
  std::string out;
  std::array<char, 4096> buf{};
  while (std::fgets(buf.data(), static_cast<int>(buf.size()), pipe) != nullptr) out += buf.data();
  const int status = ::pclose(pipe);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? out : "exit " + std::to_string(status) + ": " + out;
}
#endif

TEST(Determinism, SeparateProcessesPrintTheSameBytes) {
#if !defined(SYNTORCH_BINARY)
  GTEST_SKIP() << "the syntorch binary is not known to this test build";
#else
  const std::vector<std::vector<std::string>> runs{
      {"kernel", "allreduce", "--hw", "hw_configs/dgx_h100.json", "--ranks", "8", "--bytes", "123456789", "--json"},
      {"kernel", "gemm", "--hw", "hw_configs/h100_sxm5_80gb.json", "--m", "3000", "--n", "5000", "--k", "7000",
       "--json"},
      {"simulate", "--model", "gpt3-1.3b", "--hw", "hw_configs/dgx_h100.json", "--tp", "2", "--pp", "2", "--batch",
       "4", "--input-tokens", "256", "--output-tokens", "8", "--json"},
  };
  for (const auto& args : runs) {
    const std::string first = run_binary(args);
    const std::string second = run_binary(args);
    EXPECT_EQ(first.rfind("exit ", 0), std::string::npos) << first;
    EXPECT_GT(first.size(), 100u) << first;
    EXPECT_EQ(first, second) << args[0] << " " << args[1];
    const testing::Result in_process = testing::run_cli(args);
    EXPECT_EQ(in_process.out, first) << args[0] << " " << args[1];
  }
#endif
}

}  // namespace
}  // namespace syntorch::cli
