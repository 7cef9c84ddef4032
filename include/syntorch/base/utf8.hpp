#pragma once
// UTF-8 as RFC 3629 defines it: what names read from input files must be (a study's name becomes a
// folder, every trace format carries text as UTF-8).

#include <cstddef>
#include <string_view>

namespace syntorch {

// Length of the valid UTF-8 sequence starting at p (whose first byte is >= 0x80), or 0 when the
// bytes there are not one (overlong forms, surrogates and code points above U+10FFFF included).
std::size_t utf8_sequence_length(const unsigned char* p, const unsigned char* end);

// The offset of the first byte of `text` that is not part of valid UTF-8, or npos when all are.
std::size_t first_invalid_utf8(std::string_view text);

}  // namespace syntorch
