#pragma once
// A run's parameters as command-line flags, from their one table (session/parameters.hpp): each
// entry is `--key` (and its alias), with its help and default; given text goes through the
// entry's parser, as a study or a measurement row's does.

#include <CLI/CLI.hpp>
#include <deque>
#include <string>
#include <vector>

#include "syntorch/base/diagnostics.hpp"
#include "syntorch/session/parameters.hpp"

namespace syntorch::cli {

// What the flags of one table were given.
struct ParameterFlags {
  std::vector<std::string> text;       // per entry
  std::deque<bool> switched;           // per switch entry: on (--graph, --graph=true) or off (--graph=false)
  std::vector<CLI::Option*> options;   // per entry: whether it was given
};

template <class Spec>
void add_parameter_flags(CLI::App& command, const std::vector<session::Parameter<Spec>>& table, ParameterFlags& flags) {
  flags.text.assign(table.size(), "");
  flags.switched.assign(table.size(), false);
  flags.options.assign(table.size(), nullptr);
  const Spec defaults{};
  for (std::size_t i = 0; i < table.size(); ++i) {
    const session::Parameter<Spec>& p = table[i];
    std::string names = session::parameter_flag(p.key);
    if (!p.cli_alias.empty()) names += "," + std::string(p.cli_alias);
    std::string help(p.help);
    if (p.kind == session::ParameterKind::boolean) {
      flags.options[i] = command.add_flag(names, flags.switched[i], help);
      continue;
    }
    if (!p.default_text.empty()) {
      help += " (default " + std::string(p.default_text) + ")";
    } else if (!p.required) {
      const nlohmann::ordered_json d = p.value(defaults);
      help += " (default " + (d.is_string() ? d.get<std::string>() : d.dump()) + ")";
    }
    CLI::Option* o = flags.options[i] = command.add_option(names, flags.text[i], help);
    o->type_name(p.kind == session::ParameterKind::integer  ? "INT"
                 : p.kind == session::ParameterKind::number ? "FLOAT"
                                                            : "TEXT");
    if (p.required) o->required();
  }
}

// Sets `spec` from what was given; problems go to `diagnostics` under the flag's name.
template <class Spec>
void apply_parameter_flags(const std::vector<session::Parameter<Spec>>& table, const ParameterFlags& flags, Spec& spec,
                           Diagnostics& diagnostics) {
  for (std::size_t i = 0; i < table.size(); ++i) {
    const session::Parameter<Spec>& p = table[i];
    const std::string flag = session::parameter_flag(p.key);
    if (flags.options[i] == nullptr || flags.options[i]->count() == 0) continue;
    const std::string text =
        p.kind == session::ParameterKind::boolean ? (flags.switched[i] ? "true" : "false") : flags.text[i];
    p.parse(spec, text, diagnostics, flag, "");
  }
}

}  // namespace syntorch::cli
