#include "syntorch/session/aten_ops.hpp"

#include <fmt/format.h>

#include "syntorch/graph/recorder.hpp"

namespace syntorch::session {

std::vector<torch::Tensor> run_aten_op(AtenTally& tally, const std::string& op,
                                       const std::vector<std::pair<std::string, AtenValue>>& args,
                                       const std::vector<torch::Tensor>& tensors,
                                       const std::vector<std::optional<AtenOutput>>& outputs, const AtenForm& form) {
  graph::Ir ir;
  std::vector<torch::Tensor> env;
  env.reserve(tensors.size() + outputs.size());
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const torch::Tensor& t = tensors[i];
    graph::IrTensor meta;
    meta.name = fmt::format("in{}", i);
    meta.sizes = t.sizes();
    meta.strides = t.strides();
    meta.offset = t.storage_offset();
    meta.dtype = graph::pytorch_dtype_name(t.dtype());
    ir.tensors.push_back(std::move(meta));
    env.push_back(t);
  }
  graph::IrNode node;
  node.op = op;
  node.name = op;
  node.kwargs = args;
  for (const auto& [name, v] : node.kwargs) graph::collect_tensors(v, node.inputs);
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    if (!outputs[i]) {
      node.outputs.push_back(-1);
      continue;
    }
    graph::IrTensor meta;
    meta.name = fmt::format("out{}", i);
    meta.sizes = outputs[i]->sizes;
    meta.strides = outputs[i]->strides;
    meta.offset = outputs[i]->offset;
    meta.dtype = outputs[i]->dtype;
    node.outputs.push_back(static_cast<int>(ir.tensors.size()));
    ir.tensors.push_back(std::move(meta));
    env.emplace_back();
  }
  graph::run_node(ir, node, env, tally, &form);
  std::vector<torch::Tensor> made;
  made.reserve(outputs.size());
  for (int t : node.outputs) made.push_back(t < 0 ? torch::Tensor() : env[static_cast<std::size_t>(t)]);
  return made;
}

}  // namespace syntorch::session
