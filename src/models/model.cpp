// What every model shares: training is refused unless a model allows it.

#include "syntorch/models/model.hpp"

#include <fmt/format.h>

namespace syntorch::models {

std::string Model::training_refusal() const { return fmt::format("{}: training is not modelled for this model", name()); }

}  // namespace syntorch::models
