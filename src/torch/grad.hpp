#pragma once
// Recording an op's backward: the torch layer's ops call record() when an input requires a
// gradient, with the tensors the backward needs and the backward itself as a callable that
// issues its kernels (grad mode is off while it runs).

#include <fmt/format.h>

#include <memory>
#include <string_view>
#include <utility>
#include <vector>

#include "syntorch/torch/autograd.hpp"
#include "syntorch/torch/tensor.hpp"
#include "syntorch/torch/types.hpp"

namespace syntorch::torch::detail {

// A node whose backward is `F`: F(grads, saved, node) returns one gradient per input edge (an
// input that needs none, !needs(node, i), may get an undefined one: its kernels are skipped).
template <class F>
class FunctionNode final : public autograd::Node {
 public:
  FunctionNode(std::string_view name, std::uint32_t outputs, std::vector<Tensor> saved, F f)
      : Node(name, outputs), saved_(std::move(saved)), f_(std::move(f)) {}
  std::vector<Tensor> apply(std::vector<Tensor>&& grads) override {
    if (saved_released_) {
      throw Error(fmt::format("{}: Trying to backward through the graph a second time (or directly access saved "
                              "tensors after they have already been freed). Specify retain_graph=True if you need "
                              "to backward through the graph a second time.",
                              name()));
    }
    return f_(grads, saved_, static_cast<const Node&>(*this));
  }
  void release_saved() override {
    saved_.clear();
    saved_released_ = true;
  }

 private:
  std::vector<Tensor> saved_;
  F f_;
  bool saved_released_ = false;
};

// Records `outputs` as made by a node named `name` over `inputs`, saving `saved` (each stripped
// of its history by autograd::saved). Call only when autograd::any_requires_grad(inputs).
template <class F>
void record(std::string_view name, std::initializer_list<const Tensor*> inputs, std::initializer_list<Tensor*> outputs,
            std::vector<Tensor> saved, F f) {
  for (Tensor& t : saved) t = autograd::saved(t);
  auto node = std::make_shared<FunctionNode<F>>(name, static_cast<std::uint32_t>(outputs.size()), std::move(saved),
                                                std::move(f));
  node->next_edges = autograd::collect_next_edges(inputs);
  std::uint32_t i = 0;
  for (Tensor* o : outputs) autograd::set_history(*o, node, i++);
}

// The same for a variable number of inputs or outputs.
template <class F>
void record_n(std::string_view name, const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs,
              std::vector<Tensor> saved, F f) {
  for (Tensor& t : saved) t = autograd::saved(t);
  auto node = std::make_shared<FunctionNode<F>>(name, static_cast<std::uint32_t>(outputs.size()), std::move(saved),
                                                std::move(f));
  node->next_edges.reserve(inputs.size());
  for (const Tensor* t : inputs) node->next_edges.push_back(autograd::collect_next_edges({t})[0]);
  std::uint32_t i = 0;
  for (Tensor* o : outputs) autograd::set_history(*o, node, i++);
}

// An op without a backward refuses inputs that require a gradient, rather than cutting the graph.
void no_backward(std::initializer_list<const Tensor*> inputs, const char* op);

using Grads = std::vector<Tensor>;
inline bool needs(const autograd::Node& n, std::size_t input) {
  return input < n.next_edges.size() && n.next_edges[input].valid();
}

}  // namespace syntorch::torch::detail
