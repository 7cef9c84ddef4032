#pragma once
// Physical quantities written as strings with units ("3.35 TB/s", "80 GiB", "1.83 GHz", "2 us"),
// parsed into SI numbers, and the inverse: readable formatting for tables and summaries.
// Decimal prefixes (k, M, G, T, P) are powers of 1000; binary ones (Ki, Mi, Gi, Ti, Pi) of 1024.
// A capital B is a byte, a lower-case b (or "bit") is a bit.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace syntorch::units {

// Each returns nullopt when the text is not a number followed by a unit of that kind.
// Signs are accepted here (so a validator can say "must be positive" rather than "malformed").
std::optional<double> parse_bandwidth_bytes_per_s(std::string_view text);  // "3.35 TB/s", "400 Gb/s"
std::optional<double> parse_size_bytes(std::string_view text);             // "80 GiB", "50 MB"
std::optional<double> parse_frequency_hz(std::string_view text);           // "1.83 GHz"
std::optional<double> parse_time_s(std::string_view text);                 // "2 us", "500 ns"
std::optional<double> parse_flops_per_s(std::string_view text);            // "989 TFLOP/s"

// Readable forms with three significant digits, e.g. "3.35 TB/s", "80 GiB", "1.83 GHz", "2 us".
std::string format_bandwidth(double bytes_per_s);
std::string format_size(double bytes);  // binary prefixes for whole KiB, else decimal
std::string format_frequency(double hz);
std::string format_time_s(double seconds);
std::string format_time_ps(std::uint64_t ps);
std::string format_flops(double flops_per_s);

// Seconds to integer picoseconds, rounded to nearest; negative or NaN inputs give 0; beyond the
// 64-bit clock (about 213 days) throws std::overflow_error.
std::uint64_t seconds_to_ps(double seconds);
inline double ps_to_seconds(std::uint64_t ps) { return static_cast<double>(ps) * 1e-12; }

}  // namespace syntorch::units
