#pragma once
// torch::cuda: device synchronisation and CUDA Graph capture on the current rank's device.

namespace syntorch::torch::cuda {

// Blocks the host until the device has finished all the work launched so far
// (RankContext::synchronize("cuda::synchronize")). Nothing outside a simulation.
void synchronize();

// Whether a simulated device is there to run on (a rank's program is running on this thread).
bool is_available();

// Captures the ops launched between capture_begin and capture_end into one CUDA graph. Our
// meaning: the captured ops pay no per-kernel launch and are issued together, as one graph
// launch, at capture_end (the capture and its replay folded into one). There is no replay(): to
// simulate N replays, capture N times.
// Invariant: capture_end follows capture_begin, once per capture; a graph destroyed mid-capture
// ends its capture.
class CUDAGraph {
 public:
  CUDAGraph() = default;
  ~CUDAGraph();
  CUDAGraph(const CUDAGraph&) = delete;
  CUDAGraph& operator=(const CUDAGraph&) = delete;

  void capture_begin();
  void capture_end();
  bool capturing() const { return capturing_; }

 private:
  bool capturing_ = false;
};

}  // namespace syntorch::torch::cuda
