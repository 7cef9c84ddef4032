#pragma once
// Simulated time: unsigned 64-bit integer picoseconds (about 213 days of range).

#include <cstdint>
#include <limits>

namespace syntorch::sim {

using TimePs = std::uint64_t;

inline constexpr TimePs kPsPerNs = 1'000;
inline constexpr TimePs kPsPerUs = 1'000'000;
inline constexpr TimePs kPsPerMs = 1'000'000'000;
inline constexpr TimePs kPsPerS = 1'000'000'000'000;
inline constexpr TimePs kTimeNever = std::numeric_limits<TimePs>::max();

}  // namespace syntorch::sim
