#include "syntorch/runtime/ops_supported.hpp"

#include <array>
#include <fmt/format.h>
#include <initializer_list>
#include <set>
#include <utility>

namespace syntorch::runtime {

namespace {

struct Alias {
  std::string_view name;
  std::initializer_list<OpKind> ops;
};

// PyTorch's names for the ops of the table (torch, torch.nn.functional, torch.distributed).
const std::array<Alias, 16> kAliases{{
    {"matmul", {OpKind::gemm, OpKind::bmm}},
    {"mm", {OpKind::gemm}},
    {"linear", {OpKind::gemm}},
    {"addmm", {OpKind::gemm}},
    {"baddbmm", {OpKind::bmm}},
    {"scaled_dot_product_attention", {OpKind::attention}},
    {"layer_norm", {OpKind::layernorm}},
    {"rms_norm", {OpKind::rmsnorm}},
    {"silu_and_mul", {OpKind::swiglu}},
    {"rotary_embedding", {OpKind::rope}},
    {"all_reduce", {OpKind::allreduce}},
    {"all_gather", {OpKind::allgather}},
    {"reduce_scatter", {OpKind::reducescatter}},
    {"all_to_all", {OpKind::alltoall}},
    {"send", {OpKind::sendrecv}},
    {"recv", {OpKind::sendrecv}},
}};

std::vector<std::string> known_names() {
  std::vector<std::string> names = op_names();
  for (const Alias& a : kAliases) names.emplace_back(a.name);
  return names;
}

}  // namespace

std::optional<OpSet> ops_named(std::string_view name) {
  OpSet set;
  if (const auto op = parse_op(name)) {
    set.set(static_cast<std::size_t>(*op));
    return set;
  }
  for (const Alias& a : kAliases) {
    if (a.name != name) continue;
    for (OpKind k : a.ops) set.set(static_cast<std::size_t>(k));
    return set;
  }
  return std::nullopt;
}

std::vector<OpSet> ops_supported(const hw::Machine& machine, Diagnostics& diagnostics) {
  std::vector<OpSet> out;
  std::set<std::string> reported;  // one message per name in the config, not per device instance
  for (const hw::Device& d : machine.devices()) {
    const hw::ComputeSpec& c = d.compute;
    if (c.ops_supported.empty()) {
      out.push_back(OpSet{}.set());
      continue;
    }
    OpSet set;
    for (std::size_t i = 0; i < c.ops_supported.size(); ++i) {
      const std::string& name = c.ops_supported[i];
      if (const auto ops = ops_named(name)) {
        set |= *ops;
      } else if (const std::string at = fmt::format("{}/{}", c.ops_supported_pointer, i); reported.insert(at).second) {
        const std::vector<std::string> names = known_names();
        diagnostics.error(machine.config().file, at,
                          fmt::format("unknown op \"{}\"{} (op names: {}; PyTorch's names: matmul, linear, "
                                      "scaled_dot_product_attention, layer_norm, all_reduce, ...)",
                                      name, did_you_mean(name, names), join(op_names())));
      }
    }
    out.push_back(set);
  }
  return out;
}

}  // namespace syntorch::runtime
