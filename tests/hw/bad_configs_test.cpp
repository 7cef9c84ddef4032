// Every tests/bad_configs/NAME.json must fail to load with each message listed in NAME.expect
// (one per line; the file part is relative to tests/bad_configs/).

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "syntorch/hw/machine.hpp"

namespace syntorch::hw {
namespace {

namespace fs = std::filesystem;

const fs::path kDir = fs::path(SYNTORCH_SOURCE_DIR) / "tests" / "bad_configs";

std::vector<std::string> read_lines(const fs::path& p) {
  std::ifstream in(p);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) lines.push_back(line);
  }
  return lines;
}

std::string load_errors(const fs::path& file) {
  try {
    Machine::load(file.string());
  } catch (const InputError& e) {
    std::string text = e.diagnostics().to_string();
    // Make file names relative to the bad_configs folder.
    const std::string prefix = kDir.string() + "/";
    for (std::size_t p; (p = text.find(prefix)) != std::string::npos;) text.erase(p, prefix.size());
    return text;
  }
  return "";
}

TEST(BadConfigs, AtLeastFifteenDistinctCasesEachWithExpectations) {
  int cases = 0;
  for (const auto& entry : fs::directory_iterator(kDir)) {
    if (entry.path().extension() != ".json") continue;
    ++cases;
    fs::path expect = entry.path();
    expect.replace_extension(".expect");
    EXPECT_TRUE(fs::exists(expect)) << entry.path() << " has no .expect file";
    EXPECT_FALSE(read_lines(expect).empty()) << expect << " lists no message";
  }
  EXPECT_GE(cases, 15);
}

TEST(BadConfigs, EachFailsWithItsExpectedMessages) {
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(kDir)) {
    if (entry.path().extension() == ".json") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  for (const auto& file : files) {
    SCOPED_TRACE(file.filename().string());
    const std::string errors = load_errors(file);
    ASSERT_FALSE(errors.empty()) << "loaded without error";
    fs::path expect = file;
    expect.replace_extension(".expect");
    const auto lines = read_lines(expect);
    for (const auto& line : lines) {
      EXPECT_NE(errors.find(line), std::string::npos) << "missing message:\n  " << line << "\ngot:\n" << errors;
    }
    // One message per problem: no more lines than the problems listed.
    EXPECT_EQ(static_cast<std::size_t>(std::count(errors.begin(), errors.end(), '\n')), lines.size()) << errors;
  }
}

TEST(BadConfigs, AllProblemsInOneFileAreReportedTogether) {
  const std::string errors = load_errors(kDir / "multiple_errors.json");
  EXPECT_EQ(std::count(errors.begin(), errors.end(), '\n'), 3) << errors;
}

}  // namespace
}  // namespace syntorch::hw
