#include "syntorch/session/report_json.hpp"

#include "syntorch/session/parameters.hpp"

namespace syntorch::session {

namespace {
using Json = nlohmann::ordered_json;

// The status, the machine and the parameters, in table order.
template <class Spec>
Json report_header(bool oom, const std::string& hw_file, const std::vector<Parameter<Spec>>& table, const Spec& spec) {
  Json j;
  j["status"] = oom ? "oom" : "ok";
  j["hw"] = hw_file;
  for (const Parameter<Spec>& p : table) j[std::string(p.key)] = p.value(spec);
  return j;
}

// The purposes a training stage's memory is reported under, in order.
constexpr os::MemoryUse kPurposes[] = {os::MemoryUse::weights, os::MemoryUse::gradients,
                                       os::MemoryUse::optimizer_state, os::MemoryUse::activations,
                                       os::MemoryUse::workspace, os::MemoryUse::other};
}  // namespace

Json oom_json(const runtime::OomReport& oom) {
  Json j;
  j["rank"] = oom.rank;
  j["device"] = oom.device_name;
  j["requested_bytes"] = oom.requested_bytes;
  j["requested_for"] = oom.requested_for;
  j["capacity_bytes"] = oom.memory.capacity_bytes;
  j["allocated_bytes"] = oom.memory.allocated_bytes;
  j["reserved_bytes"] = oom.memory.reserved_bytes;
  auto& by = j["allocated_by_use"] = Json::object();
  for (std::size_t u = 0; u < os::kMemoryUses; ++u) {
    by[std::string(os::memory_use_name(static_cast<os::MemoryUse>(u)))] = oom.memory.allocated_by_use[u];
  }
  auto& largest = j["largest"] = Json::array();
  for (const auto& [name, bytes] : oom.largest) largest.push_back({{"tensor", name}, {"bytes", bytes}});
  return j;
}

Json generation_report_json(const RunReport& r, const RunSpec& spec, const std::string& hw_file) {
  Json j = report_header(r.oom, hw_file, generation_parameters(), spec);
  j["ttft_ms"] = r.ttft_s * 1e3;
  j["tpot_ms"] = r.tpot_s * 1e3;
  j["e2e_ms"] = r.e2e_s * 1e3;
  j["tokens_per_s"] = r.tokens_per_s;
  j["mfu"] = r.mfu;
  j["peak_memory_bytes"] = r.peak_memory_bytes;
  j["peak_reserved_bytes"] = r.peak_reserved_bytes;
  j["breakdown"] = {{"compute_ms", r.breakdown.compute_s * 1e3},
                    {"memory_ms", r.breakdown.memory_s * 1e3},
                    {"communication_ms", r.breakdown.communication_s * 1e3},
                    {"waiting_ms", r.breakdown.waiting_s * 1e3},
                    {"launch_idle_ms", r.breakdown.idle_s * 1e3},
                    {"p2p_overlapped_ms", r.breakdown.p2p_s * 1e3}};
  std::uint64_t kernels = 0;
  for (const auto& rank : r.engine.ranks) kernels += rank.kernels;
  j["kernels"] = kernels;
  if (r.engine.oom) j["oom"] = oom_json(*r.engine.oom);
  return j;
}

Json training_report_json(const TrainReport& r, const TrainSpec& s, const std::string& hw_file) {
  Json j = report_header(r.oom, hw_file, training_parameters(), s);
  j["micro_batches"] = r.micro_batches;
  j["simulated_replicas"] = r.simulated_replicas;
  j["iteration_time_s"] = r.iteration_s;
  j["tokens_per_s"] = r.tokens_per_s;
  j["model_flops_per_iteration"] = r.model_flops;
  j["tflops_per_gpu"] = r.tflops_per_gpu;
  j["mfu"] = r.mfu;
  j["hfu"] = r.hfu;
  j["pipeline_bubble"] = r.bubble_fraction;
  j["exposed_communication_s"] = r.exposed_communication_s;
  j["overlapped_communication_s"] = r.overlapped_communication_s;
  auto& stages = j["stages"] = Json::array();
  for (const StageMemory& st : r.stages) {
    Json e;
    e["stage"] = st.stage;
    e["peak_bytes"] = st.peak_bytes;
    for (os::MemoryUse u : kPurposes) {
      e[std::string(os::memory_use_name(u))] = st.peak_by_use[static_cast<std::size_t>(u)];
    }
    stages.push_back(std::move(e));
  }
  if (r.engine.oom) {
    j["oom"] = oom_json(*r.engine.oom);
    j["oom"]["stage"] = r.engine.oom->rank / (s.tp * s.dp);
  }
  return j;
}

}  // namespace syntorch::session
