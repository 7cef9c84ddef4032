#include "syntorch/parallel/parameter_sync.hpp"

#include <memory>
#include <unordered_map>

namespace syntorch::parallel {

namespace {
// A gather's parameters share one record: waiting for any of them waits for all of them.
struct Pending {
  torch::cuda::Event ready;
  bool waited = false;
};
// Per rank (each simulated rank runs on its own thread, as its parallel state does).
thread_local std::unordered_map<const void*, std::shared_ptr<Pending>> t_pending;

void wait_for(const torch::Tensor& p) {
  if (!p.defined()) return;
  const auto it = t_pending.find(p.unsafe_get_impl());
  if (it == t_pending.end()) return;
  if (!it->second->waited) {
    torch::cuda::current_stream().wait_event(it->second->ready);
    it->second->waited = true;
  }
  t_pending.erase(it);
}
}  // namespace

void set_parameters_pending(std::span<const torch::Tensor> params, const torch::cuda::Event& ready) {
  const auto record = std::make_shared<Pending>(Pending{ready, false});
  for (const torch::Tensor& p : params) {
    if (p.defined()) t_pending[p.unsafe_get_impl()] = record;
  }
}

void wait_for_parameters(std::initializer_list<const torch::Tensor*> params) {
  if (t_pending.empty()) return;
  for (const torch::Tensor* p : params) wait_for(*p);
}

void wait_for_parameters(const torch::nn::Module& module) {
  if (t_pending.empty()) return;
  for (const torch::Tensor& p : module.parameters()) wait_for(p);
}

void forget_pending_parameters(std::span<const torch::Tensor> params) noexcept {
  for (const torch::Tensor& p : params) {
    if (p.defined()) t_pending.erase(p.unsafe_get_impl());
  }
}

}  // namespace syntorch::parallel
