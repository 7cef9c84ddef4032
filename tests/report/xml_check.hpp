#pragma once
// A tiny well-formedness checker for the XML (and HTML5) the report writers emit: declarations,
// DOCTYPE and comments, elements with quoted unique attributes, balanced tags, text with only known
// entity references, and a single root element.

#include <cctype>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace syntorch::report::testing {

inline bool valid_entity(std::string_view s, std::size_t amp) {
  const std::size_t semi = s.find(';', amp);
  if (semi == std::string_view::npos || semi - amp > 10) return false;
  const std::string_view name = s.substr(amp + 1, semi - amp - 1);
  if (name == "amp" || name == "lt" || name == "gt" || name == "quot" || name == "apos") return true;
  if (name.size() >= 2 && name[0] == '#') {
    std::string_view digits = name.substr(1);
    const bool hex = digits.front() == 'x';
    if (hex) digits.remove_prefix(1);
    if (digits.empty()) return false;
    for (const char c : digits) {
      if (!(hex ? std::isxdigit(static_cast<unsigned char>(c)) : std::isdigit(static_cast<unsigned char>(c)))) {
        return false;
      }
    }
    return true;
  }
  return false;
}

inline bool name_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == ':' || c == '.';
}

// "" when text is well-formed, else a description of the first problem. With html, the HTML5 void
// elements (meta, img, br, ...) need no end tag.
inline std::string xml_error(std::string_view s, bool html = false) {
  static const std::set<std::string, std::less<>> kVoid{"area", "base", "br", "col", "embed", "hr", "img",
                                                         "input", "link", "meta", "source", "track", "wbr"};
  std::vector<std::string> open;
  int roots = 0;
  std::size_t pos = 0;
  const auto at = [&](std::size_t p) { return " at offset " + std::to_string(p); };
  while (pos < s.size()) {
    if (s[pos] != '<') {
      const std::size_t end = std::min(s.find('<', pos), s.size());
      for (std::size_t i = pos; i < end; ++i) {
        if (s[i] == '&' && !valid_entity(s, i)) return "bad entity" + at(i);
        if (open.empty() && !std::isspace(static_cast<unsigned char>(s[i]))) return "text outside the root" + at(i);
      }
      pos = end;
      continue;
    }
    if (s.substr(pos, 4) == "<!--") {
      const std::size_t end = s.find("-->", pos);
      if (end == std::string_view::npos) return "unclosed comment" + at(pos);
      pos = end + 3;
    } else if (s.substr(pos, 2) == "<?") {
      const std::size_t end = s.find("?>", pos);
      if (end == std::string_view::npos) return "unclosed declaration" + at(pos);
      pos = end + 2;
    } else if (s.substr(pos, 2) == "<!") {
      const std::size_t end = s.find('>', pos);
      if (end == std::string_view::npos || !open.empty()) return "bad DOCTYPE" + at(pos);
      pos = end + 1;
    } else if (s.substr(pos, 2) == "</") {
      std::size_t p = pos + 2;
      const std::size_t start = p;
      while (p < s.size() && name_char(s[p])) ++p;
      const std::string name(s.substr(start, p - start));
      while (p < s.size() && std::isspace(static_cast<unsigned char>(s[p]))) ++p;
      if (p >= s.size() || s[p] != '>') return "bad end tag" + at(pos);
      if (open.empty() || open.back() != name) {
        return "end tag </" + name + "> does not match <" + (open.empty() ? "" : open.back()) + ">" + at(pos);
      }
      open.pop_back();
      pos = p + 1;
    } else {
      std::size_t p = pos + 1;
      const std::size_t start = p;
      if (p >= s.size() || !std::isalpha(static_cast<unsigned char>(s[p]))) return "bad tag name" + at(pos);
      while (p < s.size() && name_char(s[p])) ++p;
      const std::string name(s.substr(start, p - start));
      std::set<std::string> attributes;
      bool self_closing = false;
      for (;;) {
        const std::size_t before = p;
        while (p < s.size() && std::isspace(static_cast<unsigned char>(s[p]))) ++p;
        if (p >= s.size()) return "unclosed tag <" + name + ">" + at(pos);
        if (s[p] == '>') {
          ++p;
          break;
        }
        if (s.substr(p, 2) == "/>") {
          self_closing = true;
          p += 2;
          break;
        }
        if (p == before) return "no space before an attribute of <" + name + ">" + at(p);
        const std::size_t a = p;
        while (p < s.size() && name_char(s[p])) ++p;
        const std::string attribute(s.substr(a, p - a));
        if (attribute.empty()) return "bad attribute in <" + name + ">" + at(p);
        if (!attributes.insert(attribute).second) return "duplicate attribute " + attribute + at(p);
        if (p + 1 >= s.size() || s[p] != '=' || (s[p + 1] != '"' && s[p + 1] != '\'')) {
          return "unquoted attribute " + attribute + at(p);
        }
        const char quote = s[p + 1];
        const std::size_t end = s.find(quote, p + 2);
        if (end == std::string_view::npos) return "unclosed attribute value" + at(p);
        for (std::size_t i = p + 2; i < end; ++i) {
          if (s[i] == '<') return "< in an attribute value" + at(i);
          if (s[i] == '&' && !valid_entity(s, i)) return "bad entity in an attribute value" + at(i);
        }
        p = end + 1;
      }
      if (open.empty()) ++roots;
      if (roots > 1) return "more than one root element" + at(pos);
      if (!self_closing && !(html && kVoid.count(name) > 0)) open.push_back(name);
      pos = p;
    }
  }
  if (!open.empty()) return "unclosed element <" + open.back() + ">";
  if (roots != 1) return "no root element";
  return {};
}

}  // namespace syntorch::report::testing
