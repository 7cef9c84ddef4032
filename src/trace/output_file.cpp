#include "syntorch/trace/output_file.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <stdexcept>
#include <string>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <fmt/format.h>

namespace syntorch::trace {

struct OutputFile::Gzip {
  z_stream stream{};
  std::unique_ptr<char[]> out;
  std::size_t out_capacity = 0;
  bool initialised = false;
  ~Gzip() {
    if (initialised) deflateEnd(&stream);
  }
};

namespace {

std::string os_error(int error) { return error != 0 ? std::strerror(error) : "unknown error"; }

}  // namespace

OutputFile::OutputFile(std::filesystem::path path) : OutputFile(std::move(path), Options{}) {}

OutputFile::OutputFile(std::filesystem::path path, Options options) : path_(std::move(path)) {
  if (path_.empty()) throw OutputError("cannot open a trace file with an empty name");
  struct stat st {};
  in_place_ = ::stat(path_.c_str(), &st) == 0 && !S_ISREG(st.st_mode);
  if (in_place_ && S_ISDIR(st.st_mode)) {
    throw OutputError(fmt::format("cannot write trace file '{}': it is a directory", path_.string()));
  }
  partial_path_ = in_place_ ? path_ : std::filesystem::path(path_.string() + ".partial");
  const int flags = O_WRONLY | O_CLOEXEC | (in_place_ ? 0 : O_CREAT | O_TRUNC);
  fd_ = ::open(partial_path_.c_str(), flags, 0666);
  if (fd_ < 0) {
    const int error = errno;
    throw OutputError(in_place_ ? fmt::format("cannot open trace file '{}' for writing: {}", path_.string(),
                                                     os_error(error))
                                       : fmt::format("cannot open trace file '{}' for writing (creating '{}'): {}",
                                                     path_.string(), partial_path_.string(), os_error(error)));
  }
  capacity_ = std::max<std::size_t>(options.buffer_bytes, 4096);
  buffer_ = std::make_unique<char[]>(capacity_);
  if (options.compression == Compression::kGzip) {
    gzip_ = std::make_unique<Gzip>();
    // windowBits 15 + 16: a gzip header and trailer around the deflate stream.
    const int level = std::clamp(options.gzip_level, 1, 9);
    if (deflateInit2(&gzip_->stream, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
      discard();
      throw OutputError(fmt::format("cannot start gzip compression for trace file '{}'", path_.string()));
    }
    gzip_->initialised = true;
    gzip_->out_capacity = capacity_;
    gzip_->out = std::make_unique<char[]>(gzip_->out_capacity);
  }
}

OutputFile::~OutputFile() { discard(); }

void OutputFile::check_open(const char* what) const {
  if (state_ == State::kOpen) return;
  if (state_ == State::kCommitted) {
    throw std::logic_error(fmt::format("trace file '{}': {} after commit()", path_.string(), what));
  }
  throw OutputError(
      fmt::format("writing trace file '{}' failed earlier; {} is not possible", path_.string(), what));
}

void OutputFile::fail(const char* what, int error) {
  discard();
  state_ = State::kFailed;
  throw OutputError(fmt::format("{} trace file '{}' failed: {}", what, path_.string(), os_error(error)));
}

void OutputFile::write_fd(const char* data, std::size_t size) {
  while (size > 0) {
    const ssize_t n = ::write(fd_, data, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail("writing", errno);
    }
    if (n == 0) fail("writing", EIO);
    data += n;
    size -= static_cast<std::size_t>(n);
  }
}

void OutputFile::flush_buffer(bool finish) {
  if (!gzip_) {
    write_fd(buffer_.get(), used_);
    used_ = 0;
    return;
  }
  z_stream& z = gzip_->stream;
  z.next_in = reinterpret_cast<Bytef*>(buffer_.get());
  z.avail_in = static_cast<uInt>(used_);
  const int flush = finish ? Z_FINISH : Z_NO_FLUSH;
  for (;;) {
    z.next_out = reinterpret_cast<Bytef*>(gzip_->out.get());
    z.avail_out = static_cast<uInt>(gzip_->out_capacity);
    const int rc = deflate(&z, flush);
    if (rc == Z_STREAM_ERROR) fail("compressing", 0);
    write_fd(gzip_->out.get(), gzip_->out_capacity - z.avail_out);
    if (finish ? rc == Z_STREAM_END : (z.avail_in == 0 && z.avail_out != 0)) break;
  }
  used_ = 0;
}

void OutputFile::write_slow(const char* data, std::size_t size) {
  check_open("writing");
  bytes_in_ += size;
  while (size > 0) {
    if (used_ == capacity_) flush_buffer(false);
    const std::size_t n = std::min(size, capacity_ - used_);
    std::memcpy(buffer_.get() + used_, data, n);
    used_ += n;
    data += n;
    size -= n;
  }
}

void OutputFile::commit() {
  if (state_ == State::kCommitted) return;
  check_open("commit()");
  flush_buffer(gzip_ != nullptr);
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) {
    const int error = errno;
    fail("closing", error);
  }
  if (!in_place_ && std::rename(partial_path_.c_str(), path_.c_str()) != 0) {
    const int error = errno;
    fail("renaming the finished", error);
  }
  state_ = State::kCommitted;
  capacity_ = 0;  // later writes take the slow path, which reports the misuse
  used_ = 0;
  gzip_.reset();
}

void OutputFile::discard() noexcept {
  if (state_ != State::kOpen) return;
  state_ = State::kDiscarded;
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  if (!in_place_) ::unlink(partial_path_.c_str());
  capacity_ = 0;
  used_ = 0;
}

}  // namespace syntorch::trace
