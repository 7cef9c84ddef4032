#include "syntorch/base/diagnostics.hpp"

#include <algorithm>
#include <fmt/format.h>

namespace syntorch {

std::string Diagnostic::to_string() const {
  if (path.empty()) return fmt::format("{}: {}", where, message);
  return fmt::format("{}:{}: {}", where, path, message);
}

std::string clip(std::string_view text, std::size_t most) {
  if (text.size() <= most) return std::string(text);
  std::size_t keep = most;
  while (keep > 0 && (static_cast<unsigned char>(text[keep]) & 0xC0) == 0x80) --keep;  // whole UTF-8 characters
  return fmt::format("{}... ({} more bytes)", text.substr(0, keep), text.size() - keep);
}

void Diagnostics::error(std::string_view where, std::string_view path, std::string_view message) {
  if (items_.size() >= kMaxKept) {
    ++dropped_;
    return;
  }
  items_.push_back({clip(where, 300), clip(path, 300), clip(message, 2000)});
}

void Diagnostics::append(const Diagnostics& other) {
  for (const Diagnostic& d : other.items_) error(d.where, d.path, d.message);
  dropped_ += other.dropped_;
}

std::string Diagnostics::to_string() const {
  std::string out;
  for (const auto& d : items_) {
    out += d.to_string();
    out += '\n';
  }
  if (dropped_ > 0) out += fmt::format("... and {} more problem{}\n", dropped_, dropped_ == 1 ? "" : "s");
  return out;
}

InputError::InputError(Diagnostics diagnostics)
    : std::runtime_error(diagnostics.to_string()), diagnostics_(std::move(diagnostics)) {}

namespace {
std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diag = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      const std::size_t cost = (a[i - 1] == b[j - 1]) ? 0 : 1;
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + cost});
      diag = up;
    }
  }
  return row[b.size()];
}
}  // namespace

namespace {
bool is_separator(char c) { return c == '-' || c == '_' || c == ' '; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }

// The name as it reads: lower case, without separators.
std::string spelled(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (!is_separator(c)) out += (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
  }
  return out;
}

// spelled() less each minor version or decimal part (".1" in "3.1", ".7" in "6.7b").
std::string unversioned(std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '.' && i > 0 && is_digit(s[i - 1]) && i + 1 < s.size() && is_digit(s[i + 1])) {
      while (i + 1 < s.size() && is_digit(s[i + 1])) ++i;
      continue;
    }
    out += s[i];
  }
  return spelled(out);
}

// The first candidate whose `key` equals the word's, the closest by edit distance among several.
template <class Key>
std::string same_key(std::string_view word, const std::vector<std::string>& candidates, Key key) {
  const std::string want = key(word);
  std::string best;
  std::size_t best_distance = 0;
  for (const auto& c : candidates) {
    if (key(c) != want) continue;
    const std::size_t d = edit_distance(word, c);
    if (best.empty() || d < best_distance) {
      best = c;
      best_distance = d;
    }
  }
  return best;
}
}  // namespace

std::string closest_match(std::string_view word, const std::vector<std::string>& candidates) {
  if (word.empty()) return {};
  if (std::string m = same_key(word, candidates, spelled); !m.empty()) return m;
  if (std::string m = same_key(word, candidates, unversioned); !m.empty()) return m;
  std::string best;
  std::size_t best_distance = std::max<std::size_t>(2, word.size() / 3) + 1;
  for (const auto& c : candidates) {
    // The lengths' difference bounds the distance from below: a long word costs nothing here.
    if ((word.size() > c.size() ? word.size() - c.size() : c.size() - word.size()) >= best_distance) continue;
    const std::size_t d = edit_distance(word, c);
    if (d < best_distance) {
      best_distance = d;
      best = c;
    }
  }
  return best;
}

std::string did_you_mean(std::string_view word, const std::vector<std::string>& candidates) {
  const std::string m = closest_match(word, candidates);
  return m.empty() ? std::string{} : fmt::format(", did you mean \"{}\"?", m);
}

std::string join(const std::vector<std::string>& items, std::string_view separator) {
  std::string out;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i) out += separator;
    out += items[i];
  }
  return out;
}

}  // namespace syntorch
