// Calibration fits config fields to measurements: it recovers a bandwidth that made the
// measurements, writes a config that predicts them, and names what it cannot fit.

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "syntorch/hw/machine.hpp"
#include "syntorch/runtime/predictor.hpp"
#include "syntorch/session/calibrate.hpp"

namespace {

using namespace syntorch;
namespace fs = std::filesystem;

const std::string kHbm = "/components/gpu/components/hbm/bandwidth";

class Calibrate : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("syntorch_calibrate_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::create_directories(dir_);
    config_ = (dir_ / "my_gpu.json").string();
    fs::copy_file(std::string(SYNTORCH_SOURCE_DIR) + "/hw_configs/a100_sxm4_80gb.json", config_,
                  fs::copy_options::overwrite_existing);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Measurements of memory-bound kernels on `config_` made as if its HBM had `true_bandwidth`.
  std::string measurements(const std::string& true_bandwidth) {
    const hw::Machine truth = hw::Machine::load(config_, {{kHbm, true_bandwidth}});
    runtime::Predictor predictor(truth, {});
    const std::string file = (dir_ / "measured.csv").string();
    std::ofstream out(file);
    out << "id,op,hw,params,metric,value,unit,source\n";
    int id = 0;
    for (const auto& [op, params] : std::vector<std::pair<std::string, std::string>>{
             {"softmax", "rows=16384 cols=8192 dtype=fp16"},
             {"layernorm", "rows=32768 cols=4096 dtype=fp16"},
             {"gelu", "elements=268435456 dtype=fp16"},
             {"add", "elements=134217728 dtype=fp16"}}) {
      runtime::OpDesc desc;
      desc.kind = *runtime::parse_op(op);
      desc.dtype = DType::fp16;
      for (std::size_t p = 0; p < params.size();) {
        const std::size_t space = std::min(params.find(' ', p), params.size());
        const std::string kv = params.substr(p, space - p);
        const std::string key = kv.substr(0, kv.find('=')), value = kv.substr(kv.find('=') + 1);
        if (key == "rows") desc.rows = std::stoull(value);
        if (key == "cols") desc.cols = std::stoull(value);
        if (key == "elements") desc.elements = std::stoull(value);
        p = space + 1;
      }
      out << "M" << ++id << "," << op << ",my_gpu," << params << ",latency," << predictor.predict(desc).time_s * 1e6
          << ",us,synthetic\n";
    }
    return file;
  }

  fs::path dir_;
  std::string config_;
};

TEST_F(Calibrate, RecoversTheBandwidthThatMadeTheMeasurements) {
  session::CalibrateOptions o;
  o.config = config_;
  o.measurements = measurements("1500 GB/s");
  o.params = {kHbm};
  const session::CalibrationReport r = session::calibrate(o);
  ASSERT_EQ(r.params.size(), 1u);
  EXPECT_EQ(r.params[0].before, "2039 GB/s");
  EXPECT_NEAR(r.params[0].scale, 1500.0 / 2039.0, 0.01);
  EXPECT_GT(r.rms_log_before, 0.2);
  EXPECT_LT(r.rms_log_after, 0.01);
  EXPECT_EQ(r.after.size(), 4u);
  // The fitted config extends the original and predicts what was measured.
  const std::string fitted = (dir_ / "fitted" / "my_gpu.json").string();
  fs::create_directories(dir_ / "fitted");
  std::ofstream(fitted) << session::fitted_config_json(r, config_, fitted, o.measurements);
  const hw::Machine m = hw::Machine::load(fitted);
  EXPECT_NEAR(m.devices()[0].memory.bandwidth_bytes_per_s, 1500e9, 0.01 * 1500e9);
}

TEST_F(Calibrate, NamesFieldsItCannotFitAndRowsThatAreMissing) {
  session::CalibrateOptions o;
  o.config = config_;
  o.measurements = measurements("1500 GB/s");
  o.params = {"/components/gpu/components/hbm/bandwith", "/name"};
  try {
    (void)session::calibrate(o);
    FAIL() << "a missing field and a name are not parameters";
  } catch (const InputError& e) {
    const std::string text = e.diagnostics().to_string();
    EXPECT_NE(text.find(config_ + ":/components/gpu/components/hbm/bandwith: no such field"), std::string::npos) << text;
    EXPECT_NE(text.find(config_ + ":/name: expected a positive number or quantity"), std::string::npos) << text;
  }
  o.params = {"/components/gpu/components/sm/count", kHbm, kHbm};
  try {
    (void)session::calibrate(o);
    FAIL() << "a count cannot be scaled, a field cannot be fitted twice";
  } catch (const InputError& e) {
    const std::string text = e.diagnostics().to_string();
    EXPECT_NE(text.find("/components/gpu/components/sm/count: 108 is a count"), std::string::npos) << text;
    EXPECT_NE(text.find("--params: " + kHbm + " is named twice"), std::string::npos) << text;
  }
  o.params = {kHbm};
  o.config = std::string(SYNTORCH_SOURCE_DIR) + "/hw_configs/h100_sxm5_80gb.json";
  try {
    (void)session::calibrate(o);
    FAIL() << "no row names h100_sxm5_80gb";
  } catch (const InputError& e) {
    EXPECT_NE(e.diagnostics().to_string().find("no row runs on"), std::string::npos) << e.diagnostics().to_string();
  }
}

}  // namespace
