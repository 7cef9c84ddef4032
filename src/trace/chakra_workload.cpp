// Reading a Chakra execution trace as a workload: nodes, dependencies, attributes, groups.

#include "syntorch/trace/chakra_workload.hpp"

#include <fmt/format.h>

#include <cmath>
#include <fstream>
#include <stdexcept>
#include <nlohmann/json.hpp>
#include <set>
#include <unordered_set>

#include "chakra_io.hpp"
#include "syntorch/trace/trace_file.hpp"

namespace syntorch::trace {

namespace {

namespace et = ChakraProtoMsg;

double number_of(const et::AttributeProto& a) {
  switch (a.value_case()) {
    case et::AttributeProto::kDoubleVal: return a.double_val();
    case et::AttributeProto::kFloatVal: return a.float_val();
    case et::AttributeProto::kInt32Val: return a.int32_val();
    case et::AttributeProto::kInt64Val: return static_cast<double>(a.int64_val());
    case et::AttributeProto::kUint32Val: return a.uint32_val();
    case et::AttributeProto::kUint64Val: return static_cast<double>(a.uint64_val());
    case et::AttributeProto::kSint32Val: return a.sint32_val();
    case et::AttributeProto::kSint64Val: return static_cast<double>(a.sint64_val());
    case et::AttributeProto::kFixed32Val: return a.fixed32_val();
    case et::AttributeProto::kFixed64Val: return static_cast<double>(a.fixed64_val());
    case et::AttributeProto::kSfixed32Val: return a.sfixed32_val();
    case et::AttributeProto::kSfixed64Val: return static_cast<double>(a.sfixed64_val());
    case et::AttributeProto::kBoolVal: return a.bool_val() ? 1 : 0;
    case et::AttributeProto::kStringVal: {
      try {
        return std::stod(a.string_val());
      } catch (const std::exception&) {
        return 0;
      }
    }
    default: return 0;
  }
}

// An attribute's value as an integer in [lo, hi]; std::range_error naming it otherwise (NaN, inf
// or out of range).
std::int64_t integer_of(const et::AttributeProto& a, double lo, double hi) {
  const double v = number_of(a);
  if (!std::isfinite(v) || v < lo || v > hi) {
    throw std::range_error(fmt::format("attribute {} is {}, expected an integer from {} to {}", a.name(), v, lo, hi));
  }
  return static_cast<std::int64_t>(v);
}

ChakraNode::Type type_of(et::NodeType t) {
  switch (t) {
    case et::COMP_NODE: return ChakraNode::Type::compute;
    case et::COMM_SEND_NODE: return ChakraNode::Type::send;
    case et::COMM_RECV_NODE: return ChakraNode::Type::recv;
    case et::COMM_COLL_NODE: return ChakraNode::Type::collective;
    case et::MEM_LOAD_NODE:
    case et::MEM_STORE_NODE: return ChakraNode::Type::memory;
    default: return ChakraNode::Type::other;
  }
}

ChakraNode from_proto(const et::Node& n) {
  ChakraNode c;
  c.id = n.id();
  c.name = n.name();
  c.type = type_of(n.type());
  for (std::uint64_t d : n.data_deps()) c.deps.push_back(d);
  for (std::uint64_t d : n.ctrl_deps()) {
    if (std::find(c.deps.begin(), c.deps.end(), d) == c.deps.end()) c.deps.push_back(d);
  }
  c.start_us = n.start_time_micros();
  c.duration_us = n.duration_micros();
  for (const et::AttributeProto& a : n.attr()) {
    const std::string& k = a.name();
    if (k == "is_cpu_op") {
      c.is_cpu_op = number_of(a) != 0;
    } else if (k == "num_ops") {
      c.num_ops = number_of(a);
    } else if (k == "tensor_size") {
      c.tensor_size = number_of(a);
    } else if (k == "comm_type") {
      c.comm_type = static_cast<int>(integer_of(a, 0, 1 << 20));
    } else if (k == "comm_size") {
      c.comm_size = static_cast<std::uint64_t>(integer_of(a, 0, 9.0e15));  // bytes: up to petabytes
    } else if (k == "pg_name") {
      c.pg_name = a.value_case() == et::AttributeProto::kStringVal ? a.string_val()
                                                                   : fmt::format("{}", integer_of(a, -9.0e15, 9.0e15));
    } else if (k == "comm_src") {
      c.comm_src = static_cast<int>(integer_of(a, -1, 1 << 24));
    } else if (k == "comm_dst") {
      c.comm_dst = static_cast<int>(integer_of(a, -1, 1 << 24));
    }
  }
  return c;
}

std::map<std::string, std::vector<int>> read_groups(const std::filesystem::path& file) {
  std::ifstream in(file);
  if (!in) throw TraceFileError(fmt::format("cannot read '{}'", file.string()));
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw TraceFileError(fmt::format("'{}' is not JSON: {}", file.string(), e.what()));
  }
  if (!j.is_object()) {
    throw TraceFileError(fmt::format("'{}': expected an object of process groups {{\"<pg_name>\": [ranks...]}}",
                                     file.string()));
  }
  std::map<std::string, std::vector<int>> groups;
  for (const auto& [name, ranks] : j.items()) {
    if (!ranks.is_array()) {
      throw TraceFileError(fmt::format("'{}': /{}: expected a list of ranks", file.string(), name));
    }
    std::vector<int>& g = groups[name];
    for (const auto& r : ranks) {
      if (!r.is_number_integer() || r.get<std::int64_t>() < 0) {
        throw TraceFileError(fmt::format("'{}': /{}: expected non-negative rank numbers, found {}", file.string(), name,
                                         r.dump()));
      }
      if (r.get<std::int64_t>() > (1 << 24)) {
        throw TraceFileError(fmt::format("'{}': /{}: rank {} is out of range", file.string(), name, r.dump()));
      }
      if (std::find(g.begin(), g.end(), r.get<int>()) != g.end()) {
        throw TraceFileError(fmt::format("'{}': /{}: rank {} is listed twice", file.string(), name, r.get<int>()));
      }
      g.push_back(r.get<int>());
    }
  }
  return groups;
}

}  // namespace

ChakraWorkload read_chakra_workload(const std::filesystem::path& path, const std::filesystem::path& groups_file) {
  ChakraWorkload w;
  const std::vector<std::filesystem::path> files = detail::chakra_files(path);
  for (std::size_t i = 0; i < files.size(); ++i) {
    const std::filesystem::path& file = files[i];
    const auto rank = detail::rank_of(file);
    ChakraRank r;
    r.rank = files.size() == 1 ? 0 : static_cast<int>(rank.value_or(static_cast<std::int64_t>(i)));
    if (files.size() > 1 && r.rank != static_cast<int>(i)) {
      throw TraceFileError(fmt::format("'{}': rank files must be numbered 0..{} with none missing; rank {} is not there",
                                       path.string(), files.size() - 1, i));
    }
    r.file = file;
    std::unordered_set<std::uint64_t> ids;
    detail::read_chakra_file(file, [&](const et::Node& node, const auto& bad) {
      ChakraNode c;
      try {
        c = from_proto(node);
      } catch (const std::range_error& e) {
        throw bad(fmt::format("node {} ({}): {}", node.id(), node.name(), e.what()));
      }
      // Recorded times past a year are not times (and would overflow picoseconds).
      constexpr std::uint64_t kMaxMicros = std::uint64_t{365} * 24 * 3600 * 1'000'000;
      if (c.duration_us > kMaxMicros || c.start_us > kMaxMicros) {
        throw bad(fmt::format("node {} ({}): start {} us, duration {} us: expected at most a year", c.id, c.name,
                              c.start_us, c.duration_us));
      }
      if (!ids.insert(c.id).second) throw bad(fmt::format("a second node with id {}", c.id));
      r.nodes.push_back(std::move(c));
    });
    for (const ChakraNode& c : r.nodes) {
      for (std::uint64_t d : c.deps) {
        if (ids.count(d) == 0) {
          throw TraceFileError(fmt::format("'{}': node {} ({}) depends on node {}, which the file does not hold",
                                           file.string(), c.id, c.name, d));
        }
      }
    }
    w.ranks.push_back(std::move(r));
  }
  std::filesystem::path groups = groups_file;
  if (groups.empty()) {
    const std::filesystem::path dir = path.parent_path();
    std::string stem = path.stem().string();  // "run" of run.et, "run.0" of run.0.et
    if (files.size() == 1 && detail::rank_of(path)) stem = stem.substr(0, stem.rfind('.'));
    const std::filesystem::path guess = dir / (stem + ".comm_groups.json");
    std::error_code ec;
    if (std::filesystem::exists(guess, ec)) groups = guess;
  }
  if (!groups.empty()) {
    w.groups = read_groups(groups);
    w.groups_file = groups;
  }
  return w;
}

}  // namespace syntorch::trace
