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
from syntorch.parallel import (ColumnParallelLinear, RowParallelLinear, VocabParallelEmbedding,
                               gather_from_tensor_model_parallel_region)

SIZES = {  # layers, d_model, heads, d_head (Brown et al., 2020, table 2.1)
    "gpt3-175b": (96, 12288, 96, 128),
    "gpt3-13b": (40, 5140, 40, 128),
    "gpt3-6.7b": (32, 4096, 32, 128),
    "gpt3-350m": (24, 1024, 16, 64),
}
VOCAB, CONTEXT = 50257, 2048


class Block(nn.Module):
    """A pre-norm GPT block as Megatron shards it: fused QKV split by heads (column parallel),
    attention over this rank's heads, the output and MLP down projections row parallel."""

    def __init__(self, hidden, heads, head_dim, tp, rank, dtype):
        super().__init__()
        self.heads, self.head_dim = heads // tp, head_dim  # this rank's heads
        self.ln1 = nn.LayerNorm(hidden, dtype=dtype)
        self.qkv = ColumnParallelLinear(hidden, 3 * heads * head_dim, tp_size=tp, tp_rank=rank, dtype=dtype)
        self.proj = RowParallelLinear(heads * head_dim, hidden, tp_size=tp, tp_rank=rank, dtype=dtype)
        self.ln2 = nn.LayerNorm(hidden, dtype=dtype)
        self.fc1 = ColumnParallelLinear(hidden, 4 * hidden, tp_size=tp, tp_rank=rank, dtype=dtype)
        self.fc2 = RowParallelLinear(4 * hidden, hidden, tp_size=tp, tp_rank=rank, dtype=dtype)

    def forward(self, x, cache, pos):
        b, s, _ = x.shape
        qkv = self.qkv(self.ln1(x)).view(b, s, 3 * self.heads, self.head_dim)
        q, k, v = qkv.split([self.heads, self.heads, self.heads], 2)
        k_cache, v_cache = cache
        k_cache.narrow(2, pos, s).copy_(k.transpose(1, 2))
        v_cache.narrow(2, pos, s).copy_(v.transpose(1, 2))
        a = F.scaled_dot_product_attention(q.transpose(1, 2), k_cache.narrow(2, 0, pos + s),
                                           v_cache.narrow(2, 0, pos + s), is_causal=s > 1, enable_gqa=True)
        x = x + self.proj(a.transpose(1, 2).reshape(b, s, self.heads * self.head_dim))
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x)), approximate="tanh"))


class GPT3(nn.Module):
    def __init__(self, layers, hidden, heads, head_dim, tp, rank, dtype):
        super().__init__()
        # The vocabulary padded to a multiple of 128 x TP so that it splits evenly (Megatron).
        padded = -(-VOCAB // (128 * tp)) * 128 * tp
        self.wte = VocabParallelEmbedding(padded, hidden, tp_size=tp, tp_rank=rank, dtype=dtype)
        self.wpe = nn.Embedding(CONTEXT, hidden, dtype=dtype)
        self.blocks = nn.ModuleList([Block(hidden, heads, head_dim, tp, rank, dtype) for _ in range(layers)])
        self.ln_f = nn.LayerNorm(hidden, dtype=dtype)

    def forward(self, tokens, caches, pos):
        # Positions past GPT-3's 2048 (the benchmarks' 2048 + 128 runs) read past the table: the
        # tensors hold no values, so only the lookup's cost is simulated.
        positions = torch.arange(pos, pos + tokens.size(1))
        x = self.wte(tokens) + self.wpe(positions)
        for block, cache in zip(self.blocks, caches):
            x = block(x, cache, pos)
        # The head shares the embedding's shard: this rank's vocabulary logits, then all of them.
        logits = F.linear(self.ln_f(x.narrow(1, x.size(1) - 1, 1)), self.wte.weight)
        return gather_from_tensor_model_parallel_region(logits)


def generate(args, rank):
    layers, hidden, heads, head_dim = SIZES[args.model]
    dtype = torch.float16
    import syntorch.torch.distributed as dist
    if args.tp > 1:
        dist.init_process_group("nccl")
    with torch.no_grad():
        model = GPT3(layers, hidden, heads, head_dim, args.tp, rank, dtype).eval()
        length = args.num_input_tokens + args.num_output_tokens - 1  # the last token is not fed back
        caches = [(torch.empty(args.batch, heads // args.tp, length, head_dim, dtype=dtype),
                   torch.empty(args.batch, heads // args.tp, length, head_dim, dtype=dtype))
                  for _ in range(layers)]
        # The prompt's token ids, on the host as a tokenizer returns them (ids are not simulated:
        # an empty tensor stands for them), copied to the GPU.
        tokens = torch.empty(args.batch, args.num_input_tokens, dtype=torch.int64, device="cpu").cuda()
        pos = 0
        for step in range(args.num_output_tokens):
            with torch.profiler.record_function("prefill" if step == 0 else "decode"):
                logits = model(tokens, caches, pos)
                pos += tokens.size(1)
                tokens = torch.argmax(logits, dim=-1)  # greedy
                torch.cuda.synchronize()  # the host has the next tokens
        torch.cuda.synchronize()  # generation is done


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", choices=sorted(SIZES), default="gpt3-175b")
    p.add_argument("--num_input_tokens", type=int, default=10)
    p.add_argument("--num_output_tokens", type=int, default=20)
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--tp", type=int, default=1)
    p.add_argument("--hw", default=None, help="hardware config JSON (default: the bundled H100)")
    p.add_argument("--trace", default=None, help="trace file (.pftrace, .json, .et)")
    p.add_argument("--set", action="append", default=[], metavar="/PTR=VALUE", help="override a config field")
    p.add_argument("--all-ranks", action="store_true",
                   help="run every rank's program (by default rank 0's runs and the other ranks, which run the "
                        "same program on the same shapes, mirror it: the same simulated times, 1/tp of the work)")
    args = p.parse_args(argv)
    heads = SIZES[args.model][2]
    for name in ("num_input_tokens", "num_output_tokens", "batch", "tp"):
        if getattr(args, name) < 1:
            p.error(f"--{name}: expected a positive number, got {getattr(args, name)}")
    if heads % args.tp:
        p.error(f"--tp: {args.model}'s {heads} heads do not split over {args.tp} ranks")

    try:
        stats = syntorch.launch(lambda rank: generate(args, rank), args.tp, hw=args.hw, set=args.set, trace=args.trace,
                                console=False, mirror=not args.all_ranks)
    except (ValueError, FileNotFoundError) as e:
        p.exit(2, f"{p.prog}: {e}\n")
    peaks = ", ".join(f"{b / 2 ** 30:.1f} GiB" for b in stats["peak_memory_bytes"])
    if stats["out_of_memory"]:
        print(f"{args.model} with TP={args.tp} on {stats['machine']}: simulated out of memory (peak {peaks}); "
              "more tensor parallelism (--tp 8 --hw hw_configs/dgx_h100.json) spreads the weights")
        return 3
    # As `syntorch simulate` reports them: from the prefill's start, the first token when it ends.
    steps = stats["steps"]
    start = steps[0]["begin_s"]
    ttft = steps[0]["end_s"] - start
    e2e = stats["simulated_time_s"] - start
    decode = (e2e - ttft) / (args.num_output_tokens - 1) if args.num_output_tokens > 1 else float("nan")
    print(f"{args.model}, TP={args.tp} on {stats['machine']}, batch {args.batch}, "
          f"{args.num_input_tokens} + {args.num_output_tokens} tokens")
    print(f"  time to first token  {ttft * 1e3:9.3f} ms")
    print(f"  time per output token {decode * 1e3:8.3f} ms")
    print(f"  end-to-end latency   {e2e * 1e3:9.3f} ms, {stats['kernels']} kernels, peak memory {peaks}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
