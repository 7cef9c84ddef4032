// What every model shares: training is refused unless a model provides it.

#include "syntorch/models/model.hpp"

#include <fmt/format.h>

#include <stdexcept>

namespace syntorch::models {

std::string Model::training_refusal() const { return fmt::format("{}: training is not modelled for this model", name()); }

void Model::train_iterations(const TrainOptions&) const { throw std::invalid_argument(training_refusal()); }

}  // namespace syntorch::models
