#pragma once
// Helpers the subcommands share.

#include <string>

#include "syntorch/base/diagnostics.hpp"
#include "syntorch/runtime/policy.hpp"

namespace syntorch::cli {

// --policy: a JSON/YAML file when one exists by that name and the text has no '=', else
// "op=impl[:precision],...". Problems are added to `d`.
runtime::KernelPolicy load_policy(const std::string& text, Diagnostics& d);

// The bundled config a command uses when --hw is not given: hw_configs/<name> in the working
// directory, else next to the syntorch binary's build tree.
std::string default_hw_config(const std::string& name);

}  // namespace syntorch::cli
