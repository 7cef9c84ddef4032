#pragma once
// ATen ops run one at a time as a program calls them (the bridge from real PyTorch): each op with
// its arguments by their schema names, the outputs PyTorch made for it and what its schema says
// of it, run on the torch layer through the same lowering as an IR's nodes (graph/execute.hpp), so
// a model costs the same whether it came as a live program or as a graph file.

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "syntorch/graph/execute.hpp"
#include "syntorch/graph/ir.hpp"
#include "syntorch/torch/tensor.hpp"

namespace syntorch::session {

using AtenTally = graph::OpTally;
using AtenValue = graph::IrValue;  // tensors as indices into the op's `tensors`
using AtenForm = graph::OpForm;

// An output PyTorch made: its layout and dtype (PyTorch's name).
struct AtenOutput {
  std::vector<std::int64_t> sizes;
  std::vector<std::int64_t> strides;
  std::int64_t offset = 0;
  std::string dtype;
};

// Runs `op` ("aten.addmm.default") on `tensors` (the torch layer's tensors for the real ones it
// reads); returns a tensor per output slot (undefined where PyTorch's is None). Throws
// graph::IrArgumentError for arguments the op's lowering cannot read.
std::vector<torch::Tensor> run_aten_op(AtenTally& tally, const std::string& op,
                                       const std::vector<std::pair<std::string, AtenValue>>& args,
                                       const std::vector<torch::Tensor>& tensors,
                                       const std::vector<std::optional<AtenOutput>>& outputs, const AtenForm& form);

}  // namespace syntorch::session
