// The layer rule of the design: base <- sim <- hw <- os <- runtime <- torch <- parallel <- models
// <- graph <- session <- tools and bench, with trace a leaf that depends only on base. A module may include
// only itself and the modules below it; models see only the torch and parallel API (and base);
// the front ends (tools/, bench/, the Python extension in python/src/, examples/) sit on top,
// include only session and that public API, and no library module reaches into them.

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
  const std::vector<std::string> order{"base",     "sim",    "hw",      "os",    "runtime",
                                       "torch",    "parallel", "models", "graph",   "session", "tools"};
  std::map<std::string, std::set<std::string>> allowed;
  for (std::size_t i = 0; i < order.size(); ++i) {
    for (std::size_t j = 0; j <= i; ++j) allowed[order[i]].insert(order[j]);
    allowed[order[i]].insert("trace");  // every layer may emit into the trace recorder
  }
  allowed["trace"] = {"trace", "base"};
  allowed["models"] = {"base", "torch", "parallel", "models"};  // the public API a user's model sees
  // The front ends meet the layers in session and the public torch/parallel/trace API: the CLI,
  // the Python extension, the end-to-end benchmarks and the examples written as a user writes
  // them. A micro-benchmark of one layer (bench_sim: the event loop and flow network;
  // bench_runtime: the predictor) measures that layer and includes it, and says so below.
  const std::set<std::string> front_end_api{"base", "torch", "parallel", "trace", "session"};
  allowed["tools"] = front_end_api;
  allowed["tools"].insert("tools");
  allowed["bench"] = front_end_api;
  allowed["python/src"] = front_end_api;
  allowed["examples"] = front_end_api;
  const std::map<std::string, std::set<std::string>> micro_benchmarks{{"bench_sim.cpp", {"sim"}},
                                                                      {"bench_runtime.cpp", {"runtime"}}};
  const std::regex include_re(R"(#include\s+[<"]syntorch/([a-z_]+)/)");
  const std::regex tools_re(R"(#include\s+"[./]*(tools|bench|python/src|examples)/)");
  const fs::path root(SYNTORCH_SOURCE_DIR);
  int files = 0;
  std::set<std::string> seen_modules;
  for (const auto& [module, ok] : allowed) {
    const bool front_end = module == "tools" || module == "bench" || module == "python/src" || module == "examples";
    const std::vector<fs::path> dirs = front_end ? std::vector<fs::path>{root / module}
                                                 : std::vector<fs::path>{root / "include" / "syntorch" / module,
                                                                         root / "src" / module};
    for (const fs::path& dir : dirs) {
      if (!fs::exists(dir)) continue;
      for (const auto& entry : fs::recursive_directory_iterator(dir)) {
        if (!entry.is_regular_file()) continue;
        ++files;
        std::ifstream in(entry.path());
        std::string line;
        int number = 0;
        if (entry.path().extension() != ".cpp" && entry.path().extension() != ".hpp") continue;
        seen_modules.insert(module);
        while (std::getline(in, line)) {
          ++number;
          std::smatch m;
          if (!front_end && std::regex_search(line, m, tools_re)) {
            ADD_FAILURE() << entry.path().string() << ":" << number << ": module " << module << " includes a front end";
          }
          if (std::regex_search(line, m, include_re) && !ok.count(m[1].str())) {
            const auto micro = micro_benchmarks.find(entry.path().filename().string());
            if (module == "bench" && micro != micro_benchmarks.end() && micro->second.count(m[1].str())) continue;
            ADD_FAILURE() << entry.path().string() << ":" << number << ": module " << module << " includes "
                          << m[1].str()
                          << (front_end ? ", which front ends reach only through session" : ", a module above it");
          }
        }
      }
    }
  }
  EXPECT_GT(files, 20);
  for (const std::string& module : order) EXPECT_TRUE(seen_modules.count(module)) << module << " was not checked";
  for (const char* front_end : {"bench", "python/src", "examples"}) EXPECT_TRUE(seen_modules.count(front_end)) << front_end;
}

// State per thread is state per rank program (each runs on a thread of its own), and a reader must
// be told why a variable is that: every thread_local carries a comment, on its line or just above
// it (a run of them shares one).
TEST(Layering, EveryThreadLocalSaysWhy) {
  const fs::path root(SYNTORCH_SOURCE_DIR);
  int found = 0;
  for (const char* top : {"src", "include", "tools", "python/src"}) {
    for (const auto& entry : fs::recursive_directory_iterator(root / top)) {
      const auto ext = entry.path().extension();
      if (!entry.is_regular_file() || (ext != ".cpp" && ext != ".hpp")) continue;
      std::ifstream in(entry.path());
      std::vector<std::string> lines;
      for (std::string line; std::getline(in, line);) lines.push_back(line);
      for (std::size_t i = 0; i < lines.size(); ++i) {
        const std::string& line = lines[i];
        const std::size_t at = line.find("thread_local ");
        if (at == std::string::npos || line.find("//") < at) continue;
        ++found;
        if (line.find("//", at) != std::string::npos) continue;  // a comment on its line
        std::size_t above = i;
        while (above > 0 && lines[above - 1].find("thread_local ") != std::string::npos) --above;
        const bool commented = above > 0 && lines[above - 1].find_first_not_of(' ') != std::string::npos &&
                               lines[above - 1].compare(lines[above - 1].find_first_not_of(' '), 2, "//") == 0;
        EXPECT_TRUE(commented) << entry.path().string() << ":" << i + 1 << ": a thread_local without a comment saying why";
      }
    }
  }
  EXPECT_GT(found, 10);
}

}  // namespace
