// torch::cuda and the trace-scope guard: thin calls into the current rank.

#include "syntorch/torch/cuda.hpp"

#include "syntorch/runtime/rank_context.hpp"
#include "syntorch/torch/types.hpp"
#include "syntorch/torch/utils.hpp"

namespace syntorch::torch {

namespace cuda {

void synchronize() {
  if (runtime::RankContext* ctx = runtime::current_rank()) ctx->synchronize("cuda::synchronize");
}

bool is_available() { return runtime::current_rank() != nullptr; }

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
  if (runtime::RankContext* ctx = runtime::current_rank()) ctx->graph_end();
}

}  // namespace cuda

RecordScope::RecordScope(std::string_view name) : context_(runtime::current_rank()) {
  if (context_) context_->scope_begin(name);
}

RecordScope::~RecordScope() {
  if (context_) context_->scope_end();
}

}  // namespace syntorch::torch
