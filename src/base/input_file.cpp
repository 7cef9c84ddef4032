#include "syntorch/base/input_file.hpp"

#include <fmt/format.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>

#include "syntorch/base/units.hpp"

namespace syntorch {

namespace {
const char* file_type(mode_t mode) {
  if (S_ISDIR(mode)) return "a folder";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}
}  // namespace

bool exists_no_throw(const std::filesystem::path& path) {
  std::error_code ec;
  return std::filesystem::exists(path, ec) && !ec;
}

std::string input_file_problem(const std::string& path, std::string_view kind, std::uint64_t max_bytes) {
  if (path.empty()) return fmt::format("an empty path (expected {})", kind);
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    const int error = errno;
    if (error == ENOENT) return fmt::format("no such file (expected {})", kind);
    return fmt::format("cannot read it: {} (expected {})", std::strerror(error), kind);
  }
  if (!S_ISREG(st.st_mode)) return fmt::format("is {}, not a regular file (expected {})", file_type(st.st_mode), kind);
  if (static_cast<std::uint64_t>(st.st_size) > max_bytes) {
    return fmt::format("is {}, more than the {} accepted for {}",
                       units::format_size(static_cast<double>(st.st_size)),
                       units::format_size(static_cast<double>(max_bytes)), kind);
  }
  return "";
}

std::optional<std::string> read_input_file(const std::string& path, std::string_view kind, Diagnostics& d,
                                           const std::string& where, std::uint64_t max_bytes) {
  const std::string at = where.empty() ? path : where;
  if (std::string problem = input_file_problem(path, kind, max_bytes); !problem.empty()) {
    d.error(at.empty() ? "(empty path)" : at, "", problem);
    return std::nullopt;
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    d.error(at, "", fmt::format("cannot open it: {} (expected {})", std::strerror(errno), kind));
    return std::nullopt;
  }
  std::string text;
  text.reserve(static_cast<std::size_t>(max_bytes < 1 << 20 ? max_bytes : 1 << 20));
  char buf[1 << 16];
  while (in.read(buf, sizeof buf) || in.gcount() > 0) {
    text.append(buf, static_cast<std::size_t>(in.gcount()));
    if (text.size() > max_bytes) {  // grew while being read
      d.error(at, "", fmt::format("is more than the {} accepted for {}", units::format_size(static_cast<double>(max_bytes)),
                                  kind));
      return std::nullopt;
    }
  }
  return text;
}

}  // namespace syntorch
