// The IR's JSON read with every problem named (file, JSON path, expected, found), and written back
// unchanged.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "syntorch/graph/ir.hpp"

namespace syntorch::graph {
namespace {

using Json = nlohmann::ordered_json;

Json small_ir() {
  return Json::parse(R"({
    "format": "syntorch-ir", "version": 1, "model": "Tiny", "producer": {"torch": "1.13.1"},
    "inputs": ["input_0"], "outputs": ["add_0"],
    "weights": [{"name": "fc.weight", "tensor": "fc.weight", "kind": "parameter", "aliases": ["head.weight"]}],
    "tensors": {
      "fc.weight": {"shape": [64, 32], "dtype": "float16", "stride": [32, 1], "offset": 0, "producer": null},
      "input_0": {"shape": [8, 32], "dtype": "float16", "stride": [32, 1], "offset": 0, "producer": null},
      "t_0": {"shape": [32, 64], "dtype": "float16", "stride": [1, 32], "offset": 0, "producer": "t_0"},
      "mm_0": {"shape": [8, 64], "dtype": "float16", "stride": [64, 1], "offset": 0, "producer": "mm_0"},
      "add_0": {"shape": [8, 64], "dtype": "float16", "stride": [64, 1], "offset": 0, "producer": "add_0"}
    },
    "nodes": [
      {"name": "t_0", "op": "aten.t.default", "args": [{"tensor": "fc.weight"}], "kwargs": {}, "outputs": ["t_0"]},
      {"name": "mm_0", "op": "aten.mm.default", "args": [{"tensor": "input_0"}, {"tensor": "t_0"}], "kwargs": {},
       "outputs": ["mm_0"]},
      {"name": "add_0", "op": "aten.add.Tensor", "args": [{"tensor": "mm_0"}, 1.5], "kwargs": {"alpha": 1},
       "outputs": ["add_0"]}
    ]})");
}

std::string problems(const Json& j) {
  Diagnostics d;
  parse_ir(j, "m.json", d);
  return d.to_string();
}

TEST(Ir, ParsesEveryFieldAndWritesItBackUnchanged) {
  Diagnostics d;
  const Ir ir = parse_ir(small_ir(), "m.json", d);
  ASSERT_TRUE(d.empty()) << d.to_string();
  EXPECT_EQ(ir.model, "Tiny");
  ASSERT_EQ(ir.nodes.size(), 3u);
  EXPECT_EQ(ir.nodes[1].op, "aten.mm.default");
  EXPECT_EQ(ir.nodes[1].inputs, (std::vector<int>{ir.tensor_index("input_0"), ir.tensor_index("t_0")}));
  EXPECT_EQ(ir.nodes[2].args[1].kind, IrValue::Kind::real);
  EXPECT_EQ(ir.nodes[2].kwargs[0].second.integer, 1);
  EXPECT_EQ(ir.tensors[static_cast<std::size_t>(ir.tensor_index("t_0"))].strides, (std::vector<std::int64_t>{1, 32}));
  EXPECT_EQ(ir.weights[0].aliases, (std::vector<std::string>{"head.weight"}));
  EXPECT_EQ(ir_to_json(ir), small_ir());
}

TEST(Ir, SavesAndLoadsAFile) {
  Diagnostics d;
  const Ir ir = parse_ir(small_ir(), "m.json", d);
  const std::string path = (std::filesystem::temp_directory_path() / "syntorch_ir_test.json").string();
  save_ir(ir, path);
  EXPECT_EQ(ir_to_json(load_ir(path)), small_ir());
  std::filesystem::remove(path);
}

TEST(Ir, NamesEachProblemWithItsPath) {
  Json j = small_ir();
  j["format"] = "onnx";
  EXPECT_NE(problems(j).find("m.json:/format: expected \"syntorch-ir\", found \"onnx\""), std::string::npos)
      << problems(j);
  j = small_ir();
  j["version"] = 2;
  EXPECT_NE(problems(j).find("/version: this syntorch reads version 1, found 2"), std::string::npos);
  j = small_ir();
  j["nodes"][1]["args"][0] = {{"tensor", "nowhere"}};
  EXPECT_NE(problems(j).find("/nodes/1/args/0/tensor: names tensor 'nowhere', which /tensors does not hold"),
            std::string::npos)
      << problems(j);
  j = small_ir();
  std::swap(j["nodes"][0], j["nodes"][1]);
  EXPECT_NE(problems(j).find("/nodes/0: reads tensor 't_0' before any node makes it"), std::string::npos)
      << problems(j);
  j = small_ir();
  j["tensors"]["mm_0"]["shape"] = {8, -1};
  EXPECT_NE(problems(j).find("/tensors/mm_0/shape/1: expected a non-negative integer, found -1"), std::string::npos)
      << problems(j);
  j = small_ir();
  j["weights"][0]["kind"] = "weight";
  EXPECT_NE(problems(j).find("/weights/0/kind: expected parameter, buffer or constant, found \"weight\""),
            std::string::npos);
  j = small_ir();
  j["nodes"][0]["op"] = "transpose";
  EXPECT_NE(problems(j).find("/nodes/0/op: expected namespace.op[.overload]"), std::string::npos);
  j = small_ir();
  j["nodes"][2]["args"][1] = {{"float", "huge"}};
  EXPECT_NE(problems(j).find("/nodes/2/args/1/float: expected inf, -inf or nan, found \"huge\""), std::string::npos);
  j = small_ir();
  j["nodes"][2]["args"][1] = {{"tensor", "a"}, {"dtype", "b"}};
  EXPECT_NE(problems(j).find("expected one of tensor, float, dtype"), std::string::npos);
  EXPECT_NE(problems(Json::array()).find("expected a syntorch IR"), std::string::npos);
  j = small_ir();
  j["nodes"][2]["outputs"][0] = "mm_0";
  EXPECT_NE(problems(j).find("/nodes/2/outputs/0: makes tensor 'mm_0', which an input, a weight or an earlier node "
                             "already made"),
            std::string::npos)
      << problems(j);
  j = small_ir();
  j["tensors"]["mm_0"]["shape"] = {1 << 30, 1 << 30, 8};
  EXPECT_NE(problems(j).find("/tensors/mm_0/shape: a tensor of more than 2^50 elements"), std::string::npos)
      << problems(j);
}

TEST(Ir, LoadNamesAFileThatIsNotJson) {
  const std::string path = (std::filesystem::temp_directory_path() / "syntorch_ir_bad.json").string();
  std::ofstream(path) << "{\"format\": ";
  try {
    load_ir(path);
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(e.diagnostics().to_string().find(path), std::string::npos);
  }
  std::filesystem::remove(path);
  EXPECT_THROW(load_ir(path), InputError);  // no such file
}

}  // namespace
}  // namespace syntorch::graph
