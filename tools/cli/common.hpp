#pragma once
// Helpers the subcommands share.

#include <string>

namespace syntorch::cli {

// The bundled config a command uses when --hw is not given: hw_configs/<name> in the working
// directory, else next to the syntorch binary's build tree.
std::string default_hw_config(const std::string& name);

}  // namespace syntorch::cli
