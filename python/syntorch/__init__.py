"""syntorch: run PyTorch model code on simulated hardware.

    import syntorch
    import syntorch.torch as torch

    syntorch.init(hw="hw_configs/h100_sxm5_80gb.json")   # or SYNTORCH_HW; default: the bundled H100
    x = torch.randn(8, 1024, dtype=torch.float16, device="cuda")
    y = torch.nn.functional.gelu(x @ torch.randn(1024, 4096, dtype=torch.float16, device="cuda"))
    print(syntorch.trace_manager.stats())

Every op a program issues runs as kernels on the simulated machine; nothing is computed (tensors
carry shapes, not values).
"""

import atexit
import os

import _syntorch

__all__ = ["init", "trace_manager", "current_session"]

_here = os.path.dirname(os.path.abspath(__file__))
_session = None


def _bundled_config(name):
    for root in (os.environ.get("SYNTORCH_SOURCE_DIR", ""), os.path.join(_here, "..", "..")):
        path = os.path.join(root, "hw_configs", name)
        if root and os.path.isfile(path):
            return os.path.normpath(path)
    raise FileNotFoundError(f"syntorch: the bundled hardware config {name} was not found; pass init(hw=...)")


def init(hw=None, set=(), framework="eager", trace=None):
    """Starts a simulated run on the machine `hw` (a hardware config JSON file; default: the
    SYNTORCH_HW environment variable, else the bundled H100). `set` overrides config fields
    ("/json/pointer=value", as the CLI's --set); `framework` is "eager" (PyTorch's dispatch cost per
    op) or "native"; `trace` a trace file to write (.json, .pftrace, .et) when the run ends. A run
    already going is ended first."""
    global _session
    if isinstance(set, str):
        raise TypeError("init(set=...) takes a list of \"/json/pointer=value\" strings, not one string")
    if _session is not None and not _session.finished:
        _session.finish()
    hw = hw or os.environ.get("SYNTORCH_HW") or _bundled_config("h100_sxm5_80gb.json")
    _session = _syntorch.Session(str(hw), [str(s) for s in set], framework, str(trace) if trace else "")
    return _session


def current_session():
    """The run ops go to, started on first use."""
    if _session is None or _session.finished:
        init()
    return _session


class _TraceManager:
    """What the run measured. stats() ends the run (the simulation waits for every op issued)."""

    def stats(self):
        if _session is None:
            raise RuntimeError("syntorch: no run has started (call syntorch.init() or issue an op)")
        return _session.finish()

    def dump(self, format="console", path=None):
        s = self.stats()
        if format != "console":
            raise ValueError(f"trace_manager.dump: format {format!r} needs init(trace=path) before the run "
                             "(traces are written as the run goes); format='console' prints the summary")
        lines = [f"syntorch run on {s['machine']} ({s['device']})",
                 f"  simulated time   {s['simulated_time_s'] * 1e3:.3f} ms",
                 f"  kernels          {s['kernels']}",
                 f"  FLOPs            {s['flops']:.4g}",
                 f"  HBM bytes        {s['hbm_bytes']:.4g}",
                 f"  peak memory      {', '.join(f'{b / 2**20:.1f} MiB' for b in s['peak_memory_bytes'])}"]
        text = "\n".join(lines)
        if path:
            with open(path, "w") as f:
                f.write(text + "\n")
        else:
            print(text)
        return text


trace_manager = _TraceManager()


@atexit.register
def _finish_at_exit():
    if _session is not None and not _session.finished:
        _session.finish()
