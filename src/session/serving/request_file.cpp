// Request traces from files: CSV with a header, JSON lines, or a ShareGPT-style JSON array
// (requests.hpp, load_requests_file).

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <sstream>

#include "syntorch/base/csv.hpp"
#include "syntorch/base/input_file.hpp"
#include "syntorch/base/json.hpp"
#include "syntorch/base/key_value.hpp"
#include "syntorch/session/serving/requests.hpp"

namespace syntorch::session::serving {

namespace {

std::string trimmed(const std::string& s) {
  const auto b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t") - b + 1);
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// What a column or key holds, by its (lowercased) name.
enum class Field : std::uint8_t { none, time_s, time_ms, time_ns, time_any, input, output };
Field field_of(const std::string& name) {
  static const std::pair<const char*, Field> kNames[] = {
      {"arrival_s", Field::time_s},         {"arrival_time", Field::time_s},     {"time", Field::time_s},
      {"timestamp_s", Field::time_s},       {"timestamp_ms", Field::time_ms},    {"timestamp", Field::time_any},
      {"starttimeoffset", Field::time_ns},  {"input_tokens", Field::input},      {"input_length", Field::input},
      {"input_len", Field::input},          {"prompt_tokens", Field::input},     {"prompt_len", Field::input},
      {"contexttokens", Field::input},      {"context_tokens", Field::input},    {"num_prefill_tokens", Field::input},
      {"output_tokens", Field::output},     {"output_length", Field::output},    {"output_len", Field::output},
      {"generatedtokens", Field::output},   {"generated_tokens", Field::output}, {"completion_tokens", Field::output},
      {"num_decode_tokens", Field::output}};
  const std::string l = lower(name);
  for (const auto& [n, f] : kNames) {
    if (l == n) return f;
  }
  return Field::none;
}

// Days from 1970-01-01 to a civil date (Hinnant's days_from_civil).
std::int64_t days_from_civil(std::int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const std::int64_t era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<std::int64_t>(doe) - 719468;
}

// "2023-11-16 18:15:46.6805900" (the Azure LLM inference traces' TIMESTAMP) in seconds.
std::optional<double> datetime_s(const std::string& text) {
  int y = 0, mo = 0, d = 0, h = 0, mi = 0;
  double s = 0;
  char sep = 0;
  std::istringstream in(text);
  in >> y;
  if (in.get() != '-') return std::nullopt;
  in >> mo;
  if (in.get() != '-') return std::nullopt;
  in >> d;
  sep = static_cast<char>(in.get());
  if (sep != ' ' && sep != 'T') return std::nullopt;
  in >> h;
  if (in.get() != ':') return std::nullopt;
  in >> mi;
  if (in.get() != ':') return std::nullopt;
  in >> s;
  if (in.fail() || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || !(s >= 0 && s < 61)) return std::nullopt;
  return static_cast<double>(days_from_civil(y, static_cast<unsigned>(mo), static_cast<unsigned>(d))) * 86400.0 +
         h * 3600.0 + mi * 60.0 + s;
}

// One record's fields as text (a CSV row, or a JSON object's numbers and strings).
struct Record {
  std::optional<std::string> time, input, output;
  Field time_field = Field::none;
};

class Loader {
 public:
  Loader(const std::string& path, Diagnostics& d) : path_(path), d_(d) {}

  void add(const Record& r, const std::string& where) {
    Request q;
    q.id = static_cast<std::int64_t>(out_.size());
    // Some public traces record requests that generated nothing (an error, a cancellation): they
    // are served as one token, the least an engine returns.
    const auto count = [&](const std::optional<std::string>& text, const char* what, std::int64_t least) -> std::int64_t {
      if (!text) {
        d_.error(where, "", fmt::format("no {} (a column or key such as {})", what,
                                          std::string(what) == "input tokens" ? "input_tokens or ContextTokens"
                                                                              : "output_tokens or GeneratedTokens"));
        return 0;
      }
      const std::optional<std::int64_t> v = parse_integer(*text);
      if (!v || *v < least || *v > (1 << 24)) {
        d_.error(where, "", fmt::format("{}: expected {} to {} tokens, got \"{}\"", what, least, 1 << 24, *text));
        return 0;
      }
      return std::max<std::int64_t>(*v, 1);
    };
    q.input_tokens = count(r.input, "input tokens", 1);
    q.output_tokens = count(r.output, "output tokens", 0);
    if (r.time) {
      std::optional<double> t;
      Field f = r.time_field;
      if (const std::optional<double> n = parse_number(*r.time)) {
        // A bare "timestamp" counts milliseconds, as the Mooncake and Qwen traces write it.
        const double unit = f == Field::time_ns ? 1e-9 : f == Field::time_ms || f == Field::time_any ? 1e-3 : 1.0;
        t = *n * unit;
      } else {
        t = datetime_s(*r.time);
      }
      if (untimed_ > 0) {
        d_.error(where, "", fmt::format("an arrival time, where {} earlier requests have none", untimed_));
      } else if (!t || !std::isfinite(*t)) {
        d_.error(where, "", fmt::format("arrival: expected a time (seconds, or a date and time such as "
                                               "2023-11-16 18:15:46.68), got \"{}\"", *r.time));
      } else {
        q.arrival_s = *t;
        timed_ = true;
      }
    } else if (timed_) {
      d_.error(where, "", "no arrival time, where earlier requests have one");
    } else {
      ++untimed_;
    }
    out_.push_back(q);
  }

  std::vector<Request> finish(bool& timed) {
    timed = timed_;
    if (out_.empty()) d_.error(path_, "", "no requests in the file");
    if (timed_ && !out_.empty()) {
      std::stable_sort(out_.begin(), out_.end(), [](const Request& a, const Request& b) { return a.arrival_s < b.arrival_s; });
      const double first = out_.front().arrival_s;
      for (std::size_t i = 0; i < out_.size(); ++i) {
        out_[i].arrival_s -= first;
        out_[i].id = static_cast<std::int64_t>(i);
      }
    }
    return std::move(out_);
  }

 private:
  const std::string& path_;
  Diagnostics& d_;
  std::vector<Request> out_;
  bool timed_ = false;
  std::int64_t untimed_ = 0;  // requests before the first with a time
};

std::optional<std::string> text_of(const Json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_integer()) return std::to_string(v.get<std::int64_t>());
  if (v.is_number()) return fmt::format("{}", v.get<double>());
  return std::nullopt;
}

Record record_of(const Json& object) {
  Record r;
  for (const auto& [key, value] : object.items()) {
    const Field f = field_of(key);
    if (f == Field::input) r.input = text_of(value);
    if (f == Field::output) r.output = text_of(value);
    if (f == Field::time_s || f == Field::time_ms || f == Field::time_ns || f == Field::time_any) {
      r.time = text_of(value);
      r.time_field = f;
    }
  }
  return r;
}

// A ShareGPT conversation's text in tokens: about 4 characters (UTF-8 code points) a token, as
// Llama's and GPT's tokenizers average on English text; the simulator carries no tokenizer.
std::int64_t approximate_tokens(const std::string& text) {
  std::int64_t chars = 0;
  for (char c : text) chars += (static_cast<unsigned char>(c) & 0xC0) != 0x80 ? 1 : 0;
  return std::max<std::int64_t>(1, (chars + 3) / 4);
}

}  // namespace

std::vector<Request> load_requests_file(const std::string& path, bool& timed, Diagnostics& d) {
  timed = false;
  const std::size_t before = d.size();
  const std::optional<std::string> text = read_input_file(path, "a request trace (CSV, JSON lines or JSON)", d);
  if (!text) return {};
  Loader loader(path, d);
  const std::string ext = lower(std::filesystem::path(path).extension().string());
  if (ext == ".csv") {
    std::istringstream in(*text);
    std::string line;
    std::getline(in, line);
    const std::vector<std::string> header = split_csv_line(line);
    int time_col = -1, input_col = -1, output_col = -1;
    Field time_field = Field::none;
    for (std::size_t i = 0; i < header.size(); ++i) {
      const Field f = field_of(trimmed(header[i]));
      if (f == Field::input) input_col = static_cast<int>(i);
      if (f == Field::output) output_col = static_cast<int>(i);
      if (f == Field::time_s || f == Field::time_ms || f == Field::time_ns || f == Field::time_any) {
        time_col = static_cast<int>(i);
        time_field = f;
      }
    }
    if (input_col < 0 || output_col < 0) {
      d.error(path + ":1", "", fmt::format("expected a header naming the input and output tokens (input_tokens and "
                                           "output_tokens, or ContextTokens and GeneratedTokens), got \"{}\"",
                                           line.substr(0, 200)));
      return {};
    }
    int n = 1;
    while (std::getline(in, line) && d.size() - before < 20) {
      ++n;
      if (line.empty() || line == "\r") continue;
      bool unterminated = false;
      const std::vector<std::string> f = split_csv_line(line, &unterminated);
      if (unterminated) {
        d.error(fmt::format("{}:{}", path, n), "", "a quoted field is not closed on its line");
        continue;
      }
      const auto at = [&](int c) {
        return c >= 0 && c < static_cast<int>(f.size()) ? std::optional<std::string>(trimmed(f[static_cast<std::size_t>(c)]))
                                                         : std::nullopt;
      };
      Record r{at(time_col), at(input_col), at(output_col), time_field};
      loader.add(r, fmt::format("{}:{}", path, n));
    }
  } else if (ext == ".jsonl") {
    std::istringstream in(*text);
    std::string line;
    int n = 0;
    while (std::getline(in, line) && d.size() - before < 20) {
      ++n;
      if (line.empty() || line == "\r") continue;
      const std::string where = fmt::format("{}:{}", path, n);
      const std::optional<Json> j = parse_json_document(line, where, d);
      if (!j) continue;
      if (!j->is_object()) {
        d.error(where, "", fmt::format("expected an object per line, got {}", describe_json(*j)));
        continue;
      }
      loader.add(record_of(*j), where);
    }
  } else if (ext == ".json") {
    const std::optional<Json> j = parse_json_document(*text, path, d);
    if (!j) return {};
    if (!j->is_array()) {
      d.error(path, "", fmt::format("expected an array of requests or of ShareGPT conversations, got {}", describe_json(*j)));
      return {};
    }
    for (std::size_t i = 0; i < j->size() && d.size() - before < 20; ++i) {
      const Json& e = (*j)[i];
      const std::string where = fmt::format("{}:{}", path, json_child_pointer("", i));
      if (e.is_object() && e.contains("conversations") && e["conversations"].is_array()) {
        // ShareGPT, as vllm bench serve samples it: the first turn is the prompt, the second the
        // reply whose length the request asks for; conversations without both are skipped.
        const Json& c = e["conversations"];
        if (c.size() < 2 || !c[0].contains("value") || !c[1].contains("value") || !c[0]["value"].is_string() ||
            !c[1]["value"].is_string()) {
          continue;
        }
        Record r;
        r.input = std::to_string(approximate_tokens(c[0]["value"].get<std::string>()));
        r.output = std::to_string(approximate_tokens(c[1]["value"].get<std::string>()));
        loader.add(r, where);
      } else if (e.is_object()) {
        loader.add(record_of(e), where);
      } else {
        d.error(where, "", fmt::format("expected a request object, got {}", describe_json(e)));
      }
    }
  } else {
    d.error(path, "", fmt::format("expected a .csv, .jsonl or .json request trace, got \"{}\"", ext));
    return {};
  }
  if (d.size() != before) return {};
  return loader.finish(timed);
}

}  // namespace syntorch::session::serving
