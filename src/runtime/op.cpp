#include "syntorch/runtime/op.hpp"

#include <array>
#include <fmt/format.h>

namespace syntorch::runtime {

namespace {
constexpr std::array<std::string_view, kOpKinds> kOpNames{"gemm",    "bmm",  "attention", "layernorm", "rmsnorm",
                                                    "softmax", "gelu", "add",       "embedding", "mul",
                                                    "copy",    "allreduce", "allgather", "reducescatter", "sendrecv"};
}

std::string_view op_name(OpKind k) { return kOpNames[static_cast<std::size_t>(k)]; }

std::optional<OpKind> parse_op(std::string_view name) {
  for (std::size_t i = 0; i < kOpNames.size(); ++i) {
    if (kOpNames[i] == name) return static_cast<OpKind>(i);
  }
  return std::nullopt;
}

std::vector<std::string> op_names() { return {kOpNames.begin(), kOpNames.end()}; }

bool is_collective(OpKind k) {
  return k == OpKind::allreduce || k == OpKind::allgather || k == OpKind::reducescatter || k == OpKind::sendrecv;
}

double element_bytes(DType t) { return dtype_bits(t) / 8.0; }

std::string OpDesc::describe() const {
  const std::string_view dt = dtype_name(dtype);
  switch (kind) {
    case OpKind::gemm: return fmt::format("gemm m={} n={} k={} {}", m, n, k, dt);
    case OpKind::bmm: return fmt::format("bmm batch={} m={} n={} k={} {}", batch, m, n, k, dt);
    case OpKind::attention:
      return fmt::format("attention batch={} heads={} kv_heads={} seq_q={} seq_kv={} head_dim={}{} {}", batch, heads,
                         kv_heads, seq_q, seq_kv, head_dim, causal ? " causal" : "", dt);
    case OpKind::layernorm:
    case OpKind::rmsnorm:
    case OpKind::softmax: return fmt::format("{} rows={} cols={} {}", op_name(kind), rows, cols, dt);
    case OpKind::embedding: return fmt::format("embedding tokens={} hidden={} vocab={} {}", rows, cols, vocab, dt);
    case OpKind::gelu:
    case OpKind::add:
    case OpKind::mul:
    case OpKind::copy: return fmt::format("{} elements={} {}", op_name(kind), elements, dt);
    default: return fmt::format("{} ranks={} bytes={} {}", op_name(kind), ranks, bytes, dt);
  }
}

bool validate_op(const OpDesc& op, Diagnostics& d, const std::string& where) {
  const std::size_t before = d.size();
  auto need = [&](std::uint64_t v, const char* name) {
    if (v == 0) d.error(where, "", fmt::format("{} needs {} > 0", op_name(op.kind), name));
  };
  // The product of the given extents must fit in 63 bits (element counts and byte counts).
  auto fits = [&](std::initializer_list<std::uint64_t> extents, const char* what) {
    std::uint64_t p = 1;
    for (std::uint64_t e : extents) {
      if (e != 0 && p > (std::uint64_t{1} << 62) / e) {
        d.error(where, "", fmt::format("{}: {} overflows (more than 2^62)", op_name(op.kind), what));
        return;
      }
      p *= e;
    }
  };
  switch (op.kind) {
    case OpKind::bmm:
      need(op.batch, "batch");
      [[fallthrough]];
    case OpKind::gemm:
      need(op.m, "m");
      need(op.n, "n");
      need(op.k, "k");
      fits({op.batch, op.m, op.n}, "batch*m*n");
      fits({op.batch, op.m, op.k}, "batch*m*k");
      fits({op.batch, op.k, op.n}, "batch*k*n");
      fits({op.batch, op.m, op.n, op.k, 2}, "the FLOP count");
      break;
    case OpKind::attention:
      need(op.batch, "batch");
      need(op.heads, "heads");
      need(op.kv_heads, "kv-heads");
      need(op.seq_q, "seq-q");
      need(op.seq_kv, "seq-kv");
      need(op.head_dim, "head-dim");
      if (op.heads && op.kv_heads && op.heads % op.kv_heads != 0) {
        d.error(where, "", fmt::format("attention: heads ({}) must be a multiple of kv-heads ({})", op.heads, op.kv_heads));
      }
      if (op.causal && op.seq_q > op.seq_kv) {
        d.error(where, "", fmt::format("attention: causal needs seq-q ({}) <= seq-kv ({})", op.seq_q, op.seq_kv));
      }
      fits({op.batch, op.heads, op.seq_q, op.seq_kv, op.head_dim, 4}, "the FLOP count");
      break;
    case OpKind::layernorm:
    case OpKind::rmsnorm:
    case OpKind::softmax:
      need(op.rows, "rows");
      need(op.cols, "cols");
      fits({op.rows, op.cols}, "rows*cols");
      break;
    case OpKind::embedding:
      need(op.rows, "tokens");
      need(op.cols, "hidden");
      need(op.vocab, "vocab");
      fits({op.rows, op.cols}, "tokens*hidden");
      fits({op.vocab, op.cols}, "vocab*hidden");
      break;
    case OpKind::gelu:
    case OpKind::add:
    case OpKind::mul:
    case OpKind::copy:
      need(op.elements, "elements");
      fits({op.elements, 4}, "elements");
      break;
    case OpKind::allreduce:
    case OpKind::allgather:
    case OpKind::reducescatter:
    case OpKind::sendrecv:
      if (op.ranks < 2) d.error(where, "", fmt::format("{} needs ranks >= 2, got {}", op_name(op.kind), op.ranks));
      need(op.bytes, "bytes");
      fits({op.bytes, 2}, "bytes");
      break;
  }
  return d.size() == before;
}

}  // namespace syntorch::runtime
