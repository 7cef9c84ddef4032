#include "syntorch/trace/csv_writer.hpp"

#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "syntorch/trace/recorder.hpp"
#include "trace_test_util.hpp"

namespace syntorch::trace {
namespace {

using testing::kUs;
using testing::ScratchDir;
using testing::SimLikeTrace;

std::string sample_csv() {
  std::stringstream out;
  CsvWriter writer(out);
  Recorder rec;
  rec.attach(writer);
  SimLikeTrace sample;
  sample.write(rec);
  rec.finish();
  return out.str();
}

TEST(CsvWriter, OneRowPerKernelUnderTheHeader) {
  EXPECT_EQ(sample_csv(),
            "rank,track,name,op,impl,tile,start_us,duration_us,flops,hbm_bytes,bound\n"
            "0,stream 0,gemm_128x128,gemm,cutlass,128x128,2,2.5,1500000000.4,2500000,compute\n"
            "1,stream 0,gemm_128x128,gemm,cutlass,128x128,2,2.5,1500000000.4,2500000,compute\n");
}

TEST(CsvWriter, MissingArgsAreEmptyAndTimesAreExactMicroseconds) {
  std::stringstream out;
  CsvWriter writer(out);
  Recorder rec;
  rec.attach(writer);
  rec.add_process(trace::pid_of_rank(5), "rank 5");
  const TrackId s = rec.add_thread_track(trace::pid_of_rank(5), 2, "stream 1");
  // No "op" arg: the kernel is named after its op.
  rec.span(s, "softmax", "kernel", 1'234'567, 1'234'567 + 890, {{"flops", std::uint64_t{42}}});
  rec.span(s, "not a kernel", "memcpy", 0, 1);
  rec.finish();
  EXPECT_EQ(out.str(),
            "rank,track,name,op,impl,tile,start_us,duration_us,flops,hbm_bytes,bound\n"
            "5,stream 1,softmax,softmax,,,1.234567,0.00089,42,,\n");
  EXPECT_EQ(writer.rows_written(), 1u);
}

TEST(CsvWriter, FieldsWithCommasQuotesOrLineBreaksAreQuoted) {
  std::stringstream out;
  CsvWriter writer(out);
  Recorder rec;
  rec.attach(writer);
  rec.add_process(trace::pid_of_rank(0), "rank 0");
  const TrackId s = rec.add_thread_track(trace::pid_of_rank(0), 1, "stream, \"zero\"");
  rec.span(s, "gemm<128,64>", "kernel", 0, kUs, {{"impl", "say \"hi\"\nthere"}, {"tile", "plain"}});
  rec.finish();
  EXPECT_EQ(out.str(),
            "rank,track,name,op,impl,tile,start_us,duration_us,flops,hbm_bytes,bound\n"
            "0,\"stream, \"\"zero\"\"\",\"gemm<128,64>\",\"gemm<128,64>\",\"say \"\"hi\"\"\nthere\",plain,0,1,,,\n");
}

TEST(CsvWriter, AnEmptyTraceIsTheHeaderAlone) {
  std::stringstream out;
  CsvWriter writer(out);
  writer.begin();
  writer.finish();
  EXPECT_EQ(out.str(), std::string(CsvWriter::kHeader) + "\n");
}

TEST(CsvWriter, AFileAppearsOnlyAtFinish) {
  ScratchDir dir;
  {
    Recorder rec;
    rec.attach(std::make_unique<CsvWriter>(dir / "k.csv"));
    SimLikeTrace sample;
    sample.write(rec);
    EXPECT_EQ(dir.listing(), "k.csv.partial");
    rec.finish();
  }
  EXPECT_EQ(testing::read_file(dir / "k.csv"), sample_csv());
  {
    Recorder rec;
    rec.attach(std::make_unique<CsvWriter>(dir / "failed.csv"));
    SimLikeTrace sample;
    sample.write(rec);
  }
  EXPECT_EQ(dir.listing(), "k.csv");
}

}  // namespace
}  // namespace syntorch::trace
