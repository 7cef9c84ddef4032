#pragma once
// Building an OpDesc from key=value parameters, as calibration rows (`m=8192 n=8192 k=8192
// dtype=fp16`) and the `syntorch kernel` flags give them. Keys use underscores (seq_q); dashes
// are accepted too (seq-q). Problems are reported under `where` with the key named.

#include <map>
#include <string>
#include <vector>

#include "syntorch/base/diagnostics.hpp"
#include "syntorch/runtime/op.hpp"

namespace syntorch::runtime {

// The parameter keys an op kind reads (besides dtype).
std::vector<std::string> op_param_keys(OpKind kind);
// Every count parameter of any op (true/false ones left out), once each in op table order,
// with its help text: what the kernel command offers as options.
std::vector<std::pair<std::string, std::string>> op_param_help();
// ... and every true/false one (causal, dropout): what it offers as flags.
std::vector<std::pair<std::string, std::string>> op_flag_help();

// Fills `op` (kind already set) from `params`. Keys in `ignored` (e.g. timing, impl) are skipped;
// any other key the op does not read is an error. Returns false when something was wrong.
bool op_from_params(const std::map<std::string, std::string>& params, const std::vector<std::string>& ignored,
                    OpDesc& op, Diagnostics& diagnostics, const std::string& where);

// "8192", "32768", "1 GiB", "64MiB": a non-negative integer, or a size with a unit.
std::optional<std::uint64_t> parse_count(const std::string& text);

}  // namespace syntorch::runtime
