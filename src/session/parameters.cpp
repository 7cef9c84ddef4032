#include "syntorch/session/parameters.hpp"

namespace syntorch::session {

std::string parameter_flag(std::string_view key) {
  std::string flag = "--" + std::string(key);
  for (char& c : flag) c = c == '_' ? '-' : c;
  return flag;
}

}  // namespace syntorch::session
