#pragma once
// Appending JSON text to a fmt buffer without allocating: strings (escaped), exact microsecond
// times from integer picoseconds, integers and doubles. Private to the trace module's writers.

#include <cstdint>
#include <string>
#include <string_view>

#include <fmt/format.h>

namespace syntorch::trace::detail {

// Appends `text` as a JSON string literal (quotes included). Quotes, backslashes and control
// characters are escaped; bytes that are not valid UTF-8 become \ufffd.
void append_json_string(fmt::memory_buffer& out, std::string_view text);

// Replaces `out` with `text`, each byte that is not part of valid UTF-8 replaced by U+FFFD.
void assign_valid_utf8(std::string& out, std::string_view text);

// Appends ps as microseconds, exactly: "<us>" or "<us>.<up to 6 digits>" with trailing zeros trimmed.
void append_us_from_ps(fmt::memory_buffer& out, std::uint64_t ps);

// Appends the shortest round-trip form of v, or null when v is NaN or infinite.
void append_json_double(fmt::memory_buffer& out, double v);

inline void append_uint(fmt::memory_buffer& out, std::uint64_t v) {
  const fmt::format_int f(v);
  out.append(f.data(), f.data() + f.size());
}

inline void append_int(fmt::memory_buffer& out, std::int64_t v) {
  const fmt::format_int f(v);
  out.append(f.data(), f.data() + f.size());
}

inline void append_raw(fmt::memory_buffer& out, std::string_view text) {
  out.append(text.data(), text.data() + text.size());
}

}  // namespace syntorch::trace::detail
