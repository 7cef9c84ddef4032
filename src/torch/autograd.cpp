// Autograd's engine and a tensor's gradient state: recording (edges, history), the backward pass
// (nodes run in reverse order of recording once every gradient they wait for has arrived), and
// AccumulateGrad, which feeds a leaf's .grad.

#include "syntorch/torch/autograd.hpp"
#include "syntorch/torch/compile.hpp"

#include <algorithm>
#include <exception>
#include <limits>
#include <queue>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "grad.hpp"
#include "syntorch/torch/autocast.hpp"
#include "internal.hpp"
#include "syntorch/torch/ops.hpp"

namespace syntorch::torch {

namespace autograd {

namespace {

// Per thread, as PyTorch's GradMode and sequence numbers: each rank program's no_grad is its own,
// and each numbers its nodes alone (deterministic however the threads interleave).
thread_local bool t_grad_enabled = true;
thread_local std::uint64_t t_next_sequence_nr = 0;
// Per thread, as the engine run it belongs to: under torch.autograd.grad, the nodes on a path to
// an input asked for (null otherwise).
thread_local const std::unordered_set<Node*>* t_wanted = nullptr;

// A leaf's gradient sink: the first gradient becomes its .grad (kept as it is when nothing else
// holds it, as PyTorch steals it, and filed under gradients), later ones are added in place.
class AccumulateGrad final : public Node {
 public:
  explicit AccumulateGrad(Tensor variable)
      : Node("AccumulateGrad", 1, std::numeric_limits<std::uint64_t>::max()), variable_(std::move(variable)) {}

  std::vector<Tensor> apply(std::vector<Tensor>&& grads) override {
    Tensor& incoming = grads[0];
    if (!incoming.defined()) return {};
    detail::AutogradMeta& meta = detail::autograd_meta(*variable_.unsafe_get_impl());
    if (!meta.grad.defined()) {
      detail::TensorImpl* in = incoming.unsafe_get_impl();
      if (in->refs.load(std::memory_order_relaxed) == 1 && !in->base && in->sizes == variable_.sizes() &&
          in->dtype == variable_.dtype()) {
        meta.grad = std::move(incoming);
      } else {
        runtime::MemoryUseGuard use(os::MemoryUse::gradients);
        meta.grad = incoming.reshape(variable_.sizes()).to(variable_.dtype());
        if (meta.grad.is_same(incoming) || meta.grad.is_alias_of(incoming)) meta.grad = meta.grad.clone();
      }
      detail::TensorImpl* g = meta.grad.unsafe_get_impl();
      runtime::RankContext* ctx = runtime::current_rank();
      if (ctx && g->context == ctx->memory_owner() && g->context_serial == g->context->serial()) {
        ctx->set_memory_use(g->handle, os::MemoryUse::gradients);
      }
    } else {
      meta.grad.add_(incoming);
    }
    // A hook may replace the list (registering another): call a copy.
    if (!meta.post_accumulate_grad_hooks.empty()) {
      const auto hooks = meta.post_accumulate_grad_hooks;
      for (const auto& hook : hooks) hook(variable_);
    }
    return {};
  }

 private:
  Tensor variable_;
};

// Nodes whose last owner goes away are destroyed here one at a time, not recursively: a graph
// can be thousands of nodes deep. Per thread: ranks destroy their graphs at the same time.
thread_local std::vector<std::shared_ptr<Node>>* t_graveyard = nullptr;

void bury(std::vector<Edge>& edges) noexcept {
  if (edges.empty()) return;
  std::vector<std::shared_ptr<Node>> local;
  const bool outermost = t_graveyard == nullptr;
  if (outermost) t_graveyard = &local;
  for (Edge& e : edges) {
    if (e.fn) t_graveyard->push_back(std::move(e.fn));
  }
  edges.clear();
  if (!outermost) return;
  while (!local.empty()) {
    std::shared_ptr<Node> n = std::move(local.back());
    local.pop_back();
    n.reset();  // may add its own edges to `local`
  }
  t_graveyard = nullptr;
}

}  // namespace

Node::Node(std::string_view name, std::uint32_t num_outputs)
    : name_(name), sequence_nr_(t_next_sequence_nr++), num_outputs_(num_outputs), compiled_graph_(compile::current_graph()) {}

Node::Node(std::string_view name, std::uint32_t num_outputs, std::uint64_t sequence_nr)
    : name_(name), sequence_nr_(sequence_nr), num_outputs_(num_outputs) {}

Node::~Node() { bury(next_edges); }

bool GradMode::is_enabled() { return t_grad_enabled; }
void GradMode::set_enabled(bool enabled) { t_grad_enabled = enabled; }

bool any_requires_grad(std::initializer_list<const Tensor*> inputs) {
  if (!t_grad_enabled) return false;
  for (const Tensor* t : inputs) {
    const detail::AutogradMeta* m = detail::autograd_meta_if(*t);
    if (m && m->requires_grad) return true;
  }
  return false;
}

Edge edge_to(const Tensor& t) {
  const detail::AutogradMeta* m = detail::autograd_meta_if(t);
  if (!m || !m->requires_grad) return {};
  const ScalarType dtype = t.unsafe_get_impl()->dtype;
  if (m->grad_fn) return {m->grad_fn, m->output_nr, dtype};
  detail::AutogradMeta& meta = detail::autograd_meta(*t.unsafe_get_impl());
  std::shared_ptr<Node> acc = meta.grad_accumulator.lock();
  if (!acc) {
    acc = std::make_shared<AccumulateGrad>(t);
    meta.grad_accumulator = acc;
  }
  return {std::move(acc), 0, dtype};
}

bool Node::needs_input_grad(std::size_t i) const {
  if (i >= next_edges.size() || !next_edges[i].valid()) return false;
  return t_wanted == nullptr || t_wanted->count(next_edges[i].fn.get()) != 0;
}

void Node::throw_released() const {
  detail::fail("{}: Trying to backward through the graph a second time (or directly access saved tensors after they "
               "have already been freed). Specify retain_graph=True if you need to backward through the graph a "
               "second time.",
               name_);
}

void set_history(Tensor& output, const std::shared_ptr<Node>& fn, std::uint32_t output_nr) {
  detail::AutogradMeta& meta = detail::autograd_meta(*output.unsafe_get_impl());
  meta.requires_grad = true;
  meta.grad_fn = fn;
  meta.output_nr = output_nr;
}

Tensor own_history_view(const Tensor& t) {
  const detail::TensorImpl& o = *t.unsafe_get_impl();
  return o.base ? t : detail::make_view(t, o.sizes, o.strides, o.offset);
}

Tensor saved(const Tensor& t) {
  if (!t.defined()) return {};
  const detail::TensorImpl& s = *t.unsafe_get_impl();
  return detail::make_view(t, s.sizes, s.strides, s.offset);
}

namespace {

// The roots of a backward run from `tensors` and their gradients (each a scalar's ones where
// `grads` is empty or has an undefined one), checked and named as `op` (backward, grad) names its
// arguments: `tensors_arg` and `grads_arg`.
std::vector<std::pair<Edge, Tensor>> roots_of(const std::vector<Tensor>& tensors, const std::vector<Tensor>& grads,
                                              const char* op, const char* tensors_arg, const char* grads_arg) {
  if (!grads.empty() && grads.size() != tensors.size()) {
    detail::fail("{}: got {} {} and {} {}", op, tensors.size(), tensors_arg, grads.size(), grads_arg);
  }
  std::vector<std::pair<Edge, Tensor>> roots;
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    detail::check_defined(t, op, tensors_arg);
    const detail::AutogradMeta* m = detail::autograd_meta_if(t);
    if (!m || !m->requires_grad) {
      detail::fail("{}: element {} of tensors does not require grad and does not have a grad_fn", op, i);
    }
    Tensor g = grads.empty() ? Tensor() : grads[i];
    if (!g.defined()) {
      if (t.numel() != 1) detail::fail("{}: grad can be implicitly created only for scalar outputs (got {})", op,
                                       format_sizes(t.sizes()));
      g = ones_like(t);
    } else if (g.sizes() != t.sizes()) {
      detail::fail("{}: Mismatch in shape: grad_output[{}] has a shape of {} and output[{}] has a shape of {}", op, i,
                   format_sizes(g.sizes()), i, format_sizes(t.sizes()));
    }
    roots.emplace_back(edge_to(t), std::move(g));
  }
  return roots;
}

}  // namespace

void backward(const std::vector<Tensor>& tensors, const std::vector<Tensor>& grad_tensors, bool retain_graph) {
  backward(roots_of(tensors, grad_tensors, "backward", "tensors", "gradients"), retain_graph);
}

namespace {

// The engine. With `captures` (torch.autograd.grad), the gradient arriving at each captured edge is
// kept in `captured` instead of flowing on: only nodes on a path to a captured edge run, and no
// leaf's .grad changes.
void run_engine(const std::vector<std::pair<Edge, Tensor>>& roots, bool retain_graph, std::span<const Edge> captures,
                std::vector<Tensor>* captured) {
  NoGradGuard no_grad;
  // A compiled graph's backward region ends with the run (launching what it holds); on an error,
  // what it holds is launched as it stands.
  struct LeaveRegion {
    int exceptions = std::uncaught_exceptions();
    ~LeaveRegion() {
      if (std::uncaught_exceptions() == exceptions) return;  // left below
      try {
        compile::backward_leave();
      } catch (...) {  // the error in flight is the one to report
      }
    }
  } leave_region;
  // Backward ops run with autocast off (on CUDA the engine runs them on its own thread).
  autocast::State off = autocast::state();
  off.enabled = false;
  autocast::StateGuard no_autocast(off);
  struct Pending {
    std::vector<Tensor> grads;
    std::size_t waiting = 0;  // edges into the node not yet delivered
  };
  std::unordered_map<Node*, Pending> pending;
  for (const auto& [e, g] : roots) {
    if (!e.valid()) detail::fail("backward: a root has no history (it does not require grad)");
    detail::check_defined(g, "backward", "grad_tensors");
  }
  std::vector<Node*> stack;
  std::unordered_map<Node*, bool> seen;
  for (const auto& [e, g] : roots) {
    if (!seen[e.fn.get()]) {
      seen[e.fn.get()] = true;
      stack.push_back(e.fn.get());
    }
  }
  const bool capturing = captured != nullptr;
  std::unordered_map<Node*, std::vector<Node*>> parents;  // capturing: who delivers to each node
  while (!stack.empty()) {
    Node* n = stack.back();
    stack.pop_back();
    for (const Edge& e : n->next_edges) {
      if (!e.valid()) continue;
      ++pending[e.fn.get()].waiting;
      if (capturing) parents[e.fn.get()].push_back(n);
      if (!seen[e.fn.get()]) {
        seen[e.fn.get()] = true;
        stack.push_back(e.fn.get());
      }
    }
  }
  // Capturing: the nodes from which a captured edge can be reached (the ones worth running).
  std::unordered_set<Node*> leads_to_capture;
  if (capturing) {
    std::vector<Node*> todo;
    for (const Edge& c : captures) {
      if (c.valid() && leads_to_capture.insert(c.fn.get()).second) todo.push_back(c.fn.get());
    }
    while (!todo.empty()) {
      Node* n = todo.back();
      todo.pop_back();
      for (Node* p : parents[n]) {
        if (leads_to_capture.insert(p).second) todo.push_back(p);
      }
    }
  }
  struct Wanted {  // nodes' needs_input_grad honours the captures while this run lasts
    const std::unordered_set<Node*>* previous;
    explicit Wanted(const std::unordered_set<Node*>* w) : previous(std::exchange(t_wanted, w)) {}
    ~Wanted() { t_wanted = previous; }
  } wanted(capturing ? &leads_to_capture : nullptr);
  // Ready nodes, the most recently recorded first (PyTorch's order on one device).
  auto later = [](const std::shared_ptr<Node>& a, const std::shared_ptr<Node>& b) {
    return a->sequence_nr() < b->sequence_nr();
  };
  std::priority_queue<std::shared_ptr<Node>, std::vector<std::shared_ptr<Node>>, decltype(later)> ready(later);
  auto deliver = [&](const Edge& e, Tensor&& g) {
    Pending& p = pending[e.fn.get()];
    if (p.grads.empty()) p.grads.resize(e.fn->num_outputs());
    Tensor& slot = p.grads[e.input_nr];
    if (g.defined() && g.unsafe_get_impl()->dtype != e.dtype) {
      Tensor cast = g.to(e.dtype);
      if (compile::in_backward_region()) {  // inside a compiled backward: an op of its graph
        compile::backward_node("ToCopy", std::span<const Tensor>(&g, 1), std::span<const Tensor>(&cast, 1));
      }
      g = std::move(cast);
    }
    if (!g.defined()) {
    } else if (!slot.defined()) {
      slot = std::move(g);
    } else {
      Tensor sum = add(slot, g);  // two gradients meet: one add kernel, as PyTorch's input buffer
      if (compile::in_backward_region()) {  // inside a compiled backward: an op of its graph
        const Tensor reads[] = {slot, g};
        compile::backward_node("add", reads, std::span<const Tensor>(&sum, 1));
      }
      slot = std::move(sum);
    }
  };
  // The roots' gradients, then every node once all the edges that reach it have delivered.
  for (const auto& [e, g] : roots) deliver(e, Tensor(g));
  for (const auto& [e, g] : roots) {
    if (pending[e.fn.get()].waiting == 0 && seen[e.fn.get()]) {
      seen[e.fn.get()] = false;  // queued once
      ready.push(e.fn);
    }
  }
  while (!ready.empty()) {
    std::shared_ptr<Node> n = ready.top();
    ready.pop();
    Pending p = std::move(pending[n.get()]);
    pending.erase(n.get());
    std::vector<Tensor> out;
    const bool accumulate = dynamic_cast<const AccumulateGrad*>(n.get()) != nullptr;
    if (capturing) {
      for (std::size_t i = 0; i < captures.size(); ++i) {
        if (captures[i].fn.get() == n.get() && captures[i].input_nr < p.grads.size()) {
          (*captured)[i] = p.grads[captures[i].input_nr];
        }
      }
      // Run only what leads to another captured edge; a leaf's accumulation never.
      const bool onward = !accumulate && std::any_of(n->next_edges.begin(), n->next_edges.end(), [&](const Edge& e) {
        return e.valid() && leads_to_capture.count(e.fn.get()) != 0;
      });
      if (!onward) continue;
    }
    const bool any = std::any_of(p.grads.begin(), p.grads.end(), [](const Tensor& g) { return g.defined(); });
    // A compiled graph's nodes run as its backward region (gradient accumulation into leaves is
    // the engine's, outside the graph, and does not end it).
    if (!accumulate) compile::backward_enter(n->compiled_graph());
    if (any && compile::in_backward_region()) {
      std::vector<Tensor> reads = p.grads;
      n->saved_tensors(reads);
      out = n->apply(std::move(p.grads));
      // Accumulation into a leaf's .grad stays outside the graph (a library op reading the gradient).
      compile::backward_node(n->name(), reads, out, !accumulate);
    } else if (any) {
      out = n->apply(std::move(p.grads));
    }
    p.grads.clear();
    if (!retain_graph) n->release_saved();
    for (std::size_t i = 0; i < n->next_edges.size(); ++i) {
      const Edge& e = n->next_edges[i];
      if (!e.valid()) continue;
      deliver(e, i < out.size() ? std::move(out[i]) : Tensor());
      if (--pending[e.fn.get()].waiting == 0) ready.push(e.fn);
    }
    out.clear();
  }
  compile::backward_leave();
}

}  // namespace

void backward(const std::vector<std::pair<Edge, Tensor>>& roots, bool retain_graph) {
  run_engine(roots, retain_graph, {}, nullptr);
}

std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& grad_outputs, bool retain_graph, bool allow_unused) {
  const std::vector<std::pair<Edge, Tensor>> roots = roots_of(outputs, grad_outputs, "grad", "outputs", "grad_outputs");
  std::vector<Edge> captures;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    detail::check_defined(inputs[i], "grad", "inputs");
    if (!inputs[i].requires_grad()) detail::fail("grad: One of the differentiated Tensors does not require grad");
    captures.push_back(edge_to(inputs[i]));
  }
  std::vector<Tensor> captured(inputs.size());
  run_engine(roots, retain_graph, captures, &captured);
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (!captured[i].defined()) {
      if (!allow_unused) {
        detail::fail("grad: One of the differentiated Tensors appears to not have been used in the graph. Set "
                     "allow_unused=True if this is the desired behavior.");
      }
    } else if (captured[i].sizes() != inputs[i].sizes()) {
      captured[i] = captured[i].reshape(inputs[i].sizes());
    }
  }
  return captured;
}

}  // namespace autograd

namespace detail {

void no_backward(std::initializer_list<const Tensor*> inputs, const char* op) {
  if (autograd::any_requires_grad(inputs)) {
    fail("{}: its backward is not modelled yet; run it under NoGradGuard (torch.no_grad()) or on tensors that do "
         "not require grad",
         op);
  }
}

AutogradMeta& autograd_meta(TensorImpl& impl) {
  if (!impl.autograd) impl.autograd = new AutogradMeta;
  return *impl.autograd;
}

void destroy_autograd_meta(TensorImpl& impl) noexcept {
  AutogradMeta* m = impl.autograd;
  impl.autograd = nullptr;
  delete m;
}

}  // namespace detail

// --- Tensor's autograd members ---

bool Tensor::requires_grad() const {
  checked();
  const detail::AutogradMeta* m = impl_->autograd;
  return m && m->requires_grad;
}

Tensor& Tensor::requires_grad_(bool requires_grad) {
  checked();
  detail::AutogradMeta* m = impl_->autograd;
  if (m && m->grad_fn) {
    detail::fail("requires_grad_: you can only change requires_grad flags of leaf variables.{}",
                 requires_grad ? ""
                               : " If you want to use a computed variable in a subgraph that doesn't require "
                                 "differentiation use var_no_grad = var.detach().");
  }
  if (requires_grad && !torch::is_floating_point(impl_->dtype)) {
    detail::fail("requires_grad_: only Tensors of floating point dtype can require gradients (got {})",
                 scalar_type_name(impl_->dtype));
  }
  if (requires_grad || m) detail::autograd_meta(*impl_).requires_grad = requires_grad;
  return *this;
}

bool Tensor::is_leaf() const {
  checked();
  return !impl_->autograd || !impl_->autograd->grad_fn;
}

const Tensor& Tensor::grad() const {
  static const Tensor kUndefined;
  checked();
  return impl_->autograd ? impl_->autograd->grad : kUndefined;
}

Tensor& Tensor::mutable_grad() {
  checked();
  return detail::autograd_meta(*impl_).grad;
}

std::shared_ptr<autograd::Node> Tensor::grad_fn() const {
  checked();
  return impl_->autograd ? impl_->autograd->grad_fn : nullptr;
}

void Tensor::backward() const { autograd::backward({*this}); }

void Tensor::backward(const Tensor& gradient, bool retain_graph) const {
  autograd::backward({*this}, {gradient}, retain_graph);
}

void Tensor::register_post_accumulate_grad_hook(std::function<void(Tensor&)> hook) {
  checked();
  if (!requires_grad() || !is_leaf()) {
    detail::fail("register_post_accumulate_grad_hook: post accumulate grad hooks cannot be registered on non-leaf "
                 "tensors or tensors that do not require grad");
  }
  detail::autograd_meta(*impl_).post_accumulate_grad_hooks.push_back(std::move(hook));
}

Tensor Tensor::detach() const {
  checked();
  Tensor out = autograd::saved(*this);
  detail::host_op("aten::detach");
  return out;
}

}  // namespace syntorch::torch
