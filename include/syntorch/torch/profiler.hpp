#pragma once
// torch::profiler: a window of the current rank's trace, as torch.profiler.profile records one:
// its host ops, device work and memory from start to stop, written as a Chrome JSON trace, with
// a table of ops and kernels by name (count, total and mean time) for key_averages().

#include <cstdint>
#include <string>

namespace syntorch::torch::profiler {

// Opens a window whose trace goes to `path`; its id. Throws torch::Error outside a simulation,
// while capturing a graph, or when the file cannot be created.
std::uint64_t start_window(const std::string& path);
// Closes it after the device has finished what was launched (the host waits, as a profiler's stop
// synchronises); the trace is then complete on disk. Returns the window's summary table.
std::string stop_window(std::uint64_t window);

}  // namespace syntorch::torch::profiler
