#pragma once
// Errors in user input (configs, flags, study files), collected so that every problem is
// reported at once. Each names where it is (a file and a JSON path, or a flag) and what was
// expected. Library code reports through these and never exits; the CLI exits 2.

#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace syntorch {

struct Diagnostic {
  std::string where;    // a file name, or "--set", or "--flag"
  std::string path;     // a JSON pointer like /components/hbm/bandwidth; may be empty
  std::string message;  // what was expected and what was found

  std::string to_string() const;  // "where:path: message"
};

// Problems past the first kMaxKept are counted, not kept: a file with a million bad lines costs a
// count, and its report says how many more there were. Long text echoed back (a pasted file as a
// key) is cut before it is copied.
class Diagnostics {
 public:
  static constexpr std::size_t kMaxKept = 100;

  void error(std::string_view where, std::string_view path, std::string_view message);
  void append(const Diagnostics& other);
  bool empty() const { return items_.empty(); }
  std::size_t size() const { return items_.size() + dropped_; }  // every problem, kept or counted
  const std::vector<Diagnostic>& items() const { return items_; }
  // Problems counted past kMaxKept: a caller that copies items() into another report (re-keyed,
  // re-worded) passes this on with add_dropped, so the count is not lost on the way.
  std::size_t dropped() const { return dropped_; }
  void add_dropped(std::size_t n) { dropped_ += n; }
  std::string to_string() const;  // one line per kept diagnostic, then "... and N more problems"

 private:
  std::vector<Diagnostic> items_;
  std::size_t dropped_ = 0;
};

// `text` for a message: at most `most` bytes (whole UTF-8 characters), the rest named by its
// length ("... (10485760 more bytes)").
std::string clip(std::string_view text, std::size_t most);

// Thrown by loaders when their input has one or more problems.
class InputError : public std::runtime_error {
 public:
  explicit InputError(Diagnostics diagnostics);
  const Diagnostics& diagnostics() const { return diagnostics_; }

 private:
  Diagnostics diagnostics_;
};

// The candidate `word` most likely meant: first one that reads the same past case and separators
// ("Llama-3.1-405B", "gpt3_175b"), then one that differs only by a minor version or decimal part
// ("llama3-405b" for "llama3.1-405b", "gpt3-6b" for "gpt3-6.7b"), else the closest by edit
// distance if it is close enough to be a likely typo; "" when none is.
std::string closest_match(std::string_view word, const std::vector<std::string>& candidates);

// ", did you mean \"x\"?" when closest_match finds one, else "".
std::string did_you_mean(std::string_view word, const std::vector<std::string>& candidates);

// Joins strings as "a, b, c".
std::string join(const std::vector<std::string>& items, std::string_view separator = ", ");

}  // namespace syntorch
