// Binding a node's arguments to its op's names, and the table of lowerings from every family.
#include "syntorch/graph/lowering.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "syntorch/torch/ops.hpp"

namespace syntorch::graph {

Call::Call(const Ir& ir, const IrNode& node, std::string_view op, std::span<const std::string_view> names,
           const std::vector<torch::Tensor>& env)
    : ir_(ir), node_(node), op_(op), env_(env) {
  for (std::size_t i = 0; i < node.args.size() && i < names.size(); ++i) bound_.emplace_back(names[i], &node.args[i]);
  for (const auto& [name, value] : node.kwargs) bound_.emplace_back(name, &value);
}

std::string Call::aten_name() const { return fmt::format("aten::{}", op_); }

const IrValue* Call::arg(std::string_view name) const {
  for (const auto& [n, v] : bound_) {
    if (n == name) return v;
  }
  return nullptr;
}

bool Call::has(std::string_view name) const {
  const IrValue* v = arg(name);
  return v != nullptr && v->kind != IrValue::Kind::none;
}

bool Call::is_tensor(std::string_view name) const {
  const IrValue* v = arg(name);
  return v != nullptr && v->kind == IrValue::Kind::tensor;
}

void Call::fail(std::string_view name, std::string_view expected) const {
  throw IrArgumentError(fmt::format("IR node {} ({}): argument '{}': expected {}", node_.name, node_.op, name, expected));
}

torch::Tensor Call::env_tensor(const IrValue& v) const {
  const torch::Tensor& t = env_.at(static_cast<std::size_t>(v.tensor));
  if (!t.defined()) {
    throw IrArgumentError(fmt::format("IR node {} ({}): reads tensor '{}' after its last use", node_.name, node_.op,
                                   ir_.tensors[static_cast<std::size_t>(v.tensor)].name));
  }
  return t;
}

torch::Tensor Call::tensor(std::string_view name) const {
  const IrValue* v = arg(name);
  if (v == nullptr || v->kind != IrValue::Kind::tensor) fail(name, "a tensor");
  return env_tensor(*v);
}

torch::Tensor Call::optional_tensor(std::string_view name) const {
  const IrValue* v = arg(name);
  if (v == nullptr || v->kind == IrValue::Kind::none) return {};
  if (v->kind != IrValue::Kind::tensor) fail(name, "a tensor or None");
  return env_tensor(*v);
}

std::vector<torch::Tensor> Call::tensors(std::string_view name) const {
  const IrValue* v = arg(name);
  if (v == nullptr || v->kind != IrValue::Kind::list) fail(name, "a list of tensors");
  std::vector<torch::Tensor> out;
  for (const IrValue& x : v->items) {
    if (x.kind != IrValue::Kind::tensor) fail(name, "a list of tensors");
    out.push_back(env_tensor(x));
  }
  return out;
}

std::int64_t Call::integer(std::string_view name, std::optional<std::int64_t> fallback) const {
  const IrValue* v = arg(name);
  if (v == nullptr || v->kind == IrValue::Kind::none) {
    if (!fallback) fail(name, "an integer");
    return *fallback;
  }
  if (v->kind == IrValue::Kind::integer) return v->integer;
  if (v->kind == IrValue::Kind::boolean) return v->boolean ? 1 : 0;
  if (v->kind == IrValue::Kind::list && v->items.size() == 1 && v->items[0].kind == IrValue::Kind::integer) {
    return v->items[0].integer;  // a one-element int[] where an int is read (dim=[1])
  }
  fail(name, "an integer");
}

double Call::real(std::string_view name, std::optional<double> fallback) const {
  const IrValue* v = arg(name);
  if (v == nullptr || v->kind == IrValue::Kind::none) {
    if (!fallback) fail(name, "a number");
    return *fallback;
  }
  if (!v->is_number()) fail(name, "a number");
  return v->number();
}

bool Call::boolean(std::string_view name, std::optional<bool> fallback) const {
  const IrValue* v = arg(name);
  if (v == nullptr || v->kind == IrValue::Kind::none) {
    if (!fallback) fail(name, "a boolean");
    return *fallback;
  }
  if (!v->is_number()) fail(name, "a boolean");
  return v->number() != 0;
}

std::string Call::text(std::string_view name, std::optional<std::string> fallback) const {
  const IrValue* v = arg(name);
  if (v == nullptr || v->kind == IrValue::Kind::none) {
    if (!fallback) fail(name, "a string");
    return *fallback;
  }
  if (v->kind != IrValue::Kind::string && v->kind != IrValue::Kind::typed) fail(name, "a string");
  return v->text;
}

std::vector<std::int64_t> Call::ints(std::string_view name, std::optional<std::vector<std::int64_t>> fallback) const {
  const IrValue* v = arg(name);
  if (v == nullptr || v->kind == IrValue::Kind::none) {
    if (!fallback) fail(name, "a list of integers");
    return *fallback;
  }
  if (v->kind == IrValue::Kind::integer) return {v->integer};
  if (v->kind != IrValue::Kind::list) fail(name, "a list of integers");
  std::vector<std::int64_t> out;
  for (const IrValue& x : v->items) {
    if (x.kind != IrValue::Kind::integer) fail(name, "a list of integers");
    out.push_back(x.integer);
  }
  return out;
}

std::vector<bool> Call::bools(std::string_view name, std::vector<bool> fallback) const {
  const IrValue* v = arg(name);
  if (v == nullptr || v->kind == IrValue::Kind::none) return fallback;
  if (v->kind != IrValue::Kind::list) fail(name, "a list of booleans");
  std::vector<bool> out;
  for (const IrValue& x : v->items) {
    if (!x.is_number()) fail(name, "a list of booleans");
    out.push_back(x.number() != 0);
  }
  return out;
}

std::vector<torch::Tensor> Call::inputs() const {
  std::vector<torch::Tensor> out;
  out.reserve(node_.inputs.size());
  for (int t : node_.inputs) out.push_back(env_.at(static_cast<std::size_t>(t)));
  return out;
}

const IrTensor* Call::output(std::size_t i) const {
  if (i >= node_.outputs.size() || node_.outputs[i] < 0) return nullptr;
  return &ir_.tensors[static_cast<std::size_t>(node_.outputs[i])];
}

torch::Tensor Call::fresh(std::size_t i) const {
  const IrTensor* t = output(i);
  if (t == nullptr) return {};
  const std::optional<torch::ScalarType> dtype = scalar_type_of(t->dtype);
  return torch::empty(t->sizes, torch::TensorOptions(dtype.value_or(torch::kFloat)).device(torch::kCUDA));
}

std::optional<torch::ScalarType> scalar_type_of(std::string_view name) {
  using torch::ScalarType;
  static const std::map<std::string_view, ScalarType> kNames{
      {"float32", ScalarType::Float},     {"float", ScalarType::Float},        {"float16", ScalarType::Half},
      {"half", ScalarType::Half},         {"bfloat16", ScalarType::BFloat16},  {"float64", ScalarType::Double},
      {"double", ScalarType::Double},     {"int64", ScalarType::Long},         {"long", ScalarType::Long},
      {"int32", ScalarType::Int},         {"int", ScalarType::Int},            {"int8", ScalarType::Char},
      {"uint8", ScalarType::Byte},        {"bool", ScalarType::Bool},          {"int16", ScalarType::Half},
      {"short", ScalarType::Half},        {"complex64", ScalarType::ComplexFloat},
      {"cfloat", ScalarType::ComplexFloat}, {"complex128", ScalarType::ComplexDouble},
      {"cdouble", ScalarType::ComplexDouble}, {"complex32", ScalarType::Float},
      {"float8_e4m3fn", ScalarType::Float8_e4m3fn}, {"float8_e5m2", ScalarType::Float8_e4m3fn},
      {"float8_e4m3fnuz", ScalarType::Float8_e4m3fn}, {"float8_e5m2fnuz", ScalarType::Float8_e4m3fn},
      {"float4_e2m1fn_x2", ScalarType::Float4}};
  const auto it = kNames.find(name);
  if (it == kNames.end()) return std::nullopt;
  return it->second;
}

namespace {

// The families' tables merged, each op's schema split into its argument names once.
struct LoweringTable {
  struct Entry {
    const Lowering* lowering;
    std::vector<std::string_view> names;
  };
  std::map<std::string_view, Entry, std::less<>> entries;

  LoweringTable() {
    for (auto family : {lowerings::products, lowerings::attention, lowerings::norms, lowerings::elementwise,
                        lowerings::data_movement, lowerings::reductions, lowerings::vision, lowerings::moe}) {
      for (const Lowering& l : family()) {
        Entry e{&l, {}};
        std::string_view s = l.schema;
        while (!s.empty()) {
          const std::size_t space = s.find(' ');
          const std::string_view word = s.substr(0, space);
          if (!word.empty()) e.names.push_back(word);
          if (space == std::string_view::npos) break;
          s.remove_prefix(space + 1);
        }
        entries.emplace(l.op, std::move(e));
      }
    }
  }
};

const LoweringTable& table() {
  static const LoweringTable t;
  return t;
}

}  // namespace

const Lowering* find_lowering(std::string_view op) {
  const auto& e = table().entries;
  const auto it = e.find(op);
  return it == e.end() ? nullptr : it->second.lowering;
}

std::span<const std::string_view> lowering_argument_names(std::string_view op) {
  const auto& e = table().entries;
  const auto it = e.find(op);
  if (it == e.end()) return {};
  return it->second.names;
}

}  // namespace syntorch::graph
