#pragma once
// JSON text read as every config of the project is read (hardware configs, model configs): at most
// kMaxJsonDepth levels deep (deeper text is refused before it is built: nothing recurses over
// it), and no key given twice in one object (the last would silently win).

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "syntorch/base/diagnostics.hpp"

namespace syntorch {

using Json = nlohmann::ordered_json;

inline constexpr std::size_t kMaxJsonDepth = 64;

// Problems are added under `where` with the key's JSON pointer; a syntax error throws
// nlohmann's parse_error as Json::parse does.
std::optional<Json> parse_json_checked(const std::string& text, const std::string& where, Diagnostics& diagnostics);

// A whole file's text as JSON: nullopt with one problem under `file` when it is not ("malformed
// JSON at line 3, column 7: ...", a number out of range, too deep, a key twice). Never throws.
std::optional<Json> parse_json_document(const std::string& text, const std::string& file, Diagnostics& diagnostics);

// "/a/b~1c" for the key "b/c" under "/a" (RFC 6901 escapes).
std::string json_child_pointer(const std::string& parent, std::string_view key);
std::string json_child_pointer(const std::string& parent, std::size_t index);

// A short rendering of a JSON value for messages ("3350", "\"fast\"", "an object").
std::string describe_json(const Json& v);

// An nlohmann exception's message without the library's "[json.exception.parse_error.101] " tag.
std::string json_exception_text(const std::exception& e);

}  // namespace syntorch
