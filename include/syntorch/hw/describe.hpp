#pragma once
// Human-readable description of a machine, as `syntorch hw show` prints it.

#include <string>

#include "syntorch/hw/machine.hpp"

namespace syntorch::hw {

std::string describe_machine(const Machine& machine);

}  // namespace syntorch::hw
