#pragma once
// Reading YAML as every YAML input of the project is read (studies, kernel policies, the front
// ends' files): strictly, as the JSON reader reads JSON. A document that is malformed, is not valid
// UTF-8, gives a key of a mapping twice, nests too deep or expands its aliases past a bound is
// refused with the line it is at, instead of being resolved silently (yaml-cpp keeps both copies
// of a repeated key, and a lookup sees the first).

#include <optional>
#include <string>
#include <string_view>

#include <yaml-cpp/yaml.h>

#include "syntorch/base/diagnostics.hpp"

namespace syntorch {

struct YamlLimits {
  int max_depth = 64;                 // mappings and lists inside each other
  std::size_t max_nodes = 1'000'000;  // nodes visited, aliases expanded
};

// The document in `text`, or nullopt when it cannot be read (malformed, not UTF-8, past a bound),
// with each problem added to `d` under "file:line", e.g. "studies/x.yaml:7: /base/batch: key
// \"batch\" given twice (first at line 5)". A repeated key is added to `d` and the document still
// returned, so that the caller reports its other problems with it (all at once): callers refuse
// the input whenever `d` is not empty. `what` names what was expected ("a YAML study").
std::optional<YAML::Node> parse_yaml(const std::string& text, const std::string& file, std::string_view what,
                                     Diagnostics& d, const YamlLimits& limits = {});

}  // namespace syntorch
