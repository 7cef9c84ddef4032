// A bounded random-mutation fuzz test of the input parsers: bundled configs, policies, studies
// and measurement files, each mutated a few hundred ways (bytes deleted, inserted, duplicated,
// numbers made huge, tiny or negative, nesting deepened, text cut off), fed to the command line
// or the library. Every outcome must be a result or a clear input error: exit 0 or 2 (with a
// message), never a crash, a hang, an internal error (exit 1) or another exception. The seed is
// fixed, so a failure reproduces; the mutated text is printed with it.

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "run_cli.hpp"
#include "syntorch/base/diagnostics.hpp"
#include "syntorch/session/parameters.hpp"
#include "syntorch/session/simulate.hpp"
#include "syntorch/session/study.hpp"
#include "syntorch/session/train.hpp"

namespace syntorch::cli {
namespace {

namespace fs = std::filesystem;

std::string read(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// One mutation of `text`, chosen by `rng`.
std::string mutate(std::string text, std::mt19937_64& rng) {
  auto pick = [&](std::size_t n) { return n == 0 ? std::size_t{0} : static_cast<std::size_t>(rng() % n); };
  static const std::vector<std::string> tokens{
      "1e999",  "-1",    "0",   "1e-30", "99999999999999999999", "null", "true", "[]", "{}", "\"\"", ",", ":",
      "\"",     "\\u0000", "\xff", "1 b/s", "1e12 s", "0 GHz",  "1 EB/s", "-3 TB/s", "NaN", "{\"a\":", "]]]", "extends"};
  const int kinds = 8;
  switch (pick(kinds)) {
    case 0:  // delete a run of bytes
      if (!text.empty()) {
        const std::size_t at = pick(text.size());
        text.erase(at, 1 + pick(16));
      }
      break;
    case 1:  // insert a random byte
      text.insert(pick(text.size() + 1), 1, static_cast<char>(pick(256)));
      break;
    case 2: {  // insert a token
      text.insert(pick(text.size() + 1), tokens[pick(tokens.size())]);
      break;
    }
    case 3: {  // replace a number with a token
      const std::size_t digit = text.find_first_of("0123456789", pick(text.size()));
      if (digit != std::string::npos) {
        const std::size_t end = text.find_first_not_of("0123456789.", digit);
        text.replace(digit, (end == std::string::npos ? text.size() : end) - digit, tokens[pick(tokens.size())]);
      }
      break;
    }
    case 4: {  // duplicate a chunk
      if (!text.empty()) {
        const std::size_t at = pick(text.size());
        const std::string chunk = text.substr(at, 1 + pick(200));
        text.insert(pick(text.size() + 1), chunk);
      }
      break;
    }
    case 5:  // cut off
      text.resize(pick(text.size() + 1));
      break;
    case 6: {  // nest deeply where a value may stand
      const std::size_t colon = text.find(':', pick(text.size()));
      if (colon != std::string::npos) {
        const std::size_t depth = 1 + pick(5000);
        text.insert(colon + 1, std::string(depth, '[') + "1" + std::string(depth, ']'));
      }
      break;
    }
    default: {  // swap two lines
      std::vector<std::string> lines;
      std::stringstream in(text);
      for (std::string l; std::getline(in, l);) lines.push_back(l);
      if (lines.size() > 1) std::swap(lines[pick(lines.size())], lines[pick(lines.size())]);
      text.clear();
      for (const auto& l : lines) text += l + "\n";
      break;
    }
  }
  return text;
}

class Fuzz : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("syntorch_fuzz_" + std::to_string(::getpid()));
    fs::create_directories(dir_ / "studies");
    fs::create_directories(dir_ / "a" / "b" / "c");
    // A copy of the bundled configs: mutated files go beside them (their "extends" resolve) and
    // studies below them, without touching the source tree.
    fs::copy(fs::path(SYNTORCH_SOURCE_DIR) / "hw_configs", dir_ / "hw_configs");
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string write(const std::string& name, const std::string& text) {
    const fs::path p = dir_ / name;
    std::ofstream(p, std::ios::binary) << text;
    return p.string();
  }

  // Runs the CLI and checks the outcome is a result or a clear input error.
  void expect_clean(const std::vector<std::string>& args, const std::string& input) {
    const testing::Result r = testing::run_cli(args);
    // Exit 2 says why: on stderr, or in the report it printed (validate lists rows in error).
    const bool ok = r.code == kExitOk || (r.code == kExitBadInput && !(r.err.empty() && r.out.empty())) || r.code == 3;
    EXPECT_TRUE(ok) << "exit " << r.code << "\nerr: " << r.err.substr(0, 2000)
                    << "\ninput: " << input.substr(0, 2000);
    EXPECT_EQ(r.err.find("internal error"), std::string::npos) << r.err.substr(0, 2000);
    ++runs_;
    (r.code == kExitOk ? accepted_ : refused_) += 1;
  }

  fs::path dir_;
  std::mt19937_64 rng_{20261123};
  int runs_ = 0;
  int accepted_ = 0;
  int refused_ = 0;
};

TEST_F(Fuzz, MutatedHardwareConfigsAreResultsOrInputErrors) {
  const fs::path root(SYNTORCH_SOURCE_DIR);
  const std::vector<std::string> seeds{read(root / "hw_configs" / "h100_sxm5_80gb.json"),
                                       read(root / "hw_configs" / "dgx_h100.json"),
                                       read(root / "hw_configs" / "simple_gpu.json"),
                                       read(root / "tests" / "data" / "design_form_gpu.json")};
  // Mutated configs sit beside the bundled ones so their "extends" still resolve.
  for (int i = 0; i < 1600; ++i) {
    const std::size_t seed = static_cast<std::size_t>(i) % seeds.size();
    std::string text = seeds[seed];
    for (int m = 0, n = 1 + static_cast<int>(rng_() % 3); m < n; ++m) text = mutate(text, rng_);
    const fs::path file = dir_ / "hw_configs" / "fuzz.json";
    std::ofstream(file, std::ios::binary) << text;
    expect_clean({"hw", "validate", file.string()}, text);
    if (i % 8 == 0) expect_clean({"hw", "show", file.string()}, text);
    // The design's form restricts ops: a kernel it lists and one it does not.
    if (seed == 3 && i % 16 == 3) {
      expect_clean({"kernel", "softmax", "--hw", file.string(), "--rows", "64", "--cols", "64"}, text);
      expect_clean({"kernel", "gelu", "--hw", file.string(), "--elements", "64"}, text);
    }
    fs::remove(file);
  }
  EXPECT_GT(runs_, 1600);
  // The mutations reach both sides: configs still whole, and configs broken in every way.
  EXPECT_GT(accepted_, 10);
  EXPECT_GT(refused_, 100);
}

TEST_F(Fuzz, MutatedPoliciesAndKernelFlagsAreResultsOrInputErrors) {
  const std::string seed = "gemm: {impl: tiled, precision: bf16}\nattention: flash_v2\nallreduce: ring\n";
  for (int i = 0; i < 500; ++i) {
    std::string text = seed;
    for (int m = 0, n = 1 + static_cast<int>(rng_() % 3); m < n; ++m) text = mutate(text, rng_);
    const std::string file = write("policy.yaml", text);
    expect_clean({"kernel", "gemm", "--hw", (dir_ / "hw_configs" / "h100_sxm5_80gb.json").string(), "--m", "256", "--n", "256", "--k",
                  "256", "--policy", file},
                 text);
    std::string inline_policy = mutate("gemm=tiled,attention=flash_v3:bf16", rng_);
    if (!inline_policy.empty()) {
      expect_clean({"kernel", "attention", "--hw", (dir_ / "hw_configs" / "h100_sxm5_80gb.json").string(), "--batch", "1", "--heads", "8",
                    "--seq-q", "1", "--seq-kv", "512", "--head-dim", "64", "--policy", inline_policy},
                   inline_policy);
    }
  }
}

TEST_F(Fuzz, MutatedStudiesParseOrAreInputErrors) {
  const fs::path root(SYNTORCH_SOURCE_DIR);
  const std::vector<std::string> seeds{read(root / "studies" / "gpu_generations_13b.yaml"),
                                       read(root / "studies" / "gemm_roofline.yaml"),
                                       read(root / "tests" / "data" / "studies" / "zip.yaml")};
  int parsed = 0;
  for (int i = 0; i < 1000; ++i) {
    std::string text = seeds[static_cast<std::size_t>(i) % seeds.size()];
    for (int m = 0, n = 1 + static_cast<int>(rng_() % 3); m < n; ++m) text = mutate(text, rng_);
    // Where relative config paths resolve as the originals' do (../hw_configs, ../../../hw_configs).
    const fs::path file = (i % seeds.size() == 2 ? dir_ / "a" / "b" / "c" : dir_ / "studies") / "fuzz.yaml";
    std::ofstream(file, std::ios::binary) << text;
    try {
      const session::Study study = session::load_study(file.string());
      (void)session::expand(study);
      ++parsed;
    } catch (const InputError& e) {
      EXPECT_FALSE(e.diagnostics().empty()) << text;
    } catch (const std::exception& e) {
      ADD_FAILURE() << "load_study threw " << e.what() << "\ninput: " << text.substr(0, 2000);
    }
    fs::remove(file);
  }
  EXPECT_GT(parsed, 0);  // the mutations leave some studies whole
}

TEST_F(Fuzz, MutatedMeasurementFilesAreResultsOrInputErrors) {
  const std::string seed =
      "id,op,hw,params,metric,value,unit,source\n"
      "F1,gemm,a100_sxm4_80gb,m=512 n=512 k=512 dtype=fp16,latency,30,us,x\n"
      "F2,softmax,a100_sxm4_80gb,rows=256 cols=1024 dtype=fp16 timing=host,latency,12,us,x\n"
      "F3,allreduce,dgx_a100,ranks=8 bytes=1048576 dtype=fp16,latency,40,us,x\n";
  for (int i = 0; i < 400; ++i) {
    std::string text = seed;
    for (int m = 0, n = 1 + static_cast<int>(rng_() % 3); m < n; ++m) text = mutate(text, rng_);
    const std::string file = write("m.csv", text);
    expect_clean({"validate", file, "--json", "--hw-dir", (dir_ / "hw_configs").string()}, text);
  }
}

// Every run parameter's text, as the CLI, studies, measurement rows and Python's keywords give it:
// mutated, it is taken or refused under its own key, never thrown out of the parser; and runs of
// the command line with mutated choices and models are results or input errors.
template <class Spec>
void fuzz_parameter_table(const std::vector<session::Parameter<Spec>>& table, std::mt19937_64& rng, int& refused) {
  const Spec defaults{};
  for (const session::Parameter<Spec>& p : table) {
    const nlohmann::ordered_json v = p.value(defaults);
    const std::string seed = p.required ? "gpt3-125m" : v.is_string() ? v.get<std::string>() : v.dump();
    for (int i = 0; i < 60; ++i) {
      std::string text = seed;
      for (int m = 0, n = 1 + static_cast<int>(rng() % 3); m < n; ++m) text = mutate(text, rng);
      Spec spec;
      Diagnostics d;
      try {
        p.parse(spec, text, d, "fuzz", p.key);
      } catch (const std::exception& e) {
        ADD_FAILURE() << p.key << " threw " << e.what() << " for \"" << text.substr(0, 200) << "\"";
      }
      if (!d.empty()) {
        ++refused;
        EXPECT_NE(d.to_string().find("fuzz"), std::string::npos) << d.to_string();
      }
    }
  }
}

TEST_F(Fuzz, MutatedRunParametersAreTakenOrRefusedByName) {
  int refused = 0;
  fuzz_parameter_table(session::generation_parameters(), rng_, refused);
  fuzz_parameter_table(session::training_parameters(), rng_, refused);
  EXPECT_GT(refused, 200);
  // Through the command line: the parameters whose mutations cannot ask for a huge run.
  const std::vector<std::pair<std::string, std::string>> flags{
      {"--model", "gpt3-125m"}, {"--dtype", "bf16"}, {"--kv-dtype", "fp8"}, {"--framework", "native"},
      {"--ranks", "one"},       {"--expert-skew", "0.5"}};
  for (int i = 0; i < 120; ++i) {
    const auto& [flag, seed] = flags[static_cast<std::size_t>(i) % flags.size()];
    const std::string text = mutate(seed, rng_);
    std::vector<std::string> args{"simulate", "--hw", (dir_ / "hw_configs" / "h100_sxm5_80gb.json").string(),
                                  "--input-tokens", "8", "--output-tokens", "2"};
    if (flag != "--model") args.insert(args.end(), {"--model", "gpt3-125m"});
    args.insert(args.end(), {flag, text});
    expect_clean(args, flag + " " + text);
  }
}

}  // namespace
}  // namespace syntorch::cli
