#include "common.hpp"
#include "syntorch/base/input_file.hpp"

#include <filesystem>

namespace syntorch::cli {

std::string default_hw_config(const std::string& name) {
  namespace fs = std::filesystem;
  const fs::path here = fs::path("hw_configs") / name;
  if (exists_no_throw(here)) return here.string();
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    for (fs::path dir = exe.parent_path(); !dir.empty() && dir != dir.root_path(); dir = dir.parent_path()) {
      if (exists_no_throw(dir / "hw_configs" / name)) return (dir / "hw_configs" / name).string();
    }
  }
  return here.string();
}

}  // namespace syntorch::cli
