// The layer rule of the design: base <- sim <- hw <- os <- runtime <- torch <- parallel <- models
// <- tools, with trace a leaf that depends only on base. A module may include only itself and the
// modules below it.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <string>

namespace {

namespace fs = std::filesystem;

TEST(Layering, ModulesIncludeOnlyModulesBelowThem) {
  const std::vector<std::string> order{"base", "sim", "hw", "os", "runtime", "torch", "parallel", "models"};
  std::map<std::string, std::set<std::string>> allowed;
  for (std::size_t i = 0; i < order.size(); ++i) {
    for (std::size_t j = 0; j <= i; ++j) allowed[order[i]].insert(order[j]);
    allowed[order[i]].insert("trace");  // every layer may emit into the trace recorder
  }
  allowed["trace"] = {"trace", "base"};
  const std::regex include_re(R"(#include\s+[<"]syntorch/([a-z_]+)/)");
  const fs::path root(SYNTORCH_SOURCE_DIR);
  int files = 0;
  for (const auto& [module, ok] : allowed) {
    for (const fs::path& dir : {root / "include" / "syntorch" / module, root / "src" / module}) {
      if (!fs::exists(dir)) continue;
      for (const auto& entry : fs::recursive_directory_iterator(dir)) {
        if (!entry.is_regular_file()) continue;
        ++files;
        std::ifstream in(entry.path());
        std::string line;
        int number = 0;
        while (std::getline(in, line)) {
          ++number;
          std::smatch m;
          if (std::regex_search(line, m, include_re) && !ok.count(m[1].str())) {
            ADD_FAILURE() << entry.path().string() << ":" << number << ": module " << module << " includes "
                          << m[1].str() << ", a module above it";
          }
        }
      }
    }
  }
  EXPECT_GT(files, 20);
}

}  // namespace
