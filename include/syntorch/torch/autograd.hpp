#pragma once
// Autograd on meta tensors, as PyTorch's: an op whose inputs require gradients records a backward
// node (Node) holding the tensors its backward needs, so those stay allocated until backward
// frees them; Tensor::backward() runs the nodes in reverse order of recording, each issuing its
// backward kernels (a linear's two GEMMs, FlashAttention's backward, a norm's backward kernels),
// and leaves' gradients accumulate in .grad. No values are computed: only what runs, and what
// memory it holds, when.

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string_view>
#include <vector>

#include "syntorch/torch/tensor.hpp"
#include "syntorch/torch/types.hpp"

namespace syntorch::torch::autograd {

class Node;

// Where a gradient goes: input `input_nr` of node `fn` (none when fn is null), for a tensor of
// `dtype`: a gradient in another dtype (from a promoting op) is cast to it on the way, as
// PyTorch's engine does.
struct Edge {
  std::shared_ptr<Node> fn;
  std::uint32_t input_nr = 0;
  ScalarType dtype = ScalarType::Float;
  bool valid() const { return fn != nullptr; }
};

// One recorded op's backward (a "grad_fn"). apply() receives one gradient per output of the op
// (undefined where an output received none) and returns one per next edge (per differentiable
// input; undefined where none flows).
class Node {
 public:
  explicit Node(std::string_view name, std::uint32_t num_outputs = 1);
  // With an explicit sequence number (AccumulateGrad takes the largest, so a leaf's gradient is
  // accumulated as soon as it is complete, as in PyTorch).
  Node(std::string_view name, std::uint32_t num_outputs, std::uint64_t sequence_nr);
  virtual ~Node();
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  virtual std::vector<Tensor> apply(std::vector<Tensor>&& grads) = 0;
  // Frees what forward saved (after backward, unless the graph is retained).
  virtual void release_saved() {}
  // Appends the tensors forward saved for this node's backward (what its backward reads).
  virtual void saved_tensors(std::vector<Tensor>& out) const { (void)out; }

  std::string_view name() const { return name_; }  // "MmBackward0", as PyTorch names them
  // Whether input `i`'s gradient is wanted (its edge leads somewhere; under torch.autograd.grad,
  // somewhere on the way to an input asked for).
  bool needs_input_grad(std::size_t i) const;
  // The error of a backward through a graph whose saved tensors were freed.
  [[noreturn]] void throw_released() const;
  std::uint64_t sequence_nr() const { return sequence_nr_; }
  std::uint32_t num_outputs() const { return num_outputs_; }
  // The compiled graph (torch.compile) whose region recorded this node, 0 for an eager one: its
  // backward runs as that graph's backward.
  std::uint64_t compiled_graph() const { return compiled_graph_; }
  std::vector<Edge> next_edges;

 private:
  std::string_view name_;
  std::uint64_t sequence_nr_;
  std::uint32_t num_outputs_;
  std::uint64_t compiled_graph_ = 0;
};

// Whether ops record backward nodes on this thread (PyTorch's grad mode; on by default).
struct GradMode {
  static bool is_enabled();
  static void set_enabled(bool enabled);
};

// Grad mode set for a scope (at::AutoGradMode; torch.enable_grad() with true, as a checkpoint's
// recomputation inside a backward runs).
class AutoGradMode {
 public:
  explicit AutoGradMode(bool enabled) : previous_(GradMode::is_enabled()) { GradMode::set_enabled(enabled); }
  ~AutoGradMode() { GradMode::set_enabled(previous_); }
  AutoGradMode(const AutoGradMode&) = delete;
  AutoGradMode& operator=(const AutoGradMode&) = delete;

 private:
  bool previous_;
};

// torch.no_grad(): no recording in its scope.
class NoGradGuard : public AutoGradMode {
 public:
  NoGradGuard() : AutoGradMode(false) {}
};

// torch.autograd.backward: the gradients of `tensors` (each a scalar when its grad_tensors entry
// is missing or undefined: then ones) flow back through their graphs into the leaves' .grad.
// The graph's saved tensors are freed as each node runs, unless retain_graph.
void backward(const std::vector<Tensor>& tensors, const std::vector<Tensor>& grad_tensors = {},
              bool retain_graph = false);
// The same from the histories alone (edge_to of each tensor), each with its gradient: what a
// pipeline stage keeps of an output it has sent on and freed (Megatron's deallocate_output_tensor).
void backward(const std::vector<std::pair<Edge, Tensor>>& roots, bool retain_graph = false);
// torch.autograd.grad: the gradients of `outputs` (each a scalar when its grad_outputs entry is
// missing) with respect to `inputs`, returned in their order without touching any .grad; only
// the nodes on a path to an input run. An input the outputs do not depend on gets an undefined
// tensor with allow_unused, else an error.
std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& grad_outputs = {}, bool retain_graph = false,
                         bool allow_unused = false);

// For the torch layer's ops and custom backward functions (parallel layers): whether an op over
// `inputs` records a node (grad mode on and an input requires grad) ...
bool any_requires_grad(std::initializer_list<const Tensor*> inputs);
// ... the edge of a new node to an input's history (invalid for one that requires no gradient) ...
Edge edge_to(const Tensor& t);
// ... and an output's history: output `output_nr` of `fn`, on the tensor itself (every handle on
// it sees it, as an in-place op's caller expects). A node that saves one of its own outputs gets
// that output as a fresh view carrying the history (record() does this), so that the saved,
// history-free handle keeps the memory alive without keeping the node alive through itself.
void set_history(Tensor& output, const std::shared_ptr<Node>& fn, std::uint32_t output_nr = 0);

// A handle on the memory and layout of `t` without its autograd history: what a node saves (a
// node saving its own output must not own itself through it).
Tensor saved(const Tensor& t);
// A new view of `t`'s memory for a history of its own (what record() gives an output it saves).
Tensor own_history_view(const Tensor& t);

// A custom backward (torch.autograd.Function): a node whose backward is `F`. F(grads, saved, node)
// returns one gradient per input edge; an input that needs none (!node.needs_input_grad(i)) may
// get an undefined one, and its kernels are then skipped. Grad mode is off while it runs.
template <class F>
class FunctionNode final : public Node {
 public:
  FunctionNode(std::string_view name, std::uint32_t outputs, std::vector<Tensor> saved, F f)
      : Node(name, outputs), saved_(std::move(saved)), f_(std::move(f)) {}
  std::vector<Tensor> apply(std::vector<Tensor>&& grads) override {
    if (released_) throw_released();
    return f_(grads, saved_, static_cast<const Node&>(*this));
  }
  void saved_tensors(std::vector<Tensor>& out) const override { out.insert(out.end(), saved_.begin(), saved_.end()); }
  void release_saved() override {
    released_ = !saved_.empty();  // a node that saved nothing can run again (as PyTorch's)
    saved_.clear();
  }

 private:
  std::vector<Tensor> saved_;
  F f_;
  bool released_ = false;
};

// Records `outputs` as made by a node named `name` (a string that outlives the graph: a literal)
// over `inputs`, saving `saved` (each stripped of its history). Call when
// any_requires_grad(inputs); the outputs' handles then carry the history.
template <class F>
void record(std::string_view name, const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs,
            std::vector<Tensor> saved, F f) {
  // Outputs the node saves become views carrying the history (set_history).
  for (Tensor* o : outputs) {
    for (const Tensor& t : saved) {
      if (t.defined() && o->is_same(t)) {
        *o = own_history_view(*o);
        break;
      }
    }
  }
  for (Tensor& t : saved) t = autograd::saved(t);
  auto node = std::make_shared<FunctionNode<F>>(name, static_cast<std::uint32_t>(outputs.size()), std::move(saved),
                                                std::move(f));
  node->next_edges.reserve(inputs.size());
  for (const Tensor* t : inputs) node->next_edges.push_back(edge_to(*t));
  std::uint32_t i = 0;
  for (Tensor* o : outputs) set_history(*o, node, i++);
}

}  // namespace syntorch::torch::autograd
