#pragma once
// A zoo model's forward pass exported as an IR (`syntorch graph export`): the model built on one
// device of the machine, its forward over a batch of token sequences to the logits run with the
// torch layer's op recorder (torch/record.hpp), every op it runs a node, its parameters weights
// by their state_dict names. The IR runs back through `simulate --graph` to the same kernels.

#include <cstdint>
#include <string>

#include "syntorch/base/dtype.hpp"
#include "syntorch/graph/ir.hpp"
#include "syntorch/session/run.hpp"

namespace syntorch::session {

struct GraphExportSpec {
  std::string model;          // a zoo name or a model config (as --model)
  std::int64_t batch = 1;
  std::int64_t seq = 128;     // tokens per sequence
  DType dtype = DType::fp16;  // fp32, fp16 or bf16
};

struct GraphExport {
  graph::Ir ir;
  std::size_t constants = 0;  // tensors the forward read that no recorded op made (kept as constants)
  RunStats stats;             // the run that recorded it (an out-of-memory: stats.oom, no IR)
};

// Throws InputError for a bad model, size or dtype (naming the flag), or a machine that cannot be
// loaded.
GraphExport export_graph(const RunOptions& machine, const GraphExportSpec& spec);

// Writes an exported graph's IR to `path` (InputError naming the path when it cannot).
void save_graph(const GraphExport& exported, const std::string& path);

}  // namespace syntorch::session
