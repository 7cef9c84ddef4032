#pragma once
// A run's report as JSON, the same for every front end (`syntorch simulate --json`, `syntorch
// train --json`, the Python package's syntorch.simulate and syntorch.train): the status, the
// machine, every parameter the run ran with (parameters.hpp) and what it measured.

#include <nlohmann/json.hpp>
#include <string>

#include "syntorch/runtime/engine.hpp"
#include "syntorch/session/simulate.hpp"
#include "syntorch/session/train.hpp"

namespace syntorch::session {

// What held the memory at a simulated OOM: the request that failed, the device's memory then,
// live bytes by purpose and the largest tensors.
nlohmann::ordered_json oom_json(const runtime::OomReport& oom);

nlohmann::ordered_json generation_report_json(const RunReport& report, const RunSpec& spec, const std::string& hw_file);
nlohmann::ordered_json training_report_json(const TrainReport& report, const TrainSpec& spec,
                                            const std::string& hw_file);

}  // namespace syntorch::session
