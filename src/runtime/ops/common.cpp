// Pieces the op files share: the element-count, row and communication parameter sets, their
// checks and descriptions, and the shape checker.

#include <fmt/format.h>

#include "op_type.hpp"

namespace syntorch::runtime {

void OpCheck::need(std::uint64_t value, std::string_view name) {
  // Under the parameter's name, so a front end can name its flag (--seq-q) or row key.
  if (value == 0) diagnostics_.error(where_, std::string(name), fmt::format("{} needs {} > 0", op_name(op_.kind), name));
}

void OpCheck::fits(std::initializer_list<std::uint64_t> extents, std::string_view what) {
  std::uint64_t p = 1;
  for (std::uint64_t e : extents) {
    if (e != 0 && p > (std::uint64_t{1} << 62) / e) {
      error(fmt::format("{}: {} overflows (more than 2^62)", op_name(op_.kind), what));
      return;
    }
    p *= e;
  }
}

void OpCheck::error(const std::string& message) { diagnostics_.error(where_, "", message); }

namespace ops {

const OpParam kElementsParam[1] = {{"elements", "elements (elementwise ops, copy)", &OpDesc::elements}};

void check_elements(const OpDesc& op, OpCheck& c) {
  c.need(op.elements, "elements");
  c.fits({op.elements, 4}, "elements");
}

std::string describe_elements(const OpDesc& op) {
  return fmt::format("{} elements={} {}", op_name(op.kind), op.elements, dtype_name(op.dtype));
}

double elements_bytes(const OpDesc& op, double tensors) {
  return static_cast<double>(op.elements) * element_bytes(op.dtype) * tensors;
}

const OpParam kEmbeddingParams[3] = {{"tokens", "embedding tokens", &OpDesc::rows},
                                     {"hidden", "embedding width", &OpDesc::cols},
                                     {"vocab", "embedding table rows", &OpDesc::vocab}};

void check_embedding(const OpDesc& op, OpCheck& c) {
  c.need(op.rows, "tokens");
  c.need(op.cols, "hidden");
  c.need(op.vocab, "vocab");
  c.fits({op.rows, op.cols}, "tokens*hidden");
  c.fits({op.vocab, op.cols}, "vocab*hidden");
}

std::string describe_embedding(const OpDesc& op) {
  return fmt::format("{} tokens={} hidden={} vocab={} {}", op_name(op.kind), op.rows, op.cols, op.vocab,
                     dtype_name(op.dtype));
}

const OpParam kOptimizerParams[2] = {{"elements", "parameters updated (optimizer steps)", &OpDesc::elements},
                                     {"tensors", "parameter tensors (optimizer steps)", &OpDesc::batch}};

void optimizer_defaults(OpDesc& op) {
  if (op.batch == 0) op.batch = 1;
}

void check_optimizer(const OpDesc& op, OpCheck& c) {
  c.need(op.elements, "elements");
  c.need(op.batch, "tensors");
  if (op.batch > op.elements) {
    c.error(fmt::format("{}: {} tensors cannot hold {} elements (each holds at least one)", op_name(op.kind), op.batch,
                        op.elements));
  }
  c.fits({op.elements, 16}, "elements");
}

std::string describe_optimizer(const OpDesc& op) {
  return fmt::format("{} elements={} tensors={} {}", op_name(op.kind), op.elements, op.batch, dtype_name(op.dtype));
}

const OpParam kRowsParams[2] = {{"rows", "rows (norms, softmax)", &OpDesc::rows},
                                {"cols", "columns (norms, softmax)", &OpDesc::cols}};

void check_rows(const OpDesc& op, OpCheck& c) {
  c.need(op.rows, "rows");
  c.need(op.cols, "cols");
  c.fits({op.rows, op.cols}, "rows*cols");
}

std::string describe_rows(const OpDesc& op) {
  return fmt::format("{} rows={} cols={} {}", op_name(op.kind), op.rows, op.cols, dtype_name(op.dtype));
}

const OpParam kMoeRowsParams[3] = {{"tokens", "tokens routed (mixture of experts)", &OpDesc::rows},
                                    {"hidden", "hidden width of a token", &OpDesc::cols},
                                    {"top_k", "experts per token", &OpDesc::k, nullptr, 1024}};

void check_moe_rows(const OpDesc& op, OpCheck& c) {
  c.need(op.rows, "tokens");
  c.need(op.cols, "hidden");
  c.need(op.k, "top_k");
  c.fits({op.rows, op.k, op.cols}, "tokens*top_k*hidden");
}

std::string describe_moe_rows(const OpDesc& op) {
  return fmt::format("{} tokens={} hidden={} top_k={} {}", op_name(op.kind), op.rows, op.cols, op.k,
                     dtype_name(op.dtype));
}

const OpParam kCommParams[2] = {{"ranks", "collective ranks", &OpDesc::ranks, nullptr, 4096},
                                {"bytes", "collective bytes per rank (e.g. 64MiB)", &OpDesc::bytes}};

void check_comm(const OpDesc& op, OpCheck& c) {
  if (op.ranks < 2) c.error(fmt::format("{} needs ranks >= 2, got {}", op_name(op.kind), op.ranks));
  c.need(op.bytes, "bytes");
  c.fits({op.bytes, 2}, "bytes");
}

std::string describe_comm(const OpDesc& op) {
  return fmt::format("{} ranks={} bytes={} {}", op_name(op.kind), op.ranks, op.bytes, dtype_name(op.dtype));
}

}  // namespace ops

}  // namespace syntorch::runtime
