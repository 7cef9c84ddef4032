"""The Python layer's own cost: wall time per op issued from Python, against the simulated run it
makes. Medians of --repeat runs, each issuing --ops ops (docs/performance.md).

    PYTHONPATH=python:build/python python3 bench/bench_python.py [--ops 20000] [--repeat 5]

Cases:
  add           x + y on small fp16 tensors (one kernel each)
  view          x.view(...) (a host op, no kernel)
  linear        F.linear on a [64, 1024] x [1024, 1024] fp16 GEMM
  module        a Python nn.Module (LayerNorm, Linear, GELU, Linear, residual add): per op inside it
  train step    the same module's forward, backward and a fused AdamW step under autocast: per op
each with the console summary off (init(console=False): nothing traced) and on (the default).
"""

import argparse
import statistics
import sys
import time

import syntorch
import syntorch.torch as torch
import syntorch.torch.nn as nn
import syntorch.torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.ln = nn.LayerNorm(d, dtype=torch.float16)
        self.up = nn.Linear(d, 4 * d, dtype=torch.float16)
        self.down = nn.Linear(4 * d, d, dtype=torch.float16)

    def forward(self, x):
        return x + self.down(F.gelu(self.up(self.ln(x))))


def run(case, ops, console):
    syntorch.init(console=console)
    x = torch.randn(64, 1024, dtype=torch.float16)
    y = torch.randn(64, 1024, dtype=torch.float16)
    w = torch.randn(1024, 1024, dtype=torch.float16)
    block = Block(1024)
    issued = ops
    start = time.perf_counter()
    if case == "add":
        for _ in range(ops):
            x + y
    elif case == "view":
        for _ in range(ops):
            x.view(1024, 64)
    elif case == "linear":
        for _ in range(ops):
            F.linear(x, w)
    elif case == "module":
        per = 6  # layer_norm, linear, gelu, linear, add and the module call
        for _ in range(ops // per):
            block(x)
        issued = (ops // per) * per
    elif case == "train step":
        block = Block(1024).float()
        opt = torch.optim.AdamW(block.parameters(), fused=True)
        xf = torch.randn(64, 1024)
        per = 30  # about: 6 forward with 4 casts, their backward, the loss and the step
        for _ in range(ops // per):
            with torch.autocast("cuda", dtype=torch.bfloat16):
                loss = torch.mean(block(xf))
            loss.backward()
            opt.step()
            opt.zero_grad()
        issued = (ops // per) * per
    issue_s = time.perf_counter() - start
    stats = syntorch.trace_manager.stats()  # waits for the simulation of what was issued
    total_s = time.perf_counter() - start
    return issue_s / issued, total_s / issued, stats["kernels"]


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--ops", type=int, default=20000)
    p.add_argument("--repeat", type=int, default=5)
    args = p.parse_args(argv)
    print(f"{'case':<12} {'console':<8} {'issue us/op':>12} {'with simulation us/op':>22} {'kernels':>9}")
    for case in ("add", "view", "linear", "module", "train step"):
        for console in (False, True):
            runs = [run(case, args.ops, console) for _ in range(args.repeat)]
            issue = statistics.median(r[0] for r in runs) * 1e6
            total = statistics.median(r[1] for r in runs) * 1e6
            print(f"{case:<12} {str(console):<8} {issue:12.2f} {total:22.2f} {runs[0][2]:9d}")


if __name__ == "__main__":
    main(sys.argv[1:])
