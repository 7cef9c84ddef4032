#pragma once
// What the trace-file readers share (src/trace/*_reader.cpp, one per format, behind
// summarize_trace_file): a file read through zlib, per-track tallies, and the reader of each
// format.

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <string>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>
#include <zlib.h>

#include "syntorch/trace/trace_file.hpp"

namespace syntorch::trace::detail {

inline constexpr std::uint64_t kMaxMessageBytes = std::uint64_t{256} << 20;

// A file read through zlib, which passes files that are not gzip through unchanged.
class InputFile : public std::streambuf {
 public:
  explicit InputFile(const std::filesystem::path& path) : path_(path) {
    std::error_code ec;
    const std::filesystem::file_status st = std::filesystem::status(path, ec);
    if (!std::filesystem::exists(st)) throw TraceFileError(fmt::format("cannot read '{}': no such file", path.string()));
    if (std::filesystem::is_directory(st)) throw TraceFileError(fmt::format("cannot read '{}': it is a directory", path.string()));
    if (!std::filesystem::is_regular_file(st)) {  // a FIFO or a device would block or never end
      throw TraceFileError(fmt::format("cannot read '{}': not a regular file", path.string()));
    }
    file_ = gzopen(path.c_str(), "rb");
    if (file_ == nullptr) {
      throw TraceFileError(fmt::format("cannot read '{}': {}", path.string(), errno != 0 ? std::strerror(errno) : "?"));
    }
    gzbuffer(file_, 1 << 17);
  }
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;
  ~InputFile() override { gzclose(file_); }

  // Reads exactly n bytes; false when the file ends first.
  bool read(char* out, std::size_t n) {
    return static_cast<std::size_t>(sgetn(out, static_cast<std::streamsize>(n))) == n;
  }
  std::uint64_t offset() const { return consumed_ - static_cast<std::uint64_t>(egptr() - gptr()); }
  const std::filesystem::path& path() const { return path_; }

 protected:
  int_type underflow() override {
    if (gptr() < egptr()) return traits_type::to_int_type(*gptr());
    const int n = gzread(file_, buffer_, sizeof buffer_);
    if (n < 0) {
      int code = 0;
      const char* what = gzerror(file_, &code);
      throw TraceFileError(fmt::format("cannot read '{}': {}", path_.string(),
                                       code == Z_ERRNO ? std::strerror(errno) : what));
    }
    if (n == 0) return traits_type::eof();
    consumed_ += static_cast<std::uint64_t>(n);
    setg(buffer_, buffer_, buffer_ + n);
    return traits_type::to_int_type(*gptr());
  }

 private:
  std::filesystem::path path_;
  gzFile file_ = nullptr;
  std::uint64_t consumed_ = 0;
  char buffer_[1 << 16];
};

// Per-track counts, keyed by a format-specific string, in order of first appearance.
class Tally {
 public:
  std::size_t track(const std::string& key) {
    auto [it, inserted] = index_.try_emplace(key, tracks_.size());
    if (inserted) {
      tracks_.emplace_back();
      seen_.push_back(false);
    }
    return it->second;
  }
  // An event on track i spanning [t0, t1]; `count` false for an end marker.
  void event(std::size_t i, TimePs t0, TimePs t1, bool count) {
    TrackSummary& t = tracks_[i];
    if (count) ++t.events;
    if (!seen_[i]) {
      seen_[i] = true;
      t.first_ps = t0;
      t.last_ps = t1;
    } else {
      t.first_ps = std::min(t.first_ps, t0);
      t.last_ps = std::max(t.last_ps, t1);
    }
  }
  std::vector<TrackSummary>& tracks() { return tracks_; }

  TraceFileSummary finish(std::string format, std::vector<std::filesystem::path> files, std::uint64_t flows) {
    TraceFileSummary s;
    s.format = std::move(format);
    s.files = std::move(files);
    s.flow_endpoints = flows;
    bool any = false;
    for (std::size_t i = 0; i < tracks_.size(); ++i) {
      s.events += tracks_[i].events;
      if (!seen_[i]) continue;
      s.first_ps = any ? std::min(s.first_ps, tracks_[i].first_ps) : tracks_[i].first_ps;
      s.last_ps = any ? std::max(s.last_ps, tracks_[i].last_ps) : tracks_[i].last_ps;
      any = true;
    }
    s.tracks = std::move(tracks_);
    return s;
  }

 private:
  std::unordered_map<std::string, std::size_t> index_;
  std::vector<TrackSummary> tracks_;
  std::vector<bool> seen_;
};

inline TimePs ps_of_us(double us) { return us <= 0 || !std::isfinite(us) ? 0 : static_cast<TimePs>(std::llround(us * 1e6)); }

TraceFileSummary read_chrome(const std::filesystem::path& path);
TraceFileSummary read_perfetto(const std::filesystem::path& path);
TraceFileSummary read_chakra(const std::filesystem::path& path);
TraceFileSummary read_csv(const std::filesystem::path& path);

}  // namespace syntorch::trace::detail
