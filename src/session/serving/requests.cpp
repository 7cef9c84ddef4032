#include "syntorch/session/serving/requests.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numbers>

#include "syntorch/base/diagnostics.hpp"

namespace syntorch::session::serving {

std::uint64_t Random::next() {
  std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

double Random::uniform() { return static_cast<double>(next() >> 11) * 0x1p-53; }

double Random::exponential() { return -std::log1p(-uniform()); }

double Random::normal() {
  if (has_spare_) {
    has_spare_ = false;
    return spare_;
  }
  const double u1 = 1.0 - uniform();  // (0, 1]
  const double u2 = uniform();
  const double r = std::sqrt(-2.0 * std::log(u1));
  spare_ = r * std::sin(2.0 * std::numbers::pi * u2);
  has_spare_ = true;
  return r * std::cos(2.0 * std::numbers::pi * u2);
}

double Random::gamma(double shape) {
  if (shape < 1) {
    // Boosted: Gamma(a) = Gamma(a + 1) U^(1/a).
    const double g = gamma(shape + 1);
    return g * std::pow(1.0 - uniform(), 1.0 / shape);
  }
  const double d = shape - 1.0 / 3.0;
  const double c = 1.0 / std::sqrt(9.0 * d);
  for (;;) {
    double x, v;
    do {
      x = normal();
      v = 1.0 + c * x;
    } while (v <= 0);
    v = v * v * v;
    const double u = 1.0 - uniform();
    if (std::log(u) < 0.5 * x * x + d - d * v + d * std::log(v)) return d * v;
  }
}

namespace {

constexpr std::int64_t kMostTokens = 1 << 24;

// `side`: "input" or "output", as the parameters name the distribution's fields.
void check_lengths(const LengthDistribution& l, Diagnostics& d, const std::string& where, const std::string& side) {
  const std::string key = side + "_len";
  using Kind = LengthDistribution::Kind;
  if (l.min < 1 || l.min > kMostTokens) {
    d.error(where, side + "_min", fmt::format("expected 1 to {} tokens, got {}", kMostTokens, l.min));
  }
  if (l.max < 0 || l.max > kMostTokens) {
    d.error(where, side + "_max", fmt::format("expected 0 (no bound) to {} tokens, got {}", kMostTokens, l.max));
  } else if (l.max != 0 && l.max < l.min) {
    d.error(where, side + "_max", fmt::format("expected at least the minimum ({}), got {}", l.min, l.max));
  }
  switch (l.kind) {
    case Kind::fixed:
    case Kind::normal:
    case Kind::lognormal:
      if (!(l.mean >= 1) || l.mean > kMostTokens) {
        d.error(where, key, fmt::format("expected a length of 1 to {} tokens, got {}", kMostTokens, l.mean));
      }
      if (l.kind != Kind::fixed && (!(l.stddev >= 0) || !std::isfinite(l.stddev))) {
        d.error(where, side + "_stddev", fmt::format("expected a non-negative spread, got {}", l.stddev));
      }
      break;
    case Kind::uniform:
      if (l.max == 0) d.error(where, side + "_max", "a uniform length needs its maximum");
      break;
    case Kind::empirical:
      if (l.values.empty()) d.error(where, key, "an empirical length needs values to draw from");
      for (std::int64_t v : l.values) {
        if (v < 1 || v > kMostTokens) {
          d.error(where, key, fmt::format("expected lengths of 1 to {} tokens, found {}", kMostTokens, v));
          break;
        }
      }
      break;
  }
}

std::int64_t draw(const LengthDistribution& l, Random& r) {
  using Kind = LengthDistribution::Kind;
  double x = l.mean;
  switch (l.kind) {
    case Kind::fixed: break;
    case Kind::uniform:
      x = static_cast<double>(l.min) + std::floor(r.uniform() * static_cast<double>(l.max - l.min + 1));
      break;
    case Kind::normal: x = l.mean + l.stddev * r.normal(); break;
    case Kind::lognormal: x = l.mean * std::exp(l.stddev * r.normal()); break;
    case Kind::empirical:
      x = static_cast<double>(l.values[static_cast<std::size_t>(r.uniform() * static_cast<double>(l.values.size()))]);
      break;
  }
  // Clamped as a real number first: a wide spread may draw far past any bound, or infinity.
  const double most = static_cast<double>(l.max > 0 ? l.max : kMostTokens);
  x = std::clamp(std::isfinite(x) ? x : (x > 0 ? most : 0.0), static_cast<double>(l.min), std::max(most, static_cast<double>(l.min)));
  return static_cast<std::int64_t>(std::llround(x));
}

}  // namespace

void check_traffic(const TrafficSpec& s, Diagnostics& d, const std::string& where) {
  if (!(s.time_scale > 0) || !std::isfinite(s.time_scale)) {
    d.error(where, "time_scale", fmt::format("expected a positive factor, got {}", s.time_scale));
  }
  bool timed = false;
  if (!s.requests_file.empty()) {
    Diagnostics file;
    load_requests_file(s.requests_file, timed, file);
    for (const auto& item : file.items()) d.error(where, "requests_file", item.to_string());
  }
  if ((s.requests_file.empty() || s.requests_given) && (s.requests < 1 || s.requests > (1 << 24))) {
    d.error(where, "requests", fmt::format("expected 1 to {} requests, got {}", 1 << 24, s.requests));
  }
  if (!timed && s.arrival != Arrival::offline && (!(s.rate_per_s > 0) || !std::isfinite(s.rate_per_s))) {
    d.error(where, "rate", fmt::format("expected a positive number of requests a second, got {}", s.rate_per_s));
  }
  // Below 1e-3 the gaps are as even as fixed arrivals' (and 1/cv^2 would overflow Gamma's shape).
  if (!timed && s.arrival == Arrival::gamma && !(s.cv >= 1e-3 && s.cv <= 100)) {
    d.error(where, "cv", fmt::format("expected a coefficient of variation in [0.001, 100], got {}", s.cv));
  }
  if (!s.requests_file.empty()) return;
  check_lengths(s.input, d, where, "input");
  check_lengths(s.output, d, where, "output");
  if (s.shared_prefix_tokens < 0 || s.shared_prefix_tokens > kMostTokens) {
    d.error(where, "shared_prefix", fmt::format("expected a non-negative number of tokens, got {}", s.shared_prefix_tokens));
  }
  if (s.prefix_groups < 1 || s.prefix_groups > (1 << 24)) {
    d.error(where, "prefix_groups", fmt::format("expected 1 to {} groups, got {}", 1 << 24, s.prefix_groups));
  }
}

namespace {
// Arrival gaps from the spec's process (the first request at 0).
void draw_arrivals(const TrafficSpec& s, std::vector<Request>& requests) {
  Random gaps(s.seed * 4 + 1);
  double t = 0;
  for (std::size_t i = 0; i < requests.size(); ++i) {
    if (i > 0) {
      switch (s.arrival) {
        case Arrival::poisson: t += gaps.exponential() / s.rate_per_s; break;
        case Arrival::gamma: {
          const double shape = 1.0 / (s.cv * s.cv);
          t += gaps.gamma(shape) / (shape * s.rate_per_s);
          break;
        }
        case Arrival::fixed: t = static_cast<double>(i) / s.rate_per_s; break;
        case Arrival::offline: break;
      }
    }
    requests[i].arrival_s = t;
  }
}
}  // namespace

std::vector<Request> make_requests(const TrafficSpec& s) {
  if (!s.requests_file.empty()) {
    Diagnostics d;
    bool timed = false;
    std::vector<Request> requests = load_requests_file(s.requests_file, timed, d);
    if (!d.empty()) throw InputError(std::move(d));
    if (s.requests_given && static_cast<std::size_t>(s.requests) < requests.size()) {
      requests.resize(static_cast<std::size_t>(s.requests));
    }
    if (timed) {
      for (Request& r : requests) r.arrival_s *= s.time_scale;
    } else {
      draw_arrivals(s, requests);
    }
    return requests;
  }
  // Separate streams for gaps, lengths and groups: changing one distribution leaves the others'
  // draws as they were.
  Random inputs(s.seed * 4 + 2), outputs(s.seed * 4 + 3), groups(s.seed * 4 + 4);
  std::vector<Request> requests(static_cast<std::size_t>(s.requests));
  for (std::int64_t i = 0; i < s.requests; ++i) {
    Request& r = requests[static_cast<std::size_t>(i)];
    r.id = i;
    r.input_tokens = draw(s.input, inputs);
    r.output_tokens = draw(s.output, outputs);
    if (s.shared_prefix_tokens > 0) {
      r.prefix_group = static_cast<std::int64_t>(groups.uniform() * static_cast<double>(s.prefix_groups));
      r.shared_prefix_tokens = std::min(s.shared_prefix_tokens, r.input_tokens - 1);
    }
  }
  draw_arrivals(s, requests);
  return requests;
}

}  // namespace syntorch::session::serving
