// What the host pays around device memory and copies, in a whole run: pinned and pageable copies,
// cudaMalloc and cudaFree with the caching allocator on and off, host work done elsewhere (a
// DataLoader's workers), the meta device, and profiler windows of a rank's trace.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>

#include <nlohmann/json.hpp>

#include "syntorch/session/run.hpp"
#include "syntorch/torch/torch.hpp"

namespace {

using namespace syntorch;

session::RunOptions h100() {
  session::RunOptions o;
  o.hw = std::string(SYNTORCH_SOURCE_DIR) + "/hw_configs/h100_sxm5_80gb.json";
  return o;
}

// The host's clock after copying 256 MiB to the device (behind a busy device when `busy`).
double host_after_copy(bool pinned, bool non_blocking, bool busy, double* total_s = nullptr) {
  session::Run run(h100());
  run.attach();
  torch::Tensor w = torch::randn({busy ? 4096 : 16, busy ? 4096 : 16});
  const torch::Tensor batch =
      torch::empty({64, 1 << 20}, torch::TensorOptions(torch::kFloat32).device(torch::kCPU).pinned_memory(pinned));
  EXPECT_EQ(batch.is_pinned(), pinned);
  for (int i = 0; busy && i < 4; ++i) w = torch::matmul(w, w);
  (void)batch.to(torch::kCUDA, non_blocking);
  const double host_s = torch::clock::now_s();
  torch::cuda::synchronize();
  const double total = run.finish().simulated_time_s;
  if (total_s) *total_s = total;
  return host_s;
}

TEST(HostMemory, APinnedNonBlockingCopyOverlapsTheHostAndAPageableOneIsStaged) {
  const double async_host = host_after_copy(true, true, true);
  const double sync_host = host_after_copy(true, false, true);
  EXPECT_LT(async_host + 0.005, sync_host);  // the host went on while the copy waited for the busy device
  double pinned_total = 0, pageable_total = 0;
  host_after_copy(true, false, false, &pinned_total);
  const double pageable_host = host_after_copy(false, true, false, &pageable_total);
  // 256 MiB staged by the host at 20 GB/s before the DMA: about 13 ms more.
  EXPECT_GT(pageable_total, pinned_total + 0.010);
  EXPECT_GT(pageable_host, 0.010);
}

TEST(HostMemory, PinMemoryIsForHostTensorsAndCopiesOnce) {
  session::Run run(h100());
  run.attach();
  const torch::Tensor host = torch::empty({1024}, torch::TensorOptions().device(torch::kCPU));
  const torch::Tensor pinned = host.pin_memory();
  EXPECT_TRUE(pinned.is_pinned());
  EXPECT_EQ(pinned.pin_memory().unsafe_get_impl(), pinned.unsafe_get_impl());  // already pinned: itself
  EXPECT_THROW((void)torch::empty({4}).pin_memory(), torch::Error);
  EXPECT_THROW((void)torch::empty({4}, torch::TensorOptions().pinned_memory(true)), torch::Error);  // on the device
  EXPECT_TRUE(pinned.narrow(0, 0, 8).is_pinned());  // a view of pinned memory is pinned
  {
    const torch::Tensor gone = torch::empty({8}, torch::TensorOptions().device(torch::kCPU).pinned_memory(true));
  }
  // A tensor made from a recycled implementation is pageable again.
  EXPECT_FALSE(torch::empty({8}, torch::TensorOptions().device(torch::kCPU)).is_pinned());
  EXPECT_FALSE(torch::empty({8}).to(torch::kCPU).is_pinned());
  run.finish();
}

double training_time(bool caching, os::AllocatorStats* stats) {
  session::Run run(h100());
  run.attach();
  torch::cuda::set_caching_allocator(caching);
  for (int step = 0; step < 3; ++step) {
    const torch::Tensor x = torch::randn({512, 1024});
    const torch::Tensor w = torch::randn({1024, 1024});
    (void)torch::gelu(torch::matmul(x, w));
  }
  *stats = torch::cuda::memory_stats();
  return run.finish().simulated_time_s;
}

TEST(HostMemory, WithoutTheCachingAllocatorEveryTensorIsACudaMallocAndAWaitingCudaFree) {
  os::AllocatorStats cached, uncached;
  const double t_cached = training_time(true, &cached);
  const double t_uncached = training_time(false, &uncached);
  EXPECT_EQ(uncached.device_allocations, uncached.allocations);
  EXPECT_LT(cached.device_allocations, cached.allocations);
  EXPECT_GT(uncached.device_frees, 6u);
  EXPECT_EQ(cached.device_frees, 0u);
  // 12 tensors' cudaMalloc at 50 us, and a cudaFree each that first waits for the device.
  EXPECT_GT(t_uncached, t_cached + 12 * 50e-6);
}

TEST(HostMemory, PeaksRestartFromWhatIsInUse) {
  session::Run run(h100());
  run.attach();
  {
    const torch::Tensor big = torch::empty({64 << 20}, torch::kInt8);
    EXPECT_GE(torch::cuda::max_memory_allocated(), std::uint64_t{64} << 20);
  }
  torch::cuda::reset_peak_memory_stats();
  EXPECT_EQ(torch::cuda::max_memory_allocated(), torch::cuda::memory_allocated());
  EXPECT_GE(torch::cuda::memory_stats().peak_allocated_bytes, std::uint64_t{64} << 20);  // the run's peak stays
  const auto props = torch::cuda::get_device_properties();
  EXPECT_EQ(props.multi_processor_count, 132u);
  EXPECT_TRUE(props.bf16);
  EXPECT_GT(props.total_memory_bytes, std::uint64_t{79} << 30);
  run.finish();
}

TEST(HostMemory, HostWorkElsewhereCostsTheHostNothing) {
  auto host_time = [](bool elsewhere) {
    session::Run run(h100());
    run.attach();
    {
      std::optional<torch::HostWorkElsewhereGuard> guard;
      if (elsewhere) guard.emplace();
      for (int i = 0; i < 8; ++i) {
        (void)torch::stack({torch::randn({3, 224, 224}, torch::TensorOptions().device(torch::kCPU)),
                            torch::randn({3, 224, 224}, torch::TensorOptions().device(torch::kCPU))});
      }
    }
    const double t = torch::clock::now_s();
    run.finish();
    return t;
  };
  EXPECT_LT(host_time(true) * 10, host_time(false));
}

TEST(HostMemory, MetaTensorsHaveNoMemoryNoKernelsAndNoData) {
  session::Run run(h100());
  run.attach();
  const torch::Tensor w = torch::empty({4096, 4096}, torch::TensorOptions().device(torch::kMeta));
  const torch::Tensor y = torch::matmul(w, w);
  EXPECT_TRUE(y.device().is_meta());
  EXPECT_EQ(torch::cuda::memory_allocated(), 0u);
  EXPECT_THROW((void)w.to(torch::kCUDA), torch::Error);
  EXPECT_THROW((void)torch::empty({1}, torch::TensorOptions().device(torch::kMeta)).item<double>(), torch::Error);
  EXPECT_THROW((void)torch::matmul(w, torch::empty({4096, 4096})), torch::Error);  // meta with cuda
  EXPECT_EQ(run.finish().kernels, 0u);
}

TEST(HostMemory, AProfilerWindowHoldsTheRanksEventsBetweenItsStartAndStop) {
  session::RunOptions o = h100();
  o.profiling = true;
  session::Run run(o);
  run.attach();
  const torch::Tensor a = torch::randn({1024, 1024});
  (void)torch::relu(a);  // before the window (and done before it: its kernel is not in it either)
  torch::cuda::synchronize();
  const auto path = std::filesystem::temp_directory_path() / "syntorch_profiler_window.json";
  const std::uint64_t window = torch::profiler::start_window(path.string());
  (void)torch::matmul(a, a);
  const std::string table = torch::profiler::stop_window(window);
  (void)torch::gelu(a);  // after it
  run.finish();
  std::set<std::string> ops;  // the host's op spans in the window's trace
  const nlohmann::json trace = nlohmann::json::parse(std::ifstream(path));
  for (const auto& e : trace["traceEvents"]) {
    if (e.value("ph", "") == "X" && e.value("cat", "") == "op") ops.insert(e.value("name", ""));
  }
  EXPECT_TRUE(ops.count("aten::matmul"));
  EXPECT_FALSE(ops.count("aten::relu"));
  EXPECT_FALSE(ops.count("aten::gelu"));
  EXPECT_NE(table.find("aten::matmul"), std::string::npos) << table;
  EXPECT_THROW(torch::profiler::stop_window(window), std::invalid_argument);  // closed already
  if (!HasFailure()) std::filesystem::remove(path);
}

TEST(HostMemory, ARunThatKeepsNoTraceCannotProfile) {
  session::Run run(h100());  // no trace, no console, not profiling
  run.attach();
  EXPECT_THROW(torch::profiler::start_window("x.json"), torch::Error);
  run.finish();
}

}  // namespace
