#include "syntorch/base/csv.hpp"

namespace syntorch {

std::vector<std::string> split_csv_line(const std::string& line, bool* unterminated) {
  std::vector<std::string> out(1);
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        out.back() += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        out.back() += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      out.emplace_back();
    } else if (c != '\r') {
      out.back() += c;
    }
  }
  if (unterminated != nullptr) *unterminated = quoted;
  return out;
}

}  // namespace syntorch
