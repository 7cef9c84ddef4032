#pragma once
// Reading one JSON object of a config into typed values with clear errors. Every key a parser
// asks for is recorded, so finish() can reject the keys nobody asked for, with a did-you-mean.
// Errors name the file that set the value (configs merge through `extends` and `--set`).

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "syntorch/base/diagnostics.hpp"
#include "syntorch/base/json.hpp"

namespace syntorch::hw::detail {

using syntorch::Json;

// Where each JSON pointer's value came from, and where diagnostics go.
struct ParseContext {
  Diagnostics diagnostics;
  std::map<std::string, std::string> origin;  // JSON pointer -> file or "--set"
  std::string top_file;

  // The source of `pointer`: its own origin, or that of its nearest ancestor.
  std::string where(const std::string& pointer) const;
  void error(const std::string& pointer, std::string message);
};

inline std::string child_pointer(const std::string& parent, std::string_view key) {
  return json_child_pointer(parent, key);
}
inline std::string child_pointer(const std::string& parent, std::size_t index) {
  return json_child_pointer(parent, index);
}
using syntorch::describe_json;
using syntorch::kMaxJsonDepth;
using syntorch::parse_json_checked;

class ObjectReader {
 public:
  ObjectReader(const Json& object, std::string pointer, ParseContext& ctx, std::string what);

  // Quantities with units. Missing optional ones return nullopt; `required` ones report it.
  std::optional<double> bandwidth(std::string_view key, bool required);
  std::optional<double> size(std::string_view key, bool required);  // a quantity or a whole number of bytes
  std::optional<std::uint64_t> address(std::string_view key, bool required);  // bytes, or "0x..." 
  std::optional<double> frequency(std::string_view key, bool required);
  std::optional<double> time(std::string_view key, bool required);  // >= 0 allowed
  std::optional<std::uint32_t> count(std::string_view key, bool required, std::uint32_t min_value);
  std::optional<double> number(std::string_view key, bool required, double min_exclusive);
  // A number in (0, 1]; a share may also be 0.
  std::optional<double> fraction(std::string_view key, bool required);
  std::optional<double> share(std::string_view key, bool required);
  std::optional<bool> boolean(std::string_view key, bool required);
  std::optional<std::string> string(std::string_view key, bool required);
  // A string, or a list of strings.
  std::optional<std::vector<std::string>> strings(std::string_view key, bool required);
  // Marks `key` as known and returns its value (nullptr when absent).
  const Json* raw(std::string_view key);

  const std::string& pointer() const { return pointer_; }
  ParseContext& context() { return ctx_; }
  void error(std::string_view key, std::string message);
  // Reports every key that no accessor asked for.
  void finish();

 private:
  const Json* lookup(std::string_view key, bool required, std::string_view expected);
  // The values a quantity may take: positive ones in [min, max] (zero where allowed), and how
  // to say so.
  struct Range {
    double min;
    double max;
    std::string_view text;
  };
  std::optional<double> quantity(std::string_view key, bool required, std::string_view kind,
                                 std::string_view example, std::optional<double> (*parse)(std::string_view),
                                 bool allow_zero, const Range& range);

  const Json& object_;
  std::string pointer_;
  ParseContext& ctx_;
  std::string what_;
  std::vector<std::string> known_;
};

}  // namespace syntorch::hw::detail
