#pragma once
// What a device's compute unit may run: a config's "metadata": {"ops_supported": [...]} (the
// design's form) names ops by the op table's names or by PyTorch's (matmul, linear,
// scaled_dot_product_attention, layer_norm, all_reduce, ...). The hardware layer keeps the names;
// the runtime resolves them, since only it knows the ops.

#include <bitset>
#include <optional>
#include <string_view>
#include <vector>

#include "syntorch/base/diagnostics.hpp"
#include "syntorch/hw/machine.hpp"
#include "syntorch/runtime/op.hpp"

namespace syntorch::runtime {

using OpSet = std::bitset<kOpKinds>;

// The ops a name stands for: one op of the table, or the ops a PyTorch name lowers to; nullopt
// for an unknown name.
std::optional<OpSet> ops_named(std::string_view name);

// Per device, the ops it may run (every op where the config does not restrict them). Unknown
// names are errors naming the config and the JSON pointer of the name.
std::vector<OpSet> ops_supported(const hw::Machine& machine, Diagnostics& diagnostics);

}  // namespace syntorch::runtime
