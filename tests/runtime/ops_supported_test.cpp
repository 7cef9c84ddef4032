// A compute unit's metadata.ops_supported (the design's form) restricts what its device runs; the
// names are the op table's or PyTorch's.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "syntorch/runtime/ops_supported.hpp"
#include "syntorch/runtime/predictor.hpp"

namespace syntorch::runtime {
namespace {

namespace fs = std::filesystem;

std::string write_config(const std::string& name, const std::string& ops) {
  const fs::path dir = fs::temp_directory_path() / "syntorch_ops_supported_test";
  fs::create_directories(dir);
  const fs::path p = dir / name;
  std::ofstream(p) << R"({"name": "restricted", "components": {
    "gpu": {"type": "group", "components": ["sm", "hbm"]},
    "sm": {"type": "compute", "count": 8, "clock": "1 GHz", "vector_ops_per_cycle": {"fp32": 128, "fp16": 256},
           "matrix_ops_per_cycle": {"fp16": 1024}, "gemm_tiles": ["64x64x32"],
           "metadata": {"ops_supported": )" << ops << R"(}},
    "hbm": {"type": "memory", "size": 1073741824, "bandwidth": "100 GB/s"}}})";
  return p.string();
}

TEST(OpsSupported, PyTorchNamesStandForTheOpsTheyLowerTo) {
  const auto matmul = ops_named("matmul");
  ASSERT_TRUE(matmul);
  EXPECT_TRUE(matmul->test(static_cast<std::size_t>(OpKind::gemm)));
  EXPECT_TRUE(matmul->test(static_cast<std::size_t>(OpKind::bmm)));
  EXPECT_EQ(matmul->count(), 2u);
  EXPECT_TRUE(ops_named("scaled_dot_product_attention")->test(static_cast<std::size_t>(OpKind::attention)));
  EXPECT_TRUE(ops_named("softmax")->test(static_cast<std::size_t>(OpKind::softmax)));
  EXPECT_FALSE(ops_named("conv2d"));
}

TEST(OpsSupported, ADeviceRunsOnlyWhatItsConfigLists) {
  const hw::Machine m = hw::Machine::load(write_config("ok.json", R"(["matmul", "add"])"));
  Predictor p(m, KernelPolicy{});
  OpDesc gemm;
  gemm.kind = OpKind::gemm;
  gemm.m = gemm.n = gemm.k = 256;
  EXPECT_GT(p.predict(gemm).time_s, 0);
  OpDesc softmax;
  softmax.kind = OpKind::softmax;
  softmax.rows = softmax.cols = 256;
  try {
    p.predict(softmax);
    ADD_FAILURE() << "softmax is not listed";
  } catch (const InputError& e) {
    const std::string text = e.diagnostics().to_string();
    EXPECT_NE(text.find("ok.json:/components/sm/metadata/ops_supported: gpu[0] may run only matmul, add"),
              std::string::npos) << text;
    EXPECT_NE(text.find("softmax is not among them"), std::string::npos) << text;
  }
}

TEST(OpsSupported, AnUnknownNameIsAnErrorAtItsPointer) {
  const hw::Machine m = hw::Machine::load(write_config("bad.json", R"(["matmul", "mull"])"));
  try {
    Predictor p(m, KernelPolicy{});
    ADD_FAILURE() << "mull is no op";
  } catch (const InputError& e) {
    const std::string text = e.diagnostics().to_string();
    EXPECT_NE(text.find("bad.json:/components/sm/metadata/ops_supported/1: unknown op \"mull\", did you mean \"mul\"?"),
              std::string::npos) << text;
  }
}

}  // namespace
}  // namespace syntorch::runtime
