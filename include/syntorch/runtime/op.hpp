#pragma once
// An operation as the runtime sees it: what to compute (kind, shapes, dtype), not how. The
// Dispatcher lowers it to kernels (or a collective's transfer plan) for one device. Each op kind
// is defined in its own file under src/runtime/ops/ (name, parameters, checks, accounting,
// implementations, lowering) and registered in the op table below.

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "syntorch/base/diagnostics.hpp"
#include "syntorch/base/dtype.hpp"
#include "syntorch/base/hash.hpp"

namespace syntorch::runtime {

// The op table, in OpKind order. Adding an op is its file src/runtime/ops/<name>.cpp (which
// defines `const OpType <name>_op`) and one line here, plus its torch-layer function.
#define SYNTORCH_OP_TABLE(X)                                                                         \
  X(gemm) X(bmm) X(attention) X(paged_attention)                   /* matrix products */           \
  X(conv) X(conv_dgrad) X(conv_wgrad)                              /* convolutions (implicit GEMM) */ \
  X(layernorm) X(rmsnorm) X(softmax)                               /* row-wise */                  \
  X(rope) X(swiglu)                                                /* fused transformer pieces */  \
  X(gelu) X(silu) X(relu) X(tanh) X(sigmoid) X(neg) X(dropout)     /* elementwise, one input */    \
  X(exp) X(log) X(sqrt) X(rsqrt) X(pow) X(sin) X(cos) X(abs) X(polar)                              \
  X(add) X(sub) X(mul) X(div)                                      /* elementwise, two inputs */   \
  X(batchnorm) X(batchnorm_backward)                               /* per-channel normalisation */  \
  X(embedding) X(copy)                                             /* gathers and copies */        \
  X(topk) X(moe_permute) X(moe_unpermute) X(grouped_gemm)          /* mixture of experts */        \
  X(allreduce) X(allgather) X(reducescatter) X(sendrecv) X(alltoall) /* communication */     \
  X(broadcast) X(reduce)                                                                          \
  X(attention_backward) X(layernorm_backward) X(rmsnorm_backward)  /* backward (autograd) */  \
  X(softmax_backward) X(swiglu_backward) X(embedding_backward)                                \
  X(gelu_backward) X(silu_backward) X(relu_backward) X(tanh_backward) X(sigmoid_backward)     \
  X(sum) X(amax) X(all) X(norm) X(cumsum) X(sort)                 /* reductions, scans, sorts */ \
  X(gather) X(scatter)                                             /* indexed reads and writes */ \
  X(maximum) X(sign) X(round) X(leaky_relu) X(leaky_relu_backward) /* more elementwise */      \
  X(adam) X(sgd) X(foreach)                                        /* optimizer steps */           \
  X(replay)                                                        /* a recorded kernel, replayed */ \
  X(fused)                                                         /* a generated kernel (compile) */

enum class OpKind : std::uint8_t {
#define SYNTORCH_OP_ENUMERATOR(name) name,
  SYNTORCH_OP_TABLE(SYNTORCH_OP_ENUMERATOR)
#undef SYNTORCH_OP_ENUMERATOR
};

inline constexpr std::size_t kOpKinds = 0
#define SYNTORCH_OP_COUNT(name) +1
    SYNTORCH_OP_TABLE(SYNTORCH_OP_COUNT)
#undef SYNTORCH_OP_COUNT
    ;

std::string_view op_name(OpKind k);
std::optional<OpKind> parse_op(std::string_view name);
std::vector<std::string> op_names();
bool is_collective(OpKind k);  // moves data between devices (collectives and send/recv)
// Whether k's kernels take the name each launch gives them (a compiler's generated kernels, which
// have no name of their own) rather than their lowering's.
bool kernels_named_by_launch(OpKind k);

// Shapes of every op kind in one plain struct; each kind reads its own fields (its parameters).
struct OpDesc {
  OpKind kind = OpKind::gemm;
  DType dtype = DType::fp16;
  // gemm: C[m,n] = A[m,k] B[k,n]; bmm: batch of those.
  std::uint64_t batch = 1, m = 0, n = 0, k = 0;
  // attention: q [batch, heads, seq_q, head_dim]; k, v [batch, kv_heads, seq_kv, head_dim].
  std::uint64_t heads = 0, kv_heads = 0, seq_q = 0, seq_kv = 0, head_dim = 0;
  bool causal = false;
  // attention: dropout on the probabilities, its random numbers drawn in the kernel (any p > 0
  // costs the same).
  bool dropout = false;
  // attention: the backends PyTorch's switches leave scaled_dot_product_attention: 0 all of them
  // (the default), else kSdpRestricted with a bit for each one left (kSdpFlash, ...). What `auto`
  // chooses from; a policy that names an implementation overrides it.
  std::uint8_t sdp_backends = 0;
  static constexpr std::uint8_t kSdpFlash = 1, kSdpMemEfficient = 2, kSdpMath = 4, kSdpCudnn = 8, kSdpRestricted = 16;
  // attention: the K/V dtype when it differs from the query's (an fp8 KV cache read by 16-bit
  // attention, dequantised in the kernel).
  std::optional<DType> kv_dtype;
  // paged_attention: tokens per page of the KV pool (0: contiguous keys and values).
  std::uint64_t page_tokens = 0;
  // layernorm, rmsnorm, softmax: [rows, cols], normalised along cols. embedding: rows tokens of
  // width cols looked up in a table of `vocab` rows.
  std::uint64_t rows = 0, cols = 0, vocab = 0;
  // elementwise ops and copy (a strided copy, concatenation): element count. conv, conv_dgrad,
  // conv_wgrad: the gathered operand's elements (below).
  std::uint64_t elements = 0;
  // conv (forward), conv_dgrad (the input's gradient), conv_wgrad (the weight's): an implicit GEMM
  // of m x n x k per group over `batch` groups, one of whose operands is gathered through the
  // filter's windows (A for conv and conv_dgrad, B for conv_wgrad): `elements` is that tensor's
  // real size, `window` the filter's positions (kh x kw x kd), `stride` its step.
  // channels_last: NHWC tensors; NCHW ones are transposed around a matrix-unit kernel, as cuDNN's
  // tensor-core convolutions do.
  std::uint64_t window = 0, stride = 0;
  bool channels_last = false;
  // collectives: `bytes` per rank over `ranks` devices.
  std::uint64_t ranks = 0;
  std::uint64_t bytes = 0;
  // Uneven splits (empty: even, remainders to the first). paged_attention: the query lengths of
  // its `batch` sequences, then their context lengths. grouped_gemm: the rows of each of its
  // `batch` groups, summing to m. alltoall as a collective to plan: the ranks x ranks traffic
  // matrix in bytes (row: sender), `bytes` its largest row; as one rank's call
  // (RankContext::collective): that rank's row, the bytes it sends each member, summing to bytes.
  std::vector<std::uint64_t> splits;
  // replay: a kernel of a recorded trace (a Chakra execution trace's compute node), run for its
  // recorded duration on the whole device; `elements` carries its recorded FLOPs.
  std::uint64_t duration_ps = 0;
  // fused: a kernel a compiler generated for a chain of elementwise and reduction ops (torch.compile's
  // Inductor): `elements` its iteration space, `bytes` what it reads, `written_bytes` what it
  // writes, `ops` its fp32 arithmetic.
  std::uint64_t written_bytes = 0, ops = 0;

  // Every field takes part, so two descriptions that compare equal are the same op (what the
  // engine memoises lowered kernels by).
  bool operator==(const OpDesc&) const = default;

  std::string describe() const;  // "gemm m=64 n=12288 k=12288 fp16"
};

// A hash over an OpDesc's fields, for memo tables (equality decides; the hash only spreads).
struct OpDescHash {
  std::size_t operator()(const OpDesc& op) const {
    std::uint64_t h = 0x9e3779b97f4a7c15ULL ^ (static_cast<std::uint64_t>(op.kind) * 131u +
                                               static_cast<std::uint64_t>(op.dtype) * 7u + (op.causal ? 1u : 0u) + (op.dropout ? 2u : 0u) + 4u * op.sdp_backends +
                                               (op.channels_last ? 2048u : 0u) +
                                               (op.kv_dtype ? 1009u * (1u + static_cast<std::uint64_t>(*op.kv_dtype)) : 0u));
    for (std::uint64_t x : {op.batch, op.m, op.n, op.k, op.heads, op.kv_heads, op.seq_q, op.seq_kv, op.head_dim,
                            op.rows, op.cols, op.vocab, op.elements, op.ranks, op.bytes, op.page_tokens, op.window,
                            op.stride, op.duration_ps, op.written_bytes, op.ops}) {
      hash_combine(h, x);
    }
    for (std::uint64_t x : op.splits) hash_combine(h, x);
    return static_cast<std::size_t>(h);
  }
};

// A replay op (a recorded trace's kernel) of `duration_s` seconds, `flops` and `bytes` as recorded
// (negative or non-finite values count as 0).
OpDesc replay_op(double duration_s, double flops, double bytes);

// The attention heads a paged_attention op runs over, as its description needs them.
struct PagedAttentionShape {
  std::uint64_t heads = 0, kv_heads = 0, head_dim = 0, page_tokens = 0;
  DType dtype = DType::fp16;
  std::optional<DType> kv_dtype;  // the pool's, when it differs from the queries'
};
// The paged_attention op of a packed batch: sequence i's query_lens[i] new tokens against its
// context_lens[i] (the torch layer's launch and a serving engine's cost estimate describe it so,
// as one: a step's reuse depends on their being the same op).
OpDesc paged_attention_desc(const PagedAttentionShape& shape, std::span<const std::int64_t> query_lens,
                            std::span<const std::int64_t> context_lens);

// Checks the shape fields `kind` uses: present and positive, products that fit in 64 bits,
// heads divisible by kv_heads. Problems are added under `where` (a file row, or "flags").
bool validate_op(const OpDesc& op, Diagnostics& diagnostics, const std::string& where);

// The op's useful arithmetic (FLOPs as a model counts them, before any implementation's extra
// work) and the least HBM traffic any implementation needs (inputs read and outputs written
// once; for communication, the bytes each rank contributes).
double op_flops(const OpDesc& op);
double op_min_bytes(const OpDesc& op);

// `total` split into `parts`: `splits` when given, else as evenly as integers allow (the first
// total % parts parts one larger). The append form adds them to `out` (no allocation once it
// has the room).
std::vector<std::uint64_t> split_sizes(std::uint64_t total, std::uint64_t parts, const std::vector<std::uint64_t>& splits);
void append_split_sizes(std::uint64_t total, std::uint64_t parts, const std::vector<std::uint64_t>& splits,
                        std::vector<std::uint64_t>& out);

// Element size in bytes (fp4 counts half a byte).
double element_bytes(DType t);

}  // namespace syntorch::runtime
