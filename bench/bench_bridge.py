"""The bridge from real PyTorch (syntorch.pytorch) against the same model written with
syntorch.torch: wall time of one simulated forward (inference) and one training step (forward and
backward) of a GPT written once against PyTorch's API (python/tests/models/gpt.py), medians of
--repeat runs, with the two floors the bridge stands on: real PyTorch running the program on the
meta device alone, and under a dispatch mode that does nothing (docs/performance.md).

    PYTHONPATH=python:build/python python3 bench/bench_bridge.py [--layers 12] [--repeat 5]
"""

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python", "tests"))

import torch  # noqa: E402
from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402

import syntorch  # noqa: E402
import syntorch.pytorch as sp  # noqa: E402
import syntorch.torch as storch  # noqa: E402
from models.gpt import make_gpt  # noqa: E402

B, T = 8, 1024


class _Nothing(TorchDispatchMode):
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))


def _real(layers, train, mode):
    model = make_gpt(torch, layers=layers).to("meta")
    idx = torch.randint(0, 50304, (B, T), device="meta")
    start = time.perf_counter()
    with mode() if mode else _NoMode():
        loss = model(idx, idx)
        if train:
            loss.backward()
    return time.perf_counter() - start


class _NoMode:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def _bridge(layers, train):
    model = make_gpt(torch, layers=layers).to("meta")
    idx = torch.randint(0, 50304, (B, T), device="meta")
    start = time.perf_counter()
    report = sp.simulate(model, (idx, idx), train=train)
    return time.perf_counter() - start, report["aten"]["ops"]


def _syntorch_torch(layers, train):
    syntorch.init(console=False)
    start = time.perf_counter()
    model = make_gpt(storch, layers=layers)
    idx = storch.randint(0, 50304, (B, T), device="cuda")
    if train:
        loss = model(idx, idx)
        loss.backward()
    else:
        with storch.no_grad():
            loss = model.eval()(idx, idx)
    del loss
    syntorch.trace_manager.stats()
    return time.perf_counter() - start


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=12)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    print(f"GPT {args.layers} layers, 768 wide, batch {B} x {T}; medians of {args.repeat} (ms)")
    print("| case | syntorch.torch | bridge | ATen ops | PyTorch on meta | PyTorch, empty dispatch mode | bridge / syntorch.torch |")
    print("|---|---|---|---|---|---|---|")
    for train in (False, True):
        own, bridged, meta, empty, ops = [], [], [], [], 0
        for _ in range(args.repeat):  # alternated, so drift on a shared machine hits each alike
            own.append(_syntorch_torch(args.layers, train))
            t, ops = _bridge(args.layers, train)
            bridged.append(t)
            meta.append(_real(args.layers, train, None))
            empty.append(_real(args.layers, train, _Nothing))
        o, b = statistics.median(own) * 1e3, statistics.median(bridged) * 1e3
        print(f"| {'training step' if train else 'inference'} | {o:.1f} | {b:.1f} | {ops} | "
              f"{statistics.median(meta) * 1e3:.1f} | {statistics.median(empty) * 1e3:.1f} | {b / o:.1f}x |")


if __name__ == "__main__":
    main()
