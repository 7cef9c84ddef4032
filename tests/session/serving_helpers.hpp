#pragma once
// What the serving tests share: a serving spec of Llama-3 8B with the given parameters, set as
// the serving table reads them (each must be accepted).

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "run_helpers.hpp"
#include "syntorch/session/serving/serve.hpp"

namespace syntorch::session_testing {

inline session::serving::ServeSpec serve_spec(const std::vector<std::pair<std::string, std::string>>& params) {
  session::serving::ServeSpec s;
  s.model = model("llama3-8b");
  Diagnostics d;
  for (const auto& [k, v] : params) {
    EXPECT_TRUE(session::set_parameter(session::serving::serving_parameters(), s, k, v, d, "test")) << k;
  }
  EXPECT_TRUE(d.empty()) << d.to_string();
  return s;
}

}  // namespace syntorch::session_testing
