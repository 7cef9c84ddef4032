#pragma once
// key=value text, as calibration rows ("m=8192 n=8192 dtype=fp16"), model specs
// ("gpt:layers=2,hidden=64"), policies ("gemm=cublasLt,attention=flash_v2") and --set overrides
// write it: one parser, so every front end splits, checks and reports it the same way.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "syntorch/base/diagnostics.hpp"

namespace syntorch {

struct KeyValue {
  std::string key;
  std::string value;
};

// One item: split at the first '='; nullopt without one, or with an empty key.
std::optional<KeyValue> split_key_value(std::string_view item);

// How a list is written and how its problems are named.
struct KeyValueFormat {
  char separator = ',';                     // ' ' means runs of whitespace
  std::string_view expected = "key=value";  // "expected <expected>, got ..."
  std::string context;                      // put before each message ("model \"gpt:...\": ")
  std::string path;                         // the path a malformed item is reported under ("" or "params")
  bool keys_are_paths = false;              // report a repeated key under its own name as the path
};

// The items of `text` in order (empty items skipped). A malformed item, or a key given a second
// time, is reported under `where` and left out.
std::vector<KeyValue> parse_key_values(std::string_view text, const KeyValueFormat& format, Diagnostics& diagnostics,
                                       const std::string& where);

// A value that is exactly one number, nothing before or after it (nullopt otherwise): what every
// key=value reader checks a number with.
std::optional<std::int64_t> parse_integer(std::string_view text);
std::optional<double> parse_number(std::string_view text);

}  // namespace syntorch
