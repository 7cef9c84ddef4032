#pragma once
// The definition of one op kind, as its file under src/runtime/ops/ declares it: its name and
// parameters, the checks its shapes must pass, how it describes itself, its FLOP and byte
// accounting, the implementations a KernelPolicy may choose, and how it lowers to kernels on a
// device (collectives lower through the collective algorithms instead).

#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "../kernels/kernels.hpp"
#include "syntorch/runtime/op.hpp"

namespace syntorch::runtime {

// One parameter of an op, as calibration rows and `syntorch kernel` flags name it, and the
// OpDesc field it sets (a count, or a true/false flag).
struct OpParam {
  std::string_view key;   // "seq_q" (flags spell it --seq-q)
  std::string_view help;  // for the kernel command's flags
  std::uint64_t OpDesc::*count = nullptr;
  bool OpDesc::*flag = nullptr;
  std::uint64_t max = 0;  // the largest value accepted (0: limited only by the overflow checks)
};

// Collects the problems of one op's shape under `where`.
class OpCheck {
 public:
  OpCheck(const OpDesc& op, Diagnostics& diagnostics, const std::string& where)
      : op_(op), diagnostics_(diagnostics), where_(where) {}
  void need(std::uint64_t value, std::string_view name);                      // value > 0
  void fits(std::initializer_list<std::uint64_t> extents, std::string_view what);  // product < 2^62
  void error(const std::string& message);

 private:
  const OpDesc& op_;
  Diagnostics& diagnostics_;
  const std::string& where_;
};

enum class OpClass : std::uint8_t { compute, communication };

struct OpType {
  OpKind kind;
  std::string_view name;
  OpClass op_class = OpClass::compute;
  std::span<const OpParam> params;
  std::span<const std::string_view> implementations;  // "auto" first
  // What OpDesc::splits means for this op, as splits= (colon-separated counts) documents it; empty:
  // the op takes no splits.
  std::string_view splits_help = {};
  void (*defaults)(OpDesc&) = nullptr;                 // fills what a missing parameter means
  void (*check)(const OpDesc&, OpCheck&) = nullptr;
  std::string (*describe)(const OpDesc&) = nullptr;
  double (*flops)(const OpDesc&) = nullptr;
  double (*min_bytes)(const OpDesc&) = nullptr;
  // Kernels on one device, in launch order; nullptr for communication (collective algorithms).
  std::vector<Kernel> (*lower)(const OpDesc&, const detail::LowerContext&) = nullptr;
  // Its kernels take the name each launch gives them (a compiler's generated kernels, which have
  // no name of their own), not the lowering's.
  bool kernels_named_by_launch = false;
};

// The table (registry.cpp), indexed by OpKind.
const OpType& op_type(OpKind kind);
std::span<const OpType* const> op_types();

// Shared pieces for the op files.
namespace ops {

inline constexpr std::string_view kFusedOnly[] = {"auto", "fused"};

// Matrix products (gemm, bmm; defined in gemm.cpp).
inline constexpr std::string_view kMatmulImpls[] = {"auto", "cublasLt", "tiled", "splitk", "gemv"};
void check_matmul(const OpDesc& op, OpCheck& c);
double matmul_flops(const OpDesc& op);
double matmul_bytes(const OpDesc& op);

// Convolutions (conv, conv_dgrad, conv_wgrad; defined in conv.cpp): implicit GEMMs.
inline constexpr std::string_view kConvImpls[] = {"auto", "implicit_gemm", "winograd"};
extern const OpParam kConvParams[8];
void conv_defaults(OpDesc& op);
void check_conv(const OpDesc& op, OpCheck& c);
std::string describe_conv(const OpDesc& op);
double conv_min_bytes(const OpDesc& op);
// A convolution pass (conv, conv_dgrad, conv_wgrad): the implicit GEMM's parameters, checks,
// accounting and lowering, shared.
constexpr OpType conv_type(OpKind kind, std::string_view name) {
  return OpType{
      .kind = kind,
      .name = name,
      .params = kConvParams,
      .implementations = kConvImpls,
      .defaults = &conv_defaults,
      .check = &check_conv,
      .describe = &describe_conv,
      .flops = &matmul_flops,
      .min_bytes = &conv_min_bytes,
      .lower = &detail::lower_conv,
  };
}

// Attention and its backward (defined in attention.cpp): parameters, defaults, checks, accounting.
extern const OpParam kAttentionParams[8];
void attention_defaults(OpDesc& op);
void check_attention(const OpDesc& op, OpCheck& c);
std::string describe_attention(const OpDesc& op);
double attention_flops(const OpDesc& op);
double attention_min_bytes(const OpDesc& op);

// Embedding and its backward (defined in common.cpp): tokens rows of `hidden` from a table of
// `vocab` rows.
extern const OpParam kEmbeddingParams[3];
void check_embedding(const OpDesc& op, OpCheck& c);
std::string describe_embedding(const OpDesc& op);

// Elementwise ops over `elements`: their parameter, check and description.
extern const OpParam kElementsParam[1];
void check_elements(const OpDesc& op, OpCheck& c);
std::string describe_elements(const OpDesc& op);
double elements_bytes(const OpDesc& op, double tensors);  // elements x element size x tensors

// An elementwise op of the given cost per element: `elements` its parameter, fused its only
// implementation, the shared elementwise kernel its lowering.
template <detail::ElementwiseCost Cost>
constexpr OpType elementwise_type(OpKind kind, std::string_view name) {
  return OpType{
      .kind = kind,
      .name = name,
      .params = kElementsParam,
      .implementations = kFusedOnly,
      .check = &check_elements,
      .describe = &describe_elements,
      .flops = [](const OpDesc& op) { return static_cast<double>(op.elements) * Cost.ops_per_element; },
      .min_bytes = [](const OpDesc& op) { return elements_bytes(op, Cost.inputs + Cost.outputs); },
      .lower = [](const OpDesc& op, const detail::LowerContext& cx) { return detail::lower_elementwise(op, cx, Cost); },
  };
}

// gather and scatter over `elements` index positions: an int64 index and a value read, a value
// written each (kernels/reduce.cpp: lower_indexed).
constexpr OpType indexed_type(OpKind kind, std::string_view name) {
  return OpType{
      .kind = kind,
      .name = name,
      .params = kElementsParam,
      .implementations = kFusedOnly,
      .check = &check_elements,
      .describe = &describe_elements,
      .flops = [](const OpDesc& op) { return static_cast<double>(op.elements); },
      .min_bytes =
          [](const OpDesc& op) { return static_cast<double>(op.elements) * (2.0 * element_bytes(op.dtype) + 8.0); },
      .lower = &detail::lower_indexed,
  };
}

// Optimizer steps over `elements` parameters in `tensors` tensors (batch; 1 when not given):
// their parameters, defaults, check and description (defined in common.cpp).
extern const OpParam kOptimizerParams[2];
void optimizer_defaults(OpDesc& op);
void check_optimizer(const OpDesc& op, OpCheck& c);
std::string describe_optimizer(const OpDesc& op);

// Row-wise ops over [rows, cols].
extern const OpParam kRowsParams[2];
void check_rows(const OpDesc& op, OpCheck& c);
std::string describe_rows(const OpDesc& op);
inline double rows_elements(const OpDesc& op) { return static_cast<double>(op.rows) * static_cast<double>(op.cols); }

// A row-wise op of the given cost: [rows, cols] its parameters, the shared row-wise kernel.
template <detail::RowCost Cost>
constexpr OpType rowwise_type(OpKind kind, std::string_view name) {
  return OpType{
      .kind = kind,
      .name = name,
      .params = kRowsParams,
      .implementations = kFusedOnly,
      .check = &check_rows,
      .describe = &describe_rows,
      .flops = [](const OpDesc& op) { return rows_elements(op) * Cost.ops_per_element; },
      .min_bytes = [](const OpDesc& op) { return (Cost.inputs + 1.0) * rows_elements(op) * element_bytes(op.dtype); },
      .lower = [](const OpDesc& op, const detail::LowerContext& cx) { return detail::lower_rowwise(op, cx, Cost); },
  };
}

// A row-wise pass over [rows, cols] of the given cost (a reduction or a scan; kernels/reduce.cpp).
template <detail::RowPassCost Cost>
constexpr OpType row_pass_type(OpKind kind, std::string_view name) {
  return OpType{
      .kind = kind,
      .name = name,
      .params = kRowsParams,
      .implementations = kFusedOnly,
      .check = &check_rows,
      .describe = &describe_rows,
      .flops = [](const OpDesc& op) { return rows_elements(op) * Cost.ops_per_input; },
      .min_bytes =
          [](const OpDesc& op) {
            const double e = element_bytes(op.dtype);
            const double written = Cost.scan ? rows_elements(op) * e
                                             : static_cast<double>(op.rows) * (e * Cost.outputs_per_row +
                                                                               Cost.index_bytes_per_row);
            return rows_elements(op) * e + written;
          },
      .lower = [](const OpDesc& op, const detail::LowerContext& cx) { return detail::lower_row_pass(op, cx, Cost); },
  };
}

// A normalisation over [rows, cols], or its backward: the row-wise op with implementations to
// choose among, lowered by `Lower` (kernels/norm.cpp: lower_norm, lower_norm_backward).
template <detail::RowCost Cost,
          std::vector<Kernel> (*Lower)(const OpDesc&, const detail::LowerContext&, detail::RowCost) = detail::lower_norm>
constexpr OpType norm_type(OpKind kind, std::string_view name, std::span<const std::string_view> implementations) {
  OpType t = rowwise_type<Cost>(kind, name);
  t.implementations = implementations;
  t.lower = [](const OpDesc& op, const detail::LowerContext& cx) { return Lower(op, cx, Cost); };
  return t;
}

// Mixture-of-experts row movement over `tokens` rows of `hidden` with `top_k` experts each
// (moe_permute, moe_unpermute; defined in common.cpp).
extern const OpParam kMoeRowsParams[3];
void check_moe_rows(const OpDesc& op, OpCheck& c);
std::string describe_moe_rows(const OpDesc& op);
inline double moe_row_bytes(const OpDesc& op) { return rows_elements(op) * element_bytes(op.dtype); }

// Communication over `ranks` devices with `bytes` per rank.
extern const OpParam kCommParams[2];
void check_comm(const OpDesc& op, OpCheck& c);
std::string describe_comm(const OpDesc& op);
inline double comm_bytes(const OpDesc& op) { return static_cast<double>(op.bytes); }
inline double no_flops(const OpDesc&) { return 0; }

// A communication op: ranks and bytes its parameters; its implementations are the collective
// algorithms registered for it (collectives/registry.cpp), "auto" first.
constexpr OpType communication_type(OpKind kind, std::string_view name,
                                    std::span<const std::string_view> implementations) {
  return OpType{
      .kind = kind,
      .name = name,
      .op_class = OpClass::communication,
      .params = kCommParams,
      .implementations = implementations,
      .check = &check_comm,
      .describe = &describe_comm,
      .flops = &no_flops,
      .min_bytes = &comm_bytes,
  };
}

}  // namespace ops

}  // namespace syntorch::runtime
