// `syntorch graph export`: a zoo model's forward recorded as an IR that runs back to the same
// kernels and time as the model itself, and reads back as the same IR.

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "syntorch/graph/execute.hpp"
#include "syntorch/models/causal_lm.hpp"
#include "syntorch/models/registry.hpp"
#include "syntorch/parallel/distributed.hpp"
#include "syntorch/session/graph_export.hpp"
#include "syntorch/session/graph_run.hpp"
#include "syntorch/torch/autograd.hpp"
#include "syntorch/torch/ops.hpp"
#include "syntorch/torch/utils.hpp"

namespace syntorch::session {
namespace {

namespace fs = std::filesystem;

RunOptions machine() {
  RunOptions o;
  o.hw = std::string(SYNTORCH_SOURCE_DIR) + "/hw_configs/h100_sxm5_80gb.json";
  o.framework = "native";
  // A warm allocator: the graph frees each tensor at its last use and the model at the end of its
  // scope, so the two take different segments from the device; their cudaMalloc costs aside, the
  // runs are the same.
  o.sets = {"/components/host/device_malloc=0 us", "/components/host/device_free=0 us"};
  return o;
}

// The zoo model's own forward, as the export ran it but unrecorded.
RunStats zoo_forward(const std::string& name, std::int64_t batch, std::int64_t seq) {
  Diagnostics d;
  const auto model = models::parse_model(name, d, "test");
  Run run(machine());
  return run.run_programs(1, [&](int) {
    torch::DefaultDtypeGuard dtype(torch::kHalf);
    parallel::initialize_model_parallel(1, 1, 1);
    const auto built = model->build(models::BuildOptions{});
    torch::NoGradGuard no_grad;
    const torch::Tensor tokens = torch::empty({batch, seq}, torch::TensorOptions(torch::kInt64).device(torch::kCUDA));
    const torch::Tensor logits = built->forward_train(tokens);
  }, false);
}

class GraphExport : public ::testing::TestWithParam<const char*> {};

TEST_P(GraphExport, TheExportedForwardRunsAsTheZooModelDoes) {
  GraphExportSpec spec;
  spec.model = GetParam();
  spec.batch = 2;
  spec.seq = 128;
  const session::GraphExport e = export_graph(machine(), spec);
  ASSERT_FALSE(e.stats.oom);
  EXPECT_EQ(e.constants, 0u) << "every tensor the forward read came from a recorded op, a weight or the input";
  ASSERT_EQ(e.ir.outputs.size(), 1u);
  const graph::IrTensor& logits = e.ir.tensors[static_cast<std::size_t>(e.ir.outputs[0])];
  EXPECT_EQ(logits.sizes[0], 2);
  EXPECT_EQ(logits.sizes[1], 128);
  const fs::path file = fs::temp_directory_path() /
                        ("syntorch_export_" + std::to_string(std::hash<std::string>{}(GetParam())) + ".json");
  graph::save_ir(e.ir, file.string());
  EXPECT_EQ(graph::ir_to_json(graph::load_ir(file.string())), graph::ir_to_json(e.ir));
  const GraphRunReport from_ir = simulate_graph(machine(), file.string());
  const RunStats zoo = zoo_forward(GetParam(), 2, 128);
  EXPECT_EQ(from_ir.stats.kernels, zoo.kernels);
  EXPECT_NEAR(from_ir.stats.simulated_time_s, zoo.simulated_time_s, 0.01 * zoo.simulated_time_s);
  EXPECT_NEAR(from_ir.stats.flops, zoo.flops, 1e-6 * zoo.flops);
  // Tensors live about as long in the graph's run as in the model's: the graph frees each at its
  // last use, the C++ model at the end of the scope that holds it (a small MoE's routing weights
  // for one block: 1 MiB).
  const double peak = static_cast<double>(zoo.peak_memory_bytes[0]);
  EXPECT_NEAR(static_cast<double>(from_ir.stats.peak_memory_bytes[0]), peak, std::max(0.01 * peak, 2.0 * (1 << 20)));
  EXPECT_TRUE(from_ir.tally.generic.empty()) << from_ir.tally.to_json().dump();
  fs::remove(file);
}

INSTANTIATE_TEST_SUITE_P(Zoo, GraphExport,
                         ::testing::Values("gpt3-125m", "llama3.2-1b",
                                           "llama:layers=2,hidden=512,heads=8,kv_heads=2,ffn=1024,vocab=4096,experts=4,top_k=2"));

TEST(GraphExportErrors, BadRequestsAreNamed) {
  GraphExportSpec spec;
  spec.model = "gpt3-126m";
  try {
    export_graph(machine(), spec);
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(e.diagnostics().to_string().find("gpt3-125m"), std::string::npos) << e.diagnostics().to_string();
  }
  spec.model = "gpt3-125m";
  spec.seq = 0;
  spec.dtype = DType::fp8;
  try {
    export_graph(machine(), spec);
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(e.diagnostics().to_string().find("--seq"), std::string::npos);
    EXPECT_NE(e.diagnostics().to_string().find("--dtype"), std::string::npos);
  }
}

}  // namespace
}  // namespace syntorch::session
