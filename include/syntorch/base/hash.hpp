#pragma once
// Combining hashes for memo tables (boost::hash_combine's mixing step): equality decides, the
// hash only spreads.

#include <cstdint>

namespace syntorch {

inline void hash_combine(std::uint64_t& h, std::uint64_t value) {
  h ^= value + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
}

}  // namespace syntorch
