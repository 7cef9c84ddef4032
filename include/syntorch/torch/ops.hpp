#pragma once
// The torch layer's factories and ops, as libtorch's free functions. Each op checks its inputs'
// shapes, dtypes and devices (throwing torch::Error), makes its output (allocating it on the
// current rank's device), and launches one runtime op (runtime::OpDesc) named after the ATen op.
// docs/torch.md lists the OpDesc each op maps to.

#include <cstdint>
#include <optional>
#include <string_view>
#include <tuple>
#include <vector>

#include "syntorch/torch/tensor.hpp"
#include "syntorch/torch/types.hpp"

namespace syntorch::torch {

// --- Factories ---
// empty allocates only. zeros, ones, full, randn and arange also launch a fill kernel (a copy of
// numel elements: the values themselves are not simulated).
Tensor empty(IntArrayRef sizes, TensorOptions options = {});
Tensor zeros(IntArrayRef sizes, TensorOptions options = {});
Tensor ones(IntArrayRef sizes, TensorOptions options = {});
Tensor full(IntArrayRef sizes, double value, TensorOptions options = {});
Tensor randn(IntArrayRef sizes, TensorOptions options = {});
Tensor rand(IntArrayRef sizes, TensorOptions options = {});
// Integers in [low, high): Long unless options say otherwise (torch::Error when high <= low).
Tensor randint(std::int64_t low, std::int64_t high, IntArrayRef sizes, TensorOptions options = TensorOptions(kInt64));
Tensor empty_like(const Tensor& t);
Tensor zeros_like(const Tensor& t);
Tensor ones_like(const Tensor& t);
// 0, 1, ..., end-1 (start, ..., end-1), Long unless options say otherwise.
Tensor arange(std::int64_t end, TensorOptions options = TensorOptions(kInt64));
Tensor arange(std::int64_t start, std::int64_t end, TensorOptions options = TensorOptions(kInt64));
// A 1-D Long tensor of these values (token ids) on the device: an allocation of 8 n bytes and a
// host-to-device copy of them. The values themselves are not kept.
Tensor tensor(const std::vector<std::int64_t>& values, TensorOptions options = TensorOptions(kInt64));

// --- Linear algebra ---
// libtorch's matmul rules: 2-D x 2-D and N-D x 2-D (leading dims folded into m) are one gemm;
// batched N-D x N-D (batch dims broadcast) is one bmm; 1-D operands gain and lose a size-1 dim.
// Non-contiguous operands are fine (cuBLAS takes transposes): no copy.
Tensor matmul(const Tensor& a, const Tensor& b);
Tensor mm(const Tensor& a, const Tensor& b);   // 2-D only
Tensor bmm(const Tensor& a, const Tensor& b);  // 3-D only, equal batch
// bias + a b, the bias added in the gemm's epilogue.
Tensor addmm(const Tensor& bias, const Tensor& a, const Tensor& b);

// --- Pointwise (outputs broadcast; the dtypes of tensor operands must match) ---
Tensor add(const Tensor& a, const Tensor& b);
Tensor sub(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Tensor& b);
Tensor gelu(const Tensor& x, std::string_view approximate = "none");
Tensor relu(const Tensor& x);
Tensor silu(const Tensor& x);
Tensor tanh(const Tensor& x);
Tensor sigmoid(const Tensor& x);
Tensor exp(const Tensor& x);
Tensor log(const Tensor& x);
Tensor sqrt(const Tensor& x);
Tensor rsqrt(const Tensor& x);
Tensor pow(const Tensor& x, double exponent);
Tensor pow(double base, const Tensor& exponent);
Tensor sin(const Tensor& x);
Tensor cos(const Tensor& x);
Tensor abs(const Tensor& x);
// Complex numbers, as rotary tables in torch.polar's form use them: polar(abs, angle) is one
// kernel writing abs * (cos(angle) + i sin(angle)) (Float or Double in, complex out);
// view_as_complex views a real tensor whose last dim is 2 (stride 1) as complex, view_as_real a
// complex one as real pairs: views, no kernel. Products of complex tensors are mul's.
Tensor polar(const Tensor& abs, const Tensor& angle);
Tensor view_as_complex(const Tensor& x);
Tensor view_as_real(const Tensor& x);
// Each element limited to [min, max] (at least one given).
Tensor clamp(const Tensor& x, std::optional<double> min, std::optional<double> max = std::nullopt);
// The sizes two shapes broadcast to (throws torch::Error naming both when they cannot).
std::vector<std::int64_t> broadcast_shapes(IntArrayRef a, IntArrayRef b);

// --- Normalisation and reductions ---
Tensor softmax(const Tensor& x, std::int64_t dim, std::optional<ScalarType> dtype = std::nullopt);
Tensor log_softmax(const Tensor& x, std::int64_t dim, std::optional<ScalarType> dtype = std::nullopt);
// weight and bias may be undefined (Tensor()); both, when given, have normalized_shape.
Tensor layer_norm(const Tensor& x, IntArrayRef normalized_shape, const Tensor& weight = {}, const Tensor& bias = {},
                  double eps = 1e-5);
Tensor rms_norm(const Tensor& x, IntArrayRef normalized_shape, const Tensor& weight = {},
                std::optional<double> eps = std::nullopt);
// The sum (mean) of all elements: a 0-dim tensor, one reduction kernel.
Tensor sum(const Tensor& x);
Tensor mean(const Tensor& x);
// The sum (mean) over `dims` (kept as size 1 with keepdim): one reduction kernel.
Tensor sum(const Tensor& x, IntArrayRef dims, bool keepdim = false);
Tensor mean(const Tensor& x, IntArrayRef dims, bool keepdim = false);
// Indices (Long) of the largest value along dim; over all elements without dim.
Tensor argmax(const Tensor& x, std::optional<std::int64_t> dim = std::nullopt, bool keepdim = false);
// The k largest (smallest) values along dim and their indices (Long): one topk op.
std::tuple<Tensor, Tensor> topk(const Tensor& x, std::int64_t k, std::int64_t dim = -1, bool largest = true,
                                bool sorted = true);

// --- More reductions, scans, sorts, gathers and scatters (reduce_ops.cpp) ---
// The largest (smallest) value over `dims` (all of them when empty): one amax op (rows of the
// kept elements, columns of the reduced ones, as sum). max(x)/min(x) over all elements; with a
// dim, the values and their int64 positions, from the same pass.
Tensor amax(const Tensor& x, IntArrayRef dims = {}, bool keepdim = false);
Tensor amin(const Tensor& x, IntArrayRef dims = {}, bool keepdim = false);
// The product over `dims` (all of them when empty): one reduction kernel, as the sum's (integer
// and bool inputs give int64, as PyTorch's). Its backward: grad * result / input (two kernels).
Tensor prod(const Tensor& x, IntArrayRef dims = {}, bool keepdim = false);
Tensor max(const Tensor& x);
Tensor min(const Tensor& x);
std::tuple<Tensor, Tensor> max(const Tensor& x, std::int64_t dim, bool keepdim = false);
std::tuple<Tensor, Tensor> min(const Tensor& x, std::int64_t dim, bool keepdim = false);
// Whether all (any) elements over `dims` (all when empty) are non-zero: Bool, one all op.
Tensor all(const Tensor& x, IntArrayRef dims = {}, bool keepdim = false);
Tensor any(const Tensor& x, IntArrayRef dims = {}, bool keepdim = false);
// The vector p-norm over `dims` (torch.linalg.vector_norm, Tensor.norm): one norm op.
Tensor norm(const Tensor& x, double p = 2.0, IntArrayRef dims = {}, bool keepdim = false);
// The running sum along dim (integers and bools accumulate in Long): one scan.
Tensor cumsum(const Tensor& x, std::int64_t dim, std::optional<ScalarType> dtype = std::nullopt);
// Each row along dim sorted (values and int64 positions): one segmented radix sort.
std::tuple<Tensor, Tensor> sort(const Tensor& x, std::int64_t dim = -1, bool descending = false);
Tensor argsort(const Tensor& x, std::int64_t dim = -1, bool descending = false);
// out[...] = x[index along dim] (index of x's rank): one gather op over the index's elements.
// scatter_ writes src (or a value) at the positions index gives; scatter_add_ adds src there.
Tensor gather(const Tensor& x, std::int64_t dim, const Tensor& index);
Tensor& scatter_(Tensor& x, std::int64_t dim, const Tensor& index, const Tensor& src);
Tensor& scatter_(Tensor& x, std::int64_t dim, const Tensor& index, double value);
Tensor& scatter_add_(Tensor& x, std::int64_t dim, const Tensor& index, const Tensor& src);
Tensor scatter(const Tensor& x, std::int64_t dim, const Tensor& index, const Tensor& src);
Tensor scatter_add(const Tensor& x, std::int64_t dim, const Tensor& index, const Tensor& src);
// Elementwise: the larger (smaller) of two broadcast operands; the sign; rounding to integral
// values; leaky_relu (x, or slope * x where negative).
Tensor maximum(const Tensor& a, const Tensor& b);
Tensor minimum(const Tensor& a, const Tensor& b);
Tensor sign(const Tensor& x);
Tensor round(const Tensor& x);
Tensor floor(const Tensor& x);
Tensor ceil(const Tensor& x);
Tensor trunc(const Tensor& x);
Tensor leaky_relu(const Tensor& x, double negative_slope = 0.01);

// --- Comparisons, selection, masking and sampling (select_ops.cpp) ---
// Elementwise comparisons with broadcasting (or against a number): Bool outputs, no gradient.
Tensor eq(const Tensor& a, const Tensor& b);
Tensor ne(const Tensor& a, const Tensor& b);
Tensor lt(const Tensor& a, const Tensor& b);
Tensor le(const Tensor& a, const Tensor& b);
Tensor gt(const Tensor& a, const Tensor& b);
Tensor ge(const Tensor& a, const Tensor& b);
Tensor eq(const Tensor& a, double b);
Tensor ne(const Tensor& a, double b);
Tensor lt(const Tensor& a, double b);
Tensor le(const Tensor& a, double b);
Tensor gt(const Tensor& a, double b);
Tensor ge(const Tensor& a, double b);
// condition ? a : b, all three broadcast (condition Bool); one kernel.
Tensor where(const Tensor& condition, const Tensor& a, const Tensor& b);
// x with `value` where mask (Bool) is set, the two broadcast: a copy and the fill, as ATen's
// clone and masked_fill_. In place (the mask broadcast to x): the fill alone, no gradient.
Tensor masked_fill(const Tensor& x, const Tensor& mask, double value);
Tensor& masked_fill_(Tensor& x, const Tensor& mask, double value);
// The lower (upper) triangle of the last two dims, the rest zeroed: one copy kernel.
Tensor tril(const Tensor& x, std::int64_t diagonal = 0);
Tensor triu(const Tensor& x, std::int64_t diagonal = 0);
// The slices of x at `index` (a 1-D Int or Long tensor) along dim: one gather kernel over the
// output; its backward fills a zero gradient and adds into it (index_add_). index_copy_ writes
// `source` into those slices (a copy of its elements; no gradient).
Tensor index_select(const Tensor& x, std::int64_t dim, const Tensor& index);
Tensor& index_copy_(Tensor& x, std::int64_t dim, const Tensor& index, const Tensor& source);
// Advanced indexing, x[i0, :, i2] (aten::index): an index tensor (Int or Long) or nothing (the
// whole dim) per leading dim of x. The indices broadcast together; their shape takes the place of
// the indexed dims when those are adjacent, else it comes first (NumPy's and PyTorch's rule).
// One gather kernel over the output; its backward fills a zero gradient and adds into it.
// index_put_ writes `values` (broadcast to that shape) there: a copy of its elements, no gradient.
Tensor index(const Tensor& x, const std::vector<std::optional<Tensor>>& indices);
Tensor& index_put_(Tensor& x, const std::vector<std::optional<Tensor>>& indices, const Tensor& values);
// num_samples category indices (Long) per row of a [C] or [N, C] probability tensor: one
// row-wise kernel (a scan and a search per row). The values are not simulated.
Tensor multinomial(const Tensor& probs, std::int64_t num_samples, bool replacement = false);

// --- Foreach (torch._foreach_*: one multi-tensor kernel over every tensor of a list) ---
// self[i] += other[i] (other may be in another dtype: a cast on the way).
void _foreach_add_(const std::vector<Tensor>& self, const std::vector<Tensor>& other);
void _foreach_mul_(const std::vector<Tensor>& self, double scalar);
// self[i] = src[i] (a cast when the dtypes differ).
void _foreach_copy_(const std::vector<Tensor>& self, const std::vector<Tensor>& src);
// The 2-norm of each tensor (one fp32 value each).
std::vector<Tensor> _foreach_norm(const std::vector<Tensor>& self);
// GradScaler's kernels: each gradient divided by inv_scale while any inf or NaN sets found_inf
// (one multi-tensor kernel per dtype group), and the scale's update from found_inf (one kernel).
// found_inf and inv_scale are one-element fp32 tensors; growth_tracker one Int.
void _amp_foreach_non_finite_check_and_unscale_(const std::vector<Tensor>& self, Tensor& found_inf,
                                                const Tensor& inv_scale);
Tensor& _amp_update_scale_(Tensor& self, Tensor& growth_tracker, const Tensor& found_inf, double scale_growth_factor,
                           double scale_backoff_factor, std::int64_t growth_interval);

// --- Shape ---
Tensor cat(const std::vector<Tensor>& tensors, std::int64_t dim = 0);
Tensor stack(const std::vector<Tensor>& tensors, std::int64_t dim = 0);
Tensor transpose(const Tensor& x, std::int64_t dim0, std::int64_t dim1);
Tensor reshape(const Tensor& x, IntArrayRef sizes);
Tensor flatten(const Tensor& x, std::int64_t start_dim = 0, std::int64_t end_dim = -1);
Tensor permute(const Tensor& x, IntArrayRef dims);
Tensor unsqueeze(const Tensor& x, std::int64_t dim);
Tensor squeeze(const Tensor& x, std::int64_t dim);
Tensor narrow(const Tensor& x, std::int64_t dim, std::int64_t start, std::int64_t length);
std::vector<Tensor> split(const Tensor& x, std::int64_t split_size, std::int64_t dim = 0);
std::vector<Tensor> chunk(const Tensor& x, std::int64_t chunks, std::int64_t dim = 0);

// --- Transformer building blocks ---
// q [..., Hq, Sq, D], k and v [..., Hkv, Skv, D] with Hq a multiple of Hkv (GQA/MQA are always
// accepted; enable_gqa is for source compatibility) -> [..., Hq, Sq, D], one fused attention op.
// attn_mask, when given, must broadcast to [..., Hq, Sq, Skv] (its reads are not counted);
// dropout and scale do not change the cost.
Tensor scaled_dot_product_attention(const Tensor& query, const Tensor& key, const Tensor& value,
                                    const Tensor& attn_mask = {}, double dropout_p = 0.0, bool is_causal = false,
                                    std::optional<double> scale = std::nullopt, bool enable_gqa = false);
// weight [num, dim], indices (Long or Int) of any shape -> indices.sizes() + [dim].
Tensor embedding(const Tensor& weight, const Tensor& indices);
// In eval (train false) or with p == 0, x itself (nothing launched); otherwise a mul kernel.
Tensor dropout(const Tensor& x, double p, bool train);

// A convolution (aten::convolution): input [N, C_in, *spatial] (1 to 3 spatial dims), weight
// [C_out, C_in / groups, *kernel], bias [C_out] or undefined; stride, padding and dilation one
// value or one per spatial dim. An implicit GEMM (runtime op conv; NCHW inputs transposed around a
// tensor-core kernel, channels-last ones not), then the bias as an add, as PyTorch's cuDNN path
// runs it. Its backward: conv_dgrad for the input, conv_wgrad for the weight, a sum for the bias.
// A transposed convolution (weight [C_in, C_out / groups, *kernel]) runs as the input gradient of
// the convolution it transposes: conv_dgrad forward, conv and conv_wgrad backward.
Tensor convolution(const Tensor& input, const Tensor& weight, const Tensor& bias, IntArrayRef stride,
                   IntArrayRef padding, IntArrayRef dilation, bool transposed, IntArrayRef output_padding,
                   std::int64_t groups);
// Batch norm over [N, C, *] (aten::native_batch_norm) with per-channel weight, bias and running
// statistics (each [C] or undefined): training reduces the batch's statistics (one sum kernel)
// then normalises (one batchnorm kernel); eval normalises with the running statistics. Its
// backward: one sum for the weight and bias gradients, one batchnorm_backward for the input's.
Tensor batch_norm(const Tensor& input, const Tensor& weight, const Tensor& bias, const Tensor& running_mean,
                  const Tensor& running_var, bool training, double momentum = 0.1, double eps = 1e-5);

// Pooling over the last `kernel.size()` dims of [N, C, *spatial] (1 to 3): max (with the argmax
// indices its backward scatters through) or average; stride defaults to the kernel; one
// memory-bound pass each way (every input read, every output written once), as PyTorch's CUDA
// kernels run them.
Tensor max_pool(const Tensor& input, IntArrayRef kernel, IntArrayRef stride = {}, IntArrayRef padding = {0},
                IntArrayRef dilation = {1}, bool ceil_mode = false);
Tensor avg_pool(const Tensor& input, IntArrayRef kernel, IntArrayRef stride = {}, IntArrayRef padding = {0},
                bool ceil_mode = false);
// Adaptive average pooling to `output_size` over the last output_size.size() dims.
Tensor adaptive_avg_pool(const Tensor& input, IntArrayRef output_size);
// Nearest or bilinear (linear, trilinear) resampling of the spatial dims to `size`: one pass each way.
Tensor upsample(const Tensor& input, IntArrayRef size, std::string_view mode = "nearest");
// Group norm of [N, C, *] over `groups` groups of channels (per-channel weight and bias): a
// layernorm over N x groups rows of C / groups x spatial elements, and its backward.
Tensor group_norm(const Tensor& input, std::int64_t groups, const Tensor& weight = {}, const Tensor& bias = {},
                  double eps = 1e-5);

namespace nn::functional {
// Convolutions over 1, 2 and 3 spatial dims (torch.nn.functional.conv1d/2d/3d).
Tensor conv1d(const Tensor& input, const Tensor& weight, const Tensor& bias = {}, IntArrayRef stride = {1},
              IntArrayRef padding = {0}, IntArrayRef dilation = {1}, std::int64_t groups = 1);
Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias = {}, IntArrayRef stride = {1},
              IntArrayRef padding = {0}, IntArrayRef dilation = {1}, std::int64_t groups = 1);
Tensor conv3d(const Tensor& input, const Tensor& weight, const Tensor& bias = {}, IntArrayRef stride = {1},
              IntArrayRef padding = {0}, IntArrayRef dilation = {1}, std::int64_t groups = 1);
inline Tensor batch_norm(const Tensor& input, const Tensor& running_mean, const Tensor& running_var,
                         const Tensor& weight = {}, const Tensor& bias = {}, bool training = false,
                         double momentum = 0.1, double eps = 1e-5) {
  return torch::batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps);
}
// y = x wᵀ + b with weight [out, in] and bias [out] (optional): one gemm, the bias in its epilogue.
Tensor linear(const Tensor& input, const Tensor& weight, const Tensor& bias = {});
inline Tensor gelu(const Tensor& x, std::string_view approximate = "none") { return torch::gelu(x, approximate); }
inline Tensor relu(const Tensor& x) { return torch::relu(x); }
inline Tensor silu(const Tensor& x) { return torch::silu(x); }
inline Tensor softmax(const Tensor& x, std::int64_t dim) { return torch::softmax(x, dim); }
inline Tensor log_softmax(const Tensor& x, std::int64_t dim) { return torch::log_softmax(x, dim); }
inline Tensor layer_norm(const Tensor& x, IntArrayRef normalized_shape, const Tensor& weight = {},
                         const Tensor& bias = {}, double eps = 1e-5) {
  return torch::layer_norm(x, normalized_shape, weight, bias, eps);
}
inline Tensor embedding(const Tensor& indices, const Tensor& weight) { return torch::embedding(weight, indices); }
// The mean negative log-likelihood of `target` (Long class ids [N]) under `log_probs` [N, C]: a
// gather and a sum; its backward writes a zeroed [N, C] gradient and scatters into it.
Tensor nll_loss(const Tensor& log_probs, const Tensor& target);
// log_softmax over classes, then nll_loss (torch.nn.functional.cross_entropy, mean reduction).
Tensor cross_entropy(const Tensor& input, const Tensor& target);
// Constant padding (torch.nn.functional.pad, mode "constant"): `pad` holds (before, after)
// counts for the last dim, then the one before it, ...; negative counts crop. One kernel writes
// the padded output (aten::constant_pad_nd: a copy of its elements).
Tensor pad(const Tensor& input, IntArrayRef pad, double value = 0);
inline Tensor dropout(const Tensor& x, double p = 0.5, bool training = true) { return torch::dropout(x, p, training); }
inline Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                                           const Tensor& attn_mask = {}, double dropout_p = 0.0,
                                           bool is_causal = false) {
  return torch::scaled_dot_product_attention(q, k, v, attn_mask, dropout_p, is_causal);
}
}  // namespace nn::functional

namespace nn::utils {
// Scales the gradients of `parameters` so that their total 2-norm is at most max_norm, and
// returns that norm (a 0-dim fp32 tensor), all on the device with no host sync, as PyTorch 2's
// foreach path: _foreach_norm per dtype group, a stack and a norm over those, the clip
// coefficient (add, reciprocal, mul, clamp) and one _foreach_mul_ per group. Parameters without
// a gradient are skipped. Throws torch::Error for max_norm below 0 or a norm_type other than 2.
Tensor clip_grad_norm_(const std::vector<Tensor>& parameters, double max_norm, double norm_type = 2.0);
}  // namespace nn::utils

}  // namespace syntorch::torch
