#pragma once
// Cost models that lower an op to kernels on one device, one file per op family. Each builds
// candidate kernels (tile shapes, split factors, implementations), estimates them with the same
// phase model the Executor runs, keeps the fastest the policy allows, and says why.

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

// Throws InputError naming the device when it cannot run `dtype` at all.
[[noreturn]] void unsupported(const LowerContext& cx, const std::string& what);

std::vector<Kernel> lower_gemm(const OpDesc& op, const LowerContext& cx);       // gemm, bmm
std::vector<Kernel> lower_grouped_gemm(const OpDesc& op, const LowerContext& cx);
std::vector<Kernel> lower_attention(const OpDesc& op, const LowerContext& cx);

// A row-wise op's algorithm: fp32 arithmetic per element, and how many times a row too long for
// one warp's registers is read from global memory.
struct RowCost {
  double ops_per_element;
  int global_passes;
};
std::vector<Kernel> lower_rowwise(const OpDesc& op, const LowerContext& cx, RowCost cost);  // norms, softmax

// An elementwise op's cost: fp32 operations per element and the input tensors read per element
// (one output is written).
struct ElementwiseCost {
  double ops_per_element;
  double inputs;
};
std::vector<Kernel> lower_elementwise(const OpDesc& op, const LowerContext& cx, ElementwiseCost cost);

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
