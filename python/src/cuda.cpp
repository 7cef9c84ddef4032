// torch.cuda and torch.backends: streams, events, graphs, memory statistics and the allocator,
// synchronisation, device properties, and the attention backends' and matmul precision's
// switches; the simulated host clock; torch.profiler's trace windows.

#include "bindings.hpp"

namespace syntorch::python {

void bind_cuda(py::module_& m) {
  m.def("cuda_synchronize", [] { torch::cuda::synchronize(); });
  namespace cuda = torch::cuda;
  py::class_<cuda::Stream>(m, "_Stream")
      .def(py::init<>(), py::call_guard<RequireRun>())
      .def_property_readonly("id", &cuda::Stream::id)
      .def("__eq__", [](const cuda::Stream& a, const cuda::Stream& b) { return a == b; }, py::is_operator())
      .def("__hash__", [](const cuda::Stream& s) { return s.id(); })
      .def("wait_event", &cuda::Stream::wait_event, py::call_guard<RequireRun>())
      .def("wait_stream", &cuda::Stream::wait_stream, py::call_guard<RequireRun>())
      .def("record_event", &cuda::Stream::record_event, py::call_guard<RequireRun>())
      .def("synchronize", &cuda::Stream::synchronize, py::call_guard<RequireRun>())
      .def("query", &cuda::Stream::query, py::call_guard<RequireRun>());
  py::class_<cuda::Event>(m, "_Event")
      .def(py::init<>())
      .def("record", [](cuda::Event& e, std::optional<cuda::Stream> s) {
        if (s) {
          e.record(*s);
        } else {
          e.record();
        }
      }, py::arg("stream") = py::none(), py::call_guard<RequireRun>())
      .def("wait", [](const cuda::Event& e, std::optional<cuda::Stream> s) {
        e.wait(s.value_or(cuda::current_stream()));
      }, py::arg("stream") = py::none(), py::call_guard<RequireRun>())
      .def("synchronize", &cuda::Event::synchronize, py::call_guard<RequireRun>())
      .def("query", &cuda::Event::query, py::call_guard<RequireRun>())
      .def("elapsed_time", &cuda::Event::elapsed_time, py::call_guard<RequireRun>())
      .def_property_readonly("recorded", &cuda::Event::recorded);
  // The simulated host clock (syntorch.clock).
  m.def("clock_now_s", &torch::clock::now_s, py::call_guard<RequireRun>());
  m.def("clock_sleep_s", &torch::clock::sleep_s, py::call_guard<RequireRun>());
  m.def("clock_sleep_until_s", &torch::clock::sleep_until_s, py::call_guard<RequireRun>());
  m.def("current_stream", &cuda::current_stream);
  m.def("default_stream", [] { return cuda::default_stream(); });
  m.def("set_stream", &cuda::set_current_stream, py::call_guard<RequireRun>());

  py::class_<torch::cuda::CUDAGraph>(m, "CUDAGraph")
      .def(py::init<>())
      .def("capture_begin", &torch::cuda::CUDAGraph::capture_begin, py::call_guard<RequireRun>())
      .def("capture_end", &torch::cuda::CUDAGraph::capture_end, py::call_guard<RequireRun>())
      .def("replay", &torch::cuda::CUDAGraph::replay, py::call_guard<RequireRun>());
  m.def("cuda_memory_allocated", &torch::cuda::memory_allocated);
  m.def("cuda_max_memory_allocated", &torch::cuda::max_memory_allocated);
  m.def("cuda_memory_reserved", &torch::cuda::memory_reserved);
  m.def("cuda_max_memory_reserved", &torch::cuda::max_memory_reserved);
  m.def("cuda_empty_cache", &torch::cuda::empty_cache);
  // torch.profiler.profile's windows of this rank's trace.
  m.def("profiler_start_window", &torch::profiler::start_window, py::arg("path"), py::call_guard<RequireRun>());
  m.def("profiler_stop_window", &torch::profiler::stop_window, py::arg("window"), py::call_guard<RequireRun>());
  // Host work in another process (a DataLoader's workers): it costs this rank's host nothing.
  struct ElsewhereScope {
    std::optional<torch::HostWorkElsewhereGuard> guard;
  };
  py::class_<ElsewhereScope>(m, "_HostWorkElsewhere")
      .def(py::init<>())
      .def("__enter__", [](ElsewhereScope& s) { s.guard.emplace(); })
      .def("__exit__", [](ElsewhereScope& s, py::args) { s.guard.reset(); return false; });
  m.def("cuda_reset_peak_memory_stats", &torch::cuda::reset_peak_memory_stats);
  m.def("cuda_set_caching_allocator", &torch::cuda::set_caching_allocator, py::arg("enabled"));
  // The allocator's statistics by PyTorch's memory_stats() keys (the "all" pool).
  m.def("cuda_memory_stats", [] {
    const os::AllocatorStats s = torch::cuda::memory_stats();
    py::dict d;
    d["allocated_bytes.all.current"] = s.allocated_bytes;
    d["allocated_bytes.all.peak"] = s.recent_peak_allocated_bytes;
    d["reserved_bytes.all.current"] = s.reserved_bytes;
    d["reserved_bytes.all.peak"] = s.recent_peak_reserved_bytes;
    d["requested_bytes.all.current"] = s.requested_bytes;
    d["active_bytes.all.current"] = s.allocated_bytes;
    d["segment.all.current"] = s.segments;
    d["allocation.all.allocated"] = s.allocations;
    d["num_alloc_retries"] = 0;
    d["num_ooms"] = s.ooms;
    d["num_device_alloc"] = s.device_allocations;
    d["num_device_free"] = s.device_frees;
    d["num_cache_hits"] = s.cache_hits;
    return d;
  });
  m.def("cuda_device_properties", [] {
    const auto p = torch::cuda::get_device_properties();
    return py::make_tuple(p.name, p.total_memory_bytes, p.multi_processor_count, p.l2_cache_bytes, p.clock_hz, p.bf16);
  });
  // torch.backends.cuda's scaled_dot_product_attention switches, by PyTorch's names.
  static const std::map<std::string, torch::SdpBackend> kSdp{{"flash", torch::SdpBackend::flash},
                                                             {"mem_efficient", torch::SdpBackend::mem_efficient},
                                                             {"math", torch::SdpBackend::math},
                                                             {"cudnn", torch::SdpBackend::cudnn}};
  m.def("_set_sdp_enabled", [](const std::string& backend, bool enabled) { torch::set_sdp_enabled(kSdp.at(backend), enabled); });
  m.def("_sdp_enabled", [](const std::string& backend) { return torch::sdp_enabled(kSdp.at(backend)); });
  m.def("set_float32_matmul_precision", [](const std::string& p) { torch::set_float32_matmul_precision(p); },
        py::arg("precision"));
  m.def("get_float32_matmul_precision", [] { return std::string(torch::get_float32_matmul_precision()); });
}

}  // namespace syntorch::python
