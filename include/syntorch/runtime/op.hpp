#pragma once
// An operation as the runtime sees it: what to compute (kind, shapes, dtype), not how. The
// Dispatcher lowers it to kernels (or a collective's transfer plan) for one device.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "syntorch/base/diagnostics.hpp"
#include "syntorch/base/dtype.hpp"

namespace syntorch::runtime {

enum class OpKind : std::uint8_t {
  gemm, bmm, attention, layernorm, rmsnorm, softmax, gelu, add, embedding, mul, copy,
  allreduce, allgather, reducescatter, sendrecv
};

inline constexpr std::size_t kOpKinds = 15;
std::string_view op_name(OpKind k);
std::optional<OpKind> parse_op(std::string_view name);
std::vector<std::string> op_names();
bool is_collective(OpKind k);

// Shapes of every op kind in one plain struct; each kind reads its own fields.
struct OpDesc {
  OpKind kind = OpKind::gemm;
  DType dtype = DType::fp16;
  // gemm: C[m,n] = A[m,k] B[k,n]; bmm: batch of those.
  std::uint64_t batch = 1, m = 0, n = 0, k = 0;
  // attention: q [batch, heads, seq_q, head_dim]; k, v [batch, kv_heads, seq_kv, head_dim].
  std::uint64_t heads = 0, kv_heads = 0, seq_q = 0, seq_kv = 0, head_dim = 0;
  bool causal = false;
  // layernorm, rmsnorm, softmax: [rows, cols], normalised along cols. embedding: rows tokens of
  // width cols looked up in a table of `vocab` rows.
  std::uint64_t rows = 0, cols = 0, vocab = 0;
  // gelu, add, mul (any binary elementwise op), copy (a strided copy, concatenation): element count.
  std::uint64_t elements = 0;
  // collectives: `bytes` per rank over `ranks` devices.
  std::uint32_t ranks = 0;
  std::uint64_t bytes = 0;

  std::string describe() const;  // "gemm m=64 n=12288 k=12288 fp16"
};

// Checks the shape fields `kind` uses: present and positive, products that fit in 64 bits,
// heads divisible by kv_heads. Problems are added under `where` (a file row, or "flags").
bool validate_op(const OpDesc& op, Diagnostics& diagnostics, const std::string& where);

// Element size in bytes (fp4 counts half a byte).
double element_bytes(DType t);

}  // namespace syntorch::runtime
