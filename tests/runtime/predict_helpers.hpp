#pragma once
// What the runtime's prediction tests share: bundled configs by name, a policy from text (which
// must parse), a GEMM of a shape, a collective of a kind over ranks and bytes.

#include <gtest/gtest.h>

#include <string>

#include "syntorch/runtime/op.hpp"
#include "syntorch/runtime/policy.hpp"

namespace syntorch::runtime_testing {

inline std::string config(const std::string& name) {
  return std::string(SYNTORCH_SOURCE_DIR) + "/hw_configs/" + name;
}

inline runtime::KernelPolicy policy(const std::string& text) {
  Diagnostics d;
  auto p = runtime::KernelPolicy::parse(text, d);
  EXPECT_TRUE(d.empty()) << d.to_string();
  return p;
}

inline runtime::OpDesc gemm(std::uint64_t m, std::uint64_t n, std::uint64_t k) {
  runtime::OpDesc op;
  op.kind = runtime::OpKind::gemm;
  op.m = m;
  op.n = n;
  op.k = k;
  return op;
}

inline runtime::OpDesc collective(runtime::OpKind kind, std::uint64_t ranks, std::uint64_t bytes) {
  runtime::OpDesc op;
  op.kind = kind;
  op.ranks = ranks;
  op.bytes = bytes;
  return op;
}

}  // namespace syntorch::runtime_testing
