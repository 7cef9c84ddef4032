"""The functional value mode's cost: wall time of a small GPT's training step with values
(syntorch computing PyTorch's values beside the simulation) against without them (the
simulation alone) and against PyTorch itself on the CPU, medians of --repeat runs in one process
(docs/performance.md). Also the per-op cost of `x + y` once the mode's wrappers are installed and
the mode is off again, against before they were installed.

    PYTHONPATH=python:build/python python3 bench/bench_functional.py [--steps 10] [--repeat 5]
"""

import argparse
import math
import statistics
import time
import warnings

import syntorch
import syntorch.torch as torch
from syntorch import _functional


def build(t, vocab=65, dim=128, heads=4, layers=2, block=64):
    nn, F = t.nn, t.nn.functional

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
            self.qkv, self.proj = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
            self.fc, self.out = nn.Linear(dim, 4 * dim), nn.Linear(4 * dim, dim)

        def forward(self, x):
            B, T, C = x.size()
            q, k, v = self.qkv(self.ln1(x)).split(dim, dim=2)
            q, k, v = (z.view(B, T, heads, C // heads).transpose(1, 2) for z in (q, k, v))
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(C // heads))
            att = att.masked_fill(t.ones(T, T, device=x.device).tril() == 0, float("-inf")).softmax(-1)
            x = x + self.proj((att @ v).transpose(1, 2).contiguous().view(B, T, C))
            return x + self.out(F.gelu(self.fc(self.ln2(x))))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte, self.wpe = nn.Embedding(vocab, dim), nn.Embedding(block, dim)
            self.blocks = nn.ModuleList([Block() for _ in range(layers)])
            self.ln, self.head = nn.LayerNorm(dim), nn.Linear(dim, vocab, bias=False)

        def forward(self, idx, targets):
            x = self.wte(idx) + self.wpe(t.arange(idx.size(1), device=idx.device))
            for b in self.blocks:
                x = b(x)
            logits = self.head(self.ln(x))
            return F.cross_entropy(logits.view(-1, vocab), targets.reshape(-1))

    return GPT()


def train(t, device, steps, batch=16, block=64):
    t.manual_seed(0)
    model = build(t).to(device)
    opt = t.optim.AdamW(model.parameters(), lr=1e-3)
    data = t.randint(0, 65, (batch, block + 1), device=device)
    x, y = data[:, :-1], data[:, 1:]
    start = time.perf_counter()
    for _ in range(steps):
        loss = model(x, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    loss.item()
    return (time.perf_counter() - start) / steps


def syntorch_step(mode, steps):
    syntorch.init(console=False)
    syntorch.set_value_mode(mode)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            per_step = train(torch, "cuda", steps)
        syntorch.trace_manager.stats()
        return per_step
    finally:
        syntorch.set_value_mode("placeholder")


def add_us(ops):
    syntorch.init(console=False)
    x = torch.randn(64, 64, dtype=torch.float16)
    start = time.perf_counter()
    for _ in range(ops):
        x + x
    per = (time.perf_counter() - start) / ops * 1e6
    syntorch.trace_manager.stats()
    return per


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--ops", type=int, default=20000)
    a = p.parse_args()
    real = _functional.real_torch()
    before = statistics.median(add_us(a.ops) for _ in range(a.repeat))
    rows = {"syntorch, placeholders": [], "syntorch, functional": [], "PyTorch on the CPU": []}
    for _ in range(a.repeat):  # alternated, so that the machine's noise falls on all three alike
        rows["syntorch, placeholders"].append(syntorch_step("placeholder", a.steps))
        rows["syntorch, functional"].append(syntorch_step("functional", a.steps))
        rows["PyTorch on the CPU"].append(train(real, "cpu", a.steps))
    after = statistics.median(add_us(a.ops) for _ in range(a.repeat))
    print("| run | wall time per training step, ms (median) |")
    print("|---|---|")
    for name, times in rows.items():
        print(f"| {name} | {statistics.median(times) * 1e3:.1f} |")
    print()
    print(f"x + y, us/op: {before:.2f} before the mode's wrappers were installed, {after:.2f} with them installed "
          "and the mode off")


if __name__ == "__main__":
    main()
