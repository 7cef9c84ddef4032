#include "syntorch/trace/output_file.hpp"

#include <gtest/gtest.h>

#include <csignal>
#include <functional>
#include <sstream>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>
#include <sys/resource.h>
#include <unistd.h>
#include <zlib.h>

#include "syntorch/trace/chrome_json_writer.hpp"
#include "syntorch/trace/recorder.hpp"
#include "trace_test_util.hpp"

namespace syntorch::trace {
namespace {

using testing::read_file;
using testing::ScratchDir;
using testing::SimLikeTrace;

std::string gunzip(const std::filesystem::path& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  EXPECT_NE(f, nullptr);
  if (f == nullptr) return {};
  EXPECT_EQ(gzdirect(f), 0) << path << " is not gzip";
  std::string out;
  char buf[4096];
  int n;
  while ((n = gzread(f, buf, sizeof buf)) > 0) out.append(buf, static_cast<std::size_t>(n));
  EXPECT_EQ(n, 0);
  gzclose(f);
  return out;
}

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected a std::runtime_error";
  return {};
}

TEST(OutputFile, WritesAPartialFileAndRenamesItAtCommit) {
  ScratchDir dir;
  OutputFile f(dir / "a.txt");
  EXPECT_EQ(f.partial_path(), dir / "a.txt.partial");
  f.write("hello ");
  f.write(std::string(300'000, 'x'));  // more than the buffer
  EXPECT_EQ(dir.listing(), "a.txt.partial");
  f.commit();
  EXPECT_TRUE(f.committed());
  EXPECT_EQ(dir.listing(), "a.txt");
  EXPECT_EQ(read_file(dir / "a.txt"), "hello " + std::string(300'000, 'x'));
  EXPECT_EQ(f.bytes_in(), 300'006u);
  f.commit();  // a second commit does nothing
  EXPECT_EQ(dir.listing(), "a.txt");
}

TEST(OutputFile, DestroyedWithoutCommitLeavesNeitherName) {
  ScratchDir dir;
  testing::write_file(dir / "a.txt", "the previous run's file");
  {
    OutputFile f(dir / "a.txt");
    f.write(std::string(1 << 20, 'y'));
  }
  // The old file is untouched: a failed run does not destroy the last good trace.
  EXPECT_EQ(dir.listing(), "a.txt");
  EXPECT_EQ(read_file(dir / "a.txt"), "the previous run's file");
  {
    OutputFile f(dir / "b.txt");
    f.write("z");
    f.discard();
    EXPECT_THROW(f.write(std::string(1 << 20, 'z')), std::runtime_error);
  }
  EXPECT_EQ(dir.listing(), "a.txt");
}

TEST(OutputFile, CommitReplacesAnOlderFile) {
  ScratchDir dir;
  testing::write_file(dir / "a.txt", "old");
  OutputFile f(dir / "a.txt");
  f.write("new");
  f.commit();
  EXPECT_EQ(read_file(dir / "a.txt"), "new");
}

TEST(OutputFile, AMissingDirectoryThrowsNamingThePathAndTheOsError) {
  ScratchDir dir;
  const auto path = dir / "no-such-dir" / "t.json";
  const std::string what = message_of([&] { OutputFile f(path); });
  EXPECT_NE(what.find(path.string()), std::string::npos) << what;
  EXPECT_NE(what.find("No such file or directory"), std::string::npos) << what;
}

TEST(OutputFile, AFileInPlaceOfTheDirectoryThrows) {
  ScratchDir dir;
  testing::write_file(dir / "plain", "x");
  const auto path = dir / "plain" / "t.json";
  const std::string what = message_of([&] { OutputFile f(path); });
  EXPECT_NE(what.find(path.string()), std::string::npos) << what;
  EXPECT_NE(what.find("Not a directory"), std::string::npos) << what;
  EXPECT_EQ(dir.listing(), "plain");
}

TEST(OutputFile, AnUnwritableDirectoryThrows) {
  if (::geteuid() == 0) GTEST_SKIP() << "root may write anywhere";
  ScratchDir dir;
  std::filesystem::create_directory(dir / "ro");
  std::filesystem::permissions(dir / "ro", std::filesystem::perms::owner_read | std::filesystem::perms::owner_exec);
  const std::string what = message_of([&] { OutputFile f(dir / "ro" / "t.json"); });
  std::filesystem::permissions(dir / "ro", std::filesystem::perms::owner_all);
  EXPECT_NE(what.find("Permission denied"), std::string::npos) << what;
}

TEST(OutputFile, AFullDeviceThrowsNamingThePathAndTheOsError) {
  if (!std::filesystem::exists("/dev/full")) GTEST_SKIP() << "no /dev/full";
  OutputFile f("/dev/full");
  EXPECT_EQ(f.partial_path(), "/dev/full");  // a device is written in place
  f.write("some bytes");
  const std::string what = message_of([&] { f.commit(); });
  EXPECT_NE(what.find("/dev/full"), std::string::npos) << what;
  EXPECT_NE(what.find("No space left on device"), std::string::npos) << what;
  // Later writes report the earlier failure.
  const std::string again = message_of([&] { f.write(std::string(1 << 20, 'x')); });
  EXPECT_NE(again.find("failed earlier"), std::string::npos) << again;
}

TEST(OutputFile, AWriteErrorMidStreamThrowsAtOnce) {
  if (!std::filesystem::exists("/dev/full")) GTEST_SKIP() << "no /dev/full";
  OutputFile::Options small;
  small.buffer_bytes = 4096;
  OutputFile f("/dev/full", small);
  EXPECT_THROW(f.write(std::string(10'000, 'x')), std::runtime_error);
}

TEST(OutputFile, DevNullIsWrittenInPlace) {
  // A special file is written through its own name: no "/dev/null.partial" is made beside it
  // (nor could be, as a user without write access to /dev), and committing renames nothing.
  const auto before = std::filesystem::status("/dev/null").type();
  ASSERT_EQ(before, std::filesystem::file_type::character);
  {
    OutputFile f("/dev/null");
    EXPECT_FALSE(std::filesystem::exists("/dev/null.partial"));
    f.write(std::string(100'000, 'x'));  // past the buffer: real writes reach the device
    EXPECT_NO_THROW(f.commit());
  }
  EXPECT_FALSE(std::filesystem::exists("/dev/null.partial"));
  EXPECT_EQ(std::filesystem::status("/dev/null").type(), std::filesystem::file_type::character);
  // Destroyed without commit, a special file is left alone too (nothing to remove).
  { OutputFile g("/dev/null"); g.write("discarded"); }
  EXPECT_EQ(std::filesystem::status("/dev/null").type(), std::filesystem::file_type::character);
}

TEST(OutputFile, GzipOutputDecompressesToTheBytesWritten) {
  ScratchDir dir;
  OutputFile::Options gz;
  gz.compression = OutputFile::Compression::kGzip;
  gz.buffer_bytes = 8192;  // several deflate rounds
  std::string expected;
  {
    OutputFile f(dir / "a.gz", gz);
    for (int i = 0; i < 20'000; ++i) {
      const std::string line = fmt::format("line {} of a fairly repetitive text\n", i);
      f.write(line);
      expected += line;
    }
    f.commit();
  }
  EXPECT_EQ(gunzip(dir / "a.gz"), expected);
  EXPECT_LT(std::filesystem::file_size(dir / "a.gz") * 4, expected.size());
}

TEST(ChromeJsonWriter, AGzPathWritesGzipThatDecompressesToTheSameDocument) {
  ScratchDir dir;
  std::stringstream plain;
  {
    ChromeJsonWriter writer(plain);
    Recorder rec;
    rec.attach(writer);
    SimLikeTrace sample;
    sample.write(rec);
    rec.finish();
  }
  {
    Recorder rec;
    rec.attach(ChromeJsonWriter::open(dir / "t.json.gz"));
    SimLikeTrace sample;
    sample.write(rec);
    EXPECT_EQ(dir.listing(), "t.json.gz.partial");
    rec.finish();
  }
  EXPECT_EQ(dir.listing(), "t.json.gz");
  const std::string text = gunzip(dir / "t.json.gz");
  EXPECT_EQ(text, plain.str());
  const nlohmann::json doc = nlohmann::json::parse(text);
  EXPECT_GT(doc.at("traceEvents").size(), 20u);
}

TEST(ChromeJsonWriter, AStreamInAFailedStateThrowsAtTheFirstEvent) {
  std::stringstream out;
  out.setstate(std::ios::failbit);
  ChromeJsonWriter writer(out);
  Recorder rec;
  rec.attach(writer);
  EXPECT_THROW(rec.add_process(0, "p"), std::runtime_error);
}

TEST(ChromeJsonWriter, AFullDeviceThrowsAtFinishNamingIt) {
  if (!std::filesystem::exists("/dev/full")) GTEST_SKIP() << "no /dev/full";
  Recorder rec;
  rec.attach(ChromeJsonWriter::open("/dev/full"));
  rec.add_process(0, "p");
  const std::string what = message_of([&] { rec.finish(); });
  EXPECT_NE(what.find("/dev/full"), std::string::npos) << what;
  EXPECT_NE(what.find("No space left on device"), std::string::npos) << what;
}

// Regular files larger than RLIMIT_FSIZE fail to write (EFBIG) once SIGXFSZ is ignored: a
// stand-in for a full disk.
class FileSizeLimit {
 public:
  explicit FileSizeLimit(rlim_t bytes) {
    ::getrlimit(RLIMIT_FSIZE, &saved_);
    old_handler_ = std::signal(SIGXFSZ, SIG_IGN);
    rlimit limit = saved_;
    limit.rlim_cur = bytes;
    ::setrlimit(RLIMIT_FSIZE, &limit);
  }
  FileSizeLimit(const FileSizeLimit&) = delete;
  FileSizeLimit& operator=(const FileSizeLimit&) = delete;
  ~FileSizeLimit() {
    ::setrlimit(RLIMIT_FSIZE, &saved_);
    std::signal(SIGXFSZ, old_handler_);
  }

 private:
  rlimit saved_{};
  void (*old_handler_)(int) = nullptr;
};

TEST(ChromeJsonWriter, AWriteErrorMidRunThrowsAndRemovesThePartialFile) {
  ScratchDir dir;
  const auto path = dir / "t.json";
  std::string what;
  {
    const FileSizeLimit limit(64 << 10);
    Recorder rec;
    rec.attach(ChromeJsonWriter::open(path));
    rec.add_process(0, "p");
    const TrackId t = rec.add_thread_track(0, 1, "t");
    try {
      for (int i = 0; i < 100'000; ++i) rec.span(t, "a span with a longish name", "cat", i, i + 1);
    } catch (const std::runtime_error& e) {
      what = e.what();
    }
    EXPECT_EQ(dir.listing(), "");  // gone at once, not only when the writer is destroyed
  }
  EXPECT_NE(what.find(path.string()), std::string::npos) << what;
  EXPECT_NE(what.find("File too large"), std::string::npos) << what;
  EXPECT_EQ(dir.listing(), "");
}

TEST(OutputFile, AFailedCommitLeavesNeitherName) {
  ScratchDir dir;
  {
    const FileSizeLimit limit(16 << 10);
    OutputFile f(dir / "t.bin");
    f.write(std::string(100'000, 'x'));  // fails at the first flush, in commit()
    EXPECT_THROW(f.commit(), std::runtime_error);
    EXPECT_FALSE(f.committed());
  }
  EXPECT_EQ(dir.listing(), "");
}

}  // namespace
}  // namespace syntorch::trace
