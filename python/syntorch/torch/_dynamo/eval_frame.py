"""torch.compile on the simulated machine: guards, the graph cache and recompilation, graph
breaks, and the compiled regions (the C++ torch layer's torch/compile.hpp) that fuse a graph's
elementwise and reduction chains into generated kernels.

A call of a compiled function or module checks its guards (the tensors' dtypes, devices,
requires_grad and sizes, other arguments' values, grad mode, the module's training flag) against
the graphs compiled so far. A miss compiles a new graph (its host time on that first call) unless
config.cache_size_limit graphs exist already (the call then runs eagerly, with a warning, as
Dynamo falls back); a miss from a changed size compiles that dimension as dynamic
(automatic_dynamic_shapes), so later sizes hit. The call then runs its Python code inside a region
that records its ops and launches the fused plan when it returns, or earlier at a graph break (a
value read: .item(), bool(t), data-dependent control flow; torch._dynamo.graph_break(); a
function under torch.compiler.disable), which fullgraph=True turns into an error.
mode="reduce-overhead" (and "max-autotune") runs a graph's first call as it is, records a CUDA
graph on its second and replays it from then on, as cudagraph trees do."""

import collections
import functools
import threading
import warnings
import weakref

import _syntorch

from . import config
from .exc import InvalidBackend, Unsupported

# The host's cost of compiling, as syntorch models it (seconds): a fixed part per graph (tracing,
# AOTAutograd's partitioning, the wrapper's code), a part per traced op, and one per generated
# kernel (Triton's code generation and compile, in parallel workers). The C++ layer's defaults
# (torch/compile.hpp CompileCosts); a program may change them.
COMPILE_COSTS = {k: v for k, v in _syntorch._compile_defaults().items() if k != "max_fusion_size"}

_BACKENDS = ("inductor", "cudagraphs", "eager", "aot_eager")
_MODES = (None, "default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")


# torch._dynamo.utils.counters, as PyTorch's: a defaultdict of Counters.
counters = collections.defaultdict(collections.Counter)


def _count(group, key, n=1):
    counters[group][key] += n


class _Local(threading.local):
    def __init__(self):
        self.fullgraph = []  # per active region: whether a break is an error
        self.suspended = 0   # inside torch.compiler.disable'd calls: everything runs eagerly


_local = _Local()
_next_graph = [1]
_lock = threading.Lock()


def _allow_break(what):
    """Whether a graph break is due here (inside a compiled region), counted; raises under
    fullgraph=True."""
    if not _syntorch._compile_active():
        return False
    if _local.fullgraph and _local.fullgraph[-1]:
        raise Unsupported(f"{what}: a graph break inside a function compiled with fullgraph=True")
    _count("graph_break", what)
    return True


def graph_break_at(what):
    """A graph break the front end sees (a value read): flushes the active region. Nothing
    outside a compiled region."""
    if _allow_break(what):
        _syntorch._compile_break(what)


def run_eagerly(what, fn, args, kwargs):
    """fn outside the graph (torch.compiler.disable): a graph break before it, its ops eager."""
    if not _allow_break(what):
        return fn(*args, **kwargs)
    _syntorch._compile_suspend(what)
    _local.suspended += 1
    try:
        return fn(*args, **kwargs)
    finally:
        _local.suspended -= 1
        _syntorch._compile_resume()


class _Entry:
    """One compiled graph: its id, the ranks (simulations) that compiled it, and per rank and
    concrete sizes its calls and CUDA graph (reduce-overhead)."""

    def __init__(self, graph_id):
        self.graph_id = graph_id
        self.compiled_on = set()  # rank serials
        self.runs = {}            # (rank serial, sizes) -> [calls, cuda graph, its plan hash]
        self.breaks = False


def _spec(value, path, dynamic, out, concrete):
    """The guard of one argument, flattened into `out` as (path, kind, details); its tensors'
    actual sizes and its ints' values into `concrete` (a dynamic graph's CUDA graphs are per
    sizes and ints, as cudagraph trees record them)."""
    if isinstance(value, _syntorch.Tensor):
        shape = tuple(value.shape)
        concrete.append(shape)
        sizes = tuple(None if (path, d) in dynamic else s for d, s in enumerate(shape))
        out.append((path, "tensor", str(value.dtype), str(value.device), value.requires_grad, sizes))
    elif isinstance(value, (list, tuple)):
        out.append((path, type(value).__name__, len(value)))
        for i, v in enumerate(value):
            _spec(v, path + (i,), dynamic, out, concrete)
    elif isinstance(value, dict):
        out.append((path, "dict", tuple(value)))
        for k, v in value.items():
            _spec(v, path + (k,), dynamic, out, concrete)
    elif isinstance(value, (bool, str, type(None), float)) or type(value).__name__ == "dtype":
        out.append((path, "const", repr(value)))
    elif isinstance(value, int):
        concrete.append(value)
        out.append((path, "int", None if (path, None) in dynamic else value))
    else:
        out.append((path, "object", type(value).__qualname__))


class CompiledFunction:
    """What torch.compile returns for a function (and OptimizedModule calls): the guards, the cache
    of graphs, and the regions its calls run in."""

    def __init__(self, fn, *, fullgraph=False, dynamic=None, backend="inductor", mode=None, options=None, name=None):
        self._fn = fn
        self._fullgraph = bool(fullgraph)
        self._dynamic = dynamic
        self._backend = backend
        self._mode = mode
        self._options = dict(options or {})
        self._name = name or getattr(fn, "__qualname__", type(fn).__name__)
        self._cache = {}
        self._dynamic_dims = set()
        self._warned_limit = False
        self.__wrapped__ = fn
        for attr in ("__name__", "__qualname__", "__doc__", "__module__"):
            try:
                setattr(self, attr, getattr(fn, attr))
            except (AttributeError, TypeError):
                pass

    # --- guards ---
    def _key(self, args, kwargs, module):
        """The call's guards, and its concrete sizes and ints (_spec), in one walk."""
        dynamic = self._dynamic_dims
        out = []
        concrete = []
        if self._dynamic is True:
            dynamic = _AllDynamic()
        _spec(args, ("args",), dynamic, out, concrete)
        _spec(kwargs, ("kwargs",), dynamic, out, concrete)
        out.append(("grad_mode", _syntorch.is_grad_enabled()))
        if module is not None:
            out.append(("training", module.training))
        return tuple(out), tuple(concrete)

    def _mark_dynamic(self, key):
        """After a miss: the sizes and ints that differ from a cached graph of the same structure
        become dynamic (automatic_dynamic_shapes). Returns whether any did."""
        if self._dynamic is False or not config.automatic_dynamic_shapes:
            return False
        marked = False
        for old in self._cache:
            if len(old) != len(key):
                continue
            changes = []
            for a, b in zip(old, key):
                if a == b:
                    continue
                if a[1] == "tensor" and b[1] == "tensor" and a[2:5] == b[2:5] and len(a[5]) == len(b[5]):
                    changes += [(a[0], d) for d, (x, y) in enumerate(zip(a[5], b[5])) if x != y]
                elif a[1] == "int" and b[1] == "int" and a[0] == b[0]:
                    changes.append((a[0], None))
                else:
                    changes = None
                    break
            if changes:
                self._dynamic_dims.update(changes)
                marked = True
        return marked

    # --- calls ---
    def __call__(self, *args, **kwargs):
        return self._call(self._fn, None, args, kwargs)

    def __get__(self, obj, objtype=None):
        """A compiled method (@torch.compile on a def in a class) binds as the function did."""
        if obj is None:
            return self
        return functools.partial(self.__call__, obj)

    def _call(self, fn, module, args, kwargs):
        if self._backend in ("eager", "aot_eager") or _syntorch._compile_active() or _local.suspended:
            # No generated code; a compiled function inside another's graph is inlined, and inside
            # a disabled function everything is eager.
            return fn(*args, **kwargs)
        key, concrete = self._key(args, kwargs, module)
        entry = self._cache.get(key)
        if entry is None:
            if len(self._cache) >= config.cache_size_limit:
                if not self._warned_limit:
                    self._warned_limit = True
                    warnings.warn(f"torch._dynamo hit config.cache_size_limit ({config.cache_size_limit}) for "
                                  f"{self._name}: it now runs eagerly for new guards", stacklevel=3)
                _count("stats", "cache_limit_fallbacks")
                return fn(*args, **kwargs)
            if self._cache and self._mark_dynamic(key):
                key, _ = self._key(args, kwargs, module)
                entry = self._cache.get(key)
        if entry is None:
            with _lock:
                graph_id = _next_graph[0]
                _next_graph[0] += 1
            entry = self._cache[key] = _Entry(graph_id)
            _count("stats", "unique_graphs")
            if len(self._cache) > 1:
                _count("recompiles", self._name)
        # Compiled once per rank (each simulation's ranks compile for themselves); CUDA graphs are
        # per rank and per concrete sizes, as cudagraph trees record one per shape.
        serial = _syntorch._compile_rank_serial()
        compiling = serial not in entry.compiled_on
        entry.compiled_on.add(serial)
        run = entry.runs.setdefault((serial, concrete), [0, 0, 0])
        cuda_graph = "none"
        if self._cudagraphs() and not entry.breaks and run[0] > 0:
            cuda_graph = "replay" if run[1] else "record"
        costs = COMPILE_COSTS
        fusion = 0 if self._backend == "cudagraphs" else self._max_fusion_size()
        _syntorch._compile_begin(graph_id=entry.graph_id, name=f"{self._name} (graph {entry.graph_id})",
                                 compiling=compiling, cuda_graph=cuda_graph, replay_graph=run[1],
                                 replay_plan_hash=run[2], per_graph_s=costs["per_graph_s"],
                                 per_op_s=costs["per_op_s"], per_kernel_s=costs["per_kernel_s"],
                                 max_fusion_size=fusion)
        _local.fullgraph.append(self._fullgraph)
        try:
            out = fn(*args, **kwargs)
        finally:
            _local.fullgraph.pop()
            stats = _syntorch._compile_end()
        run[0] += 1
        _count("stats", "calls_captured")
        if stats["segments"] > 1:
            entry.breaks = True
        if cuda_graph == "record" and stats["cuda_graph"]:
            run[1], run[2] = stats["cuda_graph"], stats["plan_hash"]
        elif cuda_graph == "replay" and not stats["replayed"]:
            run[1] = run[2] = 0  # another plan ran: record again on the next call
        if compiling:
            _count("inductor", "generated_kernels", stats["generated_kernels"])
        self.last_stats = stats
        return out

    def _cudagraphs(self):
        if self._backend == "cudagraphs":
            return True
        if self._mode in ("reduce-overhead", "max-autotune"):
            return True
        if "triton.cudagraphs" in self._options:
            return bool(self._options["triton.cudagraphs"])
        from syntorch.torch._inductor import config as inductor_config
        return bool(inductor_config.triton.cudagraphs)

    def _max_fusion_size(self):
        from syntorch.torch._inductor import config as inductor_config
        size = self._options.get("max_fusion_size", inductor_config.max_fusion_size)
        if not isinstance(size, int) or isinstance(size, bool) or size < 1:
            raise ValueError(f"torch.compile: options['max_fusion_size'] must be a positive int, got {size!r}")
        return size

    def _reset(self):
        self._cache.clear()
        self._dynamic_dims.clear()
        self._warned_limit = False


class _AllDynamic:
    """dynamic=True: every size is dynamic."""

    def __contains__(self, item):
        return True


_compiled = weakref.WeakSet()  # every CompiledFunction alive, for reset()


def check_arguments(fullgraph, dynamic, backend, mode, options, disable):
    if backend is None:
        backend = "inductor"
    if callable(backend) and not isinstance(backend, str):
        raise NotImplementedError("torch.compile: a custom backend (a callable over an FX graph) is not supported "
                                  "by syntorch, which has no FX graphs; use backend='inductor', 'cudagraphs', "
                                  "'eager' or 'aot_eager'")
    if backend not in _BACKENDS:
        raise InvalidBackend(backend)
    if mode not in _MODES:
        raise RuntimeError(f"Unrecognized mode={mode}, should be one of: "
                           f"{', '.join(m for m in _MODES if m)}")
    if mode is not None and options is not None:
        raise RuntimeError("Either mode or options can be specified, but both can't be specified at the same time.")
    if options is not None and not isinstance(options, dict):
        raise TypeError(f"torch.compile: options must be a dict, got {type(options).__name__}")
    if dynamic not in (None, True, False):
        raise TypeError(f"torch.compile: dynamic must be None, True or False, got {dynamic!r}")
    return backend


def reset():
    """torch._dynamo.reset / torch.compiler.reset: forgets every compiled graph (the next calls
    compile again)."""
    for c in _compiled:
        c._reset()
    counters.clear()


def register(c):
    _compiled.add(c)
    return c
