#include "json_text.hpp"

#include <cmath>

#include "syntorch/base/utf8.hpp"

namespace syntorch::trace::detail {

void append_json_string(fmt::memory_buffer& out, std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  const auto* const end = p + text.size();
  const auto* run = p;  // start of the pending run of bytes copied verbatim
  const auto flush_run = [&](const unsigned char* upto) {
    out.append(reinterpret_cast<const char*>(run), reinterpret_cast<const char*>(upto));
  };
  out.push_back('"');
  while (p < end) {
    const unsigned char c = *p;
    if (c >= 0x20 && c < 0x80 && c != '"' && c != '\\') {
      ++p;
      continue;
    }
    if (c >= 0x80) {
      if (const std::size_t n = utf8_sequence_length(p, end); n != 0) {
        p += n;
        continue;
      }
      flush_run(p);
      append_raw(out, "\\ufffd");
      run = ++p;
      continue;
    }
    flush_run(p);
    switch (c) {
      case '"': append_raw(out, "\\\""); break;
      case '\\': append_raw(out, "\\\\"); break;
      case '\n': append_raw(out, "\\n"); break;
      case '\r': append_raw(out, "\\r"); break;
      case '\t': append_raw(out, "\\t"); break;
      case '\b': append_raw(out, "\\b"); break;
      case '\f': append_raw(out, "\\f"); break;
      default: {
        const char esc[6] = {'\\', 'u', '0', '0', kHex[c >> 4], kHex[c & 0xF]};
        out.append(esc, esc + 6);
      }
    }
    run = ++p;
  }
  flush_run(p);
  out.push_back('"');
}

void assign_valid_utf8(std::string& out, std::string_view text) {
  out.clear();
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  const auto* const end = p + text.size();
  const auto* run = p;  // start of the valid bytes not yet copied
  while (p < end) {
    const std::size_t n = *p < 0x80 ? 1 : utf8_sequence_length(p, end);
    if (n == 0) {
      out.append(reinterpret_cast<const char*>(run), static_cast<std::size_t>(p - run));
      out.append("\xEF\xBF\xBD");  // U+FFFD
      run = ++p;
    } else {
      p += n;
    }
  }
  out.append(reinterpret_cast<const char*>(run), static_cast<std::size_t>(p - run));  // valid text: one copy
}

void append_us_from_ps(fmt::memory_buffer& out, std::uint64_t ps) {
  constexpr std::uint64_t kPsPerUs = 1'000'000;
  append_uint(out, ps / kPsPerUs);
  auto frac = static_cast<std::uint32_t>(ps % kPsPerUs);
  if (frac == 0) return;
  char digits[7];
  digits[0] = '.';
  for (int i = 6; i >= 1; --i) {
    digits[i] = static_cast<char>('0' + frac % 10);
    frac /= 10;
  }
  int last = 6;
  while (digits[last] == '0') --last;  // frac != 0, so a non-zero digit stops this
  out.append(digits, digits + last + 1);
}

void append_json_double(fmt::memory_buffer& out, double v) {
  if (!std::isfinite(v)) {
    append_raw(out, "null");
    return;
  }
  fmt::format_to(fmt::appender(out), "{}", v);
}

}  // namespace syntorch::trace::detail
