#pragma once
// A run's workload parameters, each declared once: its key, what its value means, and how it is
// read from text and shown back. Every front end takes them from here: the CLI's flags and their
// help (`--key` with '-' for '_'), study axes, measurement rows' params, the JSON reports' fields
// and the Python package's keywords (syntorch.simulate, syntorch.train). Adding a parameter is a
// line in its table (generation_parameters.cpp, training_parameters.cpp) plus its effect on a run.

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "syntorch/base/diagnostics.hpp"

namespace syntorch::session {

struct RunSpec;
struct TrainSpec;

// How a parameter's text reads: a count, a real number, a switch (a bare CLI flag; true|false
// elsewhere), one of a few words, or free text (a model, a rank list).
enum class ParameterKind : std::uint8_t { integer, number, boolean, choice, text };

// One parameter of a `Spec` (RunSpec, TrainSpec): how front ends name, show and read it.
template <class Spec>
struct Parameter {
  // Sets the spec from `text`; a wrong value is reported under `where` and `key`, leaving the
  // spec as it was.
  using Parse = void (*)(Spec& spec, const std::string& text, Diagnostics& diagnostics, const std::string& where,
                         std::string_view key);
  // The value the spec runs with, as reports and Python show it (the effective value where the
  // spec leaves it to a default: the KV cache's dtype, the global batch).
  using Value = nlohmann::ordered_json (*)(const Spec& spec);

  Parameter(std::string_view key, std::string_view alias, std::string_view cli_alias, ParameterKind kind,
            std::string_view unit, std::string_view help, Parse parse, Value value, bool required = false,
            std::string_view default_text = {})
      : key(key), alias(alias), cli_alias(cli_alias), kind(kind), unit(unit), help(help), parse(parse), value(value),
        required(required), default_text(default_text) {}

  std::string_view key;        // in studies, measurement rows, JSON and Python ("input_tokens")
  std::string_view alias;      // another key that means the same in rows and studies ("input"), or ""
  std::string_view cli_alias;  // another flag that means the same ("--num_input_tokens"), or ""
  ParameterKind kind;
  std::string_view unit;       // what its number counts ("tokens", "sequences"), "" for none
  std::string_view help;       // the CLI's --help line
  Parse parse;
  Value value;
  bool required;  // no default: a run must give it (the model)
  // The default as help texts say it where it follows from other parameters ("micro_batch x
  // dp"); "" to show value() of a default spec.
  std::string_view default_text;
};

const std::vector<Parameter<RunSpec>>& generation_parameters();
const std::vector<Parameter<TrainSpec>>& training_parameters();

// The entry `key` names, by its key or its alias; nullptr for none.
template <class Spec>
const Parameter<Spec>* find_parameter(const std::vector<Parameter<Spec>>& table, std::string_view key) {
  for (const Parameter<Spec>& p : table) {
    if (p.key == key || (!p.alias.empty() && p.alias == key)) return &p;
  }
  return nullptr;
}

// The CLI flag of a key: "--" and the key with '-' for '_'.
std::string parameter_flag(std::string_view key);

// Sets the entry `key` names (by key or alias) from `value`, a wrong value reported under `where`
// and `key`; false when `key` names no entry.
template <class Spec>
bool set_parameter(const std::vector<Parameter<Spec>>& table, Spec& spec, const std::string& key,
                   const std::string& value, Diagnostics& diagnostics, const std::string& where) {
  const Parameter<Spec>* p = find_parameter(table, key);
  if (p == nullptr) return false;
  p->parse(spec, value, diagnostics, where, key);
  return true;
}

// The table's keys, in its order.
template <class Spec>
std::vector<std::string> parameter_keys(const std::vector<Parameter<Spec>>& table) {
  std::vector<std::string> keys;
  for (const Parameter<Spec>& p : table) keys.emplace_back(p.key);
  return keys;
}

}  // namespace syntorch::session
