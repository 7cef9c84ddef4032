#include "syntorch/base/diagnostics.hpp"

#include <algorithm>
#include <fmt/format.h>

namespace syntorch {

std::string Diagnostic::to_string() const {
  if (path.empty()) return fmt::format("{}: {}", where, message);
  return fmt::format("{}:{}: {}", where, path, message);
}

namespace {
// Long text echoed back (a 2 MiB key, a pasted file) is cut: the start says enough.
std::string cut(std::string text, std::size_t most) {
  if (text.size() <= most) return text;
  const std::size_t dropped = text.size() - most;
  text.resize(most);
  while (!text.empty() && (static_cast<unsigned char>(text.back()) & 0xC0) == 0x80) text.pop_back();  // whole UTF-8
  if (!text.empty() && static_cast<unsigned char>(text.back()) >= 0xC0) text.pop_back();
  return text + fmt::format("... ({} more bytes)", dropped);
}
}  // namespace

void Diagnostics::error(std::string where, std::string path, std::string message) {
  items_.push_back({cut(std::move(where), 300), cut(std::move(path), 300), cut(std::move(message), 2000)});
}

void Diagnostics::append(const Diagnostics& other) {
  items_.insert(items_.end(), other.items_.begin(), other.items_.end());
}

std::string Diagnostics::to_string() const {
  std::string out;
  for (const auto& d : items_) {
    out += d.to_string();
    out += '\n';
  }
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

std::string closest_match(std::string_view word, const std::vector<std::string>& candidates) {
  std::string best;
  std::size_t best_distance = std::max<std::size_t>(2, word.size() / 3) + 1;
  for (const auto& c : candidates) {
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
