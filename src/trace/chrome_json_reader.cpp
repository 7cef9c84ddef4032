// Reading back Chrome JSON (.json, .json.gz) with a SAX parser: flat memory for any size.

#include <nlohmann/json.hpp>

#include "syntorch/base/json.hpp"
#include "trace_reader.hpp"

namespace syntorch::trace::detail {

namespace fs = std::filesystem;


class ChromeSax {
 public:
  using number_integer_t = nlohmann::json::number_integer_t;
  using number_unsigned_t = nlohmann::json::number_unsigned_t;
  using number_float_t = nlohmann::json::number_float_t;
  using string_t = nlohmann::json::string_t;
  using binary_t = nlohmann::json::binary_t;

  bool null() { return true; }
  bool boolean(bool) { return true; }
  bool number_integer(number_integer_t v) { return number(static_cast<double>(v), std::to_string(v)); }
  bool number_unsigned(number_unsigned_t v) { return number(static_cast<double>(v), std::to_string(v)); }
  bool number_float(number_float_t v, const string_t& text) { return number(v, text); }
  bool string(string_t& v) {
    if (where() == Where::kEvent) {
      if (key_ == "ph") ev_.ph = v;
      else if (key_ == "name") ev_.name = v;
      else if (key_ == "pid") ev_.pid = v;
      else if (key_ == "tid") ev_.tid = v;
    } else if (where() == Where::kArgs && key_ == "name") {
      ev_.args_name = v;
    }
    return true;
  }
  bool binary(binary_t&) { return true; }
  bool start_object(std::size_t) {
    if (stack_.empty()) {
      stack_.push_back(Where::kTop);
    } else if (where() == Where::kEvents) {
      stack_.push_back(Where::kEvent);
      ev_ = Event{};
    } else if (where() == Where::kEvent && key_ == "args") {
      stack_.push_back(Where::kArgs);
    } else {
      stack_.push_back(Where::kOther);
    }
    return true;
  }
  bool key(string_t& k) {
    key_ = k;
    return true;
  }
  bool end_object() {
    if (where() == Where::kEvent) take_event();
    stack_.pop_back();
    return true;
  }
  bool start_array(std::size_t) {
    if (stack_.empty() || (where() == Where::kTop && stack_.size() == 1 && key_ == "traceEvents")) {
      stack_.push_back(Where::kEvents);
      saw_events_ = true;
    } else {
      stack_.push_back(Where::kOther);
    }
    return true;
  }
  bool end_array() {
    stack_.pop_back();
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::json::exception& e) {
    error_ = json_exception_text(e);
    return false;
  }

  const std::string& error() const { return error_; }
  bool saw_events() const { return saw_events_; }

  TraceFileSummary finish(fs::path path) {
    for (const auto& [key, i] : thread_tracks_) {
      TrackSummary& t = tally_.tracks()[i];
      t.process = process_name(key.first);
      auto name = thread_names_.find(key);
      t.track = name != thread_names_.end() ? name->second : "tid " + key.second;
    }
    for (const auto& [key, i] : counter_tracks_) {
      TrackSummary& t = tally_.tracks()[i];
      t.process = process_name(key.first);
      t.track = key.second;
    }
    return tally_.finish("chrome", {std::move(path)}, flows_);
  }

 private:
  enum class Where : std::uint8_t { kTop, kEvents, kEvent, kArgs, kOther };
  struct Event {
    std::string ph, name, pid, tid, args_name;
    double ts = 0, dur = 0;
  };

  Where where() const { return stack_.empty() ? Where::kOther : stack_.back(); }

  bool number(double v, const std::string& text) {
    if (where() != Where::kEvent) return true;
    if (key_ == "ts") ev_.ts = v;
    else if (key_ == "dur") ev_.dur = v;
    else if (key_ == "pid") ev_.pid = text;
    else if (key_ == "tid") ev_.tid = text;
    return true;
  }

  std::string process_name(const std::string& pid) const {
    auto it = process_names_.find(pid);
    return it != process_names_.end() ? it->second : "pid " + pid;
  }

  void take_event() {
    const std::string& ph = ev_.ph;
    if (ph == "M") {
      if (ev_.name == "process_name") process_names_[ev_.pid] = ev_.args_name;
      if (ev_.name == "thread_name") thread_names_[{ev_.pid, ev_.tid}] = ev_.args_name;
      return;
    }
    const TimePs t0 = ps_of_us(ev_.ts);
    if (ph == "s" || ph == "t" || ph == "f") {
      ++flows_;
      return;
    }
    std::size_t i;
    if (ph == "C") {
      auto [it, inserted] = counter_tracks_.try_emplace({ev_.pid, ev_.name}, 0);
      if (inserted) it->second = tally_.track("C\n" + ev_.pid + "\n" + ev_.name);
      i = it->second;
    } else {
      auto [it, inserted] = thread_tracks_.try_emplace({ev_.pid, ev_.tid}, 0);
      if (inserted) it->second = tally_.track("T\n" + ev_.pid + "\n" + ev_.tid);
      i = it->second;
    }
    const bool end_marker = ph == "E" || ph == "e";
    tally_.event(i, t0, ph == "X" ? t0 + ps_of_us(ev_.dur) : t0, !end_marker);
  }

  std::vector<Where> stack_;
  std::string key_;
  Event ev_;
  Tally tally_;
  std::map<std::pair<std::string, std::string>, std::size_t> thread_tracks_;
  std::map<std::pair<std::string, std::string>, std::size_t> counter_tracks_;
  std::map<std::string, std::string> process_names_;
  std::map<std::pair<std::string, std::string>, std::string> thread_names_;
  std::uint64_t flows_ = 0;
  std::string error_;
  bool saw_events_ = false;
};

TraceFileSummary read_chrome(const fs::path& path) {
  InputFile in(path);
  std::istream stream(&in);
  ChromeSax sax;
  const bool ok = nlohmann::json::sax_parse(stream, &sax);
  if (!ok) throw TraceFileError(fmt::format("'{}' is not a Chrome JSON trace: {}", path.string(), sax.error()));
  if (!sax.saw_events()) {
    throw TraceFileError(fmt::format("'{}' is not a Chrome JSON trace: it has no \"traceEvents\" array", path.string()));
  }
  return sax.finish(path);
}


}  // namespace syntorch::trace::detail
