#pragma once
// The IR of a model as the torch layer reads and writes it: a weight-free graph of ATen ops with
// every tensor's shape and dtype, nodes in execution order, weights by state_dict name. Its JSON
// form ("syntorch-ir" version 1) is the one Python's syntorch.ir writes and the shipped JSON
// Schema (python/syntorch/ir/ir-v1.schema.json) describes; docs/ir.md.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "syntorch/base/diagnostics.hpp"

namespace syntorch::graph {

inline constexpr const char* kIrFormat = "syntorch-ir";
inline constexpr int kIrVersion = 1;

// One argument of a node as the call had it: a constant, a tensor (by index into Ir::tensors),
// a list of arguments, or a typed constant (a dtype, device, layout or memory format by name).
struct IrValue {
  enum class Kind : std::uint8_t { none, boolean, integer, real, string, tensor, list, typed };
  Kind kind = Kind::none;
  bool boolean = false;
  std::int64_t integer = 0;
  double real = 0;
  std::string text;        // a string, or a typed constant's value ("float16", "cuda")
  std::string typed_kind;  // "dtype", "device", "layout", "memory_format"
  int tensor = -1;
  std::vector<IrValue> items;

  bool is_number() const { return kind == Kind::integer || kind == Kind::real || kind == Kind::boolean; }
  double number() const;  // an integer, real or boolean as a double
};

// A tensor of the graph: its shape, dtype (PyTorch's name: "float16", "int64"), layout and the
// node that makes it ("" for a graph input or weight).
struct IrTensor {
  std::string name;
  std::vector<std::int64_t> sizes;
  std::vector<std::int64_t> strides;  // empty: contiguous
  std::int64_t offset = 0;
  std::string dtype;
  std::string producer;
};

// One op: `op` as PyTorch prints the overload ("aten.mm.default"), its arguments, the tensors it
// reads (in argument order) and makes (-1 where it returns something that is not a tensor).
struct IrNode {
  std::string name;
  std::string op;
  std::vector<IrValue> args;
  std::vector<std::pair<std::string, IrValue>> kwargs;
  std::vector<int> inputs;
  std::vector<int> outputs;
};

// A parameter, buffer or constant the model holds, by its state_dict name.
struct IrWeight {
  std::string name;
  int tensor = -1;
  std::string kind = "parameter";  // parameter | buffer | constant
  std::vector<std::string> aliases;
};

struct Ir {
  std::string model;
  std::vector<std::pair<std::string, std::string>> producer;  // what made it and its version
  std::vector<int> inputs;   // graph inputs, in call order
  std::vector<int> outputs;  // graph outputs, flattened in return order
  std::vector<IrWeight> weights;
  std::vector<IrTensor> tensors;
  std::vector<IrNode> nodes;

  int tensor_index(const std::string& name) const;  // -1 when absent
};

// The tensors an argument names (lists included), appended to `out` in order.
void collect_tensors(const IrValue& value, std::vector<int>& out);

// Parses and checks an IR's JSON: the format and version, every field's type, tensor names that
// exist, nodes that read only what exists before them. Problems go to `diagnostics` under `file`
// with the JSON path; the IR is meaningful only when none were added.
Ir parse_ir(const nlohmann::ordered_json& json, const std::string& file, Diagnostics& diagnostics);
// Reads and parses an IR file; InputError naming the file, the JSON path, what was expected and found.
Ir load_ir(const std::string& path);

nlohmann::ordered_json ir_to_json(const Ir& ir);
// Writes the JSON form (written whole, then renamed over `path`); InputError when it cannot.
void save_ir(const Ir& ir, const std::string& path);

}  // namespace syntorch::graph
