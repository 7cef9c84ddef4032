// Inputs a user pastes by mistake (a file's contents as a flag, a megabyte as an id): every
// message quotes them cut, problems past the first hundred are counted, not printed, and the
// work is linear in the input.

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "run_cli.hpp"

namespace syntorch::cli {
namespace {

using testing::run_cli;
namespace fs = std::filesystem;

TEST(LongInput, AModelSpecWithThousandsOfBadKeysGivesABoundedReport) {
  std::string spec = "gpt:";
  for (int i = 0; i < 15000; ++i) spec += (i ? ",k" : "k") + std::to_string(i) + "=1";  // 134 KB
  const testing::Result r = run_cli({"simulate", "--model", spec});
  EXPECT_EQ(r.code, kExitBadInput);
  EXPECT_LT(r.err.size(), 64u << 10) << r.err.substr(0, 2000);
  EXPECT_NE(r.err.find("unknown key \"k0\""), std::string::npos) << r.err.substr(0, 2000);
  EXPECT_NE(r.err.find("... and 14"), std::string::npos);  // the rest counted
  EXPECT_NE(r.err.find("more bytes)"), std::string::npos);  // the spec itself quoted cut
}

TEST(LongInput, AFlagValueOrSubcommandThatIsAPastedFileIsQuotedCut) {
  const std::string pasted(1 << 20, 'x');
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"simulate", "--model", "gpt3-125m", "--batch", pasted},
        std::vector<std::string>{pasted}, std::vector<std::string>{"hw", "show", "--" + pasted}}) {
    const testing::Result r = run_cli(args);
    EXPECT_EQ(r.code, kExitBadInput);
    EXPECT_LT(r.err.size() + r.out.size(), 4096u) << r.err.substr(0, 500);
  }
}

TEST(LongInput, AMeasurementRowWithAMegabyteIdAndManyBadTokensIsOneShortError) {
  const fs::path file = fs::temp_directory_path() / ("syntorch_long_id_" + std::to_string(::getpid()) + ".csv");
  {
    std::ofstream out(file);
    out << "id,op,hw,params,metric,value,unit,source\n" << std::string(8 << 20, 'I')
        << ",gemm,a100_sxm4_80gb,\"m=64 n=128 k=128 dtype=fp16";
    for (int i = 0; i < 50000; ++i) out << " x";
    out << "\",latency,190,us,s\n";
  }
  const testing::Result r = run_cli({"validate", file.string()});
  fs::remove(file);
  EXPECT_EQ(r.code, kExitBadInput);
  EXPECT_LT(r.out.size() + r.err.size(), 16u << 10);
  EXPECT_NE(r.out.find("params: expected key=value, got \"x\""), std::string::npos) << r.out.substr(0, 3000);
}

}  // namespace
}  // namespace syntorch::cli
