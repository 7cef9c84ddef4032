// The generation run's parameters (RunSpec), declared once for every front end.

#include <fmt/format.h>

#include "parameter_text.hpp"
#include "syntorch/models/moe.hpp"
#include "syntorch/models/registry.hpp"
#include "syntorch/session/parameters.hpp"
#include "syntorch/session/simulate.hpp"

namespace syntorch::session {

// Named, not anonymous: the training table's file has helpers of the same names, and a unity
// build compiles the two together.
namespace generation_table {

using Json = nlohmann::ordered_json;
using P = Parameter<RunSpec>;
using detail::boolean_of;
using detail::choice_of;
using detail::dtype_of;
using detail::integer_of;

// A count member: positive, or non-negative where 0 means "the default".
template <auto Member, std::int64_t Least>
void count(RunSpec& s, const std::string& text, Diagnostics& d, const std::string& where, std::string_view key) {
  if (auto v = integer_of(text, Least, d, where, key)) s.*Member = static_cast<std::remove_reference_t<decltype(s.*Member)>>(*v);
}
template <auto Member>
Json member(const RunSpec& s) {
  return s.*Member;
}

const std::vector<P>& table() {
  static const std::vector<P> parameters = {
    {"model", "", "", ParameterKind::text, "",
     "a zoo model (gpt3-175b, llama3-70b, mixtral-8x7b, ...), a custom shape (gpt:..., llama:...) or a Hugging Face "
     "config.json",
     [](RunSpec& s, const std::string& text, Diagnostics& d, const std::string& where, std::string_view key) {
       if (auto m = models::parse_model(text, d, key.empty() ? where : where + ":" + std::string(key))) s.model = std::move(m);
     },
     [](const RunSpec& s) { return s.model ? Json(s.model->name()) : Json(nullptr); }, true},
    {"tp", "", "", ParameterKind::integer, "ranks", "Tensor parallel ranks", count<&RunSpec::tp, 1>, member<&RunSpec::tp>},
    {"pp", "", "", ParameterKind::integer, "stages", "Pipeline parallel stages", count<&RunSpec::pp, 1>,
     member<&RunSpec::pp>},
    {"ep", "", "", ParameterKind::integer, "ranks",
     "Expert parallel ranks (mixture-of-experts models; divides --tp: experts spread over the tensor-parallel ranks, "
     "tokens exchanged by all-to-all)",
     count<&RunSpec::ep, 1>, member<&RunSpec::ep>},
    {"expert_skew", "", "", ParameterKind::number, "",
     "Routing imbalance of a mixture of experts: a Zipf exponent over the experts (0: balanced; 1: expert i gets "
     "1/(i+1) of the top share)",
     [](RunSpec& s, const std::string& text, Diagnostics& d, const std::string& where, std::string_view key) {
       const std::optional<double> v = parse_number(text);
       if (!v || !(*v >= 0) || *v > models::kMaxExpertSkew) {
         d.error(where, std::string(key), fmt::format("expected a Zipf exponent in [0, {}] (0: balanced routing), got \"{}\"",
                                                      models::kMaxExpertSkew, text));
       } else {
         s.expert_skew = *v;
       }
     },
     member<&RunSpec::expert_skew>},
    {"max_num_tokens", "", "", ParameterKind::integer, "tokens",
     "Prompt tokens per prefill forward, as TensorRT-LLM's max_num_tokens: the prefill runs in groups of sequences "
     "within it (0: the whole batch at once)",
     count<&RunSpec::max_num_tokens, 0>, member<&RunSpec::max_num_tokens>},
    {"batch", "", "", ParameterKind::integer, "sequences", "Sequences generated together", count<&RunSpec::batch, 1>,
     member<&RunSpec::batch>},
    {"input_tokens", "input", "--num_input_tokens", ParameterKind::integer, "tokens", "Prompt length",
     count<&RunSpec::input_tokens, 1>, member<&RunSpec::input_tokens>},
    {"output_tokens", "output", "--num_output_tokens", ParameterKind::integer, "tokens",
     "Tokens generated per sequence (the first by the prefill)", count<&RunSpec::output_tokens, 1>,
     member<&RunSpec::output_tokens>},
    {"micro_batches", "", "", ParameterKind::integer, "micro-batches",
     "Pipeline micro-batches (0: one per stage)", count<&RunSpec::micro_batches, 0>, member<&RunSpec::micro_batches>},
    {"dtype", "", "", ParameterKind::choice, "",
     "Data type: fp16, bf16, fp32, or fp8 (fp8 Linear weights and GEMMs, fp16 activations, fp8 KV cache)",
     [](RunSpec& s, const std::string& text, Diagnostics& d, const std::string& where, std::string_view key) {
       if (auto t = dtype_of(text, d, where, key)) s.dtype = *t;
     },
     [](const RunSpec& s) { return Json(std::string(dtype_name(s.dtype))); }},
    {"kv_dtype", "", "", ParameterKind::choice, "",
     "KV cache data type: the activations' or fp8 (fp8 for --dtype fp8 unless given)",
     [](RunSpec& s, const std::string& text, Diagnostics& d, const std::string& where, std::string_view key) {
       if (auto t = dtype_of(text, d, where, key)) s.kv_dtype = *t;
     },
     [](const RunSpec& s) { return Json(std::string(dtype_name(kv_cache_dtype(s)))); }, false,
     "the activations' dtype"},
    {"cuda_graphs", "", "", ParameterKind::boolean, "", "Capture each decode step as a CUDA graph (one launch per step)",
     [](RunSpec& s, const std::string& text, Diagnostics& d, const std::string& where, std::string_view key) {
       if (auto b = boolean_of(text, d, where, key)) s.graph = *b;
     },
     member<&RunSpec::graph>},
    {"framework", "", "", ParameterKind::choice, "",
     "eager: PyTorch eager (dispatch cost per op); native: a C++ runtime like FasterTransformer (launch calls only)",
     [](RunSpec& s, const std::string& text, Diagnostics& d, const std::string& where, std::string_view key) {
       if (auto c = choice_of(text, {"eager", "native"}, d, where, key)) {
         s.framework = *c == 1 ? runtime::Framework::native : runtime::Framework::eager;
       }
     },
     [](const RunSpec& s) { return Json(s.framework == runtime::Framework::native ? "native" : "eager"); }},
    {"ranks", "", "", ParameterKind::choice, "",
     "all: every rank's program runs; one: tensor-parallel ranks run the same program, so rank 0's runs and the "
     "others mirror it, joining its collectives (the same times, 1/tp of the work; not with pp or ep)",
     [](RunSpec& s, const std::string& text, Diagnostics& d, const std::string& where, std::string_view key) {
       if (auto c = choice_of(text, {"all", "one"}, d, where, key)) s.mirror_ranks = *c == 1;
     },
     [](const RunSpec& s) { return Json(s.mirror_ranks ? "one" : "all"); }},
  };
  return parameters;
}

}  // namespace generation_table

const std::vector<Parameter<RunSpec>>& generation_parameters() { return generation_table::table(); }

bool set_run_parameter(RunSpec& spec, const std::string& key, const std::string& value, Diagnostics& d,
                       const std::string& where) {
  return set_parameter(generation_parameters(), spec, key, value, d, where);
}

const std::vector<std::string>& run_parameter_keys() {
  static const std::vector<std::string> keys = parameter_keys(generation_parameters());
  return keys;
}

}  // namespace syntorch::session
