#include "syntorch/torch/profiler.hpp"

#include <stdexcept>

#include "syntorch/runtime/rank_context.hpp"
#include "syntorch/torch/types.hpp"
#include "syntorch/torch/utils.hpp"

namespace syntorch::torch::profiler {

namespace {
runtime::RankContext& rank(const char* what) {
  runtime::RankContext* ctx = runtime::current_rank();
  if (!ctx) throw Error(std::string(what) + ": no simulation is running on this thread");
  return *ctx;
}
}  // namespace

std::uint64_t start_window(const std::string& path) {
  runtime::RankContext& ctx = rank("profiler start");
  try {
    return ctx.trace_window_begin(path);
  } catch (const std::logic_error& e) {
    throw Error(e.what());
  }
}

std::string stop_window(std::uint64_t window) {
  runtime::RankContext& ctx = rank("profiler stop");
  try {
    return ctx.trace_window_end(window);
  } catch (const std::logic_error& e) {
    throw Error(e.what());
  }
}

}  // namespace syntorch::torch::profiler

namespace syntorch::torch {

HostWorkElsewhereGuard::HostWorkElsewhereGuard() : context_(runtime::current_rank()) {
  if (context_) previous_ = context_->set_host_work_elsewhere(true);
}
HostWorkElsewhereGuard::~HostWorkElsewhereGuard() {
  if (context_) context_->set_host_work_elsewhere(previous_);
}

}  // namespace syntorch::torch
