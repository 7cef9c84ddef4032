#include "syntorch/base/utf8.hpp"

#include <string>

namespace syntorch {

std::size_t utf8_sequence_length(const unsigned char* p, const unsigned char* end) {
  const auto cont = [](unsigned char c) { return (c & 0xC0u) == 0x80u; };
  const std::size_t left = static_cast<std::size_t>(end - p);
  const unsigned char c = p[0];
  if (c >= 0xC2 && c <= 0xDF) return left >= 2 && cont(p[1]) ? 2 : 0;
  if (c >= 0xE0 && c <= 0xEF) {
    if (left < 3 || !cont(p[1]) || !cont(p[2])) return 0;
    if (c == 0xE0 && p[1] < 0xA0) return 0;  // overlong
    if (c == 0xED && p[1] > 0x9F) return 0;  // UTF-16 surrogate
    return 3;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    if (left < 4 || !cont(p[1]) || !cont(p[2]) || !cont(p[3])) return 0;
    if (c == 0xF0 && p[1] < 0x90) return 0;  // overlong
    if (c == 0xF4 && p[1] > 0x8F) return 0;  // above U+10FFFF
    return 4;
  }
  return 0;
}

std::size_t first_invalid_utf8(std::string_view text) {
  const auto* const begin = reinterpret_cast<const unsigned char*>(text.data());
  const auto* const end = begin + text.size();
  for (const unsigned char* p = begin; p < end;) {
    if (*p < 0x80) {
      ++p;
      continue;
    }
    const std::size_t n = utf8_sequence_length(p, end);
    if (n == 0) return static_cast<std::size_t>(p - begin);
    p += n;
  }
  return std::string_view::npos;
}

}  // namespace syntorch
