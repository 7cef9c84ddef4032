"""Runs an unmodified PyTorch script on a simulated machine, as torchrun runs it on a real one:

    python -m syntorch.run [--hw hw_configs/h100_sxm5_80gb.json] [--set /ptr=value]... \\
        [--policy P] [--trace run.pftrace] [--framework eager|native] [--nproc 1] script.py [args...]

Inside the run `import torch` (torch.nn, torch.nn.functional, torch.cuda, torch.optim,
torch.distributed, ...) resolves to syntorch's, so the script needs no edits; a PyTorch function
or argument syntorch lacks raises NotImplementedError naming it. The run's summary (simulated
time, kernels, memory, and every op and kernel by name) is printed to stderr at the end."""

import argparse
import importlib
import os
import runpy
import sys

_SUBMODULES = ("nn", "nn.functional", "nn.init", "nn.utils", "cuda", "optim", "optim.lr_scheduler", "amp",
               "autograd", "profiler", "distributed")


def alias_torch():
    """Makes `import torch` and its submodules resolve to syntorch's in this process."""
    import syntorch.torch as torch
    sys.modules["torch"] = torch
    for name in _SUBMODULES:
        module = importlib.import_module("syntorch.torch." + name)
        sys.modules["torch." + name] = module
    torch.distributed = sys.modules["torch.distributed"]
    return torch


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m syntorch.run", description=__doc__.split("\n\n")[0])
    p.add_argument("--hw", default=None, help="hardware config JSON (default: SYNTORCH_HW, else the bundled H100)")
    p.add_argument("--set", action="append", default=[], metavar="/PTR=VALUE", help="override a config field")
    p.add_argument("--policy", default=None, help="kernel policy: op=impl,... or a policy file")
    p.add_argument("--trace", default=None, help="trace file (.pftrace, .json, .json.gz, .et)")
    p.add_argument("--framework", default="eager", choices=["eager", "native"])
    p.add_argument("--nproc", "--nproc-per-node", dest="nproc", type=int, default=1, help="processes (ranks)")
    p.add_argument("script", help="the PyTorch script to run")
    p.add_argument("args", nargs=argparse.REMAINDER, help="the script's arguments")
    ns = p.parse_args(argv)
    if ns.nproc != 1:
        p.exit(2, f"{p.prog}: --nproc: {ns.nproc} ranks are not supported from Python yet (1 is); the C++ "
                  "front ends (syntorch simulate --tp/--pp, syntorch train) run many\n")
    if not os.path.isfile(ns.script):
        p.exit(2, f"{p.prog}: script: no such file {ns.script!r}\n")

    import syntorch
    try:
        syntorch.init(hw=ns.hw, set=ns.set, framework=ns.framework, trace=ns.trace, policy=ns.policy)
    except (ValueError, FileNotFoundError) as e:
        p.exit(2, f"{p.prog}: {e}\n")
    alias_torch()
    os.environ.setdefault("RANK", "0")
    os.environ.setdefault("LOCAL_RANK", "0")
    os.environ.setdefault("WORLD_SIZE", "1")
    sys.argv = [ns.script] + ns.args
    sys.path.insert(0, os.path.dirname(os.path.abspath(ns.script)))
    try:
        runpy.run_path(ns.script, run_name="__main__")
    finally:
        if syntorch._session is not None:
            text = syntorch.trace_manager.dump(format="console", path=os.devnull)
            print(text, file=sys.stderr)


if __name__ == "__main__":
    main()
