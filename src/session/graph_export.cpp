#include "syntorch/session/graph_export.hpp"

#include <fmt/format.h>

#include "syntorch/base/version.hpp"
#include "syntorch/graph/recorder.hpp"
#include "syntorch/models/causal_lm.hpp"
#include "syntorch/models/registry.hpp"
#include "syntorch/parallel/distributed.hpp"
#include "syntorch/torch/autograd.hpp"
#include "syntorch/torch/ops.hpp"
#include "syntorch/torch/utils.hpp"

namespace syntorch::session {

namespace {

// The recorder is this thread's only while the forward runs.
class RecorderGuard {
 public:
  explicit RecorderGuard(torch::OpRecorder* r) { torch::set_op_recorder(r); }
  ~RecorderGuard() { torch::set_op_recorder(nullptr); }
  RecorderGuard(const RecorderGuard&) = delete;
  RecorderGuard& operator=(const RecorderGuard&) = delete;
};

}  // namespace

GraphExport export_graph(const RunOptions& machine, const GraphExportSpec& spec) {
  Diagnostics d;
  std::shared_ptr<const models::Model> model = models::parse_model(spec.model, d, "--model");
  if (spec.batch < 1) d.error("--batch", "", fmt::format("expected at least 1, got {}", spec.batch));
  if (spec.seq < 1) d.error("--seq", "", fmt::format("expected at least 1, got {}", spec.seq));
  if (spec.dtype != DType::fp32 && spec.dtype != DType::fp16 && spec.dtype != DType::bf16) {
    d.error("--dtype", "", fmt::format("expected fp32, fp16 or bf16, got {}", dtype_name(spec.dtype)));
  }
  if (!d.empty()) throw InputError(std::move(d));
  Run run(machine);
  GraphExport out;
  graph::IrRecorder recorder;
  out.stats = run.run_programs(1, [&](int) {
    // Every tensor goes before the program ends, out of memory or not: they belong to its run.
    struct Discard {
      graph::IrRecorder& r;
      ~Discard() { r.discard(); }
    } discard{recorder};
    torch::DefaultDtypeGuard dtype_guard(torch::from_runtime_dtype(spec.dtype));
    parallel::initialize_model_parallel(1, 1, 1);
    const std::shared_ptr<models::CausalLM> built = model->build(models::BuildOptions{});
    torch::NoGradGuard no_grad;
    for (const auto& item : built->named_parameters()) recorder.add_weight(item.key(), item.value());
    for (const auto& item : built->named_buffers()) recorder.add_weight(item.key(), item.value(), "buffer");
    const torch::Tensor tokens =
        torch::empty({spec.batch, spec.seq}, torch::TensorOptions(torch::kInt64).device(torch::kCUDA));
    recorder.add_input(tokens);
    torch::Tensor logits;
    {
      RecorderGuard guard(&recorder);
      logits = built->forward_train(tokens);
    }
    out.constants = recorder.constants();
    out.ir = recorder.finish({logits}, model->name());
  }, false);
  out.ir.producer = {{"syntorch", kVersion}};
  return out;
}

void save_graph(const GraphExport& exported, const std::string& path) { graph::save_ir(exported.ir, path); }

}  // namespace syntorch::session
