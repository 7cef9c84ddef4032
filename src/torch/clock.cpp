#include "syntorch/torch/clock.hpp"

#include <fmt/format.h>

#include <cmath>
#include <stdexcept>

#include "syntorch/runtime/rank_context.hpp"

namespace syntorch::torch::clock {

namespace {
runtime::RankContext& rank(const char* what) {
  runtime::RankContext* ctx = runtime::current_rank();
  if (ctx == nullptr) {
    throw std::logic_error(fmt::format("clock::{}: no simulation runs on this thread, and the simulated clock runs "
                                       "only in one",
                                       what));
  }
  return *ctx;
}
}  // namespace

double now_s() { return rank("now_s").host_time_s(); }

void sleep_s(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0 || seconds > runtime::kMaxSleepUntilS) {
    throw std::invalid_argument(
        fmt::format("clock::sleep_s: expected seconds in 0 .. {:g}, got {}", runtime::kMaxSleepUntilS, seconds));
  }
  runtime::RankContext& ctx = rank("sleep_s");
  if (seconds > 0) ctx.sleep_until_s(ctx.host_time_s() + seconds);
}

void sleep_until_s(double time_s) { rank("sleep_until_s").sleep_until_s(time_s); }

}  // namespace syntorch::torch::clock
