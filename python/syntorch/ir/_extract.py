"""extract_ir: a real PyTorch model run once on meta tensors under a recording dispatch mode; every
ATen op it runs becomes a node, every tensor a TensorMeta."""

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from syntorch.pytorch._tensors import run_on_meta

from ._graph import IR, Constant, Node, TensorMeta, TensorRef, WeightMeta, collect_refs

_NAME = "_syntorch_ir_name"


def _dtype_name(dtype):
    return str(dtype).replace("torch.", "")


class _Recorder(TorchDispatchMode):
    """Names each tensor it meets and records each op as a node."""

    def __init__(self):
        super().__init__()
        self.nodes = []
        self.tensors = {}
        self.constants = []
        self._per_op = {}
        self.key = object()  # what tensors name this recorder by (not the recorder: they may outlive it)

    def add_tensor(self, t, name, producer=None):
        t.__dict__[_NAME] = (self.key, name)  # this recorder's name for t (another recorder's means nothing)
        self.tensors[name] = TensorMeta(name, tuple(t.shape), _dtype_name(t.dtype), tuple(t.stride()),
                                        t.storage_offset(), producer)
        return name

    def name_of(self, t):
        entry = t.__dict__.get(_NAME)
        name = entry[1] if entry is not None and entry[0] is self.key else None
        if name is None:  # a tensor made outside the graph (a constant): shape and dtype, no values
            name = self.add_tensor(t, f"constant_{len(self.constants)}")
            self.constants.append((name, t))
        return name

    def encode(self, x):
        if isinstance(x, torch.Tensor):
            return TensorRef(self.name_of(x))
        if isinstance(x, torch.dtype):
            return Constant("dtype", _dtype_name(x))
        if isinstance(x, torch.device):
            return Constant("device", x.type)
        if isinstance(x, torch.layout):
            return Constant("layout", str(x).replace("torch.", ""))
        if isinstance(x, torch.memory_format):
            return Constant("memory_format", str(x).replace("torch.", ""))
        if isinstance(x, (list, tuple)):
            return [self.encode(y) for y in x]
        if x is None or isinstance(x, (bool, int, float, str)):
            return x
        raise TypeError(f"extract_ir: an argument of type {type(x).__name__} cannot be recorded ({x!r})")

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out, args, kwargs = run_on_meta(func, args, kwargs)
        op_type = str(func)
        packet = op_type.split(".")[1] if op_type.count(".") >= 2 else op_type
        k = self._per_op.get(packet, 0)
        self._per_op[packet] = k + 1
        node_name = f"{packet}_{k}"
        enc_args = [self.encode(a) for a in args]
        enc_kwargs = {key: self.encode(v) for key, v in kwargs.items()}
        inputs = collect_refs(list(enc_args) + list(enc_kwargs.values()), [])
        flat = flatten_outputs(out)
        outputs = []
        for i, t in enumerate(flat):
            if t is None:
                outputs.append(None)
                continue
            name = node_name if len(flat) == 1 else f"{node_name}.{i}"
            self.add_tensor(t, name, node_name)
            outputs.append(self.tensors[name])
        self.nodes.append(Node(node_name, op_type, enc_args, enc_kwargs, [self.tensors[r.name] for r in inputs],
                               outputs))
        return out


def flatten_outputs(out):
    """An op's or a model's result as a flat list: tensors, None for anything else."""
    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, (list, tuple)):
        flat = []
        for o in out:
            flat.extend(flatten_outputs(o) if isinstance(o, (list, tuple, dict)) else
                        [o if isinstance(o, torch.Tensor) else None])
        return flat
    if isinstance(out, dict):
        return flatten_outputs(list(out.values()))
    return [None]


def _flat_syntorch(x, acc):
    import _syntorch
    if isinstance(x, _syntorch.Tensor):
        acc.append(x)
    elif isinstance(x, (list, tuple)):
        for y in x:
            _flat_syntorch(y, acc)
    elif isinstance(x, dict):
        for y in x.values():
            _flat_syntorch(y, acc)
    return acc


def _extract_syntorch(model, example_inputs, example_kwargs):
    """A syntorch.torch model's graph: its forward run once, in eval mode and without gradients,
    with the torch layer's op recorder on (the ops `syntorch graph export` records)."""
    import json

    import _syntorch
    import syntorch.torch as storch

    if isinstance(example_inputs, (_syntorch.Tensor, dict)) or not isinstance(example_inputs, (tuple, list)):
        example_inputs = (example_inputs,)
    kwargs = dict(example_kwargs or {})
    capture = _syntorch._GraphCapture()
    for name, p in model.named_parameters(remove_duplicate=False):
        capture.add_weight(name, p, "parameter")
    for name, b in model.named_buffers(remove_duplicate=False):
        capture.add_weight(name, b, "buffer")
    for t in _flat_syntorch(list(example_inputs) + list(kwargs.values()), []):
        capture.add_input(t)
    was_training = model.training
    model.eval()
    out = None
    capture.start()
    try:
        with storch.no_grad():
            out = model(*example_inputs, **kwargs)
    finally:
        text = capture.finish(_flat_syntorch(out, []) if out is not None else [], type(model).__name__)
        model.train(was_training)
    return IR.from_dict(json.loads(text), where=f"{type(model).__name__} (syntorch.torch)")


def extract_ir(model, example_inputs, example_kwargs=None):
    """The weight-free graph of `model` called on `example_inputs`: every ATen op of its forward
    (in inference: no gradients), every tensor's shape and dtype, the weights by state_dict name,
    the graph inputs (the tensors among the example inputs, in order) and outputs. `model` is a
    real torch.nn.Module (on the meta device or the CPU: only shapes are taken), or a
    syntorch.torch one (its ops as the torch layer records them, fused kernels as syntorch
    operators)."""
    from syntorch.pytorch import _functional_call, _meta_state, _to_meta
    from syntorch.torch.nn import Module as _SyntorchModule

    if isinstance(model, _SyntorchModule):
        return _extract_syntorch(model, example_inputs, example_kwargs)
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"extract_ir: model must be a torch.nn.Module, got {type(model).__name__}")
    if isinstance(example_inputs, (torch.Tensor, dict)) or not isinstance(example_inputs, (tuple, list)):
        example_inputs = (example_inputs,)
    state = _meta_state(model)
    kinds = {}
    for name, _ in model.named_buffers():
        kinds[name] = "buffer"
    inputs = _to_meta(tuple(example_inputs))
    kwargs = _to_meta(dict(example_kwargs or {}))
    rec = _Recorder()
    weights, seen = [], {}
    for name, t in state.items():
        if id(t) in seen:
            seen[id(t)].aliases.append(name)
            continue
        rec.add_tensor(t, name)
        w = WeightMeta(name, name, tuple(t.shape), _dtype_name(t.dtype), kinds.get(name, "parameter"))
        seen[id(t)] = w
        weights.append(w)
    graph_inputs = []
    for t in flatten_outputs(list(inputs) + list(kwargs.values())):
        if t is not None:
            rec.add_tensor(t, f"input_{len(graph_inputs)}")
            graph_inputs.append(rec.tensors[rec.name_of(t)])
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad(), rec:
            out = _functional_call()(model, state, inputs, kwargs)
    finally:
        model.train(was_training)
    outputs = [rec.tensors[rec.name_of(t)] for t in flatten_outputs(out) if t is not None]
    for name, t in rec.constants:
        weights.append(WeightMeta(name, name, tuple(t.shape), _dtype_name(t.dtype), "constant"))
    producer = {"torch": torch.__version__}
    return IR(rec.nodes, weights, graph_inputs, outputs, rec.tensors, type(model).__name__, producer)
