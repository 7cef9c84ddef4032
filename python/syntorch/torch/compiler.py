"""torch.compiler: whether code runs inside a compiled graph, resetting the compiled graphs, and
functions kept out of graphs."""

import functools

import _syntorch

from syntorch._unsupported import module_getattr as _module_getattr

__getattr__ = _module_getattr("torch.compiler")


def is_compiling():
    """True while a compiled graph's region runs (the Python code torch.compile traces)."""
    return _syntorch._compile_active()


def is_dynamo_compiling():
    return _syntorch._compile_active()


def reset():
    from syntorch.torch._dynamo.eval_frame import reset as _reset
    _reset()


def disable(fn=None, recursive=True):
    """A function that always runs eagerly: called inside a compiled region it breaks the graph
    (the ops before it launch as one graph, those after it as another) and its own ops, and any
    compiled function it calls, run as eager mode's."""
    if fn is None:
        return functools.partial(disable, recursive=recursive)

    @functools.wraps(fn)
    def eager(*args, **kwargs):
        from syntorch.torch._dynamo.eval_frame import run_eagerly
        return run_eagerly(f"a call to {getattr(fn, '__qualname__', 'a function')} under torch.compiler.disable",
                           fn, args, kwargs)
    return eager


def allow_in_graph(fn):
    """Accepted: every function's ops are traced into the graph here."""
    return fn


def assume_constant_result(fn):
    """Accepted: the function runs on every call (its result is not baked into the graph)."""
    return fn
