#pragma once
// torch.compile as Inductor runs a graph on a GPU: the ops of a compiled region are recorded, not
// launched, with the buffers each reads and writes; when the region ends (or must show the device
// its work: a value read, a collective, a copy) its chains of elementwise ops and reductions become
// one generated kernel each, reading each input and writing each output that outlives the chain
// once, while matrix products, attention and convolutions stay the library calls eager mode makes.
// A compiled graph also skips eager mode's per-op framework dispatch: each kernel it launches costs
// one launch from its wrapper code, and views cost nothing.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "syntorch/runtime/op.hpp"
#include "syntorch/torch/tensor.hpp"

namespace syntorch::torch::compile {

// How an op's kernels take part in fusion: library calls stay as they are; pointwise kernels fuse
// with anything next to them; a reduction ends the kernel before it (one reduction per generated
// kernel, its pointwise prologue and epilogue fused around it).
enum class FusionRole : std::uint8_t { library, pointwise, reduction };
FusionRole fusion_role(runtime::OpKind kind);

// A tensor an op reads or writes: its buffer (one device allocation, numbered by the region),
// where in it, and its bytes (of the elements it really holds: a broadcast view's are fewer).
struct BufferUse {
  std::uint32_t buffer = 0;
  std::int64_t offset = 0;
  std::uint64_t bytes = 0;
  std::uint64_t elements = 0;
  bool operator==(const BufferUse&) const = default;
};

// One op the region recorded: the kernels eager mode launches for it, and its tensors. An opaque
// one is launches no recorded op claimed (an op that does not report itself, the autograd
// engine's casts): they stay as they are, and may read any buffer alive when they ran. A library
// one stays as it is too, with its tensors known (gradient accumulation into leaves).
struct RecordedOp {
  std::string name;  // "add", "native_layer_norm" (ATen's, as kernel names spell them)
  std::vector<runtime::OpDesc> kernels;
  std::vector<std::string> kernel_names;
  std::vector<BufferUse> reads, writes;
  bool opaque = false;
  bool library = false;
};

// What the region knows of a buffer when it plans: made inside the region (else it was there
// before: an input, a weight, a cache), and released since (an intermediate nothing holds), when
// `released_at` ops had been recorded (an opaque op at that index or before may have read it).
struct BufferState {
  bool made_here = false;
  bool released = false;
  std::size_t released_at = 0;
};

// One launch of a compiled graph: a library kernel as eager mode launches it, or a generated one
// (ops > 1 or a fused OpDesc) named as Inductor names them ("triton_poi_fused_add_mul_0").
struct PlannedLaunch {
  runtime::OpDesc op;
  std::string name;
  bool generated = false;
  std::size_t fused_ops = 0;  // recorded ops it covers (generated kernels)
};

struct FusionOptions {
  // Ops in one generated kernel (Inductor's max_fusion_size); 0: no fusion, every kernel as eager
  // mode launches it (the cudagraphs backend).
  std::size_t max_fusion_size = 64;
};

// The launches of `ops` once fused. `kernel_index` numbers generated kernels within the graph
// (advanced). An op's output is written out when an op outside its kernel reads it, when its
// buffer was there before the region, or when its buffer is not released (the program or
// autograd still holds it), or when an opaque op may read it; otherwise the kernel does not write
// it (its memory is still allocated and freed as in eager mode: the region moves fewer bytes, it
// plans no memory).
std::vector<PlannedLaunch> plan_fusion(std::span<const RecordedOp> ops, std::span<const BufferState> buffers,
                                       std::uint32_t& kernel_index, const FusionOptions& options = {});

// The host's cost of compiling a graph (TorchDynamo's trace, AOTAutograd, Inductor's lowering and
// Triton's code generation), charged on the first call of each graph.
struct CompileCosts {
  double per_graph_s = 0.8;    // fixed: tracing, guards, partitioning, the wrapper's code
  double per_op_s = 0.004;     // each traced op
  double per_kernel_s = 0.03;  // each generated kernel (Triton's compile, in parallel workers)
};

// How a region launches its graph. cuda_graph: record (capture the launches as a CUDA graph, then
// launch it) or replay (launch `graph` instead of the kernels, as cudagraph trees replay):
// torch.compile's mode="reduce-overhead".
struct RegionOptions {
  std::uint64_t graph_id = 0;  // the compiled graph (its backward nodes carry it); not 0
  std::string graph_name;      // for the trace's compile span
  bool compiling = false;      // the first call: charge the compile
  CompileCosts costs;
  FusionOptions fusion;
  enum class CudaGraph : std::uint8_t { none, record, replay } cuda_graph = CudaGraph::none;
  std::uint64_t replay_graph = 0;
  std::uint64_t replay_plan_hash = 0;  // the recorded plan's hash: another plan launches as it is
};

// What one region did, for the caller (guards, caches, reports).
struct RegionStats {
  std::size_t segments = 0;         // flushes that launched something (1 without graph breaks)
  std::size_t graphs = 0;           // graphs launched: the first, and one after each graph break
  std::size_t device_flushes = 0;   // flushes for device work that must stay in order (a copy, an event)
  std::size_t ops = 0;              // recorded ops with kernels
  std::size_t eager_kernels = 0;    // what eager mode would have launched
  std::size_t launched_kernels = 0;
  std::size_t generated_kernels = 0;
  double compile_s = 0;
  std::uint64_t cuda_graph = 0;     // the graph recorded (CudaGraph::record)
  bool replayed = false;            // CudaGraph::replay: the graph was launched (its plan matched)
  std::uint64_t plan_hash = 0;      // of the last segment's launches: what a replay must match
  std::vector<std::string> break_reasons;  // the graph breaks the front end reported
};

// Begins a compiled region on this thread's rank (no-op outside a simulation: nothing launches).
// Regions do not nest: a compiled function called inside another's region runs in it.
void begin_region(const RegionOptions& options);
// Flushes the region with `reason` (a graph break the front end saw, a value read).
void graph_break(const std::string& reason);
// A graph break around code that runs eagerly (torch.compiler.disable): suspend flushes the
// region and takes it off the rank until resume.
void suspend_region(const std::string& reason);
void resume_region();
// The serial of this thread's rank (0 outside a simulation): what compiled state is kept per.
std::uint64_t rank_serial();
// Ends it: plans, compiles (when compiling), launches.
RegionStats end_region();
// Whether a forward region is active (and not suspended) on this thread.
bool in_region();

// The graph whose region is active (0: none): what backward nodes recorded now carry.
std::uint64_t current_graph();
// For the autograd engine: runs the nodes of compiled graph `graph` (0: an eager node) as that
// graph's backward region (one region per run of consecutive nodes of one graph; the first
// backward of each graph compiles). Launches made since the last node (the engine's gradient
// sums) stay as they are.
void backward_enter(std::uint64_t graph);
// Records one backward node's launches as an op of the active backward region (`fusible` false:
// they stay library calls, with their tensors known).
void backward_node(std::string_view name, std::span<const Tensor> reads, std::span<const Tensor> writes,
                   bool fusible = true);
// Ends the active backward region, if any (the engine's run ends).
void backward_leave();
// Whether a backward region is active (the engine then reports its nodes).
bool in_backward_region();

}  // namespace syntorch::torch::compile
