// The xpuruntime training loop on a simulated GPU, written as a libtorch user writes it: a
// GPT-2-style model of torch::nn modules with fp32 parameters, the kernel policy set as code,
// the forward under autocast, loss scaling for fp16, loss.backward(), gradient clipping,
// a fused AdamW step, and then the same step captured as one CUDA graph. Prints each step's time
// and throughput, what the graph saved, and the memory peak; --trace writes every op, kernel and
// allocation (a .pftrace for Perfetto, .json for Chrome).
//
//   xpuruntime_train [--hw hw_configs/h100_sxm5_80gb.json] [--policy "attention=flash_v2"]
//                    [--dtype bf16|fp16] [--layers 12] [--hidden 768] [--batch 8] [--seq 1024]
//                    [--steps 3] [--trace F]

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cstdint>
#include <exception>
#include <string>
#include <vector>

#include "syntorch/base/diagnostics.hpp"
#include "syntorch/session/run.hpp"
#include "syntorch/session/workload.hpp"
#include "syntorch/torch/torch.hpp"

namespace torch = syntorch::torch;
namespace nn = syntorch::torch::nn;
namespace F = syntorch::torch::nn::functional;

// One pre-norm transformer block: causal self-attention and a GELU MLP, each with a residual.
class BlockImpl : public nn::Module {
 public:
  BlockImpl(std::int64_t hidden, std::int64_t heads) : nn::Module("Block"), heads_(heads) {
    ln1 = register_module("ln1", nn::LayerNorm(nn::LayerNormOptions({hidden})));
    qkv = register_module("qkv", nn::Linear(hidden, 3 * hidden));
    proj = register_module("proj", nn::Linear(hidden, hidden));
    ln2 = register_module("ln2", nn::LayerNorm(nn::LayerNormOptions({hidden})));
    fc = register_module("fc", nn::Linear(hidden, 4 * hidden));
    out = register_module("out", nn::Linear(4 * hidden, hidden));
  }

  torch::Tensor forward(const torch::Tensor& x) {
    const std::int64_t b = x.size(0), s = x.size(1), h = x.size(2);
    auto parts = qkv(ln1(x)).split(h, -1);
    auto heads = [&](const torch::Tensor& t) { return t.view({b, s, heads_, h / heads_}).transpose(1, 2); };
    auto a = torch::scaled_dot_product_attention(heads(parts[0]), heads(parts[1]), heads(parts[2]), {}, 0.0, true);
    torch::Tensor y = x + proj(a.transpose(1, 2).reshape({b, s, h}));
    return y + out(torch::gelu(fc(ln2(y)), "tanh"));
  }

  nn::LayerNorm ln1{nullptr}, ln2{nullptr};
  nn::Linear qkv{nullptr}, proj{nullptr}, fc{nullptr}, out{nullptr};

 private:
  std::int64_t heads_;
};
TORCH_MODULE(Block);

class GptImpl : public nn::Module {
 public:
  GptImpl(std::int64_t vocab, std::int64_t seq, std::int64_t hidden, std::int64_t layers, std::int64_t heads)
      : nn::Module("GPT") {
    wte = register_module("wte", nn::Embedding(vocab, hidden));
    wpe = register_module("wpe", nn::Embedding(seq, hidden));
    for (std::int64_t i = 0; i < layers; ++i) {
      blocks.push_back(register_module("h" + std::to_string(i), Block(hidden, heads)));
    }
    ln_f = register_module("ln_f", nn::LayerNorm(nn::LayerNormOptions({hidden})));
    head = register_module("head", nn::Linear(nn::LinearOptions(hidden, vocab).bias(false)));
  }

  torch::Tensor forward(const torch::Tensor& tokens, const torch::Tensor& positions) {
    torch::Tensor x = wte(tokens) + wpe(positions);
    for (Block& block : blocks) {
      torch::RecordScope layer("block");
      x = block(x);
    }
    return head(ln_f(x));
  }

  nn::Embedding wte{nullptr}, wpe{nullptr};
  std::vector<Block> blocks;
  nn::LayerNorm ln_f{nullptr};
  nn::Linear head{nullptr};
};
TORCH_MODULE(Gpt);

struct Options {
  std::string hw = "hw_configs/h100_sxm5_80gb.json";
  std::string policy = "attention=flash_v2";
  std::string dtype = "bf16";
  std::int64_t layers = 12, hidden = 768, heads = 12, vocab = 50304, batch = 8, seq = 1024;
  int steps = 3;
  std::string trace;
};

int main(int argc, char** argv) {
  Options o;
  CLI::App app{"The xpuruntime training loop (autocast, backward, fused AdamW, a CUDA-graph captured step) on a "
               "simulated GPU"};
  app.add_option("--hw", o.hw, "Hardware config JSON file")->capture_default_str();
  app.add_option("--policy", o.policy, "Kernel policy set as code at the start: op=impl,... or a policy file")
      ->capture_default_str();
  app.add_option("--dtype", o.dtype, "Autocast dtype: bf16, or fp16 (with loss scaling)")
      ->check(CLI::IsMember({"bf16", "fp16"}))
      ->capture_default_str();
  app.add_option("--layers", o.layers, "Transformer blocks")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--hidden", o.hidden, "Hidden size (a multiple of 64: heads of 64)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--batch", o.batch, "Sequences per step")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--seq", o.seq, "Sequence length")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--steps", o.steps, "Eager steps before the captured one (the first warms the allocator)")
      ->check(CLI::Range(1, 100))
      ->capture_default_str();
  app.add_option("--trace", o.trace, "Trace file (.pftrace, .json, .json.gz, .et, .csv)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;  // --help, or a bad flag (exit 2)
  }
  if (o.hidden % 64 != 0) {
    fmt::print(stderr, "--hidden: expected a multiple of 64 (heads of 64), got {}\n", o.hidden);
    return 2;
  }
  o.heads = o.hidden / 64;

  try {
    // The policy (text or a file) checked first, then the run: the machine and a trace file if
    // asked for; the policy is set as code in the program.
    syntorch::Diagnostics diagnostics;
    const syntorch::session::RunSetup setup = syntorch::session::load_run_setup(o.hw, {}, o.policy, diagnostics, "--policy");
    if (!diagnostics.empty()) {
      fmt::print(stderr, "{}", diagnostics.to_string());
      return 2;
    }
    syntorch::session::Run run({.hw = o.hw, .sets = {}, .framework = "eager", .trace = o.trace, .policy = "",
                                .console = false});
    const torch::ScalarType dtype = o.dtype == "fp16" ? torch::kFloat16 : torch::kBFloat16;

    const syntorch::session::RunStats result = run.run_programs(1, [&](int) {
      torch::cuda::set_kernel_policy(setup.policy);  // policy as code: every op from here on
      Gpt model(o.vocab, o.seq, o.hidden, o.layers, o.heads);
      torch::optim::AdamW optimizer(model->parameters(), torch::optim::AdamOptions(3e-4).weight_decay(0.1).fused(true));
      torch::amp::GradScaler scaler(torch::amp::GradScalerOptions().enabled(dtype == torch::kFloat16));
      const torch::Tensor tokens = torch::empty({o.batch, o.seq}, torch::kInt64);
      const torch::Tensor targets = torch::empty({o.batch * o.seq}, torch::kInt64);
      const torch::Tensor positions = torch::arange(o.seq);

      auto step = [&] {
        torch::Tensor loss;
        {
          torch::autocast::AutocastMode autocast(dtype);
          loss = F::cross_entropy(model(tokens, positions).view({-1, o.vocab}), targets);
        }
        scaler.scale(loss).backward();
        scaler.unscale_(optimizer);
        (void)torch::nn::utils::clip_grad_norm_(model->parameters(), 1.0);
        scaler.step(optimizer);
        scaler.update();
        optimizer.zero_grad(/*set_to_none=*/true);
      };
      for (int i = 0; i < o.steps; ++i) {
        torch::RecordScope scope(fmt::format("step {} (eager)", i));
        step();
        torch::cuda::synchronize();
      }
      // The whole step captured as one graph, then replayed: one launch instead of one per
      // kernel. The fused optimizer takes the scaler's flag on the device, so nothing syncs
      // inside the capture.
      torch::cuda::CUDAGraph graph;
      graph.capture_begin();
      step();
      graph.capture_end();
      torch::RecordScope scope("step (CUDA graph)");
      graph.replay();
      torch::cuda::synchronize();
    }, /*mirror=*/false);
    if (result.oom) {
      fmt::print("simulated OOM on {}: {} bytes requested for {}\n", result.oom->device_name,
                 result.oom->requested_bytes, result.oom->requested_for);
      return 3;
    }

    const double params = static_cast<double>(o.layers) * 12.0 * static_cast<double>(o.hidden * o.hidden) +
                          static_cast<double>(o.vocab * o.hidden);
    const double tokens = static_cast<double>(o.batch * o.seq);
    const double flops = 6.0 * params * tokens;  // model FLOPs per step, attention's left out
    fmt::print("GPT ({} layers, hidden {}, {:.0f}M parameters) on {}, autocast {}, policy {}\n", o.layers, o.hidden,
               params / 1e6, result.device, o.dtype, o.policy);
    double eager_ms = 0;
    for (const auto& s : result.steps) {
      const double ms = (s.end_s - s.begin_s) * 1e3;
      fmt::print("  {:<20} {:9.3f} ms  {:10.0f} tokens/s  {:6.1f} TFLOP/s\n", s.name, ms, tokens / (ms / 1e3),
                 flops / (ms / 1e3) / 1e12);
      if (s.name.find("eager") != std::string::npos) eager_ms = ms;  // the last eager step
      if (s.name.find("graph") != std::string::npos && eager_ms > 0) {
        fmt::print("  the captured step took {:.1f}% of the eager step's time\n", 100.0 * ms / eager_ms);
      }
    }
    fmt::print("  kernels {}, peak memory {:.2f} GiB allocated, {:.2f} GiB reserved\n", result.kernels,
               static_cast<double>(result.peak_memory_bytes[0]) / (1ull << 30),
               static_cast<double>(result.peak_reserved_bytes[0]) / (1ull << 30));
    if (!o.trace.empty()) fmt::print("  trace: {}\n", o.trace);
    return 0;
  } catch (const syntorch::InputError& e) {
    fmt::print(stderr, "{}", e.diagnostics().to_string());
    return 2;
  } catch (const std::exception& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return 2;
  }
}
