// What every model shares: training is refused unless a model provides it.

#include "syntorch/models/model.hpp"

#include <fmt/format.h>

#include <stdexcept>

namespace syntorch::models {

void Model::train_iterations(const TrainOptions&) const {
  throw std::invalid_argument(fmt::format("{}: training is not modelled for this model", name()));
}

}  // namespace syntorch::models
