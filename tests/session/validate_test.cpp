// Validation as a library call: every row predicted or kept with its reason, malformed files
// rejected whole with file and line.

#include <gtest/gtest.h>

#include <filesystem>
#include <cmath>
#include <fstream>

#include "syntorch/base/diagnostics.hpp"
#include "syntorch/session/validate.hpp"

namespace {

using namespace syntorch;

std::string source(const std::string& rel) { return std::string(SYNTORCH_SOURCE_DIR) + "/" + rel; }

std::string write(const std::string& name, const std::string& text) {
  const auto path = std::filesystem::temp_directory_path() / name;
  std::ofstream(path) << text;
  return path.string();
}

const char* kHeader = "id,op,hw,params,metric,value,unit,source\n";

TEST(Validate, EveryRowIsPredictedOrKeptWithItsReason) {
  const std::string file = write("syntorch_validate_rows.csv",
                                 std::string(kHeader) +
                                     "A,gemm,a100_sxm4_80gb,m=4096 n=4096 k=4096 dtype=fp16,latency,1.2,ms,x\n"
                                     "B,gemm,a100_sxm4_80gb,m=4096 m=8 n=4096 k=4096,latency,1.2,ms,x\n"
                                     "C,conv2d,a100_sxm4_80gb,n=1,latency,1,ms,x\n"
                                     "D,gemm,a100_sxm4_80gb,m=64 n=64 k=64,throughput,1,TFLOP/s,x\n");
  session::ValidateOptions o;
  o.file = file;
  o.hw_dir = source("hw_configs");
  const session::ValidationReport r = session::validate_measurements(o);
  ASSERT_EQ(r.rows.size(), 4u);
  EXPECT_EQ(r.rows[0].status, "ok");
  EXPECT_GT(r.rows[0].predicted, 0);
  EXPECT_NEAR(r.rows[0].error_pct, (r.rows[0].predicted - 1.2) / 1.2 * 100, 1e-9);
  EXPECT_EQ(r.rows[1].status, "error");
  EXPECT_NE(r.rows[1].reason.find("m: given twice"), std::string::npos) << r.rows[1].reason;
  EXPECT_EQ(r.rows[2].status, "unsupported");
  EXPECT_EQ(r.rows[3].status, "unsupported");
  EXPECT_TRUE(r.any_error());
  EXPECT_EQ(r.unsupported(), 2u);
  ASSERT_EQ(r.by_op.count("gemm"), 1u);
  EXPECT_EQ(r.by_op.at("gemm").count, 1u);
  EXPECT_EQ(r.by_family.at("gemm").max_abs_pct, std::fabs(r.rows[0].error_pct));
}

TEST(Validate, GenerateRowsPredictLatencyFirstTokenAndThroughputPerGpuOfOneRun) {
  const std::string run = "\"model=llama:layers=2,hidden=512,heads=8,kv_heads=2,ffn=1376,vocab=4096 tp=2 pp=1 batch=4 "
                          "input=64 output=8 dtype=fp16\"";
  const std::string file = write("syntorch_validate_generate.csv",
                                 std::string(kHeader) + "E,generate,dgx_h100," + run + ",e2e_latency,1,ms,x\n" +
                                     "T,generate,dgx_h100," + run + ",ttft,1,ms,x\n" +
                                     "P,generate,dgx_h100," + run + ",output_throughput_per_gpu,1,tokens/s,x\n" +
                                     "Q,generate,dgx_h100," + run + ",output_throughput,1,tokens/s,x\n" +
                                     "U,generate,dgx_h100," + run + ",ttft,1,tokens/s,x\n");
  session::ValidateOptions o;
  o.file = file;
  o.hw_dir = source("hw_configs");
  const session::ValidationReport r = session::validate_measurements(o);
  ASSERT_EQ(r.rows.size(), 5u);
  for (int i = 0; i < 4; ++i) ASSERT_EQ(r.rows[i].status, "ok") << r.rows[i].id << ": " << r.rows[i].reason;
  const double e2e_s = r.rows[0].predicted * 1e-3;
  EXPECT_LT(r.rows[1].predicted, r.rows[0].predicted);
  EXPECT_NEAR(r.rows[3].predicted, 4 * 8 / e2e_s, 1e-9 * r.rows[3].predicted);
  EXPECT_NEAR(r.rows[2].predicted, r.rows[3].predicted / 2, 1e-9 * r.rows[3].predicted);
  EXPECT_EQ(r.rows[4].status, "unsupported");
  EXPECT_NE(r.rows[4].reason.find("ttft in ns/us/ms/s"), std::string::npos) << r.rows[4].reason;
}

TEST(Validate, ServeRowsReadOneRunAndDeploymentsRunEveryReplica) {
  const std::string run = "model=llama:layers=2,hidden=512,heads=8,kv_heads=2,ffn=1376,vocab=4096 arrival=fixed "
                          "input_len=128 output_len=16";
  const auto row = [&](const char* id, const char* hw, const std::string& extra, const char* metric, const char* unit) {
    return std::string(id) + ",serve," + hw + ",\"" + run + extra + "\"," + metric + ",1," + unit + ",x\n";
  };
  const std::string one = " requests=20 rate=10", four = " requests=80 rate=40 replicas=4";
  const std::string file = write("syntorch_validate_serve.csv",
                                 std::string(kHeader) + row("S", "h100_sxm5_80gb", one, "output_tokens_per_s", "tokens/s") +
                                     row("R", "dgx_h100", four, "output_tokens_per_s", "tokens/s") +
                                     row("T", "dgx_h100", four, "ttft_mean", "ms") +
                                     row("M", "h100_sxm5_80gb", one, "ttft_mean", "tokens/s") +
                                     row("B", "h100_sxm5_80gb", one + " engine=tgi", "ttft_mean", "ms") +
                                     row("D", "h100_sxm5_80gb", four, "ttft_mean", "ms"));
  session::ValidateOptions o;
  o.file = file;
  o.hw_dir = source("hw_configs");
  const session::ValidationReport r = session::validate_measurements(o);
  ASSERT_EQ(r.rows.size(), 6u);
  for (int i = 0; i < 3; ++i) ASSERT_EQ(r.rows[i].status, "ok") << r.rows[i].id << ": " << r.rows[i].reason;
  // Four replicas, each taking every fourth of the evenly spaced requests: four times the tokens.
  EXPECT_NEAR(r.rows[1].predicted / r.rows[0].predicted, 4.0, 0.4);
  EXPECT_GT(r.rows[2].predicted, 0);
  EXPECT_EQ(r.rows[3].status, "unsupported");
  EXPECT_NE(r.rows[3].reason.find("output_tokens_per_s in tokens/s"), std::string::npos) << r.rows[3].reason;
  EXPECT_EQ(r.rows[4].status, "error");
  EXPECT_NE(r.rows[4].reason.find("tgi"), std::string::npos) << r.rows[4].reason;
  EXPECT_EQ(r.rows[5].status, "error");  // four replicas on one device
  EXPECT_NE(r.rows[5].reason.find("need 4 devices"), std::string::npos) << r.rows[5].reason;
  EXPECT_EQ(session::validation_family("serve"), "serve");
}

TEST(Validate, GraphRowsRunAModelsIrOnTheRowsMachine) {
  std::filesystem::copy(source("examples/graphs/gpt2_2layer_ir.json"),
                        std::filesystem::temp_directory_path() / "syntorch_validate_gpt.json",
                        std::filesystem::copy_options::overwrite_existing);
  const std::string file = write("syntorch_validate_graph.csv",
                                 std::string(kHeader) +
                                     "N,graph,h100_sxm5_80gb,graph=syntorch_validate_gpt.json framework=native,latency,1.4,ms,x\n"
                                     "E,graph,h100_sxm5_80gb,graph=syntorch_validate_gpt.json,latency,2.4,ms,x\n"
                                     "A,graph,a100_sxm4_80gb,graph=syntorch_validate_gpt.json framework=native,latency,1,ms,x\n"
                                     "M,graph,h100_sxm5_80gb,graph=none.json,latency,1,ms,x\n"
                                     "K,graph,h100_sxm5_80gb,graph=syntorch_validate_gpt.json framework=jit,latency,1,ms,x\n"
                                     "U,graph,h100_sxm5_80gb,graph=syntorch_validate_gpt.json,throughput,1,tokens/s,x\n");
  session::ValidateOptions o;
  o.file = file;
  o.hw_dir = source("hw_configs");
  const session::ValidationReport r = session::validate_measurements(o);
  ASSERT_EQ(r.rows.size(), 6u);
  for (int i = 0; i < 3; ++i) ASSERT_EQ(r.rows[i].status, "ok") << r.rows[i].id << ": " << r.rows[i].reason;
  EXPECT_LT(r.rows[0].predicted, r.rows[1].predicted);  // native launches: the device's time alone
  EXPECT_GT(r.rows[2].predicted, r.rows[0].predicted);  // an A100 is slower than an H100
  EXPECT_EQ(r.rows[3].status, "error");
  EXPECT_NE(r.rows[3].reason.find("none.json: no such file"), std::string::npos) << r.rows[3].reason;
  EXPECT_NE(r.rows[4].reason.find("expected eager or native, got \"jit\""), std::string::npos) << r.rows[4].reason;
  EXPECT_EQ(r.rows[5].status, "unsupported");
  EXPECT_EQ(session::validation_family("graph"), "graph");
}

TEST(Validate, AMalformedFileIsRejectedWholeNamingEachLine) {
  const std::string file = write("syntorch_validate_bad.csv", std::string(kHeader) + "A,gemm,x\nB,gemm,a100,m=1,latency,-3,ms,x\n");
  session::ValidateOptions o;
  o.file = file;
  try {
    session::validate_measurements(o);
    FAIL() << "no error";
  } catch (const InputError& e) {
    const std::string text = e.diagnostics().to_string();
    EXPECT_NE(text.find(file + ":2: expected 8 fields (id,op,hw,params,metric,value,unit,source), got 3"),
              std::string::npos)
        << text;
    EXPECT_NE(text.find(file + ":3:value: expected a positive finite number, got \"-3\""), std::string::npos) << text;
  }
  o.file = source("no/such.csv");
  EXPECT_THROW(session::validate_measurements(o), InputError);
}

TEST(Validate, ExtraFieldsARenamedColumnOrARowCutOffMidQuoteAreReported) {
  session::ValidateOptions o;
  o.file = write("syntorch_validate_fields.csv", std::string(kHeader) +
                                                    "A,gemm,a100_sxm4_80gb,m=8 n=8 k=8,latency,1,ms,x,extra\n"
                                                    "B,gemm,a100_sxm4_80gb,\"m=8 n=8");
  try {
    session::validate_measurements(o);
    FAIL() << "no error";
  } catch (const InputError& e) {
    const std::string text = e.diagnostics().to_string();
    EXPECT_NE(text.find(":2: expected 8 fields"), std::string::npos) << text;
    EXPECT_NE(text.find(":3: a quoted field is not closed on its line"), std::string::npos) << text;
  }
  o.file = write("syntorch_validate_header.csv", "id,op,hw,params,metric,value,unit,origin\n");
  EXPECT_THROW(session::validate_measurements(o), InputError);
}

}  // namespace
