// Convolutions as cuDNN runs them: an implicit GEMM on the matrix units (the filter's windows
// gathered from the input as the k-loop runs, never materialised), tiled and split like a GEMM
// but reading the gathered tensor's real bytes; NCHW tensors transposed to NHWC and back around a
// matrix-unit kernel; Winograd F(4x4, 3x3) for 3x3 stride-1 filters where the products run on
// vector units (fp32 without TF32, cuDNN's choice there), or when the policy asks for it.

#include <fmt/format.h>

#include "kernels.hpp"

namespace syntorch::runtime::detail {

namespace {

// A memory-bound layout pass of `elements` (cuDNN's nchwToNhwc and back), named `name`.
Kernel layout_pass(std::uint64_t elements, const LowerContext& cx, const char* name) {
  OpDesc copy;
  copy.kind = OpKind::copy;
  copy.dtype = cx.dtype;
  copy.elements = elements;
  Kernel k = lower_elementwise(copy, cx, ElementwiseCost{0, 1, 1}).front();
  k.name = name;
  k.impl = "transpose";
  k.why.insert(k.why.begin(), fmt::format("{}: the tensor-core kernel reads and writes NHWC; {} elements moved",
                                          name, elements));
  return k;
}

// Winograd F(4x4, 3x3): 36 GEMMs of (m/16) x n x (k/9) per group between an input transform
// (the gathered tensor read, 36/16 of the tiles' inputs written) and an output transform.
std::vector<Kernel> winograd(const OpDesc& op, const LowerContext& cx) {
  OpDesc g = op;
  g.kind = OpKind::bmm;
  g.batch = 36 * op.batch;
  g.m = ceil_div(op.m, 16);
  g.k = op.k / op.window;
  std::vector<Kernel> candidates;
  for (const hw::GemmTile& t : tile_shapes(cx.device)) candidates.push_back(tiled_gemm(g, cx, t, 1));
  Kernel product = fastest_kernel(std::move(candidates), g, cx).front();
  product.name = fmt::format("{} winograd {}", op_name(op.kind), product.tile);
  product.impl = "winograd";
  product.flops = 2.0 * static_cast<double>(op.batch) * static_cast<double>(op.m) * static_cast<double>(op.n) *
                  static_cast<double>(op.k);  // the useful work, as the convolution counts it
  OpDesc in;
  in.kind = OpKind::copy;
  in.dtype = cx.dtype;
  in.elements = op.elements;
  Kernel input = lower_elementwise(in, cx, ElementwiseCost{16, 1, 36.0 / 16.0 * static_cast<double>(g.m * 16 * g.k * op.batch) /
                                                                     std::max(1.0, static_cast<double>(op.elements))}).front();
  input.name = "winograd input transform";
  input.impl = "winograd";
  OpDesc out = in;
  out.elements = op.batch * op.m * op.n;
  Kernel output = lower_elementwise(out, cx, ElementwiseCost{16, 36.0 / 16.0, 1}).front();
  output.name = "winograd output transform";
  output.impl = "winograd";
  product.why.insert(product.why.begin(),
                     fmt::format("Winograd F(4x4, 3x3): 36 products of {}x{}x{} per group on transformed tiles, "
                                 "4x fewer multiplications than the direct form ({:.3g} bytes of transforms)",
                                 g.m, g.n, g.k, (input.hbm_bytes + output.hbm_bytes)));
  return {input, product, output};
}

}  // namespace

std::vector<Kernel> lower_conv(const OpDesc& op, const LowerContext& cx) {
  const std::string& impl = cx.policy.impl;
  const auto [rate, on_matrix] = matmul_rate(cx);
  (void)rate;
  const double e = element_bytes(cx.dtype);
  const bool wgrad = op.kind == OpKind::conv_wgrad;
  const bool winograd_fits = !wgrad && op.window == 9 && op.stride == 1 && op.k % 9 == 0;
  if (impl == "winograd" && !winograd_fits) {
    unsupported(cx, fmt::format("{}: the winograd implementation needs a 3x3 filter at stride 1 and no weight "
                                "gradient (window {} at stride {})",
                                op_name(op.kind), op.window, op.stride));
  }
  std::vector<Kernel> body;
  if (impl == "winograd" || (impl == "auto" && winograd_fits && !on_matrix)) {
    body = winograd(op, cx);
  } else {
    const double gathered = static_cast<double>(op.elements) * e;
    std::vector<Kernel> candidates;
    for (const hw::GemmTile& t : tile_shapes(cx.device)) {
      const std::uint64_t grid = op.batch * ceil_div(op.m, t.m) * ceil_div(op.n, t.n);
      for (std::uint32_t split = 1; split <= 16; split *= 2) {
        // Split K (a weight gradient's k is every output position) only while units sit idle.
        if (split > 1 && (grid * split > 2ULL * cx.device.compute.units || op.k / split < 4ULL * t.k)) break;
        Kernel k = wgrad ? tiled_gemm(op, cx, t, split, -1, gathered) : tiled_gemm(op, cx, t, split, gathered, -1);
        k.impl = "implicit_gemm";
        k.name = fmt::format("{} implicit_gemm {}{}", op_name(op.kind), k.tile,
                             split > 1 ? fmt::format(" split-k {}", split) : "");
        candidates.push_back(std::move(k));
      }
    }
    body = fastest_kernel(std::move(candidates), op, cx);
    body.front().why.insert(body.front().why.begin() + 1,
                            fmt::format("implicit GEMM {}x{}x{} per group over {} group(s); the {} operand gathered "
                                        "through a {}-position window from {} elements",
                                        op.m, op.n, op.k, op.batch, wgrad ? "B" : "A", op.window, op.elements));
  }
  if (!op.channels_last && on_matrix) {
    // NCHW in, NHWC inside: the gathered tensor transposed before, the result after.
    const std::uint64_t result = op.batch * op.m * op.n;
    body.insert(body.begin(), layout_pass(op.elements, cx, "nchw_to_nhwc"));
    if (!wgrad) body.push_back(layout_pass(result, cx, "nhwc_to_nchw"));
  }
  return body;
}

}  // namespace syntorch::runtime::detail
