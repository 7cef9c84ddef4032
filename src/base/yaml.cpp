#include "syntorch/base/yaml.hpp"

#include <fmt/format.h>

#include <map>

#include "syntorch/base/utf8.hpp"

namespace syntorch {

namespace {

// Walks the document once, reporting repeated keys and the bounds.
class StrictCheck {
 public:
  StrictCheck(const std::string& file, const YamlLimits& limits, Diagnostics& d) : file_(file), limits_(limits), d_(d) {}

  // False when a bound stopped the walk (the problem is reported).
  bool walk(const YAML::Node& node, const std::string& path, int depth) {
    if (++visited_ > limits_.max_nodes) {
      error(node, path, fmt::format("more than {} nodes once its aliases are expanded", limits_.max_nodes));
      return false;
    }
    if (node.IsSequence() || node.IsMap()) {
      if (depth >= limits_.max_depth) {
        error(node, path, fmt::format("nests deeper than {} levels of mappings and lists", limits_.max_depth));
        return false;
      }
    }
    if (node.IsSequence()) {
      std::size_t i = 0;
      for (const YAML::Node& item : node) {
        if (!walk(item, fmt::format("{}/{}", path, i++), depth + 1)) return false;
      }
    } else if (node.IsMap()) {
      std::map<std::string, int> first_line;  // key -> line it first appears at
      for (const auto& kv : node) {
        const std::string key = kv.first.IsScalar() ? kv.first.Scalar() : std::string();
        const std::string at = path + "/" + key;
        if (kv.first.IsScalar()) {
          const int line = kv.first.Mark().line + 1;
          const auto [it, fresh] = first_line.try_emplace(key, line);
          if (!fresh) {
            error(kv.first, at, fmt::format("key \"{}\" given twice (first at line {}); give each key once", key,
                                            it->second));
          }
        }
        if (!walk(kv.second, at, depth + 1)) return false;
      }
    }
    return true;
  }

 private:
  void error(const YAML::Node& at, const std::string& path, const std::string& message) {
    const int line = at.Mark().line;
    d_.error(line >= 0 ? fmt::format("{}:{}", file_, line + 1) : file_, path, message);
  }

  const std::string& file_;
  const YamlLimits& limits_;
  Diagnostics& d_;
  std::size_t visited_ = 0;
};

// Line (1-based) of byte `offset` of `text`.
int line_of(std::string_view text, std::size_t offset) {
  int line = 1;
  for (std::size_t i = 0; i < offset && i < text.size(); ++i) line += text[i] == '\n';
  return line;
}

}  // namespace

std::optional<YAML::Node> parse_yaml(const std::string& text, const std::string& file, std::string_view what,
                                     Diagnostics& d, const YamlLimits& limits) {
  if (const std::size_t bad = first_invalid_utf8(text); bad != std::string_view::npos) {
    d.error(fmt::format("{}:{}", file, line_of(text, bad)), "",
            fmt::format("byte {} is not valid UTF-8 (expected {} in UTF-8)", bad, what));
    return std::nullopt;
  }
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    const std::string at = e.mark.line >= 0 ? fmt::format("{}:{}", file, e.mark.line + 1) : file;
    d.error(at, "", fmt::format("malformed YAML at column {}: {} (expected {})", e.mark.column + 1, e.msg, what));
    return std::nullopt;
  }
  StrictCheck check(file, limits, d);
  if (!check.walk(root, "", 0)) return std::nullopt;
  return root;  // repeated keys are reported; the caller goes on to report its own problems too
}

}  // namespace syntorch
