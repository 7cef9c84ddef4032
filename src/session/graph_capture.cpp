#include "syntorch/session/graph_capture.hpp"

#include <stdexcept>

#include "syntorch/base/version.hpp"
#include "syntorch/graph/ir.hpp"

namespace syntorch::session {

GraphCapture::~GraphCapture() { stop(); }

void GraphCapture::add_weight(const std::string& name, const torch::Tensor& t, const std::string& kind) {
  recorder_.add_weight(name, t, kind);
}

void GraphCapture::add_input(const torch::Tensor& t) { recorder_.add_input(t); }

void GraphCapture::start() {
  if (on_ || torch::op_recorder() != nullptr) {
    throw std::logic_error("a graph is being recorded on this thread already");
  }
  torch::set_op_recorder(&recorder_);
  on_ = true;
}

void GraphCapture::stop() {
  if (on_) torch::set_op_recorder(nullptr);
  on_ = false;
}

nlohmann::ordered_json GraphCapture::finish(const std::vector<torch::Tensor>& outputs, const std::string& model) {
  stop();
  graph::Ir ir = recorder_.finish(outputs, model);
  ir.producer = {{"syntorch", kVersion}};
  return graph::ir_to_json(ir);
}

}  // namespace syntorch::session
