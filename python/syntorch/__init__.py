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
import threading

import _syntorch

from syntorch._values import (ValuePlaceholderWarning, set_value_mode, value_mode, value_reads,  # noqa: F401
                              clear_value_reads)

__all__ = ["init", "launch", "trace_manager", "current_session", "profile", "KernelPolicy", "set_kernel_policy",
           "get_kernel_policy", "clear_kernel_policy", "simulate", "simulate_graph", "replay", "train", "serve",
           "ValuePlaceholderWarning", "set_value_mode", "value_mode", "value_reads", "clear_value_reads"]

_here = os.path.dirname(os.path.abspath(__file__))
_session = None
_session_thread = None
_init_args = {}


def _bundled_config(name):
    # A source tree named by SYNTORCH_SOURCE_DIR, the installed package's copy, the working tree.
    for root in (os.environ.get("SYNTORCH_SOURCE_DIR", ""), _here, os.path.join(_here, "..", "..")):
        path = os.path.join(root, "hw_configs", name)
        if root and os.path.isfile(path):
            return os.path.normpath(path)
    raise FileNotFoundError(f"syntorch: the bundled hardware config {name} was not found; pass init(hw=...)")


def init(hw=None, set=(), framework="eager", trace=None, policy=None, console=True):
    """Starts a simulated run on the machine `hw` (a hardware config JSON file; default: the
    SYNTORCH_HW environment variable, else the bundled H100). `set` overrides config fields
    ("/json/pointer=value", as the CLI's --set); `framework` is "eager" (PyTorch's dispatch cost per
    op) or "native"; `trace` a trace file to write (.json, .pftrace, .et) when the run ends;
    `policy` a KernelPolicy, "op=impl,..." text or a policy file; `console` keeps the ops and
    kernels by name for trace_manager.dump() (console=False saves the tracing's cost on large
    runs). A run already going is ended first."""
    global _session, _session_thread, _init_args, _policy
    if isinstance(set, str):
        raise TypeError("init(set=...) takes a list of \"/json/pointer=value\" strings, not one string")
    if _session is not None and not _session.finished:
        _check_thread()
        try:
            _session.finish()
        except Exception:
            pass  # a failed run is over; the new one starts clean
    _session = None  # the old run's engine goes before the new one is built
    args = dict(hw=hw, set=list(set), framework=framework, trace=trace, policy=policy, console=console)
    value_mode()  # a bad SYNTORCH_VALUES (or its limit) is refused here, as a bad config is
    hw = hw or os.environ.get("SYNTORCH_HW") or _bundled_config("h100_sxm5_80gb.json")
    session = _syntorch.Session(str(hw), [str(s) for s in set], framework, str(trace) if trace else "",
                                str(policy) if policy is not None else "", bool(console))
    # Kept only once they made a run: a refused init() leaves later implicit runs on the last good one.
    _session, _session_thread, _init_args = session, threading.get_ident(), args
    clear_value_reads()  # each run lists its own
    _policy = policy if isinstance(policy, KernelPolicy) or policy is None else KernelPolicy._from_text(str(policy))
    return _session


def _check_thread():
    if _session_thread is not None and threading.get_ident() != _session_thread:
        raise RuntimeError("syntorch runs a program on the thread that started its run (called syntorch.init() "
                           "or made its first tensor); this is another thread")


# PyTorch's and the design's names for the ops a policy chooses kernels for.
_POLICY_OPS = {"matmul": ("gemm", "bmm"), "mm": ("gemm",), "linear": ("gemm",), "bmm": ("bmm",),
               "scaled_dot_product_attention": ("attention",), "layer_norm": ("layernorm",),
               "rms_norm": ("rmsnorm",), "all_reduce": ("allreduce",), "all_gather": ("allgather",),
               "reduce_scatter": ("reducescatter",), "all_to_all": ("alltoall",)}


class KernelPolicy:
    """Policy as code: which implementation runs each op, as KernelPolicy(matmul="cublasLt",
    attention="flash_v2"). Keys are the op table's names (gemm, attention, layernorm, allreduce,
    ...) or PyTorch's (matmul, scaled_dot_product_attention, layer_norm, all_reduce, ...); values an
    implementation, with ":precision" (or ":protocol" for a collective) as the CLI's --policy."""

    def __init__(self, **choices):
        self._entries = {}
        self.preferences = {key: str(value) for key, value in choices.items()}  # as given (the design's)
        for key, value in choices.items():
            for op in _POLICY_OPS.get(key, (key,)):
                self._entries[op] = str(value)

    @classmethod
    def _from_text(cls, text):
        p = cls()
        p._text = text
        if "=" in text and not os.path.isfile(text):
            p.preferences = dict(part.split("=", 1) for part in text.split(",") if "=" in part)
        return p

    def __str__(self):
        if getattr(self, "_text", None) is not None:
            return self._text
        return ",".join(f"{op}={impl}" for op, impl in self._entries.items())

    def __repr__(self):
        return f"KernelPolicy({str(self)!r})"


_policy = None


def set_kernel_policy(policy=None, **choices):
    """Ops launched from now on run by `policy` (a KernelPolicy or "op=impl,..." text) or by the
    keyword choices; the ops already launched keep their kernels."""
    global _policy
    if policy is None:
        policy = KernelPolicy(**choices)
    elif choices:
        raise TypeError("set_kernel_policy takes a policy or keyword choices, not both")
    elif not isinstance(policy, KernelPolicy):
        policy = KernelPolicy._from_text(str(policy))
    current_session()
    _syntorch.set_policy(str(policy))
    _policy = policy


def get_kernel_policy():
    """The policy set last (its .preferences: op -> kernel as given), or None when none is set."""
    return _policy


def clear_kernel_policy():
    """Back to `auto` for every op: the fastest implementation the device supports."""
    global _policy
    set_kernel_policy(KernelPolicy())
    _policy = None


_rank_local = threading.local()  # .rank: this thread is a rank of a many-rank run (syntorch.run)


def launch(fn, nproc, hw=None, set=(), framework="eager", trace=None, policy=None, console=True, mirror=False):
    """Runs fn(rank) once per rank, ranks 0..nproc-1 on the machine's first nproc devices, all on
    one simulator (each call on a thread of its own: torch.distributed works between them), and
    returns the run's statistics (per-rank peak memory, `console`: every op and kernel by name).
    What a rank raises fails the run, naming the rank; a simulated out-of-memory is a result
    (`out_of_memory` is true).

    mirror=True is for ranks that run the same program on tensors of the same shapes, each of
    whose process groups holds rank 0 (pure tensor parallelism, or pure data parallelism): only
    fn(0) runs, and every other rank mirrors rank 0, joining its collectives so that their bytes
    still cross the machine's links. The simulated times are those of the full run at 1/nproc of
    the Python work; statistics report rank 0's results for every rank. A group without rank 0
    (whose collectives rank 0 never sees) and a point-to-point transfer (which only differing
    ranks make) are refused by name."""
    if isinstance(set, str):
        raise TypeError("launch(set=...) takes a list of \"/json/pointer=value\" strings, not one string")
    if int(nproc) < 1:
        raise ValueError(f"launch: nproc must be at least 1, got {nproc}")
    hw = hw or os.environ.get("SYNTORCH_HW") or _bundled_config("h100_sxm5_80gb.json")

    def rank_main(rank):
        _rank_local.rank = rank
        _rank_local.mirrored = bool(mirror)
        try:
            fn(rank)
        finally:
            _rank_local.rank = None
            _rank_local.mirrored = False

    return _syntorch.run_ranks(str(hw), [str(s) for s in set], framework, str(trace) if trace else "",
                               str(policy) if policy is not None else "", bool(console), int(nproc), rank_main,
                               bool(mirror))


def _workload(kind, model, hw, set, policy, trace, params):
    import json
    given = [("model", str(model))] if model is not None else []
    for key, value in params.items():
        if value is None:  # the parameter's default, as for an omitted keyword
            continue
        if isinstance(value, bool):
            value = "true" if value else "false"
        elif isinstance(value, (list, tuple)):  # trace_ranks=[0, 1, 2]
            value = ",".join(str(v) for v in value)
        given.append((key, str(value)))
    if isinstance(set, str):
        set = [set]
    text = _syntorch.run_workload(kind, hw if hw is not None else _bundled_config("dgx_h100.json"), list(set),
                                  "" if policy is None else str(policy), "" if trace is None else str(trace), given)
    return json.loads(text)


def _parameter_doc(kind):
    lines = []
    for key, alias, typ, unit, help_text, default in _syntorch.workload_parameters(kind):
        also = f" (or {alias})" if alias else ""
        shown = f"; default {default}" if default else ""
        lines.append(f"    {key}{also}: {typ}{', ' + unit if unit else ''}{shown}. {help_text}")
    return "\n".join(lines)


def simulate(model, hw=None, set=(), policy=None, trace=None, **params):
    """One generation run of a zoo model, as `syntorch simulate` runs it; returns its report as a
    dict (the fields of `syntorch simulate --json`: every parameter it ran with, ttft_ms,
    tpot_ms, tokens_per_s, mfu, memory, the time breakdown; status "oom" for a simulated
    out-of-memory). `hw` is a hardware config (default the bundled DGX H100), `set` overrides
    ("/json/pointer=value"), `policy` a kernel policy, `trace` a trace file to write. A bad
    parameter raises ValueError naming it.

    Parameters (keywords):
{params}
    """
    return _workload("generate", model, hw, set, policy, trace, params)


def train(model, hw=None, set=(), policy=None, trace=None, **params):
    """One training iteration of a zoo model, as `syntorch train` runs it; returns its report as a
    dict (the fields of `syntorch train --json`: every parameter it ran with, iteration_time_s,
    tokens_per_s, tflops_per_gpu, mfu, hfu, memory per stage; status "oom" for a simulated
    out-of-memory). `hw`, `set`, `policy` and `trace` as for simulate().

    Parameters (keywords):
{params}
    """
    return _workload("train", model, hw, set, policy, trace, params)


def serve(model, hw=None, set=(), policy=None, trace=None, capacity=False, probes=8, **params):
    """A serving engine under a stream of requests, as `syntorch serve` runs it; returns its
    report as a dict (the fields of `syntorch serve --json`: every parameter it ran with,
    request_throughput, output_throughput, ttft_s, tpot_s, itl_s and e2el_s (mean, median, p90,
    p99), goodput, preemptions, the KV pool, the batch sizes and the steps' series; status "oom"
    when the engine cannot start). `hw`, `set`, `policy` and `trace` as for simulate(); the trace
    shows every request on a lane above the ranks' steps and kernels.

    capacity=True searches the highest request rate that meets the `slo` objectives at p99, as
    `syntorch serve --capacity` does, in `probes` runs: the report then holds saturation_rate,
    capacity_rate and the probes (rate, throughput, p99 TTFT, TPOT and E2E, whether they met the
    objectives): the latency-throughput curve.

    Parameters (keywords):
{params}
    """
    if capacity:
        return _workload("capacity", model, hw, set, policy, trace, dict(params, probes=probes))
    return _workload("serve", model, hw, set, policy, trace, params)


def simulate_graph(graph, hw=None, set=(), policy=None, trace=None, framework="eager"):
    """A model's graph (a syntorch IR JSON file: syntorch.ir's `ir.save`, `syntorch graph
    export`) run once on one device, as `syntorch simulate --graph` runs it, by the simulator
    alone (no PyTorch needed); returns its report as a dict: simulated_time_s, kernels, flops,
    hbm_bytes, peak memory, and under "aten" the count of every ATen op and those with no model
    of their own (costed as memory-bound passes, with their share of the graph's FLOPs and
    bytes); status "oom" for a simulated out-of-memory. `hw`, `set`, `policy` and `trace` as for
    simulate(). A file that is not an IR raises ValueError naming it, the JSON path, what was
    expected and what was found."""
    import json
    if isinstance(set, str):
        set = [set]
    if framework not in ("eager", "native"):
        raise ValueError(f"simulate_graph: framework must be 'eager' or 'native', got {framework!r}")
    text = _syntorch.run_graph(str(graph), hw if hw is not None else _bundled_config("dgx_h100.json"), list(set),
                               "" if policy is None else str(policy), "" if trace is None else str(trace), framework)
    return json.loads(text)


def replay(workload, hw=None, set=(), policy=None, trace=None, framework="native", comm_groups=None):
    """A Chakra execution trace (ASTRA-sim's workload format: "dir/run.et" for every rank's
    "dir/run.<rank>.et") replayed on a simulated machine, as `syntorch replay` does: compute nodes
    for their recorded durations, collectives and sends/receives on the machine's network, the
    trace's dependencies kept. `comm_groups` is the process groups file (default
    "dir/run.comm_groups.json" when it is there). Returns the report as a dict: simulated_time_s,
    the trace's own recorded_span_s and recorded_compute_s, nodes by kind. A trace that cannot be
    replayed raises ValueError naming the file, the node and what is wrong."""
    import json
    if isinstance(set, str):
        set = [set]
    if framework not in ("eager", "native"):
        raise ValueError(f"replay: framework must be 'eager' or 'native', got {framework!r}")
    text = _syntorch.run_replay(str(workload), hw if hw is not None else _bundled_config("dgx_h100.json"), list(set),
                                "" if policy is None else str(policy), "" if trace is None else str(trace), framework,
                                "" if comm_groups is None else str(comm_groups))
    return json.loads(text)


simulate.__doc__ = simulate.__doc__.replace("{params}", _parameter_doc("generate"))
serve.__doc__ = serve.__doc__.replace("{params}", _parameter_doc("serve"))
train.__doc__ = train.__doc__.replace("{params}", _parameter_doc("train"))


def in_rank_program():
    """Whether this thread runs one rank's program of a many-rank run."""
    return getattr(_rank_local, "rank", None) is not None


def current_session():
    """The run ops go to: started on first use, and after a finished run started again with the
    arguments the last init() had. None on a rank of a many-rank run (the run is the caller's)."""
    if in_rank_program():
        return None
    if _session is None or _session.finished:
        init(**_init_args)
    _check_thread()
    return _session


class _TraceManager:
    """What the run measured. stats() ends the run (the simulation waits for every op issued)."""

    def stats(self):
        if in_rank_program():
            raise RuntimeError("syntorch: in a many-rank run the statistics come when every rank's script has ended "
                               "(python -m syntorch.run prints them)")
        if _session is None:
            raise RuntimeError("syntorch: no run has started (call syntorch.init() or issue an op)")
        _check_thread()
        stats = _session.finish()
        stats["value_reads"] = value_reads()
        return stats

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
        if s["value_reads"]:
            lines += ["", "  values read (the simulator computes none: placeholders were returned):"]
            lines += [f"    {r['file']}:{r['line']}  {r['kind']} x{r['count']}" for r in s["value_reads"]]
        ops = _session.console().rstrip()
        if ops:
            lines += ["", ops]
        else:
            lines += ["  (ops and kernels by name: init(console=True))"]
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
    if _session is not None and not _session.finished and threading.get_ident() == _session_thread:
        try:
            _session.finish()
        except Exception:
            pass


# The xpuruntime extension's names, offered by syntorch too (syntorch.xpuruntime.pytorch).
from syntorch.xpuruntime.pytorch import (autocast, capture_graph, CUDAGraphWrapper, ops, set_allocator,  # noqa: E402
                                         reset_allocator, profile)
__all__ += ["autocast", "capture_graph", "CUDAGraphWrapper", "ops", "set_allocator", "reset_allocator"]
