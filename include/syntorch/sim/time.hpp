#pragma once
// Simulated time: unsigned 64-bit integer picoseconds (about 213 days of range).

#include <cstdint>
#include <limits>
#include <stdexcept>

namespace syntorch::sim {

using TimePs = std::uint64_t;

inline constexpr TimePs kPsPerNs = 1'000;
inline constexpr TimePs kPsPerUs = 1'000'000;
inline constexpr TimePs kPsPerMs = 1'000'000'000;
inline constexpr TimePs kPsPerS = 1'000'000'000'000;
inline constexpr TimePs kTimeNever = std::numeric_limits<TimePs>::max();

// a + b, or std::overflow_error when the sum passes the clock's end (never a wrap into the past).
inline TimePs add_time(TimePs a, TimePs b) {
  if (b >= kTimeNever - a) throw std::overflow_error("a time beyond the simulator's clock (2^64 ps, about 213 days)");
  return a + b;
}

}  // namespace syntorch::sim
