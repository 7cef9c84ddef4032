// The op table: every op kind's definition, in OpKind order, and the lookups over it.

#include <array>
#include <fmt/format.h>

#include "op_type.hpp"

namespace syntorch::runtime {

namespace ops {
#define SYNTORCH_OP_DECLARE(name) extern const OpType name##_op;
SYNTORCH_OP_TABLE(SYNTORCH_OP_DECLARE)
#undef SYNTORCH_OP_DECLARE
}  // namespace ops

namespace {
constexpr std::array kTable{
#define SYNTORCH_OP_ENTRY(name) &ops::name##_op,
    SYNTORCH_OP_TABLE(SYNTORCH_OP_ENTRY)
#undef SYNTORCH_OP_ENTRY
};
static_assert(kTable.size() == kOpKinds, "every OpKind has its definition in the table");
}  // namespace

const OpType& op_type(OpKind kind) { return *kTable[static_cast<std::size_t>(kind)]; }
std::span<const OpType* const> op_types() { return kTable; }

std::string_view op_name(OpKind k) { return op_type(k).name; }

std::optional<OpKind> parse_op(std::string_view name) {
  for (const OpType* t : kTable) {
    if (t->name == name) return t->kind;
  }
  return std::nullopt;
}

std::vector<std::string> op_names() {
  std::vector<std::string> names;
  for (const OpType* t : kTable) names.emplace_back(t->name);
  return names;
}

bool is_collective(OpKind k) { return op_type(k).op_class == OpClass::communication; }
bool kernels_named_by_launch(OpKind k) { return op_type(k).kernels_named_by_launch; }

double element_bytes(DType t) { return dtype_bits(t) / 8.0; }

void append_split_sizes(std::uint64_t total, std::uint64_t parts, const std::vector<std::uint64_t>& splits,
                        std::vector<std::uint64_t>& out) {
  if (!splits.empty()) {
    out.insert(out.end(), splits.begin(), splits.end());
    return;
  }
  for (std::uint64_t i = 0; i < parts; ++i) out.push_back(total / parts + (i < total % parts ? 1 : 0));
}

std::vector<std::uint64_t> split_sizes(std::uint64_t total, std::uint64_t parts, const std::vector<std::uint64_t>& splits) {
  std::vector<std::uint64_t> sizes;
  append_split_sizes(total, parts, splits, sizes);
  return sizes;
}

std::string OpDesc::describe() const { return op_type(kind).describe(*this); }

bool validate_op(const OpDesc& op, Diagnostics& d, const std::string& where) {
  const std::size_t before = d.size();
  OpCheck check(op, d, where);
  op_type(op.kind).check(op, check);
  return d.size() == before;
}

double op_flops(const OpDesc& op) { return op_type(op.kind).flops(op); }
double op_min_bytes(const OpDesc& op) { return op_type(op.kind).min_bytes(op); }

}  // namespace syntorch::runtime
