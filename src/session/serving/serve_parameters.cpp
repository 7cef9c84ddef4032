// The serving run's parameters (ServeSpec), declared once for every front end.

#include <fmt/format.h>

#include <cmath>
#include <iterator>

#include "../parameter_text.hpp"
#include "syntorch/base/units.hpp"
#include "syntorch/models/registry.hpp"
#include "syntorch/session/serving/serve.hpp"
#include "syntorch/session/simulate.hpp"

namespace syntorch::session::serving {

// Named, not anonymous: the other parameter tables have helpers of the same names, and a unity
// build may compile them together.
namespace serve_table {

using Json = nlohmann::ordered_json;
using P = Parameter<ServeSpec>;
using session::detail::boolean_of;
using session::detail::choice_of;
using session::detail::dtype_of;
using session::detail::integer_of;
using Kind = LengthDistribution::Kind;

template <auto Member, std::int64_t Least>
void count(ServeSpec& s, const std::string& text, Diagnostics& d, const std::string& where, std::string_view key) {
  if (auto v = integer_of(text, Least, d, where, key)) s.*Member = *v;
}
// An engine setting: the spec's override, else the profile's value.
template <auto Member, auto ProfileMember>
Json engine_value(const ServeSpec& s) {
  if (s.*Member) return *(s.*Member);
  Diagnostics ignored;
  const std::optional<EngineProfile> p = engine_profile(s.engine, ignored, "");
  return p ? Json((*p).*ProfileMember) : Json(nullptr);
}
template <auto Member>
void engine_count(ServeSpec& s, const std::string& text, Diagnostics& d, const std::string& where, std::string_view key) {
  const bool zero_allowed = Member == &ServeSpec::cuda_graph_max_batch || Member == &ServeSpec::speculative_tokens;
  if (auto v = integer_of(text, zero_allowed ? 0 : 1, d, where, key)) s.*Member = *v;
}
template <auto Member>
void engine_switch(ServeSpec& s, const std::string& text, Diagnostics& d, const std::string& where, std::string_view key) {
  if (auto b = boolean_of(text, d, where, key)) s.*Member = *b;
}
std::optional<double> positive_number(const std::string& text, Diagnostics& d, const std::string& where,
                                      std::string_view key, const char* what) {
  const std::optional<double> v = parse_number(text);
  if (!v || !(*v > 0) || !std::isfinite(*v)) {
    d.error(where, std::string(key), fmt::format("expected {}, got \"{}\"", what, text));
    return std::nullopt;
  }
  return v;
}

// A length distribution's kind, or its numbers.
// In LengthDistribution::Kind order (empirical lengths come from the C++ API, not from text).
constexpr const char* kKinds[] = {"fixed", "uniform", "normal", "lognormal", "empirical"};
static_assert(std::size(kKinds) == static_cast<std::size_t>(LengthDistribution::Kind::empirical) + 1);
template <LengthDistribution TrafficSpec::*Member>
void length_kind(ServeSpec& s, const std::string& text, Diagnostics& d, const std::string& where, std::string_view key) {
  if (auto c = choice_of(text, {"fixed", "uniform", "normal", "lognormal"}, d, where, key)) {
    (s.traffic.*Member).kind = static_cast<Kind>(*c);
  }
}
template <LengthDistribution TrafficSpec::*Member>
Json length_kind_value(const ServeSpec& s) {
  return kKinds[static_cast<int>((s.traffic.*Member).kind)];
}
template <LengthDistribution TrafficSpec::*Member>
void length_mean(ServeSpec& s, const std::string& text, Diagnostics& d, const std::string& where, std::string_view key) {
  if (auto v = integer_of(text, 1, d, where, key)) (s.traffic.*Member).mean = static_cast<double>(*v);
}
template <LengthDistribution TrafficSpec::*Member, std::int64_t LengthDistribution::*Bound>
void length_bound(ServeSpec& s, const std::string& text, Diagnostics& d, const std::string& where, std::string_view key) {
  if (auto v = integer_of(text, Bound == &LengthDistribution::max ? 0 : 1, d, where, key)) (s.traffic.*Member).*Bound = *v;
}
template <LengthDistribution TrafficSpec::*Member>
void length_spread(ServeSpec& s, const std::string& text, Diagnostics& d, const std::string& where, std::string_view key) {
  const std::optional<double> v = parse_number(text);
  if (!v || !(*v >= 0) || !std::isfinite(*v)) {
    d.error(where, std::string(key), fmt::format("expected a non-negative spread, got \"{}\"", text));
  } else {
    (s.traffic.*Member).stddev = *v;
  }
}

const std::vector<P>& table() {
  static const std::vector<P> parameters = {
    {"model", "", "", ParameterKind::text, "",
     "a zoo model (llama3-70b, mixtral-8x7b, ...), a custom shape (llama:...) or a Hugging Face config.json",
     [](ServeSpec& s, const std::string& text, Diagnostics& d, const std::string& where, std::string_view key) {
       if (auto m = models::parse_model(text, d, key.empty() ? where : where + ":" + std::string(key))) s.model = std::move(m);
     },
     [](const ServeSpec& s) { return s.model ? Json(s.model->name()) : Json(nullptr); }, true},
    {"tp", "", "", ParameterKind::integer, "ranks", "Tensor parallel ranks of the replica",
     [](ServeSpec& s, const std::string& text, Diagnostics& d, const std::string& where, std::string_view key) {
       if (auto v = integer_of(text, 1, d, where, key)) s.tp = static_cast<int>(*v);
     },
     [](const ServeSpec& s) { return Json(s.tp); }},
    {"replicas", "", "", ParameterKind::integer, "replicas",
     "Replicas of the engine behind the router, each on tp devices of its own",
     [](ServeSpec& s, const std::string& text, Diagnostics& d, const std::string& where, std::string_view key) {
       if (auto v = integer_of(text, 1, d, where, key)) s.replicas = static_cast<int>(std::min<std::int64_t>(*v, 1 << 20));
     },
     [](const ServeSpec& s) { return Json(s.replicas); }},
    {"prefill_replicas", "", "", ParameterKind::integer, "replicas",
     "Disaggregated serving: prefill engines (tp devices each, after the replicas') that serve the prompts and hand "
     "each request over with its first token to the replicas, which pull its KV cache and decode (0: none)",
     [](ServeSpec& s, const std::string& text, Diagnostics& d, const std::string& where, std::string_view key) {
       if (auto v = integer_of(text, 0, d, where, key)) {
         s.prefill_replicas = static_cast<int>(std::min<std::int64_t>(*v, 1 << 20));
       }
     },
     [](const ServeSpec& s) { return Json(s.prefill_replicas); }},
    {"router", "", "", ParameterKind::choice, "",
     "How the router places requests on replicas: round_robin, least_outstanding (fewest unfinished), least_kv (least "
     "KV pool in use, prompts routed since counted), prefix_affinity (a shared prefix's replica unless router_balance "
     "requests busier than the least loaded)",
     [](ServeSpec& s, const std::string& text, Diagnostics& d, const std::string& where, std::string_view key) {
       // router_policy_names(), in RouterPolicy order.
       if (auto c = choice_of(text, {"round_robin", "least_outstanding", "least_kv", "prefix_affinity"}, d, where, key)) {
         s.router = static_cast<RouterPolicy>(*c);
       }
     },
     [](const ServeSpec& s) { return Json(router_policy_names().at(static_cast<std::size_t>(s.router))); }},
    {"router_balance", "", "", ParameterKind::integer, "requests",
     "prefix_affinity: how many more unfinished requests than the least loaded replica a prefix's replica may hold and "
     "still take it",
     [](ServeSpec& s, const std::string& text, Diagnostics& d, const std::string& where, std::string_view key) {
       if (auto v = integer_of(text, 0, d, where, key)) s.router_balance = *v;
     },
     [](const ServeSpec& s) { return Json(s.router_balance); }},
    {"dtype", "", "", ParameterKind::choice, "",
     "Data type: fp16, bf16, fp32, or fp8 (fp8 Linear weights and GEMMs, fp16 activations, fp8 KV cache)",
     [](ServeSpec& s, const std::string& text, Diagnostics& d, const std::string& where, std::string_view key) {
       if (auto t = dtype_of(text, d, where, key)) s.dtype = *t;
     },
     [](const ServeSpec& s) { return Json(std::string(dtype_name(s.dtype))); }},
    {"kv_dtype", "", "", ParameterKind::choice, "", "KV cache data type: the activations' or fp8",
     [](ServeSpec& s, const std::string& text, Diagnostics& d, const std::string& where, std::string_view key) {
       if (auto t = dtype_of(text, d, where, key)) s.kv_dtype = *t;
     },
     [](const ServeSpec& s) {
       RunSpec r;
       r.dtype = s.dtype;
       r.kv_dtype = s.kv_dtype;
       return Json(std::string(dtype_name(kv_cache_dtype(r))));
     },
     false, "the activations' dtype"},
    {"engine", "", "", ParameterKind::choice, "",
     "Serving engine profile: vllm (v1 scheduler, chunked prefill), sglang (prefill and decode in separate steps), "
     "trtllm (in-flight batching, KV reserved at admission)",
     [](ServeSpec& s, const std::string& text, Diagnostics& d, const std::string& where, std::string_view key) {
       // The profiles' own names (engine_profile_names), in their order.
       if (auto c = choice_of(text, {"vllm", "sglang", "trtllm"}, d, where, key)) s.engine = engine_profile_names().at(*c);
     },
     [](const ServeSpec& s) { return Json(s.engine); }},
    {"max_num_batched_tokens", "max_num_tokens", "--max-num-tokens", ParameterKind::integer, "tokens",
     "The most tokens one step runs, prefill chunks and decode tokens together (the engine's default unless given)",
     engine_count<&ServeSpec::max_num_batched_tokens>,
     engine_value<&ServeSpec::max_num_batched_tokens, &EngineProfile::max_num_batched_tokens>, false, "the engine's"},
    {"max_num_seqs", "max_batch_size", "--max-batch-size", ParameterKind::integer, "sequences",
     "The most sequences running at once (the engine's default unless given)", engine_count<&ServeSpec::max_num_seqs>,
     engine_value<&ServeSpec::max_num_seqs, &EngineProfile::max_num_seqs>, false, "the engine's"},
    {"block_size", "", "", ParameterKind::integer, "tokens", "Tokens per KV page (the engine's default unless given)",
     engine_count<&ServeSpec::block_size>, engine_value<&ServeSpec::block_size, &EngineProfile::block_size>, false,
     "the engine's"},
    {"memory_fraction", "gpu_memory_utilization", "--gpu-memory-utilization", ParameterKind::number, "",
     "The engine's memory fraction: vLLM's gpu_memory_utilization, TensorRT-LLM's free_gpu_memory_fraction, SGLang's "
     "mem_fraction_static (the engine's default unless given)",
     [](ServeSpec& s, const std::string& text, Diagnostics& d, const std::string& where, std::string_view key) {
       const std::optional<double> v = parse_number(text);
       if (!v || !(*v > 0) || *v > 1) {
         d.error(where, std::string(key), fmt::format("expected a fraction in (0, 1], got \"{}\"", text));
       } else {
         s.memory_fraction = *v;
       }
     },
     engine_value<&ServeSpec::memory_fraction, &EngineProfile::memory_fraction>, false, "the engine's"},
    {"prefix_caching", "", "", ParameterKind::choice, "", "Prefix caching: true or false (the engine's default unless given)",
     engine_switch<&ServeSpec::prefix_caching>, engine_value<&ServeSpec::prefix_caching, &EngineProfile::prefix_caching>,
     false, "the engine's"},
    {"chunked_prefill", "", "", ParameterKind::choice, "",
     "Chunked prefill: true or false (the engine's default unless given)", engine_switch<&ServeSpec::chunked_prefill>,
     engine_value<&ServeSpec::chunked_prefill, &EngineProfile::chunked_prefill>, false, "the engine's"},
    {"cuda_graph_max_batch", "", "", ParameterKind::integer, "sequences",
     "Decode steps of up to this many sequences replay a CUDA graph (0: none; the engine's default unless given)",
     engine_count<&ServeSpec::cuda_graph_max_batch>,
     engine_value<&ServeSpec::cuda_graph_max_batch, &EngineProfile::cuda_graph_max_batch>, false, "the engine's"},
    {"speculative_tokens", "num_speculative_tokens", "--num-speculative-tokens", ParameterKind::integer, "tokens",
     "Speculative decoding by n-gram lookup: tokens each decoding sequence proposes a step (0: off)",
     engine_count<&ServeSpec::speculative_tokens>,
     engine_value<&ServeSpec::speculative_tokens, &EngineProfile::speculative_tokens>, false, "0"},
    {"draft_model", "speculative_model", "--speculative-model", ParameterKind::text, "",
     "Speculative decoding with a draft model (a zoo model or shape, as model takes it) that proposes the "
     "num_speculative_tokens tokens in passes of its own on the same devices; not given: n-gram lookup",
     [](ServeSpec& s, const std::string& text, Diagnostics& d, const std::string& where, std::string_view key) {
       if (auto m = models::parse_model(text, d, key.empty() ? where : where + ":" + std::string(key))) {
         s.draft_model = std::move(m);
       }
     },
     [](const ServeSpec& s) { return s.draft_model ? Json(s.draft_model->name()) : Json(nullptr); }, false, "none"},
    {"acceptance_rate", "", "", ParameterKind::number, "",
     "Speculative decoding: the probability each proposed token is accepted (until the first rejection)",
     [](ServeSpec& s, const std::string& text, Diagnostics& d, const std::string& where, std::string_view key) {
       const std::optional<double> v = parse_number(text);
       if (!v || !(*v >= 0) || *v > 1) {
         d.error(where, std::string(key), fmt::format("expected a probability in [0, 1], got \"{}\"", text));
       } else {
         s.acceptance_rate = *v;
       }
     },
     engine_value<&ServeSpec::acceptance_rate, &EngineProfile::acceptance_rate>, false, "0.7"},
    {"reuse_steps", "", "", ParameterKind::choice, "",
     "true: a step whose token count, sampled rows and graph repeat an earlier step's takes that step's time less "
     "its attention plus its own attention (no kernels of its own in the trace); false: every step simulated kernel "
     "by kernel",
     [](ServeSpec& s, const std::string& text, Diagnostics& d, const std::string& where, std::string_view key) {
       if (auto b = boolean_of(text, d, where, key)) s.reuse_steps = *b;
     },
     [](const ServeSpec& s) { return Json(s.reuse_steps); }},
    {"requests", "num_prompts", "--num-prompts", ParameterKind::integer, "requests", "Requests to serve",
     [](ServeSpec& s, const std::string& text, Diagnostics& d, const std::string& where, std::string_view key) {
       if (auto v = integer_of(text, 1, d, where, key)) {
         s.traffic.requests = *v;
         s.traffic.requests_given = true;
       }
     },
     [](const ServeSpec& s) { return Json(s.traffic.requests); }, false, "100, or all of a requests file"},
    {"requests_file", "dataset_path", "--dataset-path", ParameterKind::text, "",
     "A request trace instead of drawn lengths: CSV, JSON lines or JSON (ShareGPT, the Azure LLM inference traces, "
     "APEX+'s and Mooncake's JSON lines: docs/serving.md); its arrival times when it has them",
     [](ServeSpec& s, const std::string& text, Diagnostics&, const std::string&, std::string_view) {
       s.traffic.requests_file = text;
     },
     [](const ServeSpec& s) { return s.traffic.requests_file.empty() ? Json(nullptr) : Json(s.traffic.requests_file); },
     false, "none"},
    {"time_scale", "", "", ParameterKind::number, "",
     "A requests file's arrival times multiplied by this (0.5: replayed twice as fast)",
     [](ServeSpec& s, const std::string& text, Diagnostics& d, const std::string& where, std::string_view key) {
       if (auto v = positive_number(text, d, where, key, "a positive factor")) s.traffic.time_scale = *v;
     },
     [](const ServeSpec& s) { return Json(s.traffic.time_scale); }},
    {"arrival", "", "", ParameterKind::choice, "",
     "Arrivals: poisson, gamma (bursty: --cv), fixed (even gaps) or offline (all at 0)",
     [](ServeSpec& s, const std::string& text, Diagnostics& d, const std::string& where, std::string_view key) {
       if (auto c = choice_of(text, {"poisson", "gamma", "fixed", "offline"}, d, where, key)) {
         s.traffic.arrival = static_cast<Arrival>(*c);
       }
     },
     [](const ServeSpec& s) {
       constexpr const char* kNames[] = {"poisson", "gamma", "fixed", "offline"};
       return Json(kNames[static_cast<int>(s.traffic.arrival)]);
     }},
    {"rate", "request_rate", "--request-rate", ParameterKind::number, "requests/s", "Requests a second",
     [](ServeSpec& s, const std::string& text, Diagnostics& d, const std::string& where, std::string_view key) {
       if (auto v = positive_number(text, d, where, key, "a positive number of requests a second")) s.traffic.rate_per_s = *v;
     },
     [](const ServeSpec& s) { return Json(s.traffic.rate_per_s); }},
    {"cv", "", "", ParameterKind::number, "",
     "Gamma arrivals: the coefficient of variation of the gaps (1: Poisson; vllm bench serve's burstiness is 1/cv^2)",
     [](ServeSpec& s, const std::string& text, Diagnostics& d, const std::string& where, std::string_view key) {
       if (auto v = positive_number(text, d, where, key, "a positive coefficient of variation")) s.traffic.cv = *v;
     },
     [](const ServeSpec& s) { return Json(s.traffic.cv); }},
    {"input_len", "", "--random-input-len", ParameterKind::integer, "tokens",
     "Prompt length (the mean, or the median of a log-normal)", length_mean<&TrafficSpec::input>,
     [](const ServeSpec& s) { return Json(s.traffic.input.mean); }},
    {"input_dist", "", "", ParameterKind::choice, "", "Prompt lengths: fixed, uniform (--input-min..--input-max), normal "
     "(--input-stddev tokens) or lognormal (--input-stddev: of the log)",
     length_kind<&TrafficSpec::input>, length_kind_value<&TrafficSpec::input>},
    {"input_stddev", "", "", ParameterKind::number, "", "Prompt lengths' spread (normal: tokens; lognormal: of the log)",
     length_spread<&TrafficSpec::input>, [](const ServeSpec& s) { return Json(s.traffic.input.stddev); }},
    {"input_min", "", "", ParameterKind::integer, "tokens", "Shortest prompt",
     length_bound<&TrafficSpec::input, &LengthDistribution::min>, [](const ServeSpec& s) { return Json(s.traffic.input.min); }},
    {"input_max", "", "", ParameterKind::integer, "tokens", "Longest prompt (0: no bound)",
     length_bound<&TrafficSpec::input, &LengthDistribution::max>, [](const ServeSpec& s) { return Json(s.traffic.input.max); }},
    {"output_len", "", "--random-output-len", ParameterKind::integer, "tokens",
     "Output length (the mean, or the median of a log-normal)", length_mean<&TrafficSpec::output>,
     [](const ServeSpec& s) { return Json(s.traffic.output.mean); }},
    {"output_dist", "", "", ParameterKind::choice, "", "Output lengths: fixed, uniform, normal or lognormal",
     length_kind<&TrafficSpec::output>, length_kind_value<&TrafficSpec::output>},
    {"output_stddev", "", "", ParameterKind::number, "", "Output lengths' spread (normal: tokens; lognormal: of the log)",
     length_spread<&TrafficSpec::output>, [](const ServeSpec& s) { return Json(s.traffic.output.stddev); }},
    {"output_min", "", "", ParameterKind::integer, "tokens", "Shortest output",
     length_bound<&TrafficSpec::output, &LengthDistribution::min>, [](const ServeSpec& s) { return Json(s.traffic.output.min); }},
    {"output_max", "", "", ParameterKind::integer, "tokens", "Longest output (0: no bound)",
     length_bound<&TrafficSpec::output, &LengthDistribution::max>, [](const ServeSpec& s) { return Json(s.traffic.output.max); }},
    {"shared_prefix", "", "", ParameterKind::integer, "tokens",
     "Tokens at the start of every prompt shared with the other requests of its group (a system prompt)",
     [](ServeSpec& s, const std::string& text, Diagnostics& d, const std::string& where, std::string_view key) {
       if (auto v = integer_of(text, 0, d, where, key)) s.traffic.shared_prefix_tokens = *v;
     },
     [](const ServeSpec& s) { return Json(s.traffic.shared_prefix_tokens); }},
    {"prefix_groups", "", "", ParameterKind::integer, "groups", "Distinct shared prefixes, drawn uniformly per request",
     [](ServeSpec& s, const std::string& text, Diagnostics& d, const std::string& where, std::string_view key) {
       if (auto v = integer_of(text, 1, d, where, key)) s.traffic.prefix_groups = *v;
     },
     [](const ServeSpec& s) { return Json(s.traffic.prefix_groups); }},
    {"seed", "", "", ParameterKind::integer, "", "Random seed of arrivals and lengths",
     [](ServeSpec& s, const std::string& text, Diagnostics& d, const std::string& where, std::string_view key) {
       if (auto v = integer_of(text, 0, d, where, key)) s.traffic.seed = static_cast<std::uint64_t>(*v);
     },
     [](const ServeSpec& s) { return Json(s.traffic.seed); }},
    {"slo", "", "", ParameterKind::text, "",
     "Latency objectives for goodput: ttft=2s,tpot=100ms,e2e=30s (any of them)",
     [](ServeSpec& s, const std::string& text, Diagnostics& d, const std::string& where, std::string_view key) {
       const std::string at = key.empty() ? where : where + ":" + std::string(key);
       KeyValueFormat format;
       format.expected = "ttft=TIME, tpot=TIME or e2e=TIME";
       Slo slo;
       const std::size_t before = d.size();
       for (const KeyValue& kv : parse_key_values(text, format, d, at)) {
         const std::optional<double> t = units::parse_time_s(kv.value);
         double* field = kv.key == "ttft" ? &slo.ttft_s : kv.key == "tpot" ? &slo.tpot_s : kv.key == "e2e" ? &slo.e2e_s : nullptr;
         if (field == nullptr) {
           d.error(at, kv.key, "unknown objective (valid: ttft, tpot, e2e)");
         } else if (!t || !(*t > 0)) {
           d.error(at, kv.key, fmt::format("expected a positive time with its unit (2s, 100ms), got \"{}\"", kv.value));
         } else {
           *field = *t;
         }
       }
       if (d.size() == before) s.slo = slo;
     },
     [](const ServeSpec& s) {
       Json j = Json::object();
       if (s.slo.ttft_s > 0) j["ttft_s"] = s.slo.ttft_s;
       if (s.slo.tpot_s > 0) j["tpot_s"] = s.slo.tpot_s;
       if (s.slo.e2e_s > 0) j["e2e_s"] = s.slo.e2e_s;
       return j;
     },
     false, "none"},
  };
  return parameters;
}

}  // namespace serve_table

const std::vector<Parameter<ServeSpec>>& serving_parameters() { return serve_table::table(); }

}  // namespace syntorch::session::serving
