#pragma once
// Running an IR on the torch layer, inside a rank's program: weights placed as weights, inputs
// allocated, each node lowered in order (lowering.hpp) and every intermediate freed after its last
// use, so tensors live as long as in the program the graph came from. What the graph asked for and
// what could not be modelled is tallied as the bridge from real PyTorch tallies it.

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "syntorch/graph/ir.hpp"
#include "syntorch/torch/tensor.hpp"

namespace syntorch::graph {

// How many times each ATen op ran, and the arithmetic and bytes of those with no model of their
// own (a generic memory-bound cost stood in for them).
struct OpTally {
  struct Generic {
    std::int64_t count = 0;
    double flops = 0;
    double bytes = 0;
    bool elementwise = false;  // every output as large as the largest input
  };
  std::map<std::string, std::int64_t> counts;  // by ATen name: "aten::mm"
  std::map<std::string, Generic> generic;
  std::map<std::string, std::int64_t> layout_mismatches;  // lowerings whose output differed from the IR's
  double graph_flops = 0;
  double graph_bytes = 0;

  // {"ops", "by_op", "graph_flops", "graph_bytes", "generic_elementwise", "unmodelled",
  // "layout_mismatches"}: the same keys as the Python bridge's tally.
  nlohmann::ordered_json to_json() const;
};

// Checks what running needs before anything runs: every tensor's dtype known. Problems go to
// `diagnostics` under `file`.
void check_executable(const Ir& ir, const std::string& file, Diagnostics& diagnostics);

// What an op's schema says of it, when the caller knows (the bridge from real PyTorch reads it
// from PyTorch): the argument whose memory its outputs view ("" for none), the arguments it
// writes, whether it makes its outputs from nothing. Without one, the op's name decides (IR
// files): ATen's view ops, a name ending in '_' (or an `out` argument), no tensor input.
struct OpForm {
  std::string view_source;
  std::vector<std::string> written;
  bool factory = false;
};

// Runs one node of `ir` on `env` (a tensor per IR tensor; the node's outputs are filled in).
void run_node(const Ir& ir, const IrNode& node, std::vector<torch::Tensor>& env, OpTally& tally,
              const OpForm* form = nullptr);

// Runs the IR on the calling rank (inside runtime::Engine::run). Adds to `tally`. Throws
// torch::Error naming the node when a lowering refuses its arguments in a way PyTorch would too.
void execute_ir(const Ir& ir, OpTally& tally);

}  // namespace syntorch::graph
