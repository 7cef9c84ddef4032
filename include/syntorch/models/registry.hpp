#pragma once
// The model zoo's registry: each model family registers one entry (its name, the zoo names it
// knows, the form of a custom spec, and a parser that turns a spec into a runnable Model) in one
// table (src/models/registry.cpp). Adding a model is its file and a line in that table.

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "syntorch/base/diagnostics.hpp"
#include "syntorch/models/model.hpp"

namespace syntorch::models {

struct ModelEntry {
  std::string_view family;       // "gpt"
  std::string_view custom_form;  // "gpt:layers=L,hidden=H,heads=N,vocab=V" ("" when none)
  std::vector<std::string> (*zoo)();  // the named models of the family
  // A Model for `spec` when the family reads it; nullptr, adding nothing, when the spec is not
  // the family's; nullptr with problems added under `where` when it is but something is wrong.
  std::shared_ptr<const Model> (*parse)(const std::string& spec, Diagnostics& diagnostics, const std::string& where);
};

std::span<const ModelEntry* const> model_registry();

// Every zoo name and custom form, for help texts and did-you-mean.
std::vector<std::string> model_names();

// The model `spec` names ("gpt3-13b", "gpt:layers=2,hidden=256,heads=4,vocab=1000"), from the
// first family that reads it; an unknown spec is an error under `where` with a did-you-mean.
std::shared_ptr<const Model> parse_model(const std::string& spec, Diagnostics& diagnostics, const std::string& where);

}  // namespace syntorch::models
