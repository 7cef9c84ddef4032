#pragma once
// A trace file written safely: bytes go to "<path>.partial" beside the final name and reach
// <path> only when commit() has flushed and closed them without error (then one rename). A file
// destroyed without commit() (a failed run), or after a write error, removes the partial file, so
// neither name is left behind. Paths that exist and are not regular files (/dev/null, /dev/stdout,
// a pipe) are written in place. Optionally gzip-compressed (zlib deflate with a gzip header),
// streaming: memory stays one buffer however long the file.
//
// Every error throws std::runtime_error naming the path and the OS error (strerror).

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <memory>
#include <string_view>

namespace syntorch::trace {

// A trace file that cannot be written (an unwritable path, a full device, past the file-size
// limit): the destination the user named is at fault, so front ends report it as bad input.
class OutputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class OutputFile {
 public:
  enum class Compression : std::uint8_t { kNone, kGzip };
  struct Options {
    Compression compression = Compression::kNone;
    std::size_t buffer_bytes = std::size_t{256} << 10;  // bytes gathered before each write(2)
    int gzip_level = 1;                                  // zlib level 1..9: 1 is fastest
  };

  // Creates "<path>.partial" (truncating a stale one); throws std::runtime_error naming `path`
  // and the OS error when it cannot.
  explicit OutputFile(std::filesystem::path path);
  OutputFile(std::filesystem::path path, Options options);
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;
  // Removes the partial file unless commit() succeeded.
  ~OutputFile();

  // Appends bytes; throws std::runtime_error (after removing the partial file) when the OS
  // reports an error, and on any call after one.
  void write(const void* data, std::size_t size) {
    if (size != 0 && size <= capacity_ - used_) [[likely]] {
      std::memcpy(buffer_.get() + used_, data, size);
      used_ += size;
      bytes_in_ += size;
      return;
    }
    write_slow(static_cast<const char*>(data), size);
  }
  void write(std::string_view bytes) { write(bytes.data(), bytes.size()); }

  // Flushes (finishing the gzip stream), closes and renames the partial file to path(); throws
  // std::runtime_error naming the path on any error, leaving neither file. Later calls do nothing.
  void commit();
  // Closes and removes the partial file (nothing happens after commit()). Never throws.
  void discard() noexcept;

  const std::filesystem::path& path() const noexcept { return path_; }
  // Where the bytes go until commit(): "<path>.partial", or path() itself for a non-regular file.
  const std::filesystem::path& partial_path() const noexcept { return partial_path_; }
  bool committed() const noexcept { return state_ == State::kCommitted; }
  // Bytes passed to write() so far (before compression).
  std::uint64_t bytes_in() const noexcept { return bytes_in_; }

 private:
  enum class State : std::uint8_t { kOpen, kCommitted, kFailed, kDiscarded };
  struct Gzip;  // zlib's stream state, kept out of this header

  void write_slow(const char* data, std::size_t size);
  void flush_buffer(bool finish);
  void write_fd(const char* data, std::size_t size);
  void check_open(const char* what) const;
  [[noreturn]] void fail(const char* what, int error);

  std::filesystem::path path_;
  std::filesystem::path partial_path_;
  int fd_ = -1;
  bool in_place_ = false;
  State state_ = State::kOpen;
  std::unique_ptr<char[]> buffer_;
  std::size_t capacity_ = 0;
  std::size_t used_ = 0;
  std::uint64_t bytes_in_ = 0;
  std::unique_ptr<Gzip> gzip_;
};

}  // namespace syntorch::trace
