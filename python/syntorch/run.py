"""Runs an unmodified PyTorch script on a simulated machine, as torchrun runs it on a real one:

    python -m syntorch.run [--hw hw_configs/h100_sxm5_80gb.json] [--set /ptr=value]... \\
        [--policy P] [--trace run.pftrace] [--framework eager|native] [--nproc 1 [--mirror]] \\
        script.py [args...]

Inside the run `import torch` (torch.nn, torch.nn.functional, torch.cuda, torch.optim,
torch.distributed, torch.utils.data, ...) and `import xpuruntime.pytorch` resolve to syntorch's,
so the script needs no edits; a PyTorch function
or argument syntorch lacks raises NotImplementedError naming it. The run's summary (simulated
time, kernels, memory, and every op and kernel by name) is printed to stderr at the end."""

import argparse
import collections.abc
import importlib
import os
import runpy
import sys

_SUBMODULES = ("nn", "nn.functional", "nn.init", "nn.utils", "nn.attention", "nn.parallel", "cuda", "optim", "optim.lr_scheduler",
               "amp", "autograd", "profiler", "distributed", "backends", "backends.cuda", "backends.cudnn", "utils",
               "utils.checkpoint", "utils.data", "utils.data.distributed", "utils.data.dataloader",
               "serialization", "jit", "compiler", "backends.mps", "utils._pytree", "linalg",
               "distributions", "nn.utils.rnn", "multiprocessing", "hub", "accelerator",
               "utils.tensorboard", "_dynamo", "_dynamo.config", "_dynamo.exc", "_inductor", "_inductor.config",
               "distributed._functional_collectives", "distributed.algorithms",
               "distributed.algorithms._checkpoint", "distributed.algorithms._checkpoint.checkpoint_wrapper")
_XPURUNTIME = ("", ".pytorch", ".pytorch.ops")


def alias_torch():
    """Makes `import torch` and its submodules resolve to syntorch's in this process."""
    import syntorch.torch as torch
    sys.modules["torch"] = torch
    for name in _SUBMODULES:
        module = importlib.import_module("syntorch.torch." + name)
        sys.modules["torch." + name] = module
    torch.distributed = sys.modules["torch.distributed"]
    sys.modules["torch.cuda.amp"] = torch.cuda.amp  # from torch.cuda.amp import autocast, GradScaler
    torch.set_default_device("cpu")  # PyTorch's: a script moves its model and data to "cuda" itself
    # The xpuruntime extension of the design, as syntorch provides it.
    for name in _XPURUNTIME:
        sys.modules["xpuruntime" + name] = importlib.import_module("syntorch.xpuruntime" + name)
    return torch


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m syntorch.run", description=__doc__.split("\n\n")[0])
    p.add_argument("--hw", default=None, help="hardware config JSON (default: SYNTORCH_HW, else the bundled H100)")
    p.add_argument("--set", action="append", default=[], metavar="/PTR=VALUE", help="override a config field")
    p.add_argument("--policy", default=None, help="kernel policy: op=impl,... or a policy file")
    p.add_argument("--trace", default=None, help="trace file (.pftrace, .json, .json.gz, .et)")
    p.add_argument("--framework", default="eager", choices=["eager", "native"])
    p.add_argument("--nproc", "--nproc-per-node", dest="nproc", type=int, default=1, help="processes (ranks)")
    p.add_argument("--mirror", action="store_true",
                   help="the ranks run the same program on the same shapes: run rank 0's, the others mirror it")
    p.add_argument("script", help="the PyTorch script to run")
    p.add_argument("args", nargs=argparse.REMAINDER, help="the script's arguments")
    ns = p.parse_args(argv)
    if ns.nproc < 1:
        p.exit(2, f"{p.prog}: --nproc: expected at least 1 rank, got {ns.nproc}\n")
    if not os.path.isfile(ns.script):
        p.exit(2, f"{p.prog}: script: no such file {ns.script!r}\n")
    if ns.nproc > 1:
        return _run_ranks(p, ns)

    import syntorch
    try:
        syntorch.init(hw=ns.hw, set=ns.set, framework=ns.framework, trace=ns.trace, policy=ns.policy)
    except (ValueError, FileNotFoundError, RuntimeError) as e:  # RuntimeError: values without PyTorch
        p.exit(2, f"{p.prog}: {e}\n")
    try:
        alias_torch()
    except (ValueError, RuntimeError) as e:  # SYNTORCH_VALUES and its limit, or no PyTorch for values
        p.exit(2, f"{p.prog}: {e}\n")
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


class _RankEnviron(collections.abc.MutableMapping):
    """os.environ with RANK, LOCAL_RANK and WORLD_SIZE per thread: every rank's script sees its own,
    as every process does under torchrun. Everything else is the process's environment (setting
    and deleting variables as os.environ does)."""

    _PER_RANK = ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK")

    def __init__(self, base, local):
        self._base, self._local = base, local

    def _own(self, key):
        values = getattr(self._local, "env", None)
        return values if values is not None and key in self._PER_RANK else None

    def __getitem__(self, key):
        own = self._own(key)
        return own[key] if own is not None else self._base[key]

    def __setitem__(self, key, value):
        own = self._own(key)
        if own is not None:
            own[key] = value
        else:
            self._base[key] = value

    def __delitem__(self, key):
        own = self._own(key)
        if own is not None:
            del own[key]
        else:
            del self._base[key]

    def __iter__(self):
        values = getattr(self._local, "env", None) or {}
        yield from values
        yield from (k for k in self._base if k not in values)

    def __len__(self):
        return sum(1 for _ in self)

    def copy(self):
        return dict(self)

    def __repr__(self):
        return f"environ({dict(self)!r})"


class _RankLines:
    """sys.stdout or sys.stderr for the ranks' threads: each thread's text goes out a whole line at
    a time, as separate processes' lines do, instead of interleaving mid-line."""

    def __init__(self, stream, local):
        self._stream, self._local = stream, local

    def write(self, text):
        pending = getattr(self._local, "pending", "") + text
        *lines, rest = pending.split("\n")
        self._local.pending = rest
        if lines:
            self._stream.write("".join(line + "\n" for line in lines))
        return len(text)

    def flush(self):
        pending = getattr(self._local, "pending", "")
        if pending:
            self._stream.write(pending)
            self._local.pending = ""
        self._stream.flush()

    def __getattr__(self, name):
        return getattr(self._stream, name)


def _run_ranks(p, ns):
    """Every rank runs the script on a thread of its own, all on one simulator."""
    import threading
    import syntorch
    alias_torch()
    with open(ns.script) as f:
        code = compile(f.read(), ns.script, "exec")
    local = threading.local()
    environ, stdout, stderr = os.environ, sys.stdout, sys.stderr
    os.environ = _RankEnviron(environ, local)
    sys.stdout, sys.stderr = _RankLines(stdout, threading.local()), _RankLines(stderr, threading.local())
    sys.argv = [ns.script] + ns.args
    sys.path.insert(0, os.path.dirname(os.path.abspath(ns.script)))

    def rank_main(rank):
        local.env = {"RANK": str(rank), "LOCAL_RANK": str(rank), "WORLD_SIZE": str(ns.nproc),
                     "LOCAL_WORLD_SIZE": str(ns.nproc), "GROUP_RANK": "0"}
        try:
            exec(code, {"__name__": "__main__", "__file__": os.path.abspath(ns.script), "__builtins__": __builtins__})
        finally:
            sys.stdout.flush()
            sys.stderr.flush()

    try:
        stats = syntorch.launch(rank_main, ns.nproc, hw=ns.hw, set=ns.set, framework=ns.framework, trace=ns.trace,
                                policy=ns.policy, mirror=ns.mirror)
    except (ValueError, FileNotFoundError) as e:
        p.exit(2, f"{p.prog}: {e}\n")
    finally:
        os.environ, sys.stdout, sys.stderr = environ, stdout, stderr
    lines = [f"syntorch run of {ns.nproc} ranks on {stats['machine']}",
             f"  simulated time   {stats['simulated_time_s'] * 1e3:.3f} ms",
             f"  kernels          {stats['kernels']}",
             f"  FLOPs            {stats['flops']:.4g}",
             f"  peak memory      {', '.join(f'{b / 2**20:.1f} MiB' for b in stats['peak_memory_bytes'])}"]
    if stats["out_of_memory"]:
        lines.append("  a rank ran out of memory (simulated)")
    print("\n".join(lines) + "\n\n" + stats["console"].rstrip(), file=sys.stderr)
    return 3 if stats["out_of_memory"] else 0


if __name__ == "__main__":
    main()
