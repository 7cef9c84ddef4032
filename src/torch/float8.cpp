#include "syntorch/torch/float8.hpp"

namespace syntorch::torch::fp8 {

namespace {
// Per rank program (each runs on its own thread), as the default dtype.
thread_local bool t_model_init = false;
thread_local bool t_autocast = false;
}  // namespace

ModelInitGuard::ModelInitGuard() : previous_(t_model_init) { t_model_init = true; }
ModelInitGuard::~ModelInitGuard() { t_model_init = previous_; }
AutocastGuard::AutocastGuard() : previous_(t_autocast) { t_autocast = true; }
AutocastGuard::~AutocastGuard() { t_autocast = previous_; }

bool model_init_enabled() { return t_model_init; }
bool autocast_enabled() { return t_autocast; }

ScalarType linear_weight_dtype() { return t_model_init ? kFloat8_e4m3fn : get_default_dtype(); }

}  // namespace syntorch::torch::fp8
