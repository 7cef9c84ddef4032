// The fusion planner of compiled regions: which recorded ops share a generated kernel, and what
// each generated kernel reads and writes.

#include <fmt/format.h>

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "syntorch/torch/compile.hpp"

namespace syntorch::torch::compile {

using runtime::OpKind;

FusionRole fusion_role(OpKind kind) {
  switch (kind) {
    // Row-wise normalisations, softmax, reductions and scans: one per generated kernel.
    case OpKind::layernorm: case OpKind::rmsnorm: case OpKind::softmax: case OpKind::layernorm_backward:
    case OpKind::rmsnorm_backward: case OpKind::softmax_backward: case OpKind::batchnorm:
    case OpKind::batchnorm_backward: case OpKind::sum: case OpKind::amax: case OpKind::all: case OpKind::norm:
    case OpKind::cumsum: case OpKind::embedding_backward:
      return FusionRole::reduction;
    // Elementwise math, casts and copies, gathers and scatters (Inductor's indirect loads and
    // stores), the fused transformer pieces eager mode has kernels for.
    case OpKind::gelu: case OpKind::silu: case OpKind::relu: case OpKind::tanh: case OpKind::sigmoid:
    case OpKind::neg: case OpKind::dropout: case OpKind::exp: case OpKind::log: case OpKind::sqrt: case OpKind::rsqrt:
    case OpKind::pow: case OpKind::sin: case OpKind::cos: case OpKind::abs: case OpKind::polar: case OpKind::add:
    case OpKind::sub: case OpKind::mul: case OpKind::div: case OpKind::copy: case OpKind::rope: case OpKind::swiglu:
    case OpKind::gelu_backward: case OpKind::silu_backward: case OpKind::relu_backward: case OpKind::tanh_backward:
    case OpKind::sigmoid_backward: case OpKind::swiglu_backward: case OpKind::maximum: case OpKind::sign:
    case OpKind::round: case OpKind::leaky_relu: case OpKind::leaky_relu_backward: case OpKind::fused:
      return FusionRole::pointwise;
    // Matrix products, attention, convolutions, sorts, MoE routing, optimizers, communication; and
    // gathers and scatters (Inductor's indirect loads fuse, but their bytes are the rows they
    // touch, which their own kernels count, not the tables their buffers hold).
    default:
      return FusionRole::library;
  }
}

namespace {

FusionRole role_of(const RecordedOp& op) {
  if (op.opaque || op.library) return FusionRole::library;
  FusionRole role = FusionRole::pointwise;
  for (const runtime::OpDesc& k : op.kernels) {
    const FusionRole r = fusion_role(k.kind);
    if (r == FusionRole::library) return r;
    if (r == FusionRole::reduction) role = r;
  }
  return role;
}

// A place in a buffer; what it holds counts once, at the most bytes read or written there (a
// tensor read whole and as a broadcast view is read once).
using Place = std::pair<std::uint32_t, std::int64_t>;
struct PlaceHash {
  std::size_t operator()(const Place& p) const {
    return std::hash<std::uint64_t>{}((static_cast<std::uint64_t>(p.first) << 32) ^
                                      static_cast<std::uint64_t>(p.second) * 0x9e3779b97f4a7c15ULL);
  }
};
void note(std::unordered_map<Place, std::uint64_t, PlaceHash>& places, const BufferUse& u) {
  std::uint64_t& bytes = places[{u.buffer, u.offset}];
  bytes = std::max(bytes, u.bytes);
}

// The ops of one generated kernel being gathered.
class Group {
 public:
  bool empty() const { return ops_.empty(); }
  std::size_t size() const { return ops_.size(); }
  bool has_reduction() const { return reduction_; }
  // Whether `op` reads or writes a buffer the group touches (fusing unrelated ops would only
  // lengthen the kernel).
  bool connected(const RecordedOp& op) const {
    auto touches = [&](const BufferUse& u) { return touched_.count(u.buffer) != 0; };
    return std::any_of(op.reads.begin(), op.reads.end(), touches) ||
           std::any_of(op.writes.begin(), op.writes.end(), touches);
  }
  void add(std::size_t index, const RecordedOp& op, FusionRole role) {
    ops_.push_back(index);
    reduction_ = reduction_ || role == FusionRole::reduction;
    for (const BufferUse& u : op.reads) touched_.insert(u.buffer);
    for (const BufferUse& u : op.writes) touched_.insert(u.buffer);
  }
  std::span<const std::size_t> ops() const { return ops_; }
  void clear() {
    ops_.clear();
    touched_.clear();
    reduction_ = false;
  }

 private:
  std::vector<std::size_t> ops_;
  std::unordered_set<std::uint32_t> touched_;
  bool reduction_ = false;
};

}  // namespace

std::vector<PlannedLaunch> plan_fusion(std::span<const RecordedOp> ops, std::span<const BufferState> buffers,
                                       std::uint32_t& kernel_index, const FusionOptions& options) {
  // The last op with kernels that reads each buffer (views launch nothing and read nothing).
  std::unordered_map<std::uint32_t, std::size_t> last_read;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    if (ops[i].kernels.empty()) continue;
    for (const BufferUse& u : ops[i].reads) last_read[u.buffer] = i;
  }
  auto state = [&](std::uint32_t b) { return b < buffers.size() ? buffers[b] : BufferState{}; };
  std::vector<std::size_t> opaque;  // indexes of ops whose reads are unknown
  for (std::size_t i = 0; i < ops.size(); ++i) {
    if (ops[i].opaque) opaque.push_back(i);
  }
  // Whether an opaque op after `last` ran while `s`'s buffer was alive (it may have read it).
  auto opaque_reader = [&](std::size_t last, const BufferState& s) {
    auto it = std::upper_bound(opaque.begin(), opaque.end(), last);
    return it != opaque.end() && *it <= s.released_at;
  };

  std::vector<PlannedLaunch> out;
  auto as_they_are = [&](const RecordedOp& op) {
    for (std::size_t k = 0; k < op.kernels.size(); ++k) {
      PlannedLaunch p;
      p.op = op.kernels[k];
      p.name = k < op.kernel_names.size() ? op.kernel_names[k] : op.name;
      out.push_back(std::move(p));
    }
  };
  Group group;
  auto close = [&] {
    if (group.empty()) return;
    const std::size_t last = group.ops().back();
    std::unordered_set<std::uint32_t> written;  // buffers an earlier op of the kernel wrote
    std::unordered_map<Place, std::uint64_t, PlaceHash> inputs, outputs;
    std::vector<std::string> names;
    double flops = 0;
    std::uint64_t elements = 0;
    DType dtype = ops[group.ops().front()].kernels.front().dtype;
    for (std::size_t i : group.ops()) {
      const RecordedOp& op = ops[i];
      for (const BufferUse& u : op.reads) {
        if (!written.count(u.buffer)) note(inputs, u);
        elements = std::max(elements, u.elements);
      }
      for (const BufferUse& u : op.writes) {
        written.insert(u.buffer);
        elements = std::max(elements, u.elements);
        const BufferState s = state(u.buffer);
        auto reader = last_read.find(u.buffer);
        if (!s.made_here || !s.released || (reader != last_read.end() && reader->second > last) ||
            opaque_reader(last, s)) {
          note(outputs, u);
        }
      }
      for (const runtime::OpDesc& k : op.kernels) flops += runtime::op_flops(k);
      if (std::find(names.begin(), names.end(), op.name) == names.end()) names.push_back(op.name);
    }
    std::uint64_t read_bytes = 0, written_bytes = 0;
    for (const auto& [place, bytes] : inputs) read_bytes += bytes;
    for (const auto& [place, bytes] : outputs) written_bytes += bytes;
    if (elements > 0) {
      PlannedLaunch p;
      p.op.kind = OpKind::fused;
      p.op.dtype = dtype;
      p.op.elements = elements;
      p.op.bytes = read_bytes;
      p.op.written_bytes = written_bytes;
      p.op.ops = static_cast<std::uint64_t>(std::max(0.0, flops));
      // Inductor's names: triton_poi (pointwise) or triton_red (with a reduction), the ATen ops it
      // fuses (the first few), and the kernel's number in its graph.
      std::string fused;
      for (std::size_t n = 0; n < names.size() && n < 6; ++n) fused += fmt::format("_{}", names[n]);
      p.name = fmt::format("triton_{}_fused{}_{}", group.has_reduction() ? "red" : "poi", fused, kernel_index++);
      p.generated = true;
      p.fused_ops = group.size();
      out.push_back(std::move(p));
    } else {  // no device tensors seen: nothing to fuse by
      for (std::size_t i : group.ops()) as_they_are(ops[i]);
    }
    group.clear();
  };

  for (std::size_t i = 0; i < ops.size(); ++i) {
    const RecordedOp& op = ops[i];
    if (op.kernels.empty()) continue;
    const FusionRole role = options.max_fusion_size == 0 ? FusionRole::library : role_of(op);
    if (role == FusionRole::library) {
      close();
      as_they_are(op);
      continue;
    }
    if (!group.empty() && (!group.connected(op) || (role == FusionRole::reduction && group.has_reduction()) ||
                           group.size() >= options.max_fusion_size)) {
      close();
    }
    group.add(i, op, role);
  }
  close();
  return out;
}

}  // namespace syntorch::torch::compile
