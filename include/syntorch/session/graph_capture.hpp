#pragma once
// A program's graph captured as it runs on the torch layer (Python's syntorch.ir.extract_ir on a
// syntorch.torch model): its weights and inputs named, then every op it runs between start() and
// finish() recorded as a node (torch/record.hpp), on the calling thread.

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "syntorch/graph/recorder.hpp"
#include "syntorch/torch/tensor.hpp"

namespace syntorch::session {

class GraphCapture {
 public:
  GraphCapture() = default;
  GraphCapture(const GraphCapture&) = delete;
  GraphCapture& operator=(const GraphCapture&) = delete;
  ~GraphCapture();  // stops recording if it still is

  void add_weight(const std::string& name, const torch::Tensor& t, const std::string& kind);
  void add_input(const torch::Tensor& t);
  // Records this thread's ops from now; std::logic_error when a recording is already on.
  void start();
  // Stops recording; the IR's JSON form, with `outputs` as the graph's outputs.
  nlohmann::ordered_json finish(const std::vector<torch::Tensor>& outputs, const std::string& model);
  // Tensors the program read that no recorded op made (kept as weights of kind "constant").
  std::size_t constants() const { return recorder_.constants(); }

 private:
  void stop();

  graph::IrRecorder recorder_;
  bool on_ = false;
};

}  // namespace syntorch::session
