// torch::cuda and the trace-scope guard: thin calls into the current rank.

#include "syntorch/torch/cuda.hpp"

#include <algorithm>
#include <cmath>

#include "syntorch/base/diagnostics.hpp"
#include "syntorch/runtime/policy.hpp"
#include "syntorch/runtime/rank_context.hpp"
#include "syntorch/torch/types.hpp"
#include "syntorch/torch/utils.hpp"

namespace syntorch::torch {

namespace cuda {

void synchronize() {
  if (runtime::RankContext* ctx = runtime::current_rank()) ctx->synchronize("cuda::synchronize");
}

void replay_kernel(double duration_s, double flops, double bytes, std::string_view name) {
  if (runtime::RankContext* ctx = runtime::current_rank()) ctx->launch(runtime::replay_op(duration_s, flops, bytes), name);
}

namespace {
os::AllocatorStats stats() {
  const runtime::RankContext* ctx = runtime::current_rank();
  return ctx ? ctx->memory_stats() : os::AllocatorStats{};
}
}  // namespace

std::uint64_t memory_allocated() { return stats().allocated_bytes; }
std::uint64_t max_memory_allocated() { return stats().recent_peak_allocated_bytes; }
std::uint64_t memory_reserved() { return stats().reserved_bytes; }
std::uint64_t max_memory_reserved() { return stats().recent_peak_reserved_bytes; }
std::pair<std::uint64_t, std::uint64_t> mem_get_info() {
  const os::AllocatorStats s = stats();
  return {s.capacity_bytes - std::min(s.capacity_bytes, s.reserved_bytes), s.capacity_bytes};
}
os::AllocatorStats memory_stats() { return stats(); }
void reset_peak_memory_stats() {
  if (runtime::RankContext* ctx = runtime::current_rank()) ctx->reset_peak_memory_stats();
}
void set_caching_allocator(bool enabled) {
  if (runtime::RankContext* ctx = runtime::current_rank()) ctx->set_caching_allocator(enabled);
}
runtime::RankContext::DeviceProperties get_device_properties() {
  const runtime::RankContext* ctx = runtime::current_rank();
  return ctx ? ctx->device_properties() : runtime::RankContext::DeviceProperties{};
}
void empty_cache() {
  if (runtime::RankContext* ctx = runtime::current_rank()) ctx->empty_cache();
}

bool is_available() { return runtime::current_rank() != nullptr; }

void set_kernel_policy(const runtime::KernelPolicy& policy) {
  if (runtime::RankContext* ctx = runtime::current_rank()) ctx->set_policy(policy);
}

void set_kernel_policy(std::string_view text) {
  Diagnostics d;
  const runtime::KernelPolicy policy = runtime::KernelPolicy::parse(std::string(text), d, "policy");
  if (!d.empty()) throw InputError(std::move(d));
  set_kernel_policy(policy);
}

Stream::Stream() {
  if (runtime::RankContext* ctx = runtime::current_rank()) id_ = ctx->new_stream();
}

Stream Stream::default_stream() { return cuda::default_stream(); }

void Stream::wait_event(const Event& event) const {
  if (runtime::RankContext* ctx = runtime::current_rank()) ctx->wait_event(id_, event.id());
}

void Stream::wait_stream(const Stream& other) const { wait_event(other.record_event()); }

Event Stream::record_event() const {
  Event e;
  e.record(*this);
  return e;
}

void Stream::synchronize() const {
  if (runtime::RankContext* ctx = runtime::current_rank()) ctx->synchronize_stream(id_);
}

bool Stream::query() const {
  runtime::RankContext* ctx = runtime::current_rank();
  return ctx == nullptr || ctx->stream_idle(id_);
}

Stream current_stream() {
  runtime::RankContext* ctx = runtime::current_rank();
  return Stream(ctx ? ctx->current_stream() : 0);
}

Stream default_stream() { return Stream(0); }

void set_current_stream(const Stream& stream) {
  if (runtime::RankContext* ctx = runtime::current_rank()) ctx->set_stream(stream.id());
}

StreamGuard::StreamGuard(const Stream& stream) : previous_(current_stream()) { set_current_stream(stream); }
StreamGuard::~StreamGuard() { set_current_stream(previous_); }

void Event::record() { record(current_stream()); }

void Event::record(const Stream& stream) {
  if (runtime::RankContext* ctx = runtime::current_rank()) id_ = ctx->record_event(stream.id());
}

void Event::wait(const Stream& stream) const { stream.wait_event(*this); }

void Event::synchronize() const {
  if (runtime::RankContext* ctx = runtime::current_rank()) ctx->synchronize_event(id_);
}

bool Event::query() const {
  runtime::RankContext* ctx = runtime::current_rank();
  return ctx == nullptr || !std::isnan(ctx->event_time_s(id_));
}

double Event::elapsed_time(const Event& end) const {
  runtime::RankContext* ctx = runtime::current_rank();
  if (ctx == nullptr || id_ == 0 || end.id_ == 0) {
    throw Error("Event::elapsed_time: both events must be recorded in a simulation before the time between them "
                "can be read");
  }
  const double from_s = ctx->event_time_s(id_);
  const double to_s = ctx->event_time_s(end.id_);
  if (std::isnan(from_s) || std::isnan(to_s)) {
    throw Error("Event::elapsed_time: an event has not completed yet (cudaErrorNotReady); synchronize on it first");
  }
  return (to_s - from_s) * 1e3;
}

CUDAGraph::~CUDAGraph() {
  if (capturing_) {
    if (runtime::RankContext* ctx = runtime::current_rank()) ctx->graph_end();
  }
}

void CUDAGraph::capture_begin() {
  if (capturing_) throw Error("CUDAGraph::capture_begin: this graph is already capturing");
  capturing_ = true;
  if (runtime::RankContext* ctx = runtime::current_rank()) ctx->graph_begin();
}

void CUDAGraph::capture_end() {
  if (!capturing_) throw Error("CUDAGraph::capture_end: capture_begin was not called");
  capturing_ = false;
  if (runtime::RankContext* ctx = runtime::current_rank()) graph_ = ctx->graph_end();
}

void CUDAGraph::replay() {
  if (capturing_ || graph_ == 0) throw Error("CUDAGraph::replay: nothing captured yet (call capture_begin and capture_end)");
  if (runtime::RankContext* ctx = runtime::current_rank()) ctx->graph_launch(graph_);
}

}  // namespace cuda

RecordScope::RecordScope(std::string_view name) : context_(runtime::current_rank()) {
  if (context_) context_->scope_begin(name);
}

RecordScope::~RecordScope() {
  if (context_) context_->scope_end();
}

}  // namespace syntorch::torch
