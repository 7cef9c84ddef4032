// Streams and events from the torch API down to the hardware: work on two streams overlaps and
// shares the device, event waits hold work back, and the host blocks on events and streams.

#include <gtest/gtest.h>

#include <functional>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "syntorch/hw/machine.hpp"
#include "syntorch/parallel/distributed.hpp"
#include "syntorch/runtime/engine.hpp"
#include "syntorch/torch/cuda.hpp"
#include "syntorch/torch/ops.hpp"
#include "syntorch/torch/utils.hpp"
#include "syntorch/trace/open_trace_writer.hpp"
#include "syntorch/trace/recorder.hpp"

namespace {

using namespace syntorch;
namespace cuda = syntorch::torch::cuda;

std::string config(const std::string& name) { return std::string(SYNTORCH_SOURCE_DIR) + "/hw_configs/" + name; }

enum class Work { gemm, allreduce, both_serial, both_overlapped };

// On 8 H100s with HBM slowed to 1 TB/s, so that both are bound by it: a memory-bound GEMM (a
// skinny decode-shaped product over a 1 GiB weight), a 1 GiB all-reduce (whose ring reads and
// writes each GPU's HBM as fast as NVLink carries it), or both, one after the other on the
// default stream or on two streams.
runtime::EngineResult run(Work work, trace::Recorder* recorder = nullptr) {
  const hw::Machine m =
      hw::Machine::load(config("dgx_h100.json"), {{"/components/gpu/components/hbm/bandwidth", "1 TB/s"}});
  runtime::EngineOptions options;
  options.recorder = recorder;
  runtime::Engine engine(m, {}, 8, options);
  return engine.run([&](runtime::RankContext&) {
    torch::DefaultDtypeGuard fp16(torch::kFloat16);
    const auto& st = parallel::initialize_model_parallel(8);
    torch::Tensor x = torch::empty({16, 16384});
    torch::Tensor w = torch::empty({16384, 32768});
    torch::Tensor grad = torch::empty({512, 1024, 1024});
    cuda::Stream comm;
    auto gemm = [&] { (void)torch::matmul(x, w); };
    auto allreduce = [&] { parallel::all_reduce(grad, st.tp_group); };
    switch (work) {
      case Work::gemm: gemm(); break;
      case Work::allreduce: allreduce(); break;
      case Work::both_serial:
        allreduce();
        gemm();
        break;
      case Work::both_overlapped: {
        comm.wait_stream(cuda::current_stream());
        {
          cuda::StreamGuard on_comm(comm);
          allreduce();
        }
        gemm();
        cuda::current_stream().wait_stream(comm);
        break;
      }
    }
    torch::cuda::synchronize();
  });
}

TEST(Streams, AGemmAndAnAllReduceOnTwoStreamsOverlapAndSlowEachOther) {
  const auto gemm = run(Work::gemm);
  const auto allreduce = run(Work::allreduce);
  const auto serial = run(Work::both_serial);
  const auto overlapped = run(Work::both_overlapped);
  const auto& g = gemm.ranks[0];
  const auto& a = allreduce.ranks[0];
  const auto& s = serial.ranks[0];
  const auto& o = overlapped.ranks[0];
  const sim::TimePs gemm_ps = g.memory_bound_ps + g.compute_bound_ps;
  ASSERT_GT(gemm_ps, 0u);
  ASSERT_GT(a.communication_ps, 0u);
  EXPECT_EQ(g.memory_bound_ps, gemm_ps) << "the GEMM is memory-bound";
  // One after the other, each takes its time alone.
  EXPECT_EQ(s.memory_bound_ps + s.compute_bound_ps, gemm_ps);
  EXPECT_EQ(s.communication_ps, a.communication_ps);
  // On two streams they overlap: the whole is shorter than the two in a row...
  EXPECT_LT(o.device_finish_ps, s.device_finish_ps);
  // ...and each is slower than alone: both read and write HBM, which they now share.
  EXPECT_GT(o.memory_bound_ps + o.compute_bound_ps, gemm_ps * 101 / 100);
  EXPECT_EQ(o.communication_ps, 0u) << "on the side stream, not the default one";
  EXPECT_GT(o.side_communication_ps, a.communication_ps * 101 / 100);
}

TEST(Streams, AStreamOfItsOwnIsATrackOfItsOwnInTheTrace) {
  const auto path = std::filesystem::temp_directory_path() / "syntorch_streams_trace.json";
  {
    trace::Recorder recorder;
    recorder.attach(trace::open_trace_writer(path));
    run(Work::both_overlapped, &recorder);
    recorder.finish();
  }
  std::ifstream in(path);
  const nlohmann::json j = nlohmann::json::parse(in);
  std::set<std::string> tracks;
  std::map<std::string, int> on_new_stream;  // span names on pid 1's new stream (stream 3, tid 5)
  for (const auto& e : j["traceEvents"]) {
    if (e.value("ph", "") == "M" && e.value("name", "") == "thread_name" && e.value("pid", -1) == 1) {
      tracks.insert(e["args"]["name"].get<std::string>());
    }
    if (e.value("ph", "") == "X" && e.value("pid", -1) == 1 && e.value("tid", -1) == 5) ++on_new_stream[e["name"]];
  }
  EXPECT_TRUE(tracks.count("stream 0")) << testing::PrintToString(tracks);
  EXPECT_TRUE(tracks.count("stream 3")) << testing::PrintToString(tracks);
  EXPECT_EQ(on_new_stream["allreduce"], 1) << testing::PrintToString(on_new_stream);
  std::filesystem::remove(path);
}

// On one H100: a long GEMM on the default stream, then a short op on a second stream, with or
// without waiting for an event recorded after the GEMM.
// A GEMM as one tiled kernel (no split-K): its few CTAs leave most SMs free for other streams.
runtime::EngineResult one_device(const std::function<void()>& program) {
  const hw::Machine m = hw::Machine::load(config("h100_sxm5_80gb.json"));
  Diagnostics d;
  runtime::Engine engine(m, runtime::KernelPolicy::parse("gemm=tiled", d), 1);
  return engine.run([&](runtime::RankContext&) {
    torch::DefaultDtypeGuard fp16(torch::kFloat16);
    program();
  });
}

TEST(Events, AStreamWaitingForAnEventRunsAfterTheWorkBeforeTheRecord) {
  auto program = [](bool wait) {
    return [wait] {
      torch::Tensor a = torch::empty({256, 65536});
      torch::Tensor b = torch::empty({65536, 256});
      torch::Tensor small = torch::empty({1024});
      cuda::Stream side;
      (void)torch::matmul(a, b);  // long, on a few SMs of the default stream
      cuda::Event done;
      done.record();
      if (wait) side.wait_event(done);
      {
        cuda::StreamGuard guard(side);
        EXPECT_EQ(cuda::current_stream(), side);
        (void)(small + small);
      }
      EXPECT_EQ(cuda::current_stream(), cuda::default_stream());
      torch::cuda::synchronize();
    };
  };
  const auto free = one_device(program(false));
  const auto waited = one_device(program(true));
  const auto& f = free.ranks[0];
  const auto& w = waited.ranks[0];
  EXPECT_EQ(f.kernels, 2u);
  EXPECT_EQ(w.kernels, 2u);
  // Without the wait the add runs beside the GEMM and the device is done when the GEMM is; with
  // it, the add starts only after the GEMM (plus its launch latency and kernel overhead).
  EXPECT_GT(w.device_finish_ps, f.device_finish_ps);
}

TEST(Events, TheHostBlocksOnAnEventOrAStreamUntilItsWorkIsDone) {
  sim::TimePs free_host = 0;
  for (int mode = 0; mode < 3; ++mode) {
    const auto r = one_device([mode] {
      torch::Tensor a = torch::empty({8192, 8192});
      (void)torch::matmul(a, a);
      cuda::Event e;
      e.record();
      if (mode == 1) e.synchronize();
      if (mode == 2) cuda::current_stream().synchronize();
    });
    const auto& rank = r.ranks[0];
    if (mode == 0) {
      free_host = rank.host_finish_ps;
      EXPECT_LT(rank.host_finish_ps, rank.device_finish_ps);  // the host ran ahead
      EXPECT_EQ(rank.host_blocked_ps, 0u);
    } else {
      EXPECT_GT(rank.host_blocked_ps, 0u) << mode;
      EXPECT_GE(rank.host_finish_ps, rank.device_finish_ps) << mode;
      EXPECT_GT(rank.host_finish_ps, free_host) << mode;
    }
  }
}

TEST(Streams, AnUnknownStreamIsAnError) {
  const hw::Machine m = hw::Machine::load(config("h100_sxm5_80gb.json"));
  runtime::Engine engine(m, {}, 1);
  EXPECT_THROW(engine.run([](runtime::RankContext& ctx) { ctx.set_stream(7); }), std::invalid_argument);
  runtime::Engine again(m, {}, 1);
  EXPECT_THROW(again.run([](runtime::RankContext& ctx) { ctx.wait_event(0, 3); }), std::invalid_argument);
}

}  // namespace
