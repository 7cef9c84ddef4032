#include "syntorch/graph/recorder.hpp"

#include <fmt/format.h>

namespace syntorch::graph {

std::string pytorch_dtype_name(torch::ScalarType t) {
  using torch::ScalarType;
  switch (t) {
    case ScalarType::Double: return "float64";
    case ScalarType::Float: return "float32";
    case ScalarType::Half: return "float16";
    case ScalarType::BFloat16: return "bfloat16";
    case ScalarType::Float8_e4m3fn: return "float8_e4m3fn";
    case ScalarType::Float4: return "float4_e2m1fn_x2";
    case ScalarType::Char: return "int8";
    case ScalarType::Byte: return "uint8";
    case ScalarType::Int: return "int32";
    case ScalarType::Long: return "int64";
    case ScalarType::Bool: return "bool";
    case ScalarType::ComplexFloat: return "complex64";
    case ScalarType::ComplexDouble: return "complex128";
  }
  return "float32";
}

int IrRecorder::add_tensor(const torch::Tensor& t, const std::string& name, const std::string& producer) {
  IrTensor meta;
  meta.name = name;
  meta.sizes = t.sizes();
  meta.strides = t.strides();
  meta.offset = t.storage_offset();
  meta.dtype = pytorch_dtype_name(t.dtype());
  meta.producer = producer;
  const int i = static_cast<int>(ir_.tensors.size());
  ir_.tensors.push_back(std::move(meta));
  index_[t.unique_id()] = i;
  return i;
}

void IrRecorder::add_weight(const std::string& name, const torch::Tensor& t, const std::string& kind) {
  const auto it = index_.find(t.unique_id());
  if (it != index_.end()) {
    for (IrWeight& w : ir_.weights) {
      if (w.tensor == it->second) w.aliases.push_back(name);
    }
    return;
  }
  IrWeight w;
  w.name = name;
  w.kind = kind;
  w.tensor = add_tensor(t, name, "");
  ir_.weights.push_back(std::move(w));
}

void IrRecorder::add_input(const torch::Tensor& t) {
  ir_.inputs.push_back(add_tensor(t, fmt::format("input_{}", ir_.inputs.size()), ""));
}

int IrRecorder::name_of(const torch::Tensor& t) {
  const auto it = index_.find(t.unique_id());
  if (it != index_.end()) return it->second;
  // Made outside the recorded ops (a tensor the program built itself): a constant.
  const std::string name = fmt::format("constant_{}", constants_++);
  IrWeight w;
  w.name = name;
  w.kind = "constant";
  w.tensor = add_tensor(t, name, "");
  ir_.weights.push_back(w);
  return w.tensor;
}

IrValue IrRecorder::value_of(const torch::RecordedArg& a) {
  using K = torch::RecordedArg::Kind;
  IrValue v;
  switch (a.kind) {
    case K::none: break;
    case K::tensor:
      v.kind = IrValue::Kind::tensor;
      v.tensor = name_of(a.tensor);
      break;
    case K::tensors:
      v.kind = IrValue::Kind::list;
      for (const torch::Tensor& t : a.tensors) {
        IrValue x;
        x.kind = IrValue::Kind::tensor;
        x.tensor = name_of(t);
        v.items.push_back(x);
      }
      break;
    case K::integer:
      v.kind = IrValue::Kind::integer;
      v.integer = a.integer;
      break;
    case K::integers:
      v.kind = IrValue::Kind::list;
      for (std::int64_t i : a.integers) {
        IrValue x;
        x.kind = IrValue::Kind::integer;
        x.integer = i;
        v.items.push_back(x);
      }
      break;
    case K::real:
      v.kind = IrValue::Kind::real;
      v.real = a.real;
      break;
    case K::boolean:
      v.kind = IrValue::Kind::boolean;
      v.boolean = a.boolean;
      break;
    case K::text:
      if (a.name == "memory_format") {
        v.kind = IrValue::Kind::typed;
        v.typed_kind = "memory_format";
      } else {
        v.kind = IrValue::Kind::string;
      }
      v.text = a.text;
      break;
    case K::dtype:
      v.kind = IrValue::Kind::typed;
      v.typed_kind = "dtype";
      v.text = pytorch_dtype_name(a.dtype);
      break;
  }
  return v;
}

void IrRecorder::record(std::string_view op, std::span<const torch::RecordedArg> args,
                        std::span<const torch::Tensor> outputs) {
  IrNode node;
  node.op = std::string(op);
  const std::size_t dot = op.find('.');
  const std::string packet(op.substr(dot + 1, op.find('.', dot + 1) - dot - 1));
  int& k = per_op_[packet];
  node.name = fmt::format("{}_{}", packet, k++);
  for (const torch::RecordedArg& a : args) {
    IrValue v = value_of(a);
    if (a.name.empty()) {
      node.args.push_back(std::move(v));
    } else {
      node.kwargs.emplace_back(a.name, std::move(v));
    }
  }
  // Trailing None positional arguments are their defaults: left out, as PyTorch's calls leave them.
  while (!node.args.empty() && node.args.back().kind == IrValue::Kind::none) node.args.pop_back();
  for (const IrValue& v : node.args) collect_tensors(v, node.inputs);
  for (const auto& [name, v] : node.kwargs) collect_tensors(v, node.inputs);
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    if (!outputs[i].defined()) {
      node.outputs.push_back(-1);
      continue;
    }
    const std::string name = outputs.size() == 1 ? node.name : fmt::format("{}.{}", node.name, i);
    node.outputs.push_back(add_tensor(outputs[i], name, node.name));  // an in-place result: a new version
  }
  ir_.nodes.push_back(std::move(node));
}

void IrRecorder::discard() { index_.clear(); }

Ir IrRecorder::finish(const std::vector<torch::Tensor>& outputs, const std::string& model) {
  for (const torch::Tensor& t : outputs) ir_.outputs.push_back(name_of(t));
  ir_.model = model;
  ir_.producer = {{"syntorch", "graph export"}};
  Ir out = std::move(ir_);
  ir_ = Ir{};
  index_.clear();
  return out;
}

}  // namespace syntorch::graph
