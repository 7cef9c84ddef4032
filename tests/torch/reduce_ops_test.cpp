// Reductions, scans, sorts, gathers and scatters, and the elementwise maximum, sign, rounding and
// leaky_relu: their shapes and dtypes, the one op each launches, PyTorch's errors, their backward.

#include <gtest/gtest.h>

#include "fake_rank.hpp"
#include "syntorch/torch/torch.hpp"

namespace syntorch {
namespace {

namespace torch = syntorch::torch;
using runtime::OpKind;
using Sizes = std::vector<std::int64_t>;
using torch::testing::error_of;

class TorchReductions : public torch::testing::OnRank {};

TEST_F(TorchReductions, ExtremaReduceRowsOfKeptElementsInOnePass) {
  auto x = torch::empty({4, 6, 8});
  auto m = torch::amax(x, {1}, true);
  EXPECT_EQ(m.sizes(), (Sizes{4, 1, 8}));
  EXPECT_EQ(rank.last().kind, OpKind::amax);
  EXPECT_EQ(rank.last().rows, 32u);
  EXPECT_EQ(rank.last().cols, 6u);
  EXPECT_EQ(torch::amin(x).sizes(), Sizes{});
  EXPECT_EQ(torch::max(x).sizes(), Sizes{});
  EXPECT_EQ(torch::min(x).sizes(), Sizes{});
  const std::size_t before = rank.launches.size();
  auto [values, indices] = torch::max(x, -1);
  EXPECT_EQ(rank.launches.size(), before + 1);  // values and positions from one pass
  EXPECT_EQ(values.sizes(), (Sizes{4, 6}));
  EXPECT_EQ(indices.dtype(), torch::kInt64);
  EXPECT_EQ(std::get<0>(torch::min(x, 0, true)).sizes(), (Sizes{1, 6, 8}));
  EXPECT_EQ(error_of([&] { torch::max(torch::empty({0})); }),
            "max(): Expected reduction dim to be specified for input.numel() == 0.");
  EXPECT_EQ(error_of([&] { torch::max(torch::empty({2, 0}), 1); }),
            "max(): Expected reduction dim 1 to have non-zero size.");
  EXPECT_NE(error_of([&] { torch::amax(x, {3}); }).find("Dimension out of range"), std::string::npos);
}

TEST_F(TorchReductions, LogicalNormsScansAndSorts) {
  auto x = torch::empty({4, 8});
  auto all = torch::all(x, {1});
  EXPECT_EQ(all.dtype(), torch::kBool);
  EXPECT_EQ(all.sizes(), (Sizes{4}));
  EXPECT_EQ(torch::any(x).sizes(), Sizes{});
  EXPECT_EQ(torch::norm(x, 2.0, {1}, true).sizes(), (Sizes{4, 1}));
  EXPECT_EQ(rank.last().kind, OpKind::norm);
  EXPECT_NE(error_of([&] { torch::norm(torch::empty({3}, torch::kInt64)); }).find("floating point"), std::string::npos);
  auto c = torch::cumsum(x, 1);
  EXPECT_EQ(c.sizes(), (Sizes{4, 8}));
  EXPECT_EQ(rank.last().kind, OpKind::cumsum);
  EXPECT_EQ(torch::cumsum(torch::empty({5}, torch::kInt32), 0).dtype(), torch::kInt64);
  auto [sorted, order] = torch::sort(x, 0, true);
  EXPECT_EQ(rank.last().kind, OpKind::sort);
  EXPECT_EQ(rank.last().rows, 8u);
  EXPECT_EQ(order.dtype(), torch::kInt64);
  EXPECT_EQ(torch::argsort(x).sizes(), (Sizes{4, 8}));
}

TEST_F(TorchReductions, GatherAndScatterLaunchOneOpOverTheIndex) {
  auto x = torch::empty({4, 8});
  auto index = torch::empty({4, 3}, torch::kInt64);
  auto g = torch::gather(x, 1, index);
  EXPECT_EQ(g.sizes(), (Sizes{4, 3}));
  EXPECT_EQ(rank.last().kind, OpKind::gather);
  EXPECT_EQ(rank.last().elements, 12u);
  torch::scatter_(x, 1, index, torch::empty({4, 3}));
  EXPECT_EQ(rank.last().kind, OpKind::scatter);
  torch::scatter_(x, 1, index, 1.0);
  torch::scatter_add_(x, 1, index, torch::empty({4, 3}));
  EXPECT_EQ(torch::scatter_add(x, 1, index, torch::empty({4, 3})).sizes(), (Sizes{4, 8}));
  EXPECT_EQ(error_of([&] { torch::gather(x, 1, torch::empty({4, 3})); }), "gather(): Expected dtype int64 for index");
  EXPECT_EQ(error_of([&] { torch::gather(x, 1, torch::empty({4}, torch::kInt64)); }),
            "Index tensor must have the same number of dimensions as input tensor");
  EXPECT_NE(error_of([&] { torch::scatter_(x, 1, index, torch::empty({4, 2})); }).find("smaller size than src"),
            std::string::npos);
}

TEST_F(TorchReductions, ElementwiseKindsAndTheirGradients) {
  auto a = torch::empty({4, 8}).requires_grad_();
  auto b = torch::empty({8}).requires_grad_();
  auto m = torch::maximum(a, b);
  EXPECT_EQ(m.sizes(), (Sizes{4, 8}));
  EXPECT_EQ(rank.last().kind, OpKind::maximum);
  auto y = torch::minimum(m, a) + torch::sign(a) + torch::round(a) + torch::floor(a) + torch::ceil(a) +
           torch::trunc(a) + torch::leaky_relu(a, 0.2);
  auto loss = torch::sum(torch::amax(y, {1})) + torch::sum(torch::norm(a, 2.0, {1})) +
              torch::sum(torch::cumsum(a, 1)) + torch::sum(std::get<0>(torch::sort(a, 1))) +
              torch::sum(torch::gather(a, 1, torch::empty({4, 2}, torch::kInt64)));
  loss.backward();
  EXPECT_EQ(a.grad().sizes(), (Sizes{4, 8}));
  EXPECT_EQ(b.grad().sizes(), (Sizes{8}));
  bool leaky_backward = false, scatter = false;
  for (const auto& l : rank.launches) {
    leaky_backward |= l.op.kind == OpKind::leaky_relu_backward;
    scatter |= l.op.kind == OpKind::scatter;
  }
  EXPECT_TRUE(leaky_backward);
  EXPECT_TRUE(scatter);  // the gather's and the sort's gradients
  auto leaf = torch::empty({4, 8}).requires_grad_();
  auto index = torch::empty({4, 2}, torch::kInt64);
  EXPECT_NE(error_of([&] { torch::scatter_(leaf, 1, index, 0.0); }).find("leaf Variable"), std::string::npos);
  // Scatters pass the gradient on: to self (where not overwritten) and, gathered, to src.
  auto src = torch::empty({4, 2}).requires_grad_();
  auto base = torch::empty({4, 8}).requires_grad_();
  auto s = torch::scatter_add(base * 1.0, 1, index, src) + torch::scatter(base * 1.0, 1, index, src);
  torch::sum(s).backward();
  EXPECT_EQ(src.grad().sizes(), (Sizes{4, 2}));
  EXPECT_EQ(base.grad().sizes(), (Sizes{4, 8}));
}

}  // namespace
}  // namespace syntorch
