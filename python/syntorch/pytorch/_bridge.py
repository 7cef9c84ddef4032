"""The dispatch mode that hands every ATen op a real PyTorch program runs (on the meta device) to
syntorch's torch layer, and the tally of what it could and could not model."""

import collections

import torch
from torch.utils._python_dispatch import TorchDispatchMode

import _syntorch

from . import _lowering, _shapes
from ._tensors import adopt, mirror_of, run_on_meta, same_layout, sdtype, set_mirror, tensors_in as _tensors


class _OpInfo:
    """What an op's schema says, worked out once per overload: its arguments and defaults, and
    whether it is a view, an in-place update or a factory."""

    __slots__ = ("name", "short", "args", "view_source", "written", "factory", "lowering")

    def __init__(self, func):
        schema = func._schema
        self.name = schema.name if "::" in schema.name else "aten::" + schema.name
        self.short = self.name.split("::", 1)[1]
        self.args = [(a.name, a.default_value if a.has_default_value() else None) for a in schema.arguments]
        written = [a.name for a in schema.arguments if a.alias_info is not None and a.alias_info.is_write]
        returns = [r.alias_info for r in schema.returns]
        self.view_source = None
        if self.short in ("_unsafe_view",) or (returns and all(r is not None and not r.is_write for r in returns)):
            self.view_source = schema.arguments[0].name
        self.written = written
        self.factory = (self.short.endswith("_like") or self.short.startswith("new_")
                        or not any("Tensor" in str(a.type) for a in schema.arguments))
        self.lowering = _lowering.LOWERINGS.get(self.short)


def _bind(info, args, kwargs):
    bound = {}
    for i, (name, default) in enumerate(info.args):
        if i < len(args):
            bound[name] = args[i]
        else:
            bound[name] = kwargs.get(name, default)
    return bound


def _nbytes(t):
    return t.numel() * t.element_size()


_PRODUCTS = {"mm", "addmm", "bmm", "baddbmm"}


def _flops(info, bound, ins, outs):
    """The op's arithmetic as a FLOP counter counts it: products exactly, attention's two products,
    one operation per output element otherwise."""
    if info.short in _PRODUCTS:
        a = bound.get("mat1", bound.get("batch1", bound.get("self")))
        return 2.0 * outs[0].numel() * a.shape[-1]
    if info.short in ("convolution", "convolution_backward") and len(ins) >= 2:
        weight = bound["weight"]
        # Each multiply-add pairs an output position of the convolution (a transposed one's input).
        grad_or_out = (outs[0] if info.short == "convolution" else bound["grad_output"])
        if bound.get("transposed"):
            grad_or_out = bound["input"]
        per_output = 2.0 * weight[0].numel() if weight.dim() > 0 else 0.0  # C_in/groups x kernel, multiply-add
        f = per_output * grad_or_out.numel()
        if info.short == "convolution_backward":
            mask = bound.get("output_mask") or (True, True, True)
            f *= (1 if mask[0] else 0) + (1 if mask[1] else 0)
        return f
    if info.short.startswith("_scaled_dot_product") and len(ins) >= 3:
        q, k = ins[0], ins[1]
        f = 4.0 * q.numel() * k.shape[-2]
        return f * 2.5 if info.short.endswith("_backward") else f
    return float(sum(o.numel() for o in outs))


class Tally:
    """How many times each ATen op ran, and the arithmetic and bytes of those that had no model
    of their own (a generic memory-bound cost stood in)."""

    def __init__(self):
        self.counts = collections.Counter()
        self.generic = {}  # name -> [count, flops, bytes, elementwise]
        self.flops = 0.0
        self.bytes = 0.0
        self.mismatches = collections.Counter()

    def summary(self):
        def rows(elementwise):
            out = []
            for name, (count, flops, nbytes, ew) in sorted(self.generic.items()):
                if ew == elementwise:
                    out.append({"op": name, "count": count,
                                "flops_share": flops / self.flops if self.flops else 0.0,
                                "bytes_share": nbytes / self.bytes if self.bytes else 0.0})
            return out
        return {"ops": sum(self.counts.values()), "by_op": dict(sorted(self.counts.items())),
                "graph_flops": self.flops, "graph_bytes": self.bytes,
                "generic_elementwise": rows(True), "unmodelled": rows(False),
                "layout_mismatches": dict(self.mismatches)}


class BridgeMode(TorchDispatchMode):
    """Runs each ATen op on the real (meta) tensors for its outputs' shapes, dtypes and strides, and
    the same op on their syntorch mirrors for its cost."""

    def __init__(self, tally=None):
        super().__init__()
        self.tally = tally if tally is not None else Tally()
        self._infos = {}
        self.name = ""

    # --- what the lowerings call ---
    def m(self, t):
        s = mirror_of(t)
        return s if s is not None else adopt(t, weight=isinstance(t, torch.nn.Parameter))

    def fresh(self, real):
        """A mirror for an output the op's kernel writes alongside its main one (no kernel of its own)."""
        if not isinstance(real, torch.Tensor):
            return None
        return _syntorch._empty(list(real.shape), sdtype(real.dtype), "cuda")

    @staticmethod
    def is_tensor(x):
        return isinstance(x, torch.Tensor)

    # --- the mode ---
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        info = self._infos.get(func)
        if info is None:
            info = self._infos[func] = _OpInfo(func)
        try:
            out, args, kwargs = run_on_meta(func, args, kwargs)
        except NotImplementedError:
            # An op this PyTorch has no meta kernel for: its outputs' shapes from our own rule.
            shapes = _shapes.rule_for(info.short)
            if shapes is None:
                raise NotImplementedError(
                    f"syntorch.pytorch: {info.name} has no meta-device kernel in PyTorch {torch.__version__} and the "
                    "bridge has no shape rule for it") from None
            out = shapes(_bind(info, args, kwargs))
        self._lower(info, args, kwargs, out)
        return out

    def _lower(self, info, args, kwargs, out):
        tally = self.tally
        tally.counts[info.name] += 1
        self.name = info.short
        bound = _bind(info, args, kwargs)
        slots = _slots(out)
        outs = [o for o in slots if o is not None]
        if info.view_source is not None:
            src = self.m(bound[info.view_source])
            for o in outs:
                if sdtype(o.dtype) == src.dtype:
                    set_mirror(o, _syntorch._aten_as_strided(src, list(o.shape), list(o.stride()), o.storage_offset(),
                                                             info.name))
                else:  # a view as another dtype: a mirror of its own
                    set_mirror(o, self.fresh(o))
            return
        ins = _tensors([bound[n] for n, _ in info.args], [])
        nbytes = sum(_nbytes(t) for t in ins) + sum(_nbytes(t) for t in outs)
        flops = _flops(info, bound, ins, outs)
        tally.flops += flops
        tally.bytes += nbytes
        try:
            result = info.lowering(self, bound, out) if info.lowering is not None else None
        except RuntimeError:
            # The torch layer refused a form PyTorch accepts (cat's legacy empty operands, ...): the
            # generic cost stands in, and the op is listed.
            result = None
        if info.written:
            written = _tensors([bound[n] for n in info.written], [])
            if result is None:
                _syntorch._aten_memory_bound(info.name, [self.m(t) for t in ins if not any(t is w for w in written)]
                                             + [self.m(w) for w in written], [], [self.m(w) for w in written])
            for o in outs:  # an in-place op returns what it wrote
                if mirror_of(o) is None:
                    set_mirror(o, self.m(written[0]))
            return
        if result is None and not outs:  # a query answered on the host (is_same_size, sym_size, ...)
            _syntorch._aten_memory_bound(info.name, [], [], [])
            return
        if result is None:
            if info.factory:
                if info.short.startswith("empty") or info.short.startswith("new_empty"):
                    result = [self.fresh(o) for o in slots]
                else:  # a fill or a random generator writing its output
                    result = _spread(slots, _syntorch._aten_memory_bound(
                        info.name, [], [(list(o.shape), sdtype(o.dtype)) for o in outs], []))
            else:
                result = _syntorch._aten_memory_bound(info.name, [self.m(t) for t in ins],
                                                      [(list(o.shape), sdtype(o.dtype)) for o in outs], [])
                result = _spread(slots, result)
                widest = max((t.numel() for t in ins), default=0)
                elementwise = info.short.startswith("_foreach_") or all(o.numel() == widest for o in outs)
                entry = tally.generic.setdefault(info.name, [0, 0.0, 0.0, elementwise])
                entry[0] += 1
                entry[1] += flops
                entry[2] += nbytes
        self._attach(info, slots, _tensors_or_none(result))

    def _attach(self, info, slots, mirrors):
        """Gives each real output its mirror: the lowering's result at the same position of the op's
        return (an output PyTorch left undefined, None, is skipped)."""
        for i, o in enumerate(slots):
            if o is None:
                continue
            s = mirrors[i] if i < len(mirrors) else None
            if s is None:
                s = self.fresh(o)
            elif s.dtype != sdtype(o.dtype) or tuple(s.size()) != tuple(o.shape):
                self.tally.mismatches[info.name] += 1
                s = self.fresh(o)
            elif not same_layout(o, s):  # the same elements in PyTorch's layout (a permuted output)
                s = _syntorch._aten_as_strided(s, list(o.shape), list(o.stride()), o.storage_offset(), info.name)
            set_mirror(o, s)


def _slots(out):
    """An op's return as the lowerings see it: one entry a returned value (a list's elements in
    turn), tensors or None."""
    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, (list, tuple)):
        flat = []
        for o in out:
            if isinstance(o, (list, tuple)):
                flat.extend(x if isinstance(x, torch.Tensor) else None for x in o)
            else:
                flat.append(o if isinstance(o, torch.Tensor) else None)
        return flat
    return []


def _spread(slots, made):
    """Mirrors made for the tensor outputs alone, put back at their positions among the slots."""
    it = iter(made)
    return [next(it) if o is not None else None for o in slots]


def _tensors_or_none(result):
    if result is None:
        return []
    if isinstance(result, (list, tuple)):
        return list(result)
    return [result]
