// Rotary embedding kernels. Fused: one in-place pass over the rotated part of every query and
// key head, the cos/sin rows of each token read once (fp32). Eager: Hugging Face's
// apply_rotary_pos_emb, per tensor (query, then key): rotate_half as a neg of one half and a cat,
// x * cos, rotate_half(x) * sin and their sum, each a kernel through HBM; with partial rotary
// (GPT-J) a last cat joins the rotated and the passed-through dimensions.

#include <fmt/format.h>

#include "kernels.hpp"

namespace syntorch::runtime::detail {

std::vector<Kernel> lower_rope(const OpDesc& op, const LowerContext& cx) {
  const double e = element_bytes(cx.dtype);
  const double tokens = static_cast<double>(op.rows);
  const double rot = static_cast<double>(op.cols);
  const double head_dim = static_cast<double>(op.head_dim);
  const double rotated = tokens * static_cast<double>(op.heads + op.kv_heads) * rot;
  const double table = tokens * rot * 4;  // cos and sin, half the rotary width each, fp32
  std::vector<Kernel> fused{stream_kernel(cx, {"rope", rotated, e + table / rotated, e, 3})};
  fused[0].why.push_back(fmt::format("in place: {} rotated elements of {} query and {} key heads", rotated, op.heads,
                                     op.kv_heads));
  std::vector<Kernel> eager;
  for (const auto& [tensor, heads] : {std::pair{"q", op.heads}, std::pair{"k", op.kv_heads}}) {
    const double m = tokens * static_cast<double>(heads) * rot;
    const std::string name = fmt::format("rope eager {}: ", tensor);
    const StreamPass passes[] = {{"neg", m / 2, e, e, 1},
                                 {"cat", m, e, e, 0},
                                 {"mul cos", m, e + table / m / 2, e, 1},
                                 {"mul sin", m, e + table / m / 2, e, 1},
                                 {"add", m, 2 * e, e, 1}};
    for (const StreamPass& p : passes) {
      eager.push_back(stream_kernel(cx, p));
      eager.back().name = name + std::string(p.name);
    }
    if (op.cols < op.head_dim) {
      const double full = tokens * static_cast<double>(heads) * head_dim;
      eager.push_back(stream_kernel(cx, {"", full, e, e, 0}));
      eager.back().name = name + "cat rotated and pass-through";
    }
  }
  for (Kernel& k : eager) k.impl = "eager";
  eager[0].why.push_back(fmt::format("Hugging Face's rotate_half composition: {} kernels", eager.size()));
  return choose_implementation({std::move(fused), std::move(eager)}, cx);
}

}  // namespace syntorch::runtime::detail
