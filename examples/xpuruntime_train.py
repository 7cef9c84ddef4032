"""The xpuruntime training loop in Python, on a simulated GPU: a GPT-2-style model written in
idiomatic PyTorch, the kernel policy set as code, the forward under autocast, loss scaling for
fp16, loss.backward(), gradient clipping, a fused AdamW step, and then the same step captured as
one CUDA graph. The C++ form is examples/xpuruntime_train.cpp; both print each step's time.

    PYTHONPATH=python:build/python python3 examples/xpuruntime_train.py [--hw F] [--dtype bf16|fp16]
        [--layers 12] [--hidden 768] [--batch 8] [--seq 1024] [--steps 3] [--trace run.pftrace]
"""

import argparse
import sys

import syntorch
import syntorch.torch as torch
import syntorch.torch.nn as nn
import syntorch.torch.nn.functional as F


class Block(nn.Module):
    """A pre-norm transformer block: causal self-attention and a GELU MLP, each with a residual."""

    def __init__(self, hidden, heads):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(hidden)
        self.qkv = nn.Linear(hidden, 3 * hidden)
        self.proj = nn.Linear(hidden, hidden)
        self.ln2 = nn.LayerNorm(hidden)
        self.fc = nn.Linear(hidden, 4 * hidden)
        self.out = nn.Linear(4 * hidden, hidden)

    def forward(self, x):
        b, s, h = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(h, -1)
        q, k, v = (t.view(b, s, self.heads, h // self.heads).transpose(1, 2) for t in (q, k, v))
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(a.transpose(1, 2).reshape(b, s, h))
        return x + self.out(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class GPT(nn.Module):
    def __init__(self, vocab, seq, hidden, layers, heads):
        super().__init__()
        self.wte = nn.Embedding(vocab, hidden)
        self.wpe = nn.Embedding(seq, hidden)
        self.blocks = nn.ModuleList(Block(hidden, heads) for _ in range(layers))
        self.ln_f = nn.LayerNorm(hidden)
        self.head = nn.Linear(hidden, vocab, bias=False)

    def forward(self, tokens, positions):
        x = self.wte(tokens) + self.wpe(positions)
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln_f(x))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--hw", default=None, help="hardware config JSON (default: the bundled H100)")
    p.add_argument("--policy", default="attention=flash_v2", help="kernel policy set as code at the start")
    p.add_argument("--dtype", choices=["bf16", "fp16"], default="bf16", help="autocast dtype (fp16 adds loss scaling)")
    p.add_argument("--layers", type=int, default=12)
    p.add_argument("--hidden", type=int, default=768, help="a multiple of 64 (heads of 64)")
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--seq", type=int, default=1024)
    p.add_argument("--steps", type=int, default=3, help="eager steps before the captured one")
    p.add_argument("--trace", default=None, help="trace file (.pftrace, .json, .et)")
    args = p.parse_args(argv)
    for name in ("layers", "hidden", "batch", "seq", "steps"):
        if getattr(args, name) < 1:
            p.error(f"--{name}: expected a positive number, got {getattr(args, name)}")
    if args.hidden % 64:
        p.error(f"--hidden: expected a multiple of 64 (heads of 64), got {args.hidden}")
    vocab = 50304
    dtype = torch.float16 if args.dtype == "fp16" else torch.bfloat16

    syntorch.init(hw=args.hw, trace=args.trace)
    syntorch.set_kernel_policy(syntorch.KernelPolicy._from_text(args.policy))  # policy as code
    model = GPT(vocab, args.seq, args.hidden, args.layers, args.hidden // 64)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.1, fused=True)
    scaler = torch.amp.GradScaler("cuda", enabled=dtype == torch.float16)
    tokens = torch.empty(args.batch, args.seq, dtype=torch.int64)
    targets = torch.empty(args.batch * args.seq, dtype=torch.int64)
    positions = torch.arange(args.seq)

    def step():
        with torch.autocast("cuda", dtype=dtype):
            loss = F.cross_entropy(model(tokens, positions).view(-1, vocab), targets)
        scaler.scale(loss).backward()
        scaler.unscale_(optimizer)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad(set_to_none=True)

    for i in range(args.steps):
        with torch.profiler.record_function(f"step {i} (eager)"):
            step()
            torch.cuda.synchronize()
    # The whole step as one graph: the fused optimizer takes the scaler's flag on the device, so
    # nothing syncs inside the capture.
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        step()
    with torch.profiler.record_function("step (CUDA graph)"):
        g.replay()
        torch.cuda.synchronize()
    stats = syntorch.trace_manager.stats()

    params = args.layers * 12 * args.hidden ** 2 + vocab * args.hidden
    tokens_per_step = args.batch * args.seq
    print(f"GPT ({args.layers} layers, hidden {args.hidden}, {params / 1e6:.0f}M parameters) on {stats['device']}, "
          f"autocast {args.dtype}, policy {args.policy}")
    eager_s = None
    for s in stats["steps"]:
        took = s["end_s"] - s["begin_s"]
        print(f"  {s['name']:<20} {took * 1e3:9.3f} ms  {tokens_per_step / took:10.0f} tokens/s  "
              f"{6 * params * tokens_per_step / took / 1e12:6.1f} TFLOP/s")
        if "eager" in s["name"]:
            eager_s = took
        elif eager_s:
            print(f"  the captured step took {100 * took / eager_s:.1f}% of the eager step's time")
    print(f"  kernels {stats['kernels']}, peak memory {stats['peak_memory_bytes'][0] / 2 ** 30:.2f} GiB allocated")
    if args.trace:
        print(f"  trace: {args.trace}")
    return stats


if __name__ == "__main__":
    main(sys.argv[1:])
