#pragma once
// Runs the syntorch command line in-process and captures its exit code and output.

#include <sstream>
#include <string>
#include <vector>

#include "cli.hpp"

namespace syntorch::cli::testing {

struct Result {
  int code;
  std::string out;
  std::string err;
};

inline Result run_cli(const std::vector<std::string>& args) {
  std::ostringstream out;
  std::ostringstream err;
  const int code = run(args, out, err);
  return {code, out.str(), err.str()};
}

}  // namespace syntorch::cli::testing
