#pragma once
// Protobuf framing shared by the Perfetto and Chakra writers and the trace reader: varints,
// length-delimited records (a field tag or nothing, the varint length, the message bytes)
// appended to a reused string, and reading them back one at a time from a stream.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <streambuf>
#include <string>

#include <google/protobuf/message_lite.h>

namespace syntorch::trace::detail {

// Writes v as a base-128 varint at p (at most 10 bytes); returns the bytes written.
inline std::size_t put_varint(std::uint64_t v, std::uint8_t* p) {
  std::size_t n = 0;
  while (v >= 0x80) {
    p[n++] = static_cast<std::uint8_t>(v | 0x80);
    v >>= 7;
  }
  p[n++] = static_cast<std::uint8_t>(v);
  return n;
}

// Appends `message` serialised, preceded by its varint length and, when field != 0, by the
// tag of a length-delimited field (wire type 2) numbered `field` (below 16, one byte).
inline void append_length_delimited(std::string& out, std::uint32_t field, const google::protobuf::MessageLite& message) {
  const std::size_t size = message.ByteSizeLong();
  std::uint8_t header[11];
  std::size_t n = 0;
  if (field != 0) header[n++] = static_cast<std::uint8_t>((field << 3) | 2);
  n += put_varint(size, header + n);
  const std::size_t at = out.size();
  out.resize(at + n + size);
  auto* p = reinterpret_cast<std::uint8_t*>(out.data() + at);
  std::copy(header, header + n, p);
  message.SerializeWithCachedSizesToArray(p + n);
}

// Reads a varint from `in`; false at a clean end of input (no byte read) or on a truncated or
// over-long varint, which sets `malformed`.
inline bool read_varint(std::streambuf& in, std::uint64_t& v, bool& malformed) {
  v = 0;
  malformed = false;
  for (int shift = 0; shift < 64; shift += 7) {
    const int c = in.sbumpc();
    if (c == std::char_traits<char>::eof()) {
      malformed = shift != 0;
      return false;
    }
    v |= static_cast<std::uint64_t>(c & 0x7F) << shift;
    if ((c & 0x80) == 0) return true;
  }
  malformed = true;
  return false;
}

}  // namespace syntorch::trace::detail
