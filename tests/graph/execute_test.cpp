// Running an IR on the torch layer: each node's kernels as the torch layer launches them, views
// without kernels, in-place updates, factories, ops with no model costed and listed, tensors freed
// after their last use.
#include <gtest/gtest.h>

#include "../torch/fake_rank.hpp"
#include "syntorch/graph/execute.hpp"
#include "syntorch/graph/lowering.hpp"

namespace syntorch::graph {
namespace {

using Json = nlohmann::ordered_json;
using runtime::OpKind;

class GraphExecute : public torch::testing::OnRank {
 protected:
  // An IR from its tensors (name: shape, dtype) and nodes.
  Ir build(const Json& tensors, const std::vector<Json>& nodes, const std::vector<std::string>& inputs,
           const std::vector<std::string>& weights, const std::vector<std::string>& outputs) {
    Json t = Json::object();
    for (const auto& [name, spec] : tensors.items()) {
      t[name] = Json{{"shape", spec[0]}, {"dtype", spec[1]}, {"stride", Json::array()}, {"offset", 0},
                     {"producer", nullptr}};
      if (spec.size() > 2) t[name]["stride"] = spec[2];
    }
    Json w = Json::array();
    for (const auto& name : weights) w.push_back(Json{{"name", name}, {"tensor", name}, {"kind", "parameter"}, {"aliases", Json::array()}});
    const Json j{{"format", "syntorch-ir"}, {"version", 1}, {"model", "T"}, {"producer", Json::object()},
                 {"inputs", inputs}, {"outputs", outputs}, {"weights", w}, {"tensors", t}, {"nodes", Json(nodes)}};
    Diagnostics d;
    Ir ir = parse_ir(j, "t.json", d);
    check_executable(ir, "t.json", d);
    EXPECT_TRUE(d.empty()) << d.to_string();
    return ir;
  }
  static Json node(const std::string& name, const std::string& op, const std::vector<Json>& args,
                   const std::vector<std::string>& outputs, const Json& kwargs = Json::object()) {
    return Json{{"name", name}, {"op", op}, {"args", Json(args)}, {"kwargs", kwargs}, {"outputs", outputs}};
  }
  static Json ref(const std::string& t) { return Json{{"tensor", t}}; }
};

TEST_F(GraphExecute, ALinearLayerIsAViewAndOneGemm) {
  const Ir ir = build({{"w", {{64, 32}, "float16"}}, {"x", {{8, 32}, "float16"}}, {"b", {{64}, "float16"}},
                       {"wt", {{32, 64}, "float16", {1, 32}}}, {"y", {{8, 64}, "float16"}}},
                      {node("t_0", "aten.t.default", {ref("w")}, {"wt"}),
                       node("addmm_0", "aten.addmm.default", {ref("b"), ref("x"), ref("wt")}, {"y"})},
                      {"x"}, {"w", "b"}, {"y"});
  OpTally tally;
  execute_ir(ir, tally);
  ASSERT_EQ(rank.launches.size(), 1u);
  EXPECT_EQ(rank.last().kind, OpKind::gemm);
  EXPECT_EQ(rank.last().m, 8u);
  EXPECT_EQ(rank.last().n, 64u);
  EXPECT_EQ(rank.last().k, 32u);
  EXPECT_EQ(tally.counts.at("aten::t"), 1);
  EXPECT_EQ(tally.counts.at("aten::addmm"), 1);
  EXPECT_DOUBLE_EQ(tally.graph_flops, 2.0 * 8 * 64 * 32);
  EXPECT_TRUE(tally.generic.empty());
  EXPECT_GE(rank.peak_bytes, 64u * 32 * 2 + 64 * 2 + 8 * 32 * 2 + 8 * 64 * 2);
}

TEST_F(GraphExecute, AnOpWithNoModelIsOneMemoryBoundPassAndListed) {
  const Ir ir = build({{"x", {{1024}, "float32"}}, {"y", {{1024}, "float32"}}, {"z", {{1024}, "float32"}}},
                      {node("erf_0", "aten.erf.default", {ref("x")}, {"y"}),
                       node("logit_0", "aten.logit.default", {ref("y")}, {"z"})},
                      {"x"}, std::vector<std::string>{}, {"z"});
  OpTally tally;
  execute_ir(ir, tally);
  EXPECT_EQ(rank.launches.size(), 2u);
  ASSERT_EQ(tally.generic.count("aten::erf"), 1u);
  EXPECT_TRUE(tally.generic.at("aten::erf").elementwise);
  EXPECT_EQ(tally.generic.at("aten::logit").count, 1);
  const Json j = tally.to_json();
  EXPECT_EQ(j["ops"], 2);
  EXPECT_EQ(j["generic_elementwise"].size(), 2u);
  EXPECT_NEAR(j["generic_elementwise"][0]["bytes_share"].get<double>(), 0.5, 1e-12);
}

TEST_F(GraphExecute, InPlaceUpdatesWriteTheirSelfAndFactoriesMakeTheirOutputs) {
  const Ir ir = build({{"x", {{256}, "float32"}}, {"y", {{256}, "float32"}}, {"z", {{256}, "float32"}},
                       {"w", {{256}, "float32"}}, {"e", {{16}, "float32"}}},
                      {node("ones_0", "aten.ones.default", {Json::array({256})}, {"y"}),
                       node("add__0", "aten.add_.Tensor", {ref("y"), ref("x")}, {"z"}),
                       node("exp__0", "aten.exp_.default", {ref("z")}, {"w"}),
                       node("empty_0", "aten.empty.memory_format", {Json::array({16})}, {"e"})},
                      {"x"}, std::vector<std::string>{}, {"w", "e"});
  OpTally tally;
  execute_ir(ir, tally);
  // ones: a fill; add_: the in-place add; exp_: an in-place update with no lowering of its own,
  // one memory-bound pass over what it reads and writes, listed; empty: no kernel.
  ASSERT_EQ(rank.launches.size(), 3u);
  EXPECT_EQ(rank.launches[1].op.kind, runtime::OpKind::add);
  ASSERT_EQ(tally.generic.size(), 1u);
  EXPECT_EQ(tally.generic.at("aten::exp_").count, 1);
  EXPECT_TRUE(tally.generic.at("aten::exp_").elementwise);
  EXPECT_EQ(rank.peak_bytes, 2u * 256 * 4 + 16 * 4);  // x, y and e: the in-place ops allocate nothing
}

TEST_F(GraphExecute, IntermediatesAreFreedAfterTheirLastUse) {
  // x -> relu -> a -> relu -> b -> relu -> c: at most two 4 MiB activations besides the input.
  const std::int64_t n = 1 << 20;
  const Ir ir = build({{"x", {{n}, "float32"}}, {"a", {{n}, "float32"}}, {"b", {{n}, "float32"}},
                       {"c", {{n}, "float32"}}},
                      {node("relu_0", "aten.relu.default", {ref("x")}, {"a"}),
                       node("relu_1", "aten.relu.default", {ref("a")}, {"b"}),
                       node("relu_2", "aten.relu.default", {ref("b")}, {"c"})},
                      {"x"}, std::vector<std::string>{}, {"c"});
  OpTally tally;
  execute_ir(ir, tally);
  EXPECT_EQ(rank.launches.size(), 3u);
  EXPECT_EQ(rank.peak_bytes, 3u * 4 * n);
}

TEST_F(GraphExecute, AWrongArgumentIsAnErrorNamingTheNode) {
  const Ir ir = build({{"x", {{4, 8}, "float32"}}, {"y", {{4, 8}, "float32"}}},
                      {node("softmax_0", "aten._softmax.default", {ref("x")}, {"y"})}, {"x"}, {}, {"y"});
  OpTally tally;
  try {
    execute_ir(ir, tally);
    ADD_FAILURE() << "no error";
  } catch (const IrArgumentError& e) {
    EXPECT_NE(std::string(e.what()).find("IR node softmax_0 (aten._softmax.default): argument 'dim': expected an "
                                         "integer"),
              std::string::npos)
        << e.what();
  }
}

TEST_F(GraphExecute, AnUnknownDtypeIsRefusedBeforeRunning) {
  Json t{{"x", Json{{"shape", {4}}, {"dtype", "float128"}, {"stride", {1}}, {"offset", 0}, {"producer", nullptr}}}};
  const Json j{{"format", "syntorch-ir"}, {"version", 1}, {"model", "T"}, {"producer", Json::object()},
               {"inputs", {"x"}}, {"outputs", {"x"}}, {"weights", Json::array()}, {"tensors", t},
               {"nodes", Json::array()}};
  Diagnostics d;
  const Ir ir = parse_ir(j, "t.json", d);
  check_executable(ir, "t.json", d);
  EXPECT_NE(d.to_string().find("t.json:/tensors/x/dtype: expected a PyTorch dtype"), std::string::npos)
      << d.to_string();
}

TEST(GraphLowerings, EveryFamilyIsInTheTable) {
  for (const char* op : {"mm", "addmm", "_softmax", "native_layer_norm", "gelu", "add", "cat", "sum", "convolution",
                         "_scaled_dot_product_flash_attention", "embedding"}) {
    EXPECT_NE(find_lowering(op), nullptr) << op;
  }
  EXPECT_EQ(find_lowering("erf"), nullptr);
  EXPECT_EQ(scalar_type_of("bfloat16"), torch::kBFloat16);
  EXPECT_FALSE(scalar_type_of("float128"));
}

}  // namespace
}  // namespace syntorch::graph

namespace syntorch::graph {
namespace {

class GraphViews : public torch::testing::OnRank {};

// A strided input given an offset but no strides is placed with contiguous strides from its
// offset; complex views of real pairs keep aliasing their memory.
TEST_F(GraphViews, OffsetsWithoutStridesAndComplexViewsArePlacedAsViews) {
  const Json j = Json::parse(R"({"format": "syntorch-ir", "version": 1, "model": "T", "producer": {},
    "inputs": ["x"], "outputs": ["c"], "weights": [],
    "tensors": {"x": {"shape": [4, 8], "dtype": "float32", "stride": [], "offset": 8},
                "c": {"shape": [4, 4], "dtype": "complex64", "stride": [4, 1], "offset": 0, "producer": "v"}},
    "nodes": [{"name": "v", "op": "aten.view_as_complex.default", "args": [{"tensor": "x"}], "kwargs": {},
               "outputs": ["c"]}]})");
  Diagnostics d;
  const Ir ir = parse_ir(j, "t.json", d);
  ASSERT_TRUE(d.empty()) << d.to_string();
  OpTally tally;
  execute_ir(ir, tally);
  EXPECT_TRUE(rank.launches.empty());          // a view: no kernel
  EXPECT_EQ(rank.allocations, 1);              // only x's storage (8 + 32 floats): the view aliases it
  EXPECT_EQ(rank.peak_bytes, (8u + 32u) * 4u);
}

}  // namespace
}  // namespace syntorch::graph
