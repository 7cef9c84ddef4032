// Running an IR node by node on the torch layer. An op is one of: a view (a new layout of its
// input's memory, no kernel), an in-place update (its written argument is its result), a
// lowering from the table, a factory, or an op with no model (one memory-bound kernel that reads
// its inputs and writes its outputs, tallied by name).
#include "syntorch/graph/execute.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "syntorch/base/json.hpp"
#include "syntorch/graph/lowering.hpp"
#include "syntorch/torch/aten.hpp"
#include "syntorch/torch/autograd.hpp"
#include "syntorch/torch/ops.hpp"
#include "syntorch/torch/utils.hpp"

namespace syntorch::graph {

using torch::Tensor;
using Json = nlohmann::ordered_json;

nlohmann::ordered_json OpTally::to_json() const {
  std::int64_t ops = 0;
  Json by_op = Json::object();
  for (const auto& [name, n] : counts) {
    ops += n;
    by_op[name] = n;
  }
  auto rows = [&](bool elementwise) {
    Json out = Json::array();
    for (const auto& [name, g] : generic) {
      if (g.elementwise != elementwise) continue;
      out.push_back(Json{{"op", name},
                         {"count", g.count},
                         {"flops_share", graph_flops > 0 ? g.flops / graph_flops : 0.0},
                         {"bytes_share", graph_bytes > 0 ? g.bytes / graph_bytes : 0.0}});
    }
    return out;
  };
  Json mismatches = Json::object();
  for (const auto& [name, n] : layout_mismatches) mismatches[name] = n;
  return Json{{"ops", ops},
              {"by_op", by_op},
              {"graph_flops", graph_flops},
              {"graph_bytes", graph_bytes},
              {"generic_elementwise", rows(true)},
              {"unmodelled", rows(false)},
              {"layout_mismatches", mismatches}};
}

namespace {

// ATen's view ops: their outputs alias their first argument's memory (native_functions.yaml's
// "Tensor(a)" returns), made by no kernel.
const std::set<std::string_view>& view_ops() {
  static const std::set<std::string_view> ops{
      "view", "_unsafe_view", "_reshape_alias", "as_strided", "alias", "detach", "permute", "transpose", "t",
      "expand", "expand_as", "view_as", "slice", "select", "unsqueeze", "squeeze", "narrow", "unfold", "diagonal",
      "split", "split_with_sizes", "chunk", "unbind", "view_as_real", "view_as_complex", "real", "imag", "_conj",
      "conj", "lift_fresh", "movedim", "swapaxes", "swapdims", "numpy_T", "mT", "mH", "_neg_view", "_indices",
      "_values", "tensor_split", "hsplit", "vsplit", "dsplit", "indices", "values", "col_indices", "crow_indices"};
  return ops;
}

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }
bool ends_with(std::string_view s, std::string_view p) {
  return s.size() >= p.size() && s.substr(s.size() - p.size()) == p;
}

// "aten.mm.default" -> "mm"; "mylib.fused_gelu" -> "fused_gelu".
std::string_view short_name(std::string_view op) {
  const std::size_t dot = op.find('.');
  if (dot == std::string_view::npos) return op;
  std::string_view rest = op.substr(dot + 1);
  return rest.substr(0, rest.find('.'));
}

std::string aten_name(std::string_view op) {
  const std::size_t dot = op.find('.');
  return fmt::format("{}::{}", op.substr(0, dot), short_name(op));
}

std::int64_t numel(const IrTensor& t) {
  std::int64_t n = 1;
  for (std::int64_t s : t.sizes) n *= s;
  return n;
}

torch::ScalarType dtype_of(const IrTensor& t) { return scalar_type_of(t.dtype).value_or(torch::kFloat); }

double bytes_of(const IrTensor& t) {
  return static_cast<double>(numel(t)) * torch::element_bits(dtype_of(t)) / 8.0;
}

std::vector<std::int64_t> contiguous_strides(const std::vector<std::int64_t>& sizes) {
  std::vector<std::int64_t> s(sizes.size(), 1);
  for (std::size_t i = sizes.size(); i-- > 1;) s[i - 1] = s[i] * std::max<std::int64_t>(sizes[i], 1);
  return s;
}

std::vector<std::int64_t> strides_of(const IrTensor& t) {
  return t.strides.size() == t.sizes.size() ? t.strides : contiguous_strides(t.sizes);
}

bool is_contiguous(const IrTensor& t) {
  if (t.offset != 0) return false;
  if (t.strides.size() != t.sizes.size()) return true;
  const std::vector<std::int64_t> c = contiguous_strides(t.sizes);
  for (std::size_t i = 0; i < t.sizes.size(); ++i) {
    if (t.sizes[i] != 1 && t.strides[i] != c[i]) return false;
  }
  return true;
}

bool same_layout(const IrTensor& meta, const Tensor& s) {
  if (s.sizes() != meta.sizes) return false;
  const std::vector<std::int64_t> want = strides_of(meta);
  for (std::size_t i = 0; i < want.size(); ++i) {
    if (meta.sizes[i] != 1 && s.strides()[i] != want[i]) return false;
  }
  return true;
}

Tensor fresh(const IrTensor& meta) {
  return torch::empty(meta.sizes, torch::TensorOptions(dtype_of(meta)).device(torch::kCUDA));
}

// A tensor the graph starts with (a weight, a constant, an input), with its recorded layout.
Tensor place(const IrTensor& meta, bool weight) {
  std::vector<std::int64_t> sizes = meta.sizes;
  const bool contiguous = is_contiguous(meta);
  if (!contiguous) {  // the storage its layout reaches
    std::int64_t extent = meta.offset;
    if (numel(meta) > 0) {
      extent += 1;
      const std::vector<std::int64_t> strides = strides_of(meta);
      for (std::size_t i = 0; i < meta.sizes.size(); ++i) extent += (meta.sizes[i] - 1) * strides[i];
    }
    sizes = {extent};
  }
  Tensor t = weight ? torch::parameter_tensor(sizes, dtype_of(meta), "Parameter")
                    : torch::empty(sizes, torch::TensorOptions(dtype_of(meta)).device(torch::kCUDA));
  if (!contiguous) t = torch::aten::as_strided(t, meta.sizes, strides_of(meta), meta.offset);
  return t;
}

// The op's arithmetic as a FLOP counter counts it: products exactly, a convolution's
// multiply-adds, attention's two products, one operation per output element otherwise.
double op_flops(std::string_view op, const Ir& ir, const IrNode& node, const std::vector<const IrTensor*>& outs,
                const Call* call) {
  auto meta = [&](std::string_view name) -> const IrTensor* {
    if (call == nullptr) return nullptr;
    const IrValue* v = call->arg(name);
    return v != nullptr && v->kind == IrValue::Kind::tensor ? &ir.tensors[static_cast<std::size_t>(v->tensor)]
                                                              : nullptr;
  };
  if ((op == "mm" || op == "addmm" || op == "bmm" || op == "baddbmm" || op == "linear" || op == "matmul") &&
      !outs.empty() && outs[0] != nullptr) {
    const IrTensor* a = meta("mat1");
    if (a == nullptr) a = meta("batch1");
    if (a == nullptr) a = meta("input");  // linear: the input's last dim is the reduction
    if (a == nullptr) a = meta("self");
    if (a != nullptr && !a->sizes.empty()) return 2.0 * static_cast<double>(numel(*outs[0])) * a->sizes.back();
  }
  if (op == "convolution" || op == "convolution_backward") {
    const IrTensor* weight = meta("weight");
    const IrTensor* measure = op == "convolution" ? (outs.empty() ? nullptr : outs[0]) : meta("grad_output");
    if (call != nullptr && call->boolean("transposed", false)) measure = meta("input");
    if (weight != nullptr && measure != nullptr && !weight->sizes.empty() && weight->sizes[0] > 0) {
      const double per_output = 2.0 * static_cast<double>(numel(*weight) / weight->sizes[0]);
      double f = per_output * static_cast<double>(numel(*measure));
      if (op == "convolution_backward") {
        const std::vector<bool> m = call->bools("output_mask", {true, true, true});
        f *= (m.size() > 0 && m[0] ? 1 : 0) + (m.size() > 1 && m[1] ? 1 : 0);
      }
      return f;
    }
  }
  if ((starts_with(op, "_scaled_dot_product") || op == "scaled_dot_product_attention") && node.inputs.size() >= 3) {
    const IrTensor& q = ir.tensors[static_cast<std::size_t>(node.inputs[0])];
    const IrTensor& k = ir.tensors[static_cast<std::size_t>(node.inputs[1])];
    if (k.sizes.size() >= 2) {
      const double f = 4.0 * static_cast<double>(numel(q)) * static_cast<double>(k.sizes[k.sizes.size() - 2]);
      return ends_with(op, "_backward") ? f * 2.5 : f;
    }
  }
  double f = 0;
  for (const IrTensor* o : outs) f += o != nullptr ? static_cast<double>(numel(*o)) : 0.0;
  return f;
}

// What an in-place op writes (IR tensor indices): `self` for a name ending in '_' (add_, copy_,
// _foreach_mul_), or its `out` arguments.
std::vector<int> written_by(std::string_view op, const IrNode& node) {
  std::vector<int> out;
  for (const auto& [name, v] : node.kwargs) {
    if (name == "out") collect_tensors(v, out);
  }
  if (out.empty() && ends_with(op, "_") && !starts_with(op, "__") && !node.args.empty()) {
    collect_tensors(node.args[0], out);
  }
  return out;
}

// Runs one node; its outputs go into env.
class NodeRunner {
 public:
  NodeRunner(const Ir& ir, std::vector<Tensor>& env, OpTally& tally) : ir_(ir), env_(env), tally_(tally) {}

  void run(const IrNode& node, const OpForm* form) {
    const std::string_view op = short_name(node.op);
    const std::string name = aten_name(node.op);
    ++tally_.counts[name];
    std::vector<const IrTensor*> outs(node.outputs.size(), nullptr);
    for (std::size_t i = 0; i < node.outputs.size(); ++i) {
      if (node.outputs[i] >= 0) outs[i] = &ir_.tensors[static_cast<std::size_t>(node.outputs[i])];
    }
    const Lowering* lowering = find_lowering(op);
    const Call call(ir_, node, op, lowering_argument_names(op), env_);
    if (form != nullptr ? !form->view_source.empty() : view_ops().count(op) != 0 && !node.inputs.empty()) {
      int source = node.inputs.empty() ? -1 : node.inputs[0];
      if (form != nullptr) {
        const IrValue* v = call.arg(form->view_source);
        source = v != nullptr && v->kind == IrValue::Kind::tensor ? v->tensor : -1;
      }
      if (source >= 0) {
        run_view(source, node, name, outs);
        return;
      }
    }
    std::vector<Tensor> ins;
    double nbytes = 0;
    for (int t : node.inputs) {
      ins.push_back(env_[static_cast<std::size_t>(t)]);
      nbytes += bytes_of(ir_.tensors[static_cast<std::size_t>(t)]);
    }
    for (const IrTensor* o : outs) nbytes += o != nullptr ? bytes_of(*o) : 0.0;
    const double flops = op_flops(op, ir_, node, outs, &call);
    tally_.graph_flops += flops;
    tally_.graph_bytes += nbytes;
    Lowered result;
    if (lowering != nullptr) {
      try {
        result = lowering->lower(call);
      } catch (const IrArgumentError&) {
        throw;
      } catch (const torch::Error&) {
        // The torch layer refused a form PyTorch accepts: the generic cost stands in, listed.
        result.reset();
      }
    }
    std::vector<int> written_ids;
    if (form != nullptr) {
      for (const std::string& w : form->written) {
        if (const IrValue* v = call.arg(w)) collect_tensors(*v, written_ids);
      }
    } else {
      written_ids = written_by(op, node);
    }
    if (!written_ids.empty()) {
      std::vector<Tensor> written;
      for (int t : written_ids) written.push_back(env_[static_cast<std::size_t>(t)]);
      if (!result) {
        std::vector<Tensor> read;
        for (int t : node.inputs) {
          if (std::find(written_ids.begin(), written_ids.end(), t) == written_ids.end()) {
            read.push_back(env_[static_cast<std::size_t>(t)]);
          }
        }
        read.insert(read.end(), written.begin(), written.end());
        torch::aten::memory_bound(name, read, {}, written);
        OpTally::Generic& g = tally_.generic[name];  // an in-place update with no model: listed
        g.count += 1;
        g.flops += flops;
        g.bytes += nbytes;
        g.elementwise = true;
        result = std::vector<Tensor>(outs.size());
        for (std::size_t i = 0; i < outs.size(); ++i) (*result)[i] = written[std::min(i, written.size() - 1)];
      }
      attach(name, outs, *result);
      return;
    }
    if (!result && std::all_of(outs.begin(), outs.end(), [](const IrTensor* o) { return o == nullptr; })) {
      torch::aten::memory_bound(name, {}, {}, {});  // a query answered on the host (sym_size, is_same_size)
      return;
    }
    if (!result) {
      const bool factory =
          form != nullptr ? form->factory : node.inputs.empty() || starts_with(op, "new_") || ends_with(op, "_like");
      std::vector<torch::aten::OutputSpec> specs;
      for (const IrTensor* o : outs) {
        if (o != nullptr) specs.push_back({o->sizes, dtype_of(*o)});
      }
      std::vector<Tensor> made;
      if (factory && (starts_with(op, "empty") || starts_with(op, "new_empty"))) {
        for (const IrTensor* o : outs) made.push_back(o != nullptr ? fresh(*o) : Tensor());
        attach(name, outs, made);
        return;
      }
      made = torch::aten::memory_bound(name, factory ? std::vector<Tensor>{} : ins, specs, {});
      if (!factory) {
        std::int64_t widest = 0;
        for (int t : node.inputs) widest = std::max(widest, numel(ir_.tensors[static_cast<std::size_t>(t)]));
        bool elementwise = starts_with(op, "_foreach_");
        if (!elementwise) {
          elementwise = std::all_of(outs.begin(), outs.end(),
                                    [&](const IrTensor* o) { return o == nullptr || numel(*o) == widest; });
        }
        OpTally::Generic& g = tally_.generic[name];
        g.count += 1;
        g.flops += flops;
        g.bytes += nbytes;
        g.elementwise = elementwise;
      }
      std::vector<Tensor> spread(outs.size());
      std::size_t next = 0;
      for (std::size_t i = 0; i < outs.size(); ++i) {
        if (outs[i] != nullptr) spread[i] = made[next++];
      }
      result = std::move(spread);
    }
    attach(name, outs, *result);
  }

 private:
  void run_view(int source, const IrNode& node, const std::string& name, const std::vector<const IrTensor*>& outs) {
    const Tensor& src = env_[static_cast<std::size_t>(source)];
    for (std::size_t i = 0; i < outs.size(); ++i) {
      if (outs[i] == nullptr) continue;
      const IrTensor& o = *outs[i];
      env_[static_cast<std::size_t>(node.outputs[i])] = view_of(src, o, name);
    }
  }

  // A view of src's memory with o's layout. A complex view of real pairs (view_as_complex) or a
  // real view of complex numbers (view_as_real) counts its sizes, strides and offset in its own
  // elements: they are taken back to src's before the view is made. Any other change of dtype
  // has a tensor of its own.
  static Tensor view_of(const Tensor& src, const IrTensor& o, const std::string& name) {
    const torch::ScalarType to = dtype_of(o);
    const torch::ScalarType from = src.dtype();
    if (to == from) return torch::aten::as_strided(src, o.sizes, strides_of(o), o.offset, name);
    const std::vector<std::int64_t> strides = strides_of(o);
    if (torch::is_complex(to) && !torch::is_complex(from) && torch::to_complex(from) == to) {
      std::vector<std::int64_t> sizes = o.sizes, real_strides;
      sizes.push_back(2);
      for (std::int64_t s : strides) real_strides.push_back(2 * s);
      real_strides.push_back(1);
      return torch::view_as_complex(torch::aten::as_strided(src, sizes, real_strides, 2 * o.offset, name));
    }
    if (!torch::is_complex(to) && torch::is_complex(from) && torch::to_real(from) == to && !o.sizes.empty() &&
        o.sizes.back() == 2 && strides.back() == 1 && o.offset % 2 == 0) {
      std::vector<std::int64_t> sizes(o.sizes.begin(), o.sizes.end() - 1), complex_strides;
      for (std::size_t i = 0; i + 1 < strides.size(); ++i) complex_strides.push_back(strides[i] / 2);
      return torch::view_as_real(torch::aten::as_strided(src, sizes, complex_strides, o.offset / 2, name));
    }
    return fresh(o);
  }

  // Each output its tensor: the lowering's at the same position, checked against the IR's record.
  void attach(const std::string& name, const std::vector<const IrTensor*>& outs, const std::vector<Tensor>& made) {
    for (std::size_t i = 0; i < outs.size(); ++i) {
      if (outs[i] == nullptr) continue;
      const IrTensor& meta = *outs[i];
      Tensor s = i < made.size() ? made[i] : Tensor();
      if (!s.defined()) {
        s = fresh(meta);
      } else if (s.dtype() != dtype_of(meta) || s.sizes() != meta.sizes) {
        ++tally_.layout_mismatches[name];
        s = fresh(meta);
      } else if (!same_layout(meta, s)) {  // the same elements in the program's layout (a permuted output)
        s = torch::aten::as_strided(s, meta.sizes, strides_of(meta), meta.offset, name);
      }
      env_[static_cast<std::size_t>(&meta - ir_.tensors.data())] = std::move(s);
    }
  }

  const Ir& ir_;
  std::vector<Tensor>& env_;
  OpTally& tally_;
};

// For each node, the tensors whose last reader (or maker, for one never read) it is. Graph inputs,
// weights and outputs stay.
std::vector<std::vector<int>> last_uses(const Ir& ir) {
  std::vector<char> keep(ir.tensors.size(), 0);
  for (int t : ir.inputs) keep[t] = 1;
  for (int t : ir.outputs) keep[t] = 1;
  for (const IrWeight& w : ir.weights) keep[w.tensor] = 1;
  std::vector<int> last(ir.tensors.size(), -1);
  for (std::size_t i = 0; i < ir.nodes.size(); ++i) {
    for (int t : ir.nodes[i].outputs) {
      if (t >= 0) last[t] = static_cast<int>(i);
    }
    for (int t : ir.nodes[i].inputs) last[t] = static_cast<int>(i);
  }
  std::vector<std::vector<int>> drop(ir.nodes.size());
  for (std::size_t t = 0; t < last.size(); ++t) {
    if (last[t] >= 0 && !keep[t]) drop[static_cast<std::size_t>(last[t])].push_back(static_cast<int>(t));
  }
  return drop;
}

}  // namespace

void check_executable(const Ir& ir, const std::string& file, Diagnostics& d) {
  for (const IrTensor& t : ir.tensors) {
    if (!scalar_type_of(t.dtype)) {
      d.error(file, json_child_pointer("/tensors", t.name) + "/dtype",
              fmt::format("expected a PyTorch dtype (float32, float16, bfloat16, int64, bool, ...), found \"{}\"",
                          clip(t.dtype, 40)));
    }
  }
}

void run_node(const Ir& ir, const IrNode& node, std::vector<torch::Tensor>& env, OpTally& tally, const OpForm* form) {
  NodeRunner(ir, env, tally).run(node, form);
}

void execute_ir(const Ir& ir, OpTally& tally) {
  std::vector<Tensor> env(ir.tensors.size());
  for (const IrWeight& w : ir.weights) {
    env[static_cast<std::size_t>(w.tensor)] = place(ir.tensors[static_cast<std::size_t>(w.tensor)], w.kind != "constant");
  }
  for (int t : ir.inputs) env[static_cast<std::size_t>(t)] = place(ir.tensors[static_cast<std::size_t>(t)], false);
  const std::vector<std::vector<int>> drop = last_uses(ir);
  torch::NoGradGuard no_grad;
  NodeRunner runner(ir, env, tally);
  for (std::size_t i = 0; i < ir.nodes.size(); ++i) {
    runner.run(ir.nodes[i], nullptr);
    for (int t : drop[i]) env[static_cast<std::size_t>(t)] = Tensor();
  }
}

}  // namespace syntorch::graph
