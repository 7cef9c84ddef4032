#pragma once
// Cost models that lower an op to kernels on one device, one file per op family. Each builds
// candidate kernels (tile shapes, split factors, implementations), estimates them with the same
// phase model the Executor runs, keeps the fastest the policy allows, and says why.

#include <span>
#include <string>
#include <vector>

#include "syntorch/hw/machine.hpp"
#include "syntorch/runtime/kernel.hpp"
#include "syntorch/runtime/op.hpp"
#include "syntorch/runtime/policy.hpp"

namespace syntorch::runtime::detail {

struct LowerContext {
  const hw::Device& device;
  std::uint32_t device_index;
  const PolicyEntry& policy;
  DType dtype;  // the precision the op runs in (policy precision or the op's own)
};

// Arithmetic throughput of one unit at the calibrated efficiency; 0 when unsupported.
double unit_matrix_ops_per_s(const hw::Device& d, DType t);
double unit_vector_ops_per_s(const hw::Device& d, DType t);
// Achievable HBM bandwidth of the device.
double hbm_bytes_per_s(const hw::Device& d);

inline std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b) { return (a + b - 1) / b; }

// The time `k` takes alone on its device, by the phases the Executor runs (no contention).
double estimate_s(const Kernel& k, const hw::Device& d);

// Kernel::imbalance for CTAs of uneven work (`work`, in any unit, in the order the hardware
// dispatches them): each unit holds up to tiles_per_unit CTAs (at most 8 here) and shares its rate
// evenly among them, and a CTA that ends makes room for the next; the last unit's finish over
// what plan_phases gives identical tiles of the average work.
double list_schedule_imbalance(std::span<const double> work, const Kernel& k, const hw::Device& d);

// Throws InputError naming the device when it cannot run `dtype` at all.
[[noreturn]] void unsupported(const LowerContext& cx, const std::string& what);

std::vector<Kernel> lower_gemm(const OpDesc& op, const LowerContext& cx);       // gemm, bmm
// The pieces of gemm.cpp that ops which are GEMMs in disguise build on (convolutions): the rate
// the device multiplies cx.dtype at (and whether on matrix units), its tile shapes, one tiled
// kernel of op's batch x m x n x k on tile t with `split`-way split-K, and the fastest of some
// candidates with the policy's choice explained. a_bytes and b_bytes, when not negative, are the
// operands' real HBM footprints (an implicit GEMM gathers its windows from a smaller tensor
// than the m x k matrix they make).
std::pair<double, bool> matmul_rate(const LowerContext& cx);
std::vector<hw::GemmTile> tile_shapes(const hw::Device& d);
Kernel tiled_gemm(const OpDesc& op, const LowerContext& cx, const hw::GemmTile& t, std::uint32_t split,
                  double a_bytes = -1, double b_bytes = -1);
std::vector<Kernel> fastest_kernel(std::vector<Kernel> candidates, const OpDesc& op, const LowerContext& cx);
std::vector<Kernel> lower_conv(const OpDesc& op, const LowerContext& cx);  // conv, conv_dgrad, conv_wgrad
std::vector<Kernel> lower_grouped_gemm(const OpDesc& op, const LowerContext& cx);
std::vector<Kernel> lower_attention(const OpDesc& op, const LowerContext& cx);
// Attention over a packed batch of sequences with paged KV (FlashAttention varlen, vLLM).
std::vector<Kernel> lower_paged_attention(const OpDesc& op, const LowerContext& cx);
// paged_attention's sequences: f(query tokens, context tokens) for each, from OpDesc::splits or,
// without them, seq_q and seq_kv split evenly over the batch.
template <class F>
void for_each_sequence(const OpDesc& op, F&& f) {
  const bool given = op.splits.size() == 2 * op.batch;
  for (std::uint64_t i = 0; i < op.batch; ++i) {
    f(given ? op.splits[i] : op.seq_q / op.batch, given ? op.splits[op.batch + i] : op.seq_kv / op.batch);
  }
}

// A row-wise op's algorithm: fp32 arithmetic per element, and how many times a row too long for
// one warp's registers is read from global memory.
struct RowCost {
  double ops_per_element;
  int global_passes;
  int inputs = 1;  // [rows, cols] tensors read per row (a backward reads the gradient and x or y)
};
std::vector<Kernel> lower_rowwise(const OpDesc& op, const LowerContext& cx, RowCost cost);  // norms, softmax

// An elementwise op's cost: fp32 operations per element, and the tensors read and written per
// element.
struct ElementwiseCost {
  double ops_per_element;
  double inputs;
  double outputs = 1;  // tensors written per element (a fused backward writes two gradients)
};
std::vector<Kernel> lower_elementwise(const OpDesc& op, const LowerContext& cx, ElementwiseCost cost);

// A row-wise pass over [rows, cols]: every input read once with `ops_per_input` operations; a
// reduction writes `outputs_per_row` elements (and `index_bytes_per_row` of int64 positions) per
// row, a scan writes every element.
struct RowPassCost {
  double ops_per_input;
  double outputs_per_row;
  double index_bytes_per_row = 0;
  bool scan = false;
};
std::vector<Kernel> lower_row_pass(const OpDesc& op, const LowerContext& cx, RowPassCost cost);
// sort: each row's values sorted with their int64 positions, as CUB's segmented radix sort runs
// (a pass per 8 bits of key, each reading and writing keys and positions).
std::vector<Kernel> lower_sort(const OpDesc& op, const LowerContext& cx);
// gather and scatter over `elements` index positions: each reads its int64 index and one value
// (random access within the source), and writes one value.
std::vector<Kernel> lower_indexed(const OpDesc& op, const LowerContext& cx);

// One streaming pass over `elements`: a vectorised grid-stride kernel reading and writing the
// given bytes per element (each as its own dtype: an fp32 upcast reads 2 and writes 4) with
// `ops_per_element` fp32 operations. The pieces of composed (eager) implementations.
struct StreamPass {
  std::string_view name;
  double elements;
  double read_bytes_per_element;
  double write_bytes_per_element;
  double ops_per_element;
};
Kernel stream_kernel(const LowerContext& cx, const StreamPass& pass);

// The cheapest of `options` (kernel sequences) by estimate_s, as `impl` allows: "auto" compares
// them all, another name keeps the option of that name. The chosen first kernel says why.
std::vector<Kernel> choose_implementation(std::vector<std::vector<Kernel>> options, const LowerContext& cx);

// LayerNorm and RMSNorm by implementation: fused (one pass, the row on chip where it fits:
// lower_rowwise), torch (PyTorch's native kernels: row statistics, then a normalising pass that
// reads the row again), eager (RMSNorm as Hugging Face modeling code composes it from
// elementwise kernels in fp32).
std::vector<Kernel> lower_norm(const OpDesc& op, const LowerContext& cx, RowCost fused_cost);
// Their backward: the input gradient (reads x and dy, writes dx) and the weight (and bias)
// gradient, a reduction over rows: fused in one pass with per-CTA partial sums (Apex, Megatron,
// Liger, Transformer Engine), or PyTorch's native pair of kernels that read x and dy twice.
std::vector<Kernel> lower_norm_backward(const OpDesc& op, const LowerContext& cx, RowCost fused_cost);
// FlashAttention's backward (kernels/attention.cpp): the scores recomputed block by block from Q,
// K and the saved log-sum-exp, five matrix products a block (Dao, "FlashAttention-2", 2023,
// algorithm 2), dQ accumulated in fp32.
std::vector<Kernel> lower_attention_backward(const OpDesc& op, const LowerContext& cx);
// Embedding's dense backward: the gradient table zeroed, then each token's gradient row added
// into its row of the table (PyTorch's embedding_dense_backward: sort the ids, sum per id).
std::vector<Kernel> lower_embedding_backward(const OpDesc& op, const LowerContext& cx);
// A sum over the `cols` of each of `rows` outputs (bias gradients, losses, norms).
std::vector<Kernel> lower_sum(const OpDesc& op, const LowerContext& cx);
// Fused optimizer steps and foreach ops over `elements` parameters in `batch` tensors, as
// PyTorch's multi-tensor-apply kernels run them (kernels/optimizer.cpp).
std::vector<Kernel> lower_adam(const OpDesc& op, const LowerContext& cx);
std::vector<Kernel> lower_sgd(const OpDesc& op, const LowerContext& cx);
std::vector<Kernel> lower_foreach(const OpDesc& op, const LowerContext& cx);
// Rotary position embedding of query and key heads, fused (one in-place pass, the cos/sin table
// from L2) or eager (Hugging Face's rotate_half composition, per tensor).
std::vector<Kernel> lower_rope(const OpDesc& op, const LowerContext& cx);
std::vector<Kernel> lower_embedding(const OpDesc& op, const LowerContext& cx);
// Mixture of experts (kernels/moe.cpp): the router's fused softmax + top-k, the permutation of
// tokens into expert order and the weighted combine back.
std::vector<Kernel> lower_topk(const OpDesc& op, const LowerContext& cx);
std::vector<Kernel> lower_moe_permute(const OpDesc& op, const LowerContext& cx);
std::vector<Kernel> lower_moe_unpermute(const OpDesc& op, const LowerContext& cx);

}  // namespace syntorch::runtime::detail
