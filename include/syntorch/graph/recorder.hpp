#pragma once
// The IR of a program run on the torch layer: a torch::OpRecorder that turns each recorded op
// into a node, names every tensor it meets (weights by their state_dict names, graph inputs,
// each node's outputs), and builds the IR the program's ops make (`syntorch graph export`).

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "syntorch/graph/ir.hpp"
#include "syntorch/torch/record.hpp"

namespace syntorch::graph {

class IrRecorder : public torch::OpRecorder {
 public:
  // A parameter or buffer by its state_dict name (the same tensor again under another name: an
  // alias of the first).
  void add_weight(const std::string& name, const torch::Tensor& t, const std::string& kind = "parameter");
  void add_input(const torch::Tensor& t);
  void record(std::string_view op, std::span<const torch::RecordedArg> args,
              std::span<const torch::Tensor> outputs) override;
  // The IR, with `outputs` as the graph's outputs.
  Ir finish(const std::vector<torch::Tensor>& outputs, const std::string& model);
  // Tensors the program read that no recorded op made and that were neither weights nor inputs:
  // kept as weights of kind "constant" (their shapes are known, their values are not).
  std::size_t constants() const { return constants_; }
  // Forgets every tensor met (it holds none: tensors are named by their unique ids, so the
  // program's tensors live exactly as long as without a recorder).
  void discard();

 private:
  int name_of(const torch::Tensor& t);
  int add_tensor(const torch::Tensor& t, const std::string& name, const std::string& producer);
  IrValue value_of(const torch::RecordedArg& a);

  Ir ir_;
  std::unordered_map<std::uint64_t, int> index_;  // a tensor's unique id -> its current IR tensor
  std::unordered_map<std::string, int> per_op_;
  std::size_t constants_ = 0;
};

// PyTorch's name of a dtype ("float16", "int64"): what IR files hold.
std::string pytorch_dtype_name(torch::ScalarType t);

}  // namespace syntorch::graph
