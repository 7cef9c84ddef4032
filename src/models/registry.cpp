#include "syntorch/models/registry.hpp"

#include <array>
#include <fmt/format.h>

#include "syntorch/models/gpt.hpp"
#include "syntorch/models/gptj.hpp"
#include "syntorch/models/hf_config.hpp"
#include "syntorch/models/llama.hpp"

namespace syntorch::models {

namespace {
// The zoo, one line per family; a config.json path last, as it reads any spec with a '/'.
const std::array<const ModelEntry*, 4> kRegistry{
    &kGptModels,
    &kLlamaModels,
    &kGptjModels,
    &kHfConfigModels,
};
}  // namespace

std::span<const ModelEntry* const> model_registry() { return kRegistry; }

std::vector<std::string> model_names() {
  std::vector<std::string> names;
  for (const ModelEntry* e : kRegistry) {
    for (std::string& n : e->zoo()) names.push_back(std::move(n));
    if (!e->custom_form.empty()) names.emplace_back(e->custom_form);
  }
  return names;
}

std::shared_ptr<const Model> parse_model(const std::string& spec, Diagnostics& d, const std::string& where) {
  for (const ModelEntry* e : kRegistry) {
    const std::size_t before = d.size();
    if (auto m = e->parse(spec, d, where)) return m;
    if (d.size() != before) return nullptr;
  }
  const std::vector<std::string> names = model_names();
  d.error(where, "", fmt::format("unknown model \"{}\"{} (valid: {})", spec, did_you_mean(spec, names), join(names)));
  return nullptr;
}

}  // namespace syntorch::models
