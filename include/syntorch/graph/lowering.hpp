#pragma once
// The ATen ops an IR's nodes lower onto the torch layer: one entry per ATen op name (the op as
// `aten::<name>` without its overload), with the names of its positional arguments as ATen's
// schema gives them, and a function of the node's bound arguments that returns the outputs the
// torch layer made for it. Views, in-place updates and factories follow from the op's name
// (execute.hpp); an op with no entry is costed as memory-bound and listed.
//
// Adding an op is a function in the file of its family under src/graph/lowerings/ and a line in
// that file's table.

#include <cstdint>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "syntorch/graph/ir.hpp"
#include "syntorch/torch/tensor.hpp"
#include "syntorch/torch/types.hpp"

namespace syntorch::graph {

// A node whose arguments are not what its op takes (an argument missing or of another kind): an
// error in the IR, reported with the node's name and op.
class IrArgumentError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// One node's arguments bound to its op's argument names (positional by the schema's order,
// keyword by name), and the tensors they stand for on the simulated device.
class Call {
 public:
  Call(const Ir& ir, const IrNode& node, std::string_view op, std::span<const std::string_view> names,
       const std::vector<torch::Tensor>& env);

  std::string_view op() const { return op_; }  // "mm", "native_layer_norm"
  std::string aten_name() const;               // "aten::mm"

  const IrValue* arg(std::string_view name) const;  // nullptr when absent (its default applies)
  bool has(std::string_view name) const;            // given and not None
  bool is_tensor(std::string_view name) const;

  // Each throws IrArgumentError naming the node and argument when it is absent (with no default) or
  // of another kind.
  torch::Tensor tensor(std::string_view name) const;
  torch::Tensor optional_tensor(std::string_view name) const;  // undefined when absent or None
  std::vector<torch::Tensor> tensors(std::string_view name) const;
  std::int64_t integer(std::string_view name, std::optional<std::int64_t> fallback = std::nullopt) const;
  double real(std::string_view name, std::optional<double> fallback = std::nullopt) const;
  bool boolean(std::string_view name, std::optional<bool> fallback = std::nullopt) const;
  std::string text(std::string_view name, std::optional<std::string> fallback = std::nullopt) const;
  std::vector<std::int64_t> ints(std::string_view name, std::optional<std::vector<std::int64_t>> fallback = std::nullopt) const;
  std::vector<bool> bools(std::string_view name, std::vector<bool> fallback) const;

  // Every tensor the node reads, in argument order.
  std::vector<torch::Tensor> inputs() const;
  // The IR's record of the node's outputs (-1 entries: not a tensor).
  std::size_t output_count() const { return node_.outputs.size(); }
  const IrTensor* output(std::size_t i) const;
  // A tensor standing for output i that its op's kernel writes beside its main one (no kernel of
  // its own): allocated with the recorded shape and dtype. Undefined for a non-tensor output.
  torch::Tensor fresh(std::size_t i) const;

  const IrNode& node() const { return node_; }
  const Ir& ir() const { return ir_; }

 private:
  [[noreturn]] void fail(std::string_view name, std::string_view expected) const;
  torch::Tensor env_tensor(const IrValue& v) const;

  const Ir& ir_;
  const IrNode& node_;
  std::string_view op_;
  std::vector<std::pair<std::string_view, const IrValue*>> bound_;
  const std::vector<torch::Tensor>& env_;
};

// A lowering's result: the tensors at the positions of the node's outputs (undefined where the
// op returns no tensor, or where its kernel wrote it beside the main one: a fresh tensor stands
// in), or nullopt when the op's arguments are of a form this lowering has no model for (the
// generic memory-bound cost stands in and the op is listed).
using Lowered = std::optional<std::vector<torch::Tensor>>;
using LowerFn = Lowered (*)(const Call&);

struct Lowering {
  std::string_view op;      // ATen name without namespace and overload: "addmm"
  std::string_view schema;  // its positional arguments' names, space-separated: "self mat1 mat2"
  LowerFn lower;
};

// The lowering of an op ("addmm"), or nullptr when there is none.
const Lowering* find_lowering(std::string_view op);
// The names of an op's positional arguments from its schema (empty for an op with no lowering).
std::span<const std::string_view> lowering_argument_names(std::string_view op);

// The torch layer's dtype for an IR dtype name ("float16", "int64", "bool"); dtypes with no exact
// counterpart stand in by size (uint8 as int8, int16 as float16). nullopt for a name PyTorch lacks.
std::optional<torch::ScalarType> scalar_type_of(std::string_view name);

namespace lowerings {
// Each family's table (src/graph/lowerings/<family>.cpp).
std::span<const Lowering> products();
std::span<const Lowering> attention();
std::span<const Lowering> norms();
std::span<const Lowering> elementwise();
std::span<const Lowering> data_movement();
std::span<const Lowering> reductions();
std::span<const Lowering> vision();
std::span<const Lowering> moe();
}  // namespace lowerings

}  // namespace syntorch::graph
