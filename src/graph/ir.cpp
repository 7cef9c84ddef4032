// The IR's JSON form, read with every field checked (the file, the JSON path, what was expected
// and found) and written back as Python's syntorch.ir writes it.
#include "syntorch/graph/ir.hpp"

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <set>
#include <stdexcept>
#include <unordered_map>

#include "syntorch/base/input_file.hpp"
#include "syntorch/base/json.hpp"
#include "syntorch/trace/output_file.hpp"

namespace syntorch::graph {

using Json = nlohmann::ordered_json;

double IrValue::number() const {
  switch (kind) {
    case Kind::integer: return static_cast<double>(integer);
    case Kind::real: return real;
    case Kind::boolean: return boolean ? 1.0 : 0.0;
    default: return 0.0;
  }
}

void collect_tensors(const IrValue& v, std::vector<int>& out) {
  if (v.kind == IrValue::Kind::tensor && v.tensor >= 0) out.push_back(v.tensor);
  for (const IrValue& x : v.items) collect_tensors(x, out);
}

int Ir::tensor_index(const std::string& name) const {
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    if (tensors[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

namespace {

constexpr std::string_view kTypedKinds[] = {"dtype", "device", "layout", "memory_format"};

// The reader's state: the file's name, its problems and the tensors by name.
struct IrReader {
  const std::string& file;
  Diagnostics& d;
  std::unordered_map<std::string, int> index;

  void error(const std::string& at, const std::string& message) { d.error(file, at, message); }

  const Json* field(const Json& obj, const char* key, const std::string& at) {
    if (!obj.is_object() || !obj.contains(key)) {
      error(at, fmt::format("expected a field '{}'", key));
      return nullptr;
    }
    return &obj.at(key);
  }
  const Json* typed(const Json& obj, const char* key, const std::string& at, Json::value_t type, const char* what) {
    const Json* v = field(obj, key, at);
    if (v == nullptr) return nullptr;
    const bool ok = type == Json::value_t::number_integer
                        ? v->is_number_integer()
                        : (type == Json::value_t::string ? v->is_string()
                                                          : (type == Json::value_t::array ? v->is_array() : v->is_object()));
    if (!ok) {
      error(json_child_pointer(at, key), fmt::format("expected {}, found {}", what, describe_json(*v)));
      return nullptr;
    }
    return v;
  }
  int tensor(const Json& name, const std::string& at) {
    if (!name.is_string()) {
      error(at, fmt::format("expected a tensor's name, found {}", describe_json(name)));
      return -1;
    }
    const auto it = index.find(name.get<std::string>());
    if (it == index.end()) {
      error(at, fmt::format("names tensor '{}', which /tensors does not hold", clip(name.get<std::string>(), 80)));
      return -1;
    }
    return it->second;
  }

  IrValue value(const Json& x, const std::string& at) {
    IrValue v;
    if (x.is_null()) return v;
    if (x.is_boolean()) {
      v.kind = IrValue::Kind::boolean;
      v.boolean = x.get<bool>();
    } else if (x.is_number_integer()) {
      if (x.is_number_unsigned() && x.get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX)) {
        error(at, fmt::format("expected an integer that fits 64 bits, found {}", describe_json(x)));
      }
      v.kind = IrValue::Kind::integer;
      v.integer = x.get<std::int64_t>();
    } else if (x.is_number()) {
      v.kind = IrValue::Kind::real;
      v.real = x.get<double>();
    } else if (x.is_string()) {
      v.kind = IrValue::Kind::string;
      v.text = x.get<std::string>();
    } else if (x.is_array()) {
      v.kind = IrValue::Kind::list;
      for (std::size_t i = 0; i < x.size(); ++i) v.items.push_back(value(x[i], json_child_pointer(at, i)));
    } else if (x.is_object()) {
      if (x.size() != 1) {
        error(at, fmt::format("expected one of tensor, float, dtype, device, layout, memory_format; found an object "
                              "with {} keys", x.size()));
        return v;
      }
      const std::string kind = x.begin().key();
      const Json& inner = x.begin().value();
      if (kind == "tensor") {
        v.kind = IrValue::Kind::tensor;
        v.tensor = tensor(inner, json_child_pointer(at, "tensor"));
      } else if (kind == "float") {
        const std::string s = inner.is_string() ? inner.get<std::string>() : "";
        v.kind = IrValue::Kind::real;
        if (s == "inf") {
          v.real = std::numeric_limits<double>::infinity();
        } else if (s == "-inf") {
          v.real = -std::numeric_limits<double>::infinity();
        } else if (s == "nan") {
          v.real = std::numeric_limits<double>::quiet_NaN();
        } else {
          error(json_child_pointer(at, "float"), fmt::format("expected inf, -inf or nan, found {}", describe_json(inner)));
        }
      } else {
        bool known = false;
        for (std::string_view k : kTypedKinds) known = known || k == kind;
        if (!known || !inner.is_string()) {
          error(at, known ? fmt::format("{}: expected a name, found {}", kind, describe_json(inner))
                          : fmt::format("expected one of tensor, float, dtype, device, layout, memory_format; found "
                                        "'{}'", clip(kind, 40)));
          return v;
        }
        v.kind = IrValue::Kind::typed;
        v.typed_kind = kind;
        v.text = inner.get<std::string>();
      }
    }
    return v;
  }
};

std::vector<std::int64_t> ints(const Json& array, const std::string& at, IrReader& r, bool non_negative) {
  std::vector<std::int64_t> out;
  for (std::size_t i = 0; i < array.size(); ++i) {
    const Json& x = array[i];
    if (!x.is_number_integer() || (non_negative && x.get<std::int64_t>() < 0)) {
      r.error(json_child_pointer(at, i), fmt::format("expected a{} integer, found {}",
                                                     non_negative ? " non-negative" : "n", describe_json(x)));
      continue;
    }
    out.push_back(x.get<std::int64_t>());
  }
  return out;
}

Json encode(const Ir& ir, const IrValue& v) {
  switch (v.kind) {
    case IrValue::Kind::none: return nullptr;
    case IrValue::Kind::boolean: return v.boolean;
    case IrValue::Kind::integer: return v.integer;
    case IrValue::Kind::real:
      if (std::isnan(v.real)) return Json{{"float", "nan"}};
      if (std::isinf(v.real)) return Json{{"float", v.real > 0 ? "inf" : "-inf"}};
      return v.real;
    case IrValue::Kind::string: return v.text;
    case IrValue::Kind::tensor: return Json{{"tensor", ir.tensors.at(static_cast<std::size_t>(v.tensor)).name}};
    case IrValue::Kind::typed: return Json{{v.typed_kind, v.text}};
    case IrValue::Kind::list: {
      Json a = Json::array();
      for (const IrValue& x : v.items) a.push_back(encode(ir, x));
      return a;
    }
  }
  return nullptr;
}

}  // namespace

Ir parse_ir(const Json& json, const std::string& file, Diagnostics& d) {
  Ir ir;
  IrReader r{file, d, {}};
  if (!json.is_object()) {
    r.error("", fmt::format("expected a syntorch IR (a JSON object with format \"{}\"), found {}", kIrFormat,
                            describe_json(json)));
    return ir;
  }
  if (const Json* f = r.typed(json, "format", "", Json::value_t::string, "a string"); f && *f != kIrFormat) {
    r.error("/format", fmt::format("expected \"{}\", found {}", kIrFormat, describe_json(*f)));
    return ir;
  }
  if (const Json* v = r.typed(json, "version", "", Json::value_t::number_integer, "an integer");
      v && v->get<std::int64_t>() != kIrVersion) {
    r.error("/version", fmt::format("this syntorch reads version {}, found {}", kIrVersion, describe_json(*v)));
    return ir;
  }
  if (!d.empty()) return ir;
  if (json.contains("model")) {
    if (json["model"].is_string()) {
      ir.model = json["model"].get<std::string>();
    } else {
      r.error("/model", fmt::format("expected a string, found {}", describe_json(json["model"])));
    }
  }
  if (json.contains("producer") && !json["producer"].is_null()) {
    if (!json["producer"].is_object()) {
      r.error("/producer", fmt::format("expected an object of versions, found {}", describe_json(json["producer"])));
    } else {
      for (const auto& [k, v] : json["producer"].items()) {
        if (v.is_string()) {
          ir.producer.emplace_back(k, v.get<std::string>());
        } else {
          r.error(json_child_pointer("/producer", k), fmt::format("expected a string, found {}", describe_json(v)));
        }
      }
    }
  }
  if (const Json* tensors = r.typed(json, "tensors", "", Json::value_t::object, "an object of tensors")) {
    for (const auto& [name, t] : tensors->items()) {
      const std::string at = json_child_pointer("/tensors", name);
      IrTensor meta;
      meta.name = name;
      if (!t.is_object()) {
        r.error(at, fmt::format("expected a tensor (shape, dtype, ...), found {}", describe_json(t)));
        continue;
      }
      if (const Json* s = r.typed(t, "shape", at, Json::value_t::array, "a list of sizes")) {
        meta.sizes = ints(*s, at + "/shape", r, true);
        std::int64_t elements = 1;  // at most 2^50 elements: their bytes fit 64 bits with room
        for (std::int64_t n : meta.sizes) {
          if (n > 0 && elements > (std::int64_t{1} << 50) / n) {
            r.error(at + "/shape", fmt::format("a tensor of more than 2^50 elements ({}): not a shape a device holds",
                                               describe_json(*s)));
            break;
          }
          elements *= n;
        }
      }
      if (const Json* dt = r.typed(t, "dtype", at, Json::value_t::string, "a dtype's name")) {
        meta.dtype = dt->get<std::string>();
      }
      if (t.contains("stride")) {
        if (!t["stride"].is_array()) {
          r.error(at + "/stride", fmt::format("expected a list of integers, found {}", describe_json(t["stride"])));
        } else {
          meta.strides = ints(t["stride"], at + "/stride", r, false);
          if (!meta.strides.empty() && meta.strides.size() != meta.sizes.size()) {
            r.error(at + "/stride", fmt::format("expected {} strides (one per dim of shape), found {}",
                                                meta.sizes.size(), meta.strides.size()));
          }
        }
      }
      if (t.contains("offset")) {
        if (!t["offset"].is_number_integer() || t["offset"].get<std::int64_t>() < 0) {
          r.error(at + "/offset", fmt::format("expected a non-negative integer, found {}", describe_json(t["offset"])));
        } else {
          meta.offset = t["offset"].get<std::int64_t>();
        }
      }
      if (t.contains("producer") && !t["producer"].is_null()) {
        if (!t["producer"].is_string()) {
          r.error(at + "/producer", fmt::format("expected a node name or null, found {}", describe_json(t["producer"])));
        } else {
          meta.producer = t["producer"].get<std::string>();
        }
      }
      r.index.emplace(name, static_cast<int>(ir.tensors.size()));
      ir.tensors.push_back(std::move(meta));
    }
  }
  if (!d.empty()) return ir;
  // What exists before the first node: graph inputs and weights; each node's outputs after it.
  std::vector<char> defined(ir.tensors.size(), 0);
  if (const Json* inputs = r.typed(json, "inputs", "", Json::value_t::array, "a list of tensor names")) {
    for (std::size_t i = 0; i < inputs->size(); ++i) {
      const int t = r.tensor((*inputs)[i], json_child_pointer("/inputs", i));
      if (t >= 0) {
        ir.inputs.push_back(t);
        defined[t] = 1;
      }
    }
  }
  if (const Json* weights = r.typed(json, "weights", "", Json::value_t::array, "a list of weights")) {
    for (std::size_t i = 0; i < weights->size(); ++i) {
      const Json& w = (*weights)[i];
      const std::string at = json_child_pointer("/weights", i);
      IrWeight weight;
      if (const Json* n = r.typed(w, "name", at, Json::value_t::string, "a string")) weight.name = n->get<std::string>();
      if (const Json* t = r.field(w, "tensor", at)) weight.tensor = r.tensor(*t, at + "/tensor");
      if (w.is_object() && w.contains("kind")) {
        const Json& k = w["kind"];
        if (!k.is_string() || (k != "parameter" && k != "buffer" && k != "constant")) {
          r.error(at + "/kind", fmt::format("expected parameter, buffer or constant, found {}", describe_json(k)));
        } else {
          weight.kind = k.get<std::string>();
        }
      }
      if (w.is_object() && w.contains("aliases")) {
        const Json& a = w["aliases"];
        bool ok = a.is_array();
        for (std::size_t j = 0; ok && j < a.size(); ++j) ok = a[j].is_string();
        if (!ok) {
          r.error(at + "/aliases", fmt::format("expected a list of names, found {}", describe_json(a)));
        } else {
          for (const Json& x : a) weight.aliases.push_back(x.get<std::string>());
        }
      }
      if (weight.tensor >= 0) defined[weight.tensor] = 1;
      ir.weights.push_back(std::move(weight));
    }
  }
  if (const Json* nodes = r.typed(json, "nodes", "", Json::value_t::array, "a list of nodes")) {
    std::set<std::string> names;
    for (std::size_t i = 0; i < nodes->size(); ++i) {
      const Json& n = (*nodes)[i];
      const std::string at = json_child_pointer("/nodes", i);
      IrNode node;
      if (const Json* x = r.typed(n, "name", at, Json::value_t::string, "a string")) node.name = x->get<std::string>();
      if (const Json* x = r.typed(n, "op", at, Json::value_t::string, "an op type (aten.mm.default)")) {
        node.op = x->get<std::string>();
        const std::size_t dot = node.op.find('.');
        if (dot == std::string::npos || dot == 0 || dot + 1 == node.op.size()) {
          r.error(at + "/op", fmt::format("expected namespace.op[.overload] (aten.mm.default), found \"{}\"",
                                          clip(node.op, 80)));
        }
      }
      if (const Json* x = r.typed(n, "args", at, Json::value_t::array, "a list of arguments")) {
        for (std::size_t j = 0; j < x->size(); ++j) {
          node.args.push_back(r.value((*x)[j], json_child_pointer(at + "/args", j)));
        }
      }
      if (const Json* x = r.typed(n, "kwargs", at, Json::value_t::object, "an object of arguments")) {
        for (const auto& [k, v] : x->items()) node.kwargs.emplace_back(k, r.value(v, json_child_pointer(at + "/kwargs", k)));
      }
      for (const IrValue& v : node.args) collect_tensors(v, node.inputs);
      for (const auto& [k, v] : node.kwargs) collect_tensors(v, node.inputs);
      for (int t : node.inputs) {
        if (!defined[t]) {
          r.error(at, fmt::format("reads tensor '{}' before any node makes it (nodes run in order; inputs and weights "
                                  "exist from the start)", ir.tensors[t].name));
        }
      }
      if (const Json* x = r.typed(n, "outputs", at, Json::value_t::array, "a list of tensor names or nulls")) {
        for (std::size_t j = 0; j < x->size(); ++j) {
          if ((*x)[j].is_null()) {
            node.outputs.push_back(-1);
            continue;
          }
          const int t = r.tensor((*x)[j], json_child_pointer(at + "/outputs", j));
          node.outputs.push_back(t);
          if (t >= 0 && defined[t]) {
            r.error(json_child_pointer(at + "/outputs", j),
                    fmt::format("makes tensor '{}', which an input, a weight or an earlier node already made (each "
                                "tensor is made once; an in-place op's result is a new name)",
                                ir.tensors[static_cast<std::size_t>(t)].name));
          }
          if (t >= 0) defined[t] = 1;
        }
      }
      if (!node.name.empty() && !names.insert(node.name).second) {
        r.error(at + "/name", fmt::format("a second node named '{}' (node names are unique)", clip(node.name, 80)));
      }
      ir.nodes.push_back(std::move(node));
      if (d.size() > Diagnostics::kMaxKept) break;
    }
  }
  if (const Json* outputs = r.typed(json, "outputs", "", Json::value_t::array, "a list of tensor names")) {
    for (std::size_t i = 0; i < outputs->size(); ++i) {
      const int t = r.tensor((*outputs)[i], json_child_pointer("/outputs", i));
      if (t >= 0) ir.outputs.push_back(t);
    }
  }
  return ir;
}

Ir load_ir(const std::string& path) {
  Diagnostics d;
  const std::optional<std::string> text = read_input_file(path, "a syntorch IR JSON file", d);
  if (!text) throw InputError(std::move(d));
  const std::optional<Json> json = parse_json_document(*text, path, d);
  if (!json) throw InputError(std::move(d));
  Ir ir = parse_ir(*json, path, d);
  if (!d.empty()) throw InputError(std::move(d));
  return ir;
}

nlohmann::ordered_json ir_to_json(const Ir& ir) {
  Json j;
  j["format"] = kIrFormat;
  j["version"] = kIrVersion;
  j["model"] = ir.model;
  Json producer = Json::object();
  for (const auto& [k, v] : ir.producer) producer[k] = v;
  j["producer"] = producer;
  auto names = [&](const std::vector<int>& ts) {
    Json a = Json::array();
    for (int t : ts) a.push_back(ir.tensors.at(static_cast<std::size_t>(t)).name);
    return a;
  };
  j["inputs"] = names(ir.inputs);
  j["outputs"] = names(ir.outputs);
  Json weights = Json::array();
  for (const IrWeight& w : ir.weights) {
    weights.push_back(Json{{"name", w.name},
                           {"tensor", ir.tensors.at(static_cast<std::size_t>(w.tensor)).name},
                           {"kind", w.kind},
                           {"aliases", w.aliases}});
  }
  j["weights"] = weights;
  Json tensors = Json::object();
  for (const IrTensor& t : ir.tensors) {
    tensors[t.name] = Json{{"shape", t.sizes},
                           {"dtype", t.dtype},
                           {"stride", t.strides},
                           {"offset", t.offset},
                           {"producer", t.producer.empty() ? Json(nullptr) : Json(t.producer)}};
  }
  j["tensors"] = tensors;
  Json nodes = Json::array();
  for (const IrNode& n : ir.nodes) {
    Json args = Json::array();
    for (const IrValue& v : n.args) args.push_back(encode(ir, v));
    Json kwargs = Json::object();
    for (const auto& [k, v] : n.kwargs) kwargs[k] = encode(ir, v);
    Json outs = Json::array();
    for (int t : n.outputs) outs.push_back(t < 0 ? Json(nullptr) : Json(ir.tensors.at(static_cast<std::size_t>(t)).name));
    nodes.push_back(Json{{"name", n.name}, {"op", n.op}, {"args", args}, {"kwargs", kwargs}, {"outputs", outs}});
  }
  j["nodes"] = nodes;
  return j;
}

void save_ir(const Ir& ir, const std::string& path) {
  try {
    trace::OutputFile out(path);
    const std::string text = ir_to_json(ir).dump(1) + "\n";
    out.write(text.data(), text.size());
    out.commit();
  } catch (const std::runtime_error& e) {
    Diagnostics d;
    d.error(path, "", fmt::format("cannot write the IR: {}", e.what()));
    throw InputError(std::move(d));
  }
}

}  // namespace syntorch::graph
