#include "syntorch/base/units.hpp"

#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <fmt/format.h>
#include <stdexcept>

namespace syntorch::units {
namespace {

struct Prefix {
  std::string_view text;
  double factor;
};

// Longest prefixes first so "Gi" wins over "G".
constexpr std::array<Prefix, 12> kPrefixes{{
    {"Ki", 1024.0},
    {"Mi", 1048576.0},
    {"Gi", 1073741824.0},
    {"Ti", 1099511627776.0},
    {"Pi", 1125899906842624.0},
    {"k", 1e3},
    {"K", 1e3},
    {"M", 1e6},
    {"G", 1e9},
    {"T", 1e12},
    {"P", 1e15},
    {"", 1.0},
}};

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// Splits "3.35 TB/s" into 3.35 and "TB/s". The unit must not be empty.
bool split_number(std::string_view text, double& value, std::string_view& unit) {
  text = trim(text);
  const char* begin = text.data();
  const char* end = text.data() + text.size();
  if (begin != end && *begin == '+') ++begin;
  auto [ptr, ec] = std::from_chars(begin, end, value);
  if (ec != std::errc{} || !std::isfinite(value)) return false;
  unit = trim(std::string_view(ptr, static_cast<std::size_t>(end - ptr)));
  return !unit.empty();
}

// Matches unit == prefix + base for any known prefix; returns the prefix factor.
std::optional<double> match_prefixed(std::string_view unit, std::string_view base) {
  if (unit.size() < base.size() || unit.substr(unit.size() - base.size()) != base) return std::nullopt;
  const std::string_view prefix = unit.substr(0, unit.size() - base.size());
  for (const auto& p : kPrefixes) {
    if (p.text == prefix) return p.factor;
  }
  return std::nullopt;
}

std::optional<double> parse_with(std::string_view text,
                                 std::initializer_list<std::pair<std::string_view, double>> bases) {
  double value = 0;
  std::string_view unit;
  if (!split_number(text, value, unit)) return std::nullopt;
  for (const auto& [base, scale] : bases) {
    if (auto f = match_prefixed(unit, base)) return value * *f * scale;
  }
  return std::nullopt;
}

std::string three_digits(double v) {
  // Three significant digits without trailing zeros: 3.35, 80, 1.83, 0.5.
  std::string s = fmt::format("{:.3g}", v);
  if (s.find('e') != std::string::npos) s = fmt::format("{:.0f}", v);
  return s;
}

std::string scaled(double v, std::string_view unit, bool binary) {
  static constexpr std::array<std::string_view, 6> dec{"", "k", "M", "G", "T", "P"};
  static constexpr std::array<std::string_view, 6> bin{"", "Ki", "Mi", "Gi", "Ti", "Pi"};
  const double step = binary ? 1024.0 : 1000.0;
  std::size_t i = 0;
  double a = std::fabs(v);
  while (i + 1 < dec.size() && a >= step * 0.9995) {
    a /= step;
    v /= step;
    ++i;
  }
  return fmt::format("{} {}{}", three_digits(v), binary ? bin[i] : dec[i], unit);
}

}  // namespace

std::optional<double> parse_bandwidth_bytes_per_s(std::string_view text) {
  return parse_with(text, {{"B/s", 1.0}, {"bit/s", 0.125}, {"b/s", 0.125}, {"bps", 0.125}});
}
std::optional<double> parse_size_bytes(std::string_view text) {
  return parse_with(text, {{"B", 1.0}, {"bit", 0.125}, {"b", 0.125}});
}
std::optional<double> parse_frequency_hz(std::string_view text) { return parse_with(text, {{"Hz", 1.0}}); }
std::optional<double> parse_flops_per_s(std::string_view text) {
  return parse_with(text, {{"FLOP/s", 1.0}, {"FLOPS", 1.0}, {"OP/s", 1.0}, {"OPS", 1.0}});
}

std::optional<double> parse_time_s(std::string_view text) {
  double value = 0;
  std::string_view unit;
  if (!split_number(text, value, unit)) return std::nullopt;
  static constexpr std::array<std::pair<std::string_view, double>, 7> kTimes{{
      {"ps", 1e-12}, {"ns", 1e-9}, {"us", 1e-6}, {"\xC2\xB5s", 1e-6}, {"ms", 1e-3}, {"s", 1.0}, {"min", 60.0}}};
  for (const auto& [u, f] : kTimes) {
    if (unit == u) return value * f;
  }
  return std::nullopt;
}

std::string format_bandwidth(double bytes_per_s) { return scaled(bytes_per_s, "B/s", false); }
std::string format_size(double bytes) {
  // In the prefix system where the size is a round number: "80 GB" as datasheets give it,
  // "40 MiB" for a power-of-two cache. Decimal when both are round or neither is.
  auto round_in = [bytes](double step) {
    double v = std::fabs(bytes);
    while (v >= step) v /= step;
    return std::fabs(v * 100 - std::round(v * 100)) < 1e-6;
  };
  return scaled(bytes, "B", !round_in(1000.0) && round_in(1024.0));
}

std::string format_frequency(double hz) { return scaled(hz, "Hz", false); }
std::string format_flops(double flops_per_s) { return scaled(flops_per_s, "FLOP/s", false); }

std::string format_time_s(double seconds) {
  const double a = std::fabs(seconds);
  if (a == 0) return "0 s";
  if (a < 1e-9) return three_digits(seconds * 1e12) + " ps";
  if (a < 1e-6) return three_digits(seconds * 1e9) + " ns";
  if (a < 1e-3) return three_digits(seconds * 1e6) + " us";
  if (a < 1.0) return three_digits(seconds * 1e3) + " ms";
  return three_digits(seconds) + " s";
}

std::string format_time_ps(std::uint64_t ps) { return format_time_s(static_cast<double>(ps) * 1e-12); }

std::uint64_t seconds_to_ps(double seconds) {
  if (!(seconds > 0)) return 0;
  const double ps = std::round(seconds * 1e12);
  if (ps >= 1.8e19) throw std::overflow_error("a time beyond the simulator's clock (2^64 ps, about 213 days)");
  return static_cast<std::uint64_t>(ps);
}

}  // namespace syntorch::units
