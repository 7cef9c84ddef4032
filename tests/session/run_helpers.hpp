#pragma once
// What the generation tests share: bundled configs by name, models by spec, a rank's peak bytes
// for one purpose.

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "syntorch/models/registry.hpp"
#include "syntorch/session/simulate.hpp"

namespace syntorch::session_testing {

inline std::string config(const std::string& name) {
  return std::string(SYNTORCH_SOURCE_DIR) + "/hw_configs/" + name;
}

inline std::shared_ptr<const models::Model> model(const std::string& spec) {
  Diagnostics d;
  auto m = models::parse_model(spec, d, "test");
  EXPECT_TRUE(m) << d.to_string();
  return m;
}

inline std::uint64_t peak_bytes(const session::RunReport& r, std::size_t rank, os::MemoryUse use) {
  return r.engine.ranks[rank].memory.peak_allocated_by_use[static_cast<std::size_t>(use)];
}

}  // namespace syntorch::session_testing
