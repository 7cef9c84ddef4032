"""GPT-3 inference written in Python with Megatron-style tensor parallelism, on simulated GPUs:

    PYTHONPATH=python:build/python python3 examples/gpt3/inference.py --num_input_tokens 10 \\
        --num_output_tokens 20 --tp 1                       # GPT-3 175B on one H100: a simulated OOM
    PYTHONPATH=python:build/python python3 examples/gpt3/inference.py --num_input_tokens 10 \\
        --num_output_tokens 20 --tp 8 --hw hw_configs/dgx_h100.json

Every rank builds its shard of the model (syntorch.parallel layers), prefills the prompt and
decodes greedily with a KV cache; the layers' all-reduces run over the machine's links.
"""

import argparse
import sys

import syntorch
import syntorch.torch as torch
import syntorch.torch.nn as nn
import syntorch.torch.nn.functional as F
from syntorch.parallel import ColumnParallelLinear, RowParallelLinear, VocabParallelEmbedding

SIZES = {  # layers, hidden, heads (Brown et al., 2020, table 2.1)
    "gpt3-175b": (96, 12288, 96),
    "gpt3-13b": (40, 5120, 40),
    "gpt3-6.7b": (32, 4096, 32),
    "gpt3-350m": (24, 1024, 16),
}
VOCAB, CONTEXT = 50257, 2048


class Block(nn.Module):
    def __init__(self, hidden, heads, tp, rank, dtype):
        super().__init__()
        self.heads = heads // tp  # this rank's heads
        self.head_dim = hidden // heads
        self.ln1 = nn.LayerNorm(hidden, dtype=dtype)
        self.qkv = ColumnParallelLinear(hidden, 3 * hidden, tp_size=tp, tp_rank=rank, dtype=dtype)
        self.proj = RowParallelLinear(hidden, hidden, tp_size=tp, tp_rank=rank, dtype=dtype)
        self.ln2 = nn.LayerNorm(hidden, dtype=dtype)
        self.fc1 = ColumnParallelLinear(hidden, 4 * hidden, tp_size=tp, tp_rank=rank, dtype=dtype)
        self.fc2 = RowParallelLinear(4 * hidden, hidden, tp_size=tp, tp_rank=rank, dtype=dtype)

    def forward(self, x, cache, pos):
        b, s, _ = x.shape
        qkv = self.qkv(self.ln1(x)).view(b, s, 3, self.heads, self.head_dim)
        q, k, v = qkv.select(2, 0), qkv.select(2, 1), qkv.select(2, 2)
        k_cache, v_cache = cache
        k_cache[:, :, pos:pos + s] = k.transpose(1, 2)
        v_cache[:, :, pos:pos + s] = v.transpose(1, 2)
        a = F.scaled_dot_product_attention(q.transpose(1, 2), k_cache[:, :, :pos + s], v_cache[:, :, :pos + s],
                                           is_causal=s > 1)
        x = x + self.proj(a.transpose(1, 2).reshape(b, s, self.heads * self.head_dim))
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x)), approximate="tanh"))


class GPT3(nn.Module):
    def __init__(self, layers, hidden, heads, tp, rank, dtype, positions=CONTEXT):
        super().__init__()
        self.wte = VocabParallelEmbedding(VOCAB, hidden, tp_size=tp, tp_rank=rank, dtype=dtype)
        self.wpe = nn.Embedding(positions, hidden, dtype=dtype)
        self.blocks = nn.ModuleList([Block(hidden, heads, tp, rank, dtype) for _ in range(layers)])
        self.ln_f = nn.LayerNorm(hidden, dtype=dtype)

    def forward(self, tokens, caches, pos):
        x = self.wte(tokens) + self.wpe(torch.arange(pos, pos + tokens.size(1)))
        for block, cache in zip(self.blocks, caches):
            x = block(x, cache, pos)
        # The head shares the embedding's shard: this rank's vocabulary logits.
        return F.linear(self.ln_f(x[:, -1:]), self.wte.weight)


def generate(args, rank):
    layers, hidden, heads = SIZES[args.model]
    dtype = torch.float16
    import syntorch.torch.distributed as dist
    if args.tp > 1:
        dist.init_process_group("nccl")
    with torch.no_grad():
        total = args.num_input_tokens + args.num_output_tokens
        # Past GPT-3's context of 2048 the position table grows (as the benchmarks' 2048 + 128 runs do).
        model = GPT3(layers, hidden, heads, args.tp, rank, dtype, max(CONTEXT, total)).eval()
        caches = [(torch.empty(args.batch, heads // args.tp, total, hidden // heads, dtype=dtype),
                   torch.empty(args.batch, heads // args.tp, total, hidden // heads, dtype=dtype))
                  for _ in range(layers)]
        tokens = torch.randint(0, VOCAB, (args.batch, args.num_input_tokens))
        pos = 0
        with torch.profiler.record_function("prefill"):
            logits = model(tokens, caches, pos)
            pos += tokens.size(1)
            tokens = torch.argmax(logits, dim=-1)  # greedy, over this rank's vocabulary shard
            torch.cuda.synchronize()
        with torch.profiler.record_function("decode"):
            for _ in range(args.num_output_tokens - 1):
                logits = model(tokens, caches, pos)
                pos += 1
                tokens = torch.argmax(logits, dim=-1)
            tokens[0, -1].item()  # the host reads the last token


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", choices=sorted(SIZES), default="gpt3-175b")
    p.add_argument("--num_input_tokens", type=int, default=10)
    p.add_argument("--num_output_tokens", type=int, default=20)
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--tp", type=int, default=1)
    p.add_argument("--hw", default=None, help="hardware config JSON (default: the bundled H100)")
    p.add_argument("--trace", default=None, help="trace file (.pftrace, .json, .et)")
    args = p.parse_args(argv)
    heads = SIZES[args.model][2]
    for name in ("num_input_tokens", "num_output_tokens", "batch", "tp"):
        if getattr(args, name) < 1:
            p.error(f"--{name}: expected a positive number, got {getattr(args, name)}")
    if heads % args.tp:
        p.error(f"--tp: {args.model}'s {heads} heads do not split over {args.tp} ranks")

    try:
        stats = syntorch.launch(lambda rank: generate(args, rank), args.tp, hw=args.hw, trace=args.trace,
                                console=False)
    except (ValueError, FileNotFoundError) as e:
        p.exit(2, f"{p.prog}: {e}\n")
    peaks = ", ".join(f"{b / 2 ** 30:.1f} GiB" for b in stats["peak_memory_bytes"])
    if stats["out_of_memory"]:
        print(f"{args.model} with TP={args.tp} on {stats['machine']}: simulated out of memory (peak {peaks}); "
              "more tensor parallelism (--tp 8 --hw hw_configs/dgx_h100.json) spreads the weights")
        return 3
    steps = {s["name"]: s["end_s"] - s["begin_s"] for s in stats["steps"]}
    decode = steps.get("decode", 0.0) / max(1, args.num_output_tokens - 1)
    print(f"{args.model}, TP={args.tp} on {stats['machine']}, batch {args.batch}, "
          f"{args.num_input_tokens} + {args.num_output_tokens} tokens")
    print(f"  time to first token  {steps.get('prefill', 0.0) * 1e3:9.3f} ms")
    print(f"  time per output token {decode * 1e3:8.3f} ms")
    print(f"  end to end           {stats['simulated_time_s'] * 1e3:9.3f} ms, {stats['kernels']} kernels, "
          f"peak memory {peaks}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
