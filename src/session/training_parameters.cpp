// The training run's parameters (TrainSpec), declared once for every front end.

#include <fmt/format.h>

#include <algorithm>

#include "parameter_text.hpp"
#include "syntorch/models/registry.hpp"
#include "syntorch/session/parameters.hpp"
#include "syntorch/session/train.hpp"

namespace syntorch::session {

// Named, not anonymous: see generation_parameters.cpp.
namespace training_table {

using Json = nlohmann::ordered_json;
using P = Parameter<TrainSpec>;
using detail::boolean_of;
using detail::choice_of;
using detail::integer_of;

template <auto Member, std::int64_t Least>
void count(TrainSpec& s, const std::string& text, Diagnostics& d, const std::string& where, std::string_view key) {
  if (auto v = integer_of(text, Least, d, where, key)) s.*Member = static_cast<std::remove_reference_t<decltype(s.*Member)>>(*v);
}
template <auto Member>
void flag(TrainSpec& s, const std::string& text, Diagnostics& d, const std::string& where, std::string_view key) {
  if (auto b = boolean_of(text, d, where, key)) s.*Member = *b;
}
template <auto Member>
void probability(TrainSpec& s, const std::string& text, Diagnostics& d, const std::string& where, std::string_view key) {
  const std::optional<double> v = parse_number(text);
  if (!v || !(*v >= 0 && *v < 1)) {
    d.error(where, std::string(key), fmt::format("expected a probability in [0, 1), got \"{}\"", text));
  } else {
    s.*Member = *v;
  }
}
template <auto Member>
Json member(const TrainSpec& s) {
  return s.*Member;
}

const char* recompute_name(models::Recompute r) {
  return r == models::Recompute::full ? "full" : r == models::Recompute::selective ? "selective" : "none";
}

// Ranks and ranges: "0-7,64".
void trace_ranks(TrainSpec& s, const std::string& text, Diagnostics& d, const std::string& where, std::string_view key) {
  std::vector<int> ranks;
  bool ok = !text.empty();
  for (std::size_t at = 0; ok && at <= text.size();) {
    const std::size_t end = std::min(text.find(',', at), text.size());
    const std::string_view part(text.data() + at, end - at);
    const std::size_t dash = part.find('-');
    const auto lo = parse_integer(part.substr(0, dash));
    const auto hi = dash == std::string_view::npos ? lo : parse_integer(part.substr(dash + 1));
    ok = lo && hi && *lo >= 0 && *lo <= *hi && *hi < (1 << 20);
    for (std::int64_t r = ok ? *lo : 1; ok && r <= *hi; ++r) ranks.push_back(static_cast<int>(r));
    at = end + 1;
  }
  if (ok) {
    std::sort(ranks.begin(), ranks.end());
    ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
    s.trace_ranks = std::move(ranks);
  } else {
    d.error(where, std::string(key), fmt::format("expected ranks and ranges such as \"0-7,64\", got \"{}\"", text));
  }
}

Json trace_ranks_value(const TrainSpec& s) {
  std::string out;
  for (std::size_t i = 0; i < s.trace_ranks.size();) {
    std::size_t j = i;
    while (j + 1 < s.trace_ranks.size() && s.trace_ranks[j + 1] == s.trace_ranks[j] + 1) ++j;
    out += fmt::format("{}{}", out.empty() ? "" : ",",
                       j == i ? fmt::format("{}", s.trace_ranks[i]) : fmt::format("{}-{}", s.trace_ranks[i], s.trace_ranks[j]));
    i = j + 1;
  }
  return out;
}

const std::vector<P>& table() {
  static const std::vector<P> parameters = {
      {"model", "", "", ParameterKind::text, "",
       "a zoo model (gpt3-175b, llama3-70b, ...), a custom shape (gpt:..., llama:...) or a Hugging Face config.json",
       [](TrainSpec& s, const std::string& text, Diagnostics& d, const std::string& where, std::string_view key) {
         if (auto m = models::parse_model(text, d, key.empty() ? where : where + ":" + std::string(key))) s.model = std::move(m);
       },
       [](const TrainSpec& s) { return s.model ? Json(s.model->name()) : Json(nullptr); }, true},
      {"tp", "", "", ParameterKind::integer, "ranks", "Tensor parallel ranks", count<&TrainSpec::tp, 1>,
       member<&TrainSpec::tp>},
      {"pp", "", "", ParameterKind::integer, "stages", "Pipeline parallel stages", count<&TrainSpec::pp, 1>,
       member<&TrainSpec::pp>},
      {"dp", "", "", ParameterKind::integer, "replicas", "Data parallel replicas", count<&TrainSpec::dp, 1>,
       member<&TrainSpec::dp>},
      {"global_batch", "", "", ParameterKind::integer, "sequences",
       "Sequences per iteration", count<&TrainSpec::global_batch, 1>,
       [](const TrainSpec& s) { return Json(global_batch(s)); }, false, "micro_batch x dp"},
      {"micro_batch", "", "", ParameterKind::integer, "sequences", "Sequences per micro-batch",
       count<&TrainSpec::micro_batch, 1>, member<&TrainSpec::micro_batch>},
      {"vp", "", "", ParameterKind::integer, "chunks",
       "Virtual stages (model chunks) per pipeline rank: interleaved 1F1B, the bubble divided by vp (needs pp >= 3 "
       "and micro-batches a multiple of pp)",
       count<&TrainSpec::vp, 1>, member<&TrainSpec::vp>},
      {"seq", "", "", ParameterKind::integer, "tokens", "Sequence length", count<&TrainSpec::seq, 1>,
       member<&TrainSpec::seq>},
      {"dtype", "", "", ParameterKind::choice, "",
       "Parameter and activation dtype: bf16, fp16 or fp32 (fp32 master weights and gradients either way)",
       [](TrainSpec& s, const std::string& text, Diagnostics& d, const std::string& where, std::string_view key) {
         if (auto c = choice_of(text, {"bf16", "fp16", "fp32"}, d, where, key)) {
           s.dtype = *c == 0 ? DType::bf16 : *c == 1 ? DType::fp16 : DType::fp32;
         }
       },
       [](const TrainSpec& s) { return Json(std::string(dtype_name(s.dtype))); }},
      {"recompute", "", "", ParameterKind::choice, "",
       "Activation recomputation: none, selective (each layer's attention core: its inputs kept, its forward run "
       "again in backward) or full (every layer)",
       [](TrainSpec& s, const std::string& text, Diagnostics& d, const std::string& where, std::string_view key) {
         if (auto c = choice_of(text, {"none", "selective", "full"}, d, where, key)) {
           s.recompute = static_cast<models::Recompute>(*c);
         }
       },
       [](const TrainSpec& s) { return Json(recompute_name(s.recompute)); }},
      {"sequence_parallel", "sp", "", ParameterKind::boolean, "",
       "Shard the activations between TP regions along the sequence (all-gather / reduce-scatter in place of "
       "all-reduce)",
       flag<&TrainSpec::sequence_parallel>, member<&TrainSpec::sequence_parallel>},
      {"zero", "", "", ParameterKind::choice, "",
       "1: the distributed optimizer (ZeRO-1: gradients reduce-scattered, master weights and Adam state sharded over "
       "dp, parameters all-gathered)",
       [](TrainSpec& s, const std::string& text, Diagnostics& d, const std::string& where, std::string_view key) {
         if (auto c = choice_of(text, {"0", "1"}, d, where, key)) s.zero = *c;
       },
       member<&TrainSpec::zero>},
      {"overlap_grad_reduce", "", "", ParameterKind::boolean, "",
       "Start each data-parallel gradient bucket's reduction, on a communication stream, as soon as the last "
       "micro-batch's backward has made its gradients (Megatron's --overlap-grad-reduce)",
       flag<&TrainSpec::overlap_grad_reduce>, member<&TrainSpec::overlap_grad_reduce>},
      {"overlap_param_gather", "", "", ParameterKind::boolean, "",
       "With --zero 1 and --overlap-grad-reduce: all-gather the updated parameters on a communication stream after "
       "the step, each layer's next forward waiting only for its own bucket's (Megatron's --overlap-param-gather)",
       flag<&TrainSpec::overlap_param_gather>, member<&TrainSpec::overlap_param_gather>},
      {"hidden_dropout", "", "", ParameterKind::number, "",
       "Dropout probability on the attention and MLP outputs (Megatron-LM's default 0.1; 0 launches no dropout "
       "kernels)",
       probability<&TrainSpec::hidden_dropout>, member<&TrainSpec::hidden_dropout>},
      {"attention_dropout", "", "", ParameterKind::number, "",
       "Dropout probability on the attention probabilities (Megatron-LM's default 0.1): FlashAttention draws its mask "
       "in the kernel, forward and backward; unfused attention runs a dropout kernel over the probabilities; 0 draws "
       "none",
       probability<&TrainSpec::attention_dropout>, member<&TrainSpec::attention_dropout>},
      {"optimizer", "", "", ParameterKind::choice, "", "adamw or sgd",
       [](TrainSpec& s, const std::string& text, Diagnostics& d, const std::string& where, std::string_view key) {
         if (auto c = choice_of(text, {"adamw", "sgd"}, d, where, key)) s.adam = *c == 0;
       },
       [](const TrainSpec& s) { return Json(s.adam ? "adamw" : "sgd"); }},
      {"schedule", "", "", ParameterKind::choice, "", "Pipeline schedule: 1f1b or gpipe",
       [](TrainSpec& s, const std::string& text, Diagnostics& d, const std::string& where, std::string_view key) {
         if (auto c = choice_of(text, {"1f1b", "gpipe"}, d, where, key)) s.gpipe = *c == 1;
       },
       [](const TrainSpec& s) { return Json(s.gpipe ? "gpipe" : "1f1b"); }},
      {"replicas", "", "", ParameterKind::choice, "",
       "Data-parallel replicas simulated: one (replica 0; the others mirror it and join its collectives, so "
       "data-parallel traffic is exact) or all",
       [](TrainSpec& s, const std::string& text, Diagnostics& d, const std::string& where, std::string_view key) {
         if (auto c = choice_of(text, {"one", "all"}, d, where, key)) s.mirror_replicas = *c == 0;
       },
       [](const TrainSpec& s) { return Json(s.mirror_replicas ? "one" : "all"); }},
      {"trace_ranks", "", "", ParameterKind::text, "",
       "Ranks the trace shows, as 0-7,64; a rank of a mirrored replica has its "
       "replica simulated",
       trace_ranks, trace_ranks_value, false, "every simulated rank"},
  };
  return parameters;
}

}  // namespace training_table

const std::vector<Parameter<TrainSpec>>& training_parameters() { return training_table::table(); }

bool set_train_parameter(TrainSpec& spec, const std::string& key, const std::string& value, Diagnostics& d,
                         const std::string& where) {
  return set_parameter(training_parameters(), spec, key, value, d, where);
}

const std::vector<std::string>& train_parameter_keys() {
  static const std::vector<std::string> keys = parameter_keys(training_parameters());
  return keys;
}

}  // namespace syntorch::session
