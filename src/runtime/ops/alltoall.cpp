// alltoall: every rank sends a share of its buffer to every rank (torch.distributed's
// all_to_all_single; a mixture-of-experts layer's dispatch and combine under expert
// parallelism). Even: each rank sends bytes/ranks to each. Uneven (all-to-allv): OpDesc::splits
// is the ranks x ranks traffic matrix in bytes (row: sender), and bytes its largest row
// (collectives/alltoall.cpp).

#include <fmt/format.h>

#include <algorithm>
#include <numeric>

#include "op_type.hpp"

namespace syntorch::runtime::ops {

namespace {
constexpr std::string_view kImpls[] = {"auto", "pairwise", "hierarchical"};
}  // namespace

extern constinit const OpType alltoall_op = [] {
  OpType t = communication_type(OpKind::alltoall, "alltoall", kImpls);
  t.check = [](const OpDesc& op, OpCheck& c) {
    check_comm(op, c);
    if (op.splits.empty()) return;
    std::uint64_t largest = 0;
    for (std::size_t i = 0; op.splits.size() == op.ranks * op.ranks && i < op.ranks; ++i) {
      const auto row = op.splits.begin() + static_cast<std::ptrdiff_t>(i * op.ranks);
      largest = std::max(largest, std::accumulate(row, row + static_cast<std::ptrdiff_t>(op.ranks), std::uint64_t{0}));
    }
    if (op.splits.size() != op.ranks * op.ranks || largest != op.bytes) {
      c.error(fmt::format("alltoall: a traffic matrix of {} entries whose largest row sends {} bytes, expected {} x {} "
                          "entries and a largest row of bytes = {}",
                          op.splits.size(), largest, op.ranks, op.ranks, op.bytes));
    }
  };
  return t;
}();

}  // namespace syntorch::runtime::ops
