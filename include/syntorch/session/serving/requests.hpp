#pragma once
// Serving traffic: requests with an arrival time and their prompt and output lengths, drawn from
// an arrival process and length distributions as serving benchmarks draw them (vllm bench serve's
// --request-rate and --burstiness, its random dataset's lengths), the same for a seed on every
// machine (the generator and the transforms are the project's own, not the standard library's
// implementation-defined distributions).

#include <cstdint>
#include <string>
#include <vector>

#include "syntorch/base/diagnostics.hpp"

namespace syntorch::session::serving {

// One request: when it arrives, how long its prompt is, how many tokens it asks for, and how much
// of its prompt it shares with others (a system prompt: the first shared_prefix_tokens of every
// request in prefix_group are the same tokens, which a prefix cache may hold).
struct Request {
  std::int64_t id = 0;
  double arrival_s = 0;
  std::int64_t input_tokens = 0;
  std::int64_t output_tokens = 0;
  std::int64_t prefix_group = -1;  // -1: no shared prefix
  std::int64_t shared_prefix_tokens = 0;
  // Handed over by a prefill engine (disaggregated serving): when its first token came, and the
  // rank whose device holds its prompt's keys and values (-1: not handed over).
  double first_token_s = 0;
  std::int32_t prefilled_on = -1;
};

// When requests arrive: a Poisson process (exponential gaps), a Gamma process (gaps of the mean
// 1/rate and a coefficient of variation: above 1 burstier than Poisson, as vllm bench serve's
// burstiness = 1/cv^2), a fixed rate (even gaps), or all at once at 0 (offline).
enum class Arrival : std::uint8_t { poisson, gamma, fixed, offline };

// A length distribution, clamped to [min, max] and rounded to whole tokens: fixed (mean), uniform
// over [min, max], normal (mean, stddev), log-normal (its median `mean` and the stddev of its
// log), or empirical (drawn from `values`, uniformly).
struct LengthDistribution {
  enum class Kind : std::uint8_t { fixed, uniform, normal, lognormal, empirical };
  Kind kind = Kind::fixed;
  double mean = 0;
  double stddev = 0;
  std::int64_t min = 1;
  std::int64_t max = 0;  // 0: no bound above
  std::vector<std::int64_t> values;
};

inline LengthDistribution fixed_length(std::int64_t tokens) {
  LengthDistribution l;
  l.mean = static_cast<double>(tokens);
  return l;
}

struct TrafficSpec {
  std::int64_t requests = 100;
  Arrival arrival = Arrival::poisson;
  double rate_per_s = 1;  // requests a second (not for offline)
  double cv = 1;          // gamma: the coefficient of variation of the gaps
  LengthDistribution input = fixed_length(1024);
  LengthDistribution output = fixed_length(256);
  // Every request's first shared_prefix_tokens tokens come from one of prefix_groups prompts
  // (a system prompt; 0: none), clamped to its prompt less one token.
  std::int64_t shared_prefix_tokens = 0;
  std::int64_t prefix_groups = 1;
  std::uint64_t seed = 0;
  // A request trace instead of drawn lengths (load_requests_file): its arrival times when it has
  // them (stretched by time_scale: 0.5 replays it twice as fast), else the arrival process; its
  // first `requests` rows when requests_given, else all of them.
  std::string requests_file;
  double time_scale = 1;
  bool requests_given = false;
};

// Checks a spec (and reads its requests file): problems under `where` and the field's key.
void check_traffic(const TrafficSpec& spec, Diagnostics& diagnostics, const std::string& where);
// The requests, in arrival order (ids 0..n-1). Deterministic in the spec. Throws InputError for
// a requests file check_traffic would refuse.
std::vector<Request> make_requests(const TrafficSpec& spec);

// A request trace: CSV with a header, JSON lines, or JSON (an array of request objects, or
// ShareGPT conversations). Columns or keys, by name in any case: the arrival (arrival_s,
// arrival_time or time in seconds; timestamp_ms, or a bare timestamp, in milliseconds as the
// Mooncake traces write it; StartTimeOffset in nanoseconds as APEX+'s; or a date and time such as
// the Azure LLM inference traces' TIMESTAMP), the input tokens (input_tokens, input_length,
// prompt_len, ContextTokens, ...) and the output tokens (output_tokens, output_length,
// GeneratedTokens, ...). ShareGPT's first two turns are a prompt and its reply, their lengths
// about 4 characters a token (no tokenizer). Arrivals count from the first; `timed` says whether
// the file had them. Problems (at most 20) are added to `diagnostics` with the file and line.
std::vector<Request> load_requests_file(const std::string& path, bool& timed, Diagnostics& diagnostics);

// The project's random numbers: SplitMix64 (Steele et al., "Fast splittable pseudorandom number
// generators", OOPSLA 2014), and the transforms draws need, written out so that a seed means the
// same draws everywhere.
class Random {
 public:
  explicit Random(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next();
  double uniform();      // [0, 1)
  double exponential();  // mean 1
  double normal();       // mean 0, stddev 1 (Box-Muller)
  double gamma(double shape);  // scale 1 (Marsaglia and Tsang, 2000)

 private:
  std::uint64_t state_;
  bool has_spare_ = false;
  double spare_ = 0;
};

}  // namespace syntorch::session::serving
