#include "syntorch/base/json.hpp"

#include <fmt/format.h>

#include <set>
#include <string_view>
#include <vector>

namespace syntorch {

namespace {

std::string line_col(const std::string& text, std::size_t byte) {
  std::size_t line = 1;
  std::size_t col = 1;
  for (std::size_t i = 0; i < byte && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
  }
  return fmt::format("line {}, column {}", line, col);
}

}  // namespace

std::optional<Json> parse_json_document(const std::string& text, const std::string& file, Diagnostics& d) {
  try {
    return parse_json_checked(text, file, d);
  } catch (const Json::exception& e) {  // parse errors, and numbers out of range such as 1e999
    std::string what = json_exception_text(e);
    // nlohmann's text repeats the position: keep what follows "parse error at ...: ".
    if (auto p = what.find("parse error"); p != std::string::npos) {
      const auto colon = what.find(": ", p);
      what = colon == std::string::npos ? what.substr(p) : what.substr(colon + 2);
    }
    if (const auto* pe = dynamic_cast<const Json::parse_error*>(&e)) {
      d.error(file, "", fmt::format("malformed JSON at {}: {}", line_col(text, pe->byte == 0 ? 0 : pe->byte - 1), what));
    } else {
      d.error(file, "", fmt::format("unreadable JSON: {}", what));
    }
    return std::nullopt;
  }
}

std::string json_exception_text(const std::exception& e) {
  std::string what = e.what();
  if (what.rfind("[json.exception.", 0) == 0) {
    if (const auto end = what.find("] "); end != std::string::npos) what.erase(0, end + 2);
  }
  return what;
}

std::string json_child_pointer(const std::string& parent, std::string_view key) {
  std::string out = parent;
  out += '/';
  for (char c : key) {
    if (c == '~') {
      out += "~0";
    } else if (c == '/') {
      out += "~1";
    } else {
      out += c;
    }
  }
  return out;
}

std::string json_child_pointer(const std::string& parent, std::size_t index) {
  return parent + "/" + std::to_string(index);
}

std::string describe_json(const Json& v) {
  if (v.is_object()) return "an object";
  if (v.is_array()) return "a list";
  if (v.is_null()) return "null";
  std::string s = v.dump(-1, ' ', false, Json::error_handler_t::replace);
  if (s.size() > 60) s = s.substr(0, 57) + "...";
  return s;
}

namespace {
// Where the parser is, frame by frame: an object's keys so far and the current one, or an
// array's index.
struct Frame {
  bool object = false;
  std::set<std::string> keys;
  std::string key;
  std::size_t index = 0;
};
struct TooDeep {};
}  // namespace

std::optional<Json> parse_json_checked(const std::string& text, const std::string& where, Diagnostics& d) {
  std::vector<Frame> frames;
  const std::size_t before = d.size();
  auto pointer_to = [&](std::string_view last) {
    std::string p;
    for (const Frame& f : frames) {
      if (&f == &frames.back()) break;
      p = f.object ? json_child_pointer(p, f.key) : json_child_pointer(p, f.index);
    }
    return json_child_pointer(p, last);
  };
  auto element_done = [&] {
    if (!frames.empty() && !frames.back().object) ++frames.back().index;
  };
  const Json::parser_callback_t check = [&](int, Json::parse_event_t event, Json& parsed) {
    switch (event) {
      case Json::parse_event_t::object_start:
      case Json::parse_event_t::array_start:
        if (frames.size() >= kMaxJsonDepth) throw TooDeep{};
        frames.push_back(Frame{event == Json::parse_event_t::object_start, {}, {}, 0});
        break;
      case Json::parse_event_t::key: {
        Frame& f = frames.back();
        f.key = parsed.get<std::string>();
        if (!f.keys.insert(f.key).second) {
          d.error(where, pointer_to(f.key), fmt::format("key \"{}\" given twice in one object (the last would win)",
                                                        f.key));
        }
        break;
      }
      case Json::parse_event_t::object_end:
      case Json::parse_event_t::array_end:
        frames.pop_back();
        element_done();
        break;
      case Json::parse_event_t::value:
        element_done();
        break;
    }
    return true;
  };
  Json doc;
  try {
    doc = Json::parse(text, check);
  } catch (const TooDeep&) {
    d.error(where, "", fmt::format("nested deeper than {} levels (a config is a few levels deep)", kMaxJsonDepth));
    return std::nullopt;
  }
  if (d.size() != before) return std::nullopt;
  return doc;
}

}  // namespace syntorch
