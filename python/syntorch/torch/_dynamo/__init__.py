"""torch._dynamo: torch.compile's graph capture, as syntorch models it (eval_frame says how)."""

import types as _types

from . import config, exc  # noqa: F401
from .eval_frame import counters as _counters, graph_break_at as _graph_break_at, reset  # noqa: F401
from .optimized import OptimizedModule, optimize_module as _optimize_module  # noqa: F401


# torch._dynamo.utils, as far as scripts read it: counters["stats"]["unique_graphs"], ["calls_captured"],
# counters["graph_break"][reason], counters["recompiles"][function].
utils = _types.SimpleNamespace(counters=_counters)


def graph_break():
    """Ends the current graph here (the next ops start a new one)."""
    _graph_break_at("torch._dynamo.graph_break()")


def list_backends(exclude_tags=None):
    return ["cudagraphs", "inductor"]


def mark_dynamic(t, index, min=None, max=None):  # noqa: A002 (PyTorch's names)
    """Accepted, and not acted on: every size is compiled static first and becomes dynamic at its
    first change (automatic_dynamic_shapes); dynamic=True makes every size dynamic at once."""


def mark_static(t, index=None):
    """Accepted, and not acted on: dynamic=False keeps every size static."""


def is_compiling():
    import _syntorch
    return _syntorch._compile_active()


def disable(fn=None, recursive=True):
    """A function that runs eagerly: called inside a compiled region, it breaks the graph."""
    from syntorch.torch.compiler import disable as _disable
    return _disable(fn, recursive=recursive)


def explain(fn, *extra_args, **extra_kwargs):
    """explain(fn)(*args): compiles and runs fn once, and says how many graphs and breaks it had."""
    from syntorch.torch._dynamo.eval_frame import CompiledFunction

    def run(*args, **kwargs):
        c = CompiledFunction(fn, name=getattr(fn, "__qualname__", "fn"))
        c(*args, **kwargs)
        stats = c.last_stats
        reasons = [BreakReason(r) for r in stats["break_reasons"]]
        return ExplainOutput(graph_count=stats["graphs"], graph_break_count=len(reasons), break_reasons=reasons,
                             op_count=stats["ops"])
    if extra_args or extra_kwargs:
        return run(*extra_args, **extra_kwargs)
    return run


class BreakReason:
    """Why a graph broke (`reason`), as Dynamo's explain lists them."""

    def __init__(self, reason):
        self.reason = reason
        self.user_stack = []

    def __str__(self):
        return self.reason

    def __repr__(self):
        return f"BreakReason({self.reason!r})"


class ExplainOutput:
    def __init__(self, graph_count, graph_break_count, break_reasons, op_count):
        self.graph_count = graph_count
        self.graph_break_count = graph_break_count
        self.break_reasons = break_reasons
        self.op_count = op_count

    def __str__(self):
        lines = [f"Graph Count: {self.graph_count}", f"Graph Break Count: {self.graph_break_count}",
                 f"Op Count: {self.op_count}", "Break Reasons:"]
        lines += [f"  Break Reason {i + 1}: {r.reason}" for i, r in enumerate(self.break_reasons)]
        return "\n".join(lines)
