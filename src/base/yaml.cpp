#include "syntorch/base/yaml.hpp"

#include <fmt/format.h>

#include <map>
#include <vector>

#include "syntorch/base/utf8.hpp"

namespace syntorch {

namespace {

// Walks the document once, reporting repeated keys and the bounds. The path to a node is kept as
// its parts and spelled out only for a problem, so a long key costs nothing below it.
class StrictCheck {
 public:
  StrictCheck(const std::string& file, const YamlLimits& limits, Diagnostics& d) : file_(file), limits_(limits), d_(d) {}

  // False when a bound stopped the walk (the problem is reported).
  bool walk(const YAML::Node& node, int depth) {
    if (++visited_ > limits_.max_nodes) {
      error(node, fmt::format("more than {} nodes once its aliases are expanded", limits_.max_nodes));
      return false;
    }
    if ((node.IsSequence() || node.IsMap()) && depth >= limits_.max_depth) {
      error(node, fmt::format("nests deeper than {} levels of mappings and lists", limits_.max_depth));
      return false;
    }
    if (node.IsSequence()) {
      std::size_t i = 0;
      for (const YAML::Node& item : node) {
        parts_.push_back({{}, i++, true});
        const bool ok = walk(item, depth + 1);
        parts_.pop_back();
        if (!ok) return false;
      }
    } else if (node.IsMap()) {
      std::map<std::string_view, int> first_line;  // key -> line it first appears at
      for (const auto& kv : node) {
        const std::string_view key = kv.first.IsScalar() ? std::string_view(kv.first.Scalar()) : std::string_view();
        parts_.push_back({key, 0, false});
        if (kv.first.IsScalar()) {
          const auto [it, fresh] = first_line.try_emplace(key, kv.first.Mark().line + 1);
          if (!fresh) {
            error(kv.first, fmt::format("key \"{}\" given twice (first at line {}); give each key once", clip(key, 200),
                                        it->second));
          }
        }
        const bool ok = walk(kv.second, depth + 1);
        parts_.pop_back();
        if (!ok) return false;
      }
    }
    return true;
  }

 private:
  struct Part {
    std::string_view key;  // a mapping's key
    std::size_t index;     // a list's item
    bool is_index;
  };

  void error(const YAML::Node& at, const std::string& message) {
    std::string path;
    for (const Part& p : parts_) {
      path += '/';
      path += p.is_index ? std::to_string(p.index) : clip(p.key, 100);
    }
    const int line = at.Mark().line;
    d_.error(line >= 0 ? fmt::format("{}:{}", file_, line + 1) : file_, path, message);
  }

  const std::string& file_;
  const YamlLimits& limits_;
  Diagnostics& d_;
  std::size_t visited_ = 0;
  std::vector<Part> parts_;
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
  if (!check.walk(root, 0)) return std::nullopt;
  return root;  // repeated keys are reported; the caller goes on to report its own problems too
}

}  // namespace syntorch
