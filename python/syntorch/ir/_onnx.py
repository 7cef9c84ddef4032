"""ONNX in: an ONNX model interpreted op by op with PyTorch on meta tensors under the IR's recorder,
so its IR holds the ATen ops each ONNX op is (ONNX Runtime's op-by-op execution, no fusion).
Shape computations (Shape, Gather on shapes, Concat of sizes, ...) run on real CPU values and fold
away; initializers become weights by their ONNX names. Adding an ONNX op is a function and a line
in ONNX_OPS."""

import torch
import torch.nn.functional as F

from ._extract import _Recorder, _dtype_name
from ._graph import IR, WeightMeta

try:
    import onnx
    from onnx import helper, numpy_helper
except ImportError:  # pragma: no cover - depends on the machine
    onnx = None

# ONNX TensorProto element types -> torch dtypes.
_ONNX_DTYPES = {1: torch.float32, 2: torch.uint8, 3: torch.int8, 5: torch.int16, 6: torch.int32, 7: torch.int64,
                9: torch.bool, 10: torch.float16, 11: torch.float64, 16: torch.bfloat16}


def _ints(x):
    """A constant tensor (or list) of integers as a list of Python ints."""
    if isinstance(x, torch.Tensor):
        if x.device.type == "meta":
            raise ValueError("a shape or index argument is computed from data, not a constant")
        return [int(v) for v in x.reshape(-1).tolist()]
    return [int(v) for v in x]


def _axis(attrs, name, default):
    return int(attrs.get(name, default))


def _flatten(i, a):
    """ONNX Flatten: always 2-D, the dims before `axis` (default 1, negative from the end) into the first."""
    x = i[0]
    axis = _axis(a, "axis", 1)
    axis = axis + x.dim() if axis < 0 else axis
    lead = 1
    for d in x.shape[:axis]:
        lead *= int(d)
    return x.reshape(lead, -1)


def _gemm(i, a):
    x, w = i[0], i[1]
    if a.get("transA", 0):
        x = x.t()
    if a.get("transB", 0):
        w = w.t()
    alpha, beta = float(a.get("alpha", 1.0)), float(a.get("beta", 1.0))
    if len(i) > 2 and i[2] is not None:
        return torch.addmm(i[2], x, w, beta=beta, alpha=alpha)
    out = torch.mm(x, w)
    return out * alpha if alpha != 1.0 else out


def _conv(i, a):
    x, w = i[0], i[1]
    b = i[2] if len(i) > 2 else None
    nd = w.dim() - 2
    pads = a.get("pads", [0] * (2 * nd))
    if a.get("auto_pad", b"NOTSET") not in (b"NOTSET", "NOTSET"):
        raise NotImplementedError("Conv: auto_pad other than NOTSET")
    if list(pads[:nd]) != list(pads[nd:]):
        raise NotImplementedError(f"Conv: asymmetric pads {list(pads)}")
    fn = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}[nd]
    return fn(x, w, b, stride=a.get("strides", 1), padding=list(pads[:nd]), dilation=a.get("dilations", 1),
              groups=int(a.get("group", 1)))


def _pool(kind):
    def run(i, a):
        k = list(a["kernel_shape"])
        nd = len(k)
        if a.get("auto_pad", b"NOTSET") not in (b"NOTSET", "NOTSET"):
            raise NotImplementedError(f"{kind} pooling: auto_pad other than NOTSET")
        pads = list(a.get("pads", [0] * (2 * nd)))
        if pads[:nd] != pads[nd:]:
            raise NotImplementedError(f"{kind} pooling: asymmetric pads {pads}")
        fn = {("max", 1): F.max_pool1d, ("max", 2): F.max_pool2d, ("max", 3): F.max_pool3d,
              ("avg", 1): F.avg_pool1d, ("avg", 2): F.avg_pool2d, ("avg", 3): F.avg_pool3d}[(kind, nd)]
        # ONNX's strides and dilations default to 1 (PyTorch's stride to the kernel).
        kw = dict(stride=list(a.get("strides", [1] * nd)), padding=pads[:nd], ceil_mode=bool(a.get("ceil_mode", 0)))
        if kind == "avg":
            if any(d != 1 for d in a.get("dilations", [1] * nd)):
                raise NotImplementedError("AveragePool: dilations other than 1")
            kw["count_include_pad"] = bool(a.get("count_include_pad", 0))
        else:
            kw["dilation"] = list(a.get("dilations", [1] * nd))
        return fn(i[0], k, **kw)
    return run


def _split(i, a):
    x = i[0]
    axis = _axis(a, "axis", 0)
    sizes = _ints(i[1]) if len(i) > 1 and i[1] is not None else a.get("split")
    if sizes is None:  # equal parts (opset 18: the last smaller when they do not divide)
        n = a.get("num_outputs", a["_outputs"])
        part = -(-x.shape[axis] // n)
        sizes = [min(part, x.shape[axis] - part * j) for j in range(n)]
    return tuple(torch.split(x, list(sizes), dim=axis))


def _slice(i, a):
    x = i[0]
    starts, ends = _ints(i[1]), _ints(i[2])
    axes = _ints(i[3]) if len(i) > 3 and i[3] is not None else list(range(len(starts)))
    steps = _ints(i[4]) if len(i) > 4 and i[4] is not None else [1] * len(starts)
    index = [slice(None)] * x.dim()
    for s, e, ax, st in zip(starts, ends, axes, steps):
        if st <= 0:
            raise NotImplementedError(f"Slice: step {st} (only positive steps are supported)")
        n = x.shape[ax]
        s = max(s + n, 0) if s < 0 else min(s, n)
        e = max(e + n, 0) if e < 0 else min(e, n)
        index[ax] = slice(s, e, st)
    return x[tuple(index)]


def _reduce(fn):
    def run(i, a):
        axes = a.get("axes")
        if axes is None and len(i) > 1 and i[1] is not None:
            axes = _ints(i[1])
        keep = bool(a.get("keepdims", 1))
        if not axes:
            if a.get("noop_with_empty_axes", 0):
                return i[0]
            axes = list(range(i[0].dim()))
        return fn(i[0], dim=list(axes), keepdim=keep)
    return run


def _reduce_max(x, dim, keepdim):
    return torch.amax(x, dim=dim, keepdim=keepdim)


def _squeeze(i, a):
    axes = a.get("axes") or (_ints(i[1]) if len(i) > 1 and i[1] is not None else None)
    x = i[0]
    if axes is None:
        return x.squeeze()
    for ax in sorted((d % x.dim() for d in axes), reverse=True):
        x = x.squeeze(ax)
    return x


def _unsqueeze(i, a):
    axes = a.get("axes") or _ints(i[1])
    x = i[0]
    out_dim = x.dim() + len(axes)
    for ax in sorted(d % out_dim for d in axes):
        x = x.unsqueeze(ax)
    return x


def _reshape(i, a):
    x, shape = i[0], _ints(i[1])
    shape = [x.shape[k] if s == 0 and not a.get("allowzero", 0) else s for k, s in enumerate(shape)]
    return x.reshape(shape)


def _gather(i, a):
    x, idx = i[0], i[1]
    axis = _axis(a, "axis", 0) % max(x.dim(), 1)
    if idx.device.type != "meta":  # ONNX counts negative indices from the end
        idx = torch.where(idx < 0, idx + x.shape[axis], idx)
    if axis == 0 and x.dim() == 2 and idx.dtype in (torch.int64, torch.int32) and idx.device.type == "meta":
        return F.embedding(idx, x)  # a table lookup, as an embedding
    return torch.index_select(x, axis, idx.reshape(-1)).reshape(
        list(x.shape[:axis]) + list(idx.shape) + list(x.shape[axis + 1:]))


def _layer_norm(i, a):
    x = i[0]
    axis = _axis(a, "axis", -1) % x.dim()
    return F.layer_norm(x, list(x.shape[axis:]), i[1] if len(i) > 1 else None, i[2] if len(i) > 2 else None,
                        float(a.get("epsilon", 1e-5)))


def _div(i, a):
    x, y = i[0], i[1]
    integral = all(not (t.is_floating_point() or t.is_complex()) for t in (x, y) if isinstance(t, torch.Tensor))
    return torch.div(x, y, rounding_mode="trunc") if integral else torch.div(x, y)  # ONNX: integer division truncates


def _cast(i, a):
    return i[0].to(_ONNX_DTYPES[int(a["to"])])


def _where(i, a):
    return torch.where(i[0], i[1], i[2])


def _expand(i, a):
    shape = _ints(i[1])
    x = i[0]
    lead = len(shape) - x.dim()
    target = [s if s != 1 else (x.shape[k - lead] if k >= lead else 1) for k, s in enumerate(shape)]
    return x.expand(torch.broadcast_shapes(tuple(x.shape), tuple(target)))


def _clip(i, a):
    lo = i[1] if len(i) > 1 and i[1] is not None else a.get("min")
    hi = i[2] if len(i) > 2 and i[2] is not None else a.get("max")
    lo = float(lo) if isinstance(lo, torch.Tensor) and lo.device.type != "meta" else lo
    hi = float(hi) if isinstance(hi, torch.Tensor) and hi.device.type != "meta" else hi
    return torch.clamp(i[0], lo, hi)


def _softmax(log):
    def run(i, a):
        x = i[0]
        if a["_opset"] < 13:  # before opset 13: over the dims from `axis` (default 1) on, as one
            axis = _axis(a, "axis", 1) % x.dim()
            flat = _flatten([x], {"axis": axis})
            y = torch.log_softmax(flat, 1) if log else torch.softmax(flat, 1)
            return y.reshape(x.shape)
        axis = _axis(a, "axis", -1)
        return torch.log_softmax(x, axis) if log else torch.softmax(x, axis)
    return run


def _trilu(i, a):
    k = _ints(i[1])[0] if len(i) > 1 and i[1] is not None else 0
    return torch.triu(i[0], k) if a.get("upper", 1) else torch.tril(i[0], k)


def _batch_norm(i, a):
    return F.batch_norm(i[0], i[3], i[4], i[1], i[2], False, 0.0, float(a.get("epsilon", 1e-5)))


def _constant_of_shape(i, a):
    value = a.get("value")
    v = numpy_helper.to_array(value) if value is not None else None
    dtype = torch.float32 if v is None else torch.from_numpy(v.copy()).dtype
    fill = 0.0 if v is None else v.reshape(-1)[0].item()
    return torch.full(_ints(i[0]), fill, dtype=dtype)


ONNX_OPS = {
    "Identity": lambda i, a: i[0],
    "Dropout": lambda i, a: i[0],  # inference
    "Add": lambda i, a: torch.add(i[0], i[1]), "Sub": lambda i, a: torch.sub(i[0], i[1]),
    "Mul": lambda i, a: torch.mul(i[0], i[1]), "Div": _div,
    "Pow": lambda i, a: torch.pow(i[0], i[1]), "Sqrt": lambda i, a: torch.sqrt(i[0]),
    "Reciprocal": lambda i, a: torch.reciprocal(i[0]), "Erf": lambda i, a: torch.erf(i[0]),
    "Tanh": lambda i, a: torch.tanh(i[0]), "Sigmoid": lambda i, a: torch.sigmoid(i[0]),
    "Relu": lambda i, a: torch.relu(i[0]), "Exp": lambda i, a: torch.exp(i[0]), "Log": lambda i, a: torch.log(i[0]),
    "Neg": lambda i, a: torch.neg(i[0]), "Abs": lambda i, a: torch.abs(i[0]),
    "Equal": lambda i, a: torch.eq(i[0], i[1]), "Less": lambda i, a: torch.lt(i[0], i[1]),
    "Greater": lambda i, a: torch.gt(i[0], i[1]), "Not": lambda i, a: torch.logical_not(i[0]),
    "Min": lambda i, a: torch.minimum(i[0], i[1]), "Max": lambda i, a: torch.maximum(i[0], i[1]),
    "Where": _where, "Cast": _cast, "Clip": _clip,
    "MatMul": lambda i, a: torch.matmul(i[0], i[1]), "Gemm": _gemm, "Conv": _conv,
    "BatchNormalization": _batch_norm, "LayerNormalization": _layer_norm,
    "MaxPool": _pool("max"), "AveragePool": _pool("avg"),
    "GlobalAveragePool": lambda i, a: torch.mean(i[0], dim=list(range(2, i[0].dim())), keepdim=True),
    "Flatten": lambda i, a: _flatten(i, a),
    "Reshape": _reshape, "Transpose": lambda i, a: i[0].permute(a["perm"]) if "perm" in a
    else i[0].permute(list(reversed(range(i[0].dim())))),
    "Split": _split, "Slice": _slice, "Squeeze": _squeeze, "Unsqueeze": _unsqueeze,
    "Concat": lambda i, a: torch.cat(list(i), _axis(a, "axis", 0)), "Gather": _gather,
    "Shape": lambda i, a: torch.tensor(list(i[0].shape)[slice(a.get("start", 0), a.get("end"))],
                                       dtype=torch.int64),
    "Softmax": _softmax(False), "LogSoftmax": _softmax(True),
    "ReduceMean": _reduce(torch.mean), "ReduceSum": _reduce(torch.sum), "ReduceMax": _reduce(_reduce_max),
    "Trilu": _trilu, "Expand": _expand, "ConstantOfShape": _constant_of_shape,
    "SoftmaxCrossEntropyLoss": lambda i, a: F.cross_entropy(
        i[0], i[1], reduction=a.get("reduction", b"mean").decode() if isinstance(a.get("reduction"), bytes)
        else a.get("reduction", "mean"), ignore_index=int(a.get("ignore_index", -100))),
    "Range": lambda i, a: torch.arange(_ints(i[0])[0], _ints(i[1])[0], _ints(i[2])[0]),
}


# Inputs that are shapes, axes or bounds (constants read as values), not data, per op.
CONSTANT_INPUTS = {"Reshape": {1}, "Slice": {1, 2, 3, 4}, "Split": {1}, "Squeeze": {1}, "Unsqueeze": {1},
                   "Expand": {1}, "Trilu": {1}, "ReduceMean": {1}, "ReduceSum": {1}, "ReduceMax": {1},
                   "Clip": {1, 2}, "ConstantOfShape": {0}, "Range": {0, 1, 2}}


def from_onnx(model, input_shapes=None):
    """The IR of an ONNX model (a path or a loaded ModelProto): its initializers as weights (by their
    ONNX names), its inputs (shapes from the model, or `input_shapes` {name: [sizes]} for symbolic
    dimensions) and every ONNX op as the ATen ops PyTorch runs for it. Returns (ir, values): values
    holds the initializers' and folded constants' real values by name, the state_dict that
    verify_ir_with_state_dict takes."""
    if onnx is None:
        raise ImportError("reading ONNX needs the onnx package: install Debian's python3-onnx")
    where = str(model) if not isinstance(model, onnx.ModelProto) else "<onnx model>"
    if not isinstance(model, onnx.ModelProto):
        try:
            model = onnx.load(str(model))
        except FileNotFoundError:
            raise FileNotFoundError(f"{where}: no such file") from None
        except Exception as e:  # onnx raises DecodeError and others
            raise ValueError(f"{where}: not an ONNX model: {e}") from None
    graph = model.graph
    opset = max((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), default=13)
    rec = _Recorder()
    values, weights, folded = {}, [], {}
    for init in graph.initializer:
        arr = torch.from_numpy(numpy_helper.to_array(init).copy())
        if arr.is_floating_point():
            meta = torch.empty(arr.shape, dtype=arr.dtype, device="meta")
            rec.add_tensor(meta, init.name)
            weights.append(WeightMeta(init.name, init.name, tuple(arr.shape), _dtype_name(arr.dtype)))
            values[init.name] = meta
            folded[init.name] = arr
        else:  # integer constants: shapes, axes, indices
            values[init.name] = arr
    inputs = []
    shapes = dict(input_shapes or {})
    for inp in graph.input:
        if inp.name in values:
            continue
        t = inp.type.tensor_type
        dims = []
        for k, d in enumerate(t.shape.dim):
            if d.HasField("dim_value"):
                dims.append(d.dim_value)
            elif inp.name in shapes:
                dims.append(None)
            else:
                raise ValueError(f"{where}: input '{inp.name}' dim {k} is symbolic ('{d.dim_param}'): give its size in "
                                 f"input_shapes={{'{inp.name}': [...]}}")
        if inp.name in shapes:
            given = list(shapes.pop(inp.name))
            if len(given) != len(dims) or any(d is not None and d != g for d, g in zip(dims, given)):
                raise ValueError(f"{where}: input_shapes['{inp.name}'] = {given} does not fit the model's shape "
                                 f"{[d if d is not None else '?' for d in dims]}")
            dims = given
        if t.elem_type not in _ONNX_DTYPES:
            raise NotImplementedError(f"{where}: input '{inp.name}' has ONNX element type {t.elem_type}, not supported")
        meta = torch.empty(dims, dtype=_ONNX_DTYPES[t.elem_type], device="meta")
        rec.add_tensor(meta, inp.name)
        inputs.append(rec.tensors[inp.name])
        values[inp.name] = meta
    if shapes:
        raise ValueError(f"{where}: input_shapes names {sorted(shapes)}, which are not inputs of the model")

    def as_operand(x, name):
        """A CPU constant feeding a data op: a named constant tensor of the graph (its value kept)."""
        if isinstance(x, torch.Tensor) and x.device.type != "meta":
            # Scalars too: PyTorch would put some results (where) on the CPU beside them.
            meta = torch.empty(x.shape, dtype=x.dtype, device="meta")
            if name not in rec.tensors:
                rec.add_tensor(meta, name)
                weights.append(WeightMeta(name, name, tuple(x.shape), _dtype_name(x.dtype), "constant"))
                folded[name] = x
            else:
                meta.__dict__["_syntorch_ir_name"] = (rec.key, name)
            return meta
        return x

    for index, node in enumerate(graph.node):
        at = f"{where}: node {index} ({node.op_type} '{node.name}')"
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        if node.op_type == "Constant":
            value = attrs.get("value")
            if value is None:
                raise NotImplementedError(f"{at}: only a Constant given by 'value' is supported")
            values[node.output[0]] = torch.from_numpy(numpy_helper.to_array(value).copy())
            continue
        fn = ONNX_OPS.get(node.op_type)
        if fn is None:
            raise NotImplementedError(f"{at}: the ONNX op {node.op_type} is not supported yet "
                                      f"(supported: {', '.join(sorted(ONNX_OPS))})")
        try:
            ins = [values[n] if n else None for n in node.input]
        except KeyError as e:
            raise ValueError(f"{at}: input {e} is made by no earlier node") from None
        attrs["_outputs"] = len(node.output)
        attrs["_opset"] = opset
        if node.op_type == "Gather" and len(ins) > 1 and isinstance(ins[1], torch.Tensor) \
                and ins[1].device.type != "meta" and isinstance(ins[0], torch.Tensor):
            axis = _axis(attrs, "axis", 0) % max(ins[0].dim(), 1)  # ONNX's negative indices, from the end
            ins = [ins[0], torch.where(ins[1] < 0, ins[1] + ins[0].shape[axis], ins[1])] + ins[2:]
        # Shape reads a tensor's sizes, not its data: a constant, folded like the rest.
        data = node.op_type != "Shape" and any(isinstance(x, torch.Tensor) and x.device.type == "meta" for x in ins)
        try:
            if data:
                keep = CONSTANT_INPUTS.get(node.op_type, ())
                ins = [(x if x is None or not isinstance(x, torch.Tensor) or x.dim() == 0 else _ints(x)) if k in keep
                       else as_operand(x, n) for k, (x, n) in enumerate(zip(ins, node.input))]
                with rec:
                    out = fn(ins, attrs)
            else:  # shapes and constants: computed now, folded away
                out = fn(ins, attrs)
        except NotImplementedError as e:
            raise NotImplementedError(f"{at}: {e}") from None
        except (RuntimeError, ValueError, KeyError, IndexError, TypeError) as e:
            raise ValueError(f"{at}: {e}") from None
        outs = out if isinstance(out, tuple) else (out,)
        for name, t in zip(node.output, outs):
            values[name] = t
    outputs = []
    for o in graph.output:
        t = values.get(o.name)
        if not isinstance(t, torch.Tensor):
            raise ValueError(f"{where}: output '{o.name}' is made by no node")
        if t.device.type != "meta":
            t = as_operand(t, o.name)
        outputs.append(rec.tensors[rec.name_of(t)])
    for cname, t in rec.constants:  # scalars used as operands, values known
        weights.append(WeightMeta(cname, cname, tuple(t.shape), _dtype_name(t.dtype), "constant"))
        folded[cname] = t
    name = graph.name or "onnx"
    return IR(rec.nodes, weights, inputs, outputs, rec.tensors, name,
              {"onnx": onnx.__version__, "opset": str(max((o.version for o in model.opset_import), default=0)),
               "torch": torch.__version__}), folded
