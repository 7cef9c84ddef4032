"""The IR's data: a weight-free graph of ATen ops with every tensor's shape and dtype, and its
versioned JSON form (ir-v1.schema.json beside this file is its JSON Schema)."""

import json
import math
from dataclasses import dataclass, field

FORMAT = "syntorch-ir"
VERSION = 1


@dataclass
class TensorMeta:
    """A tensor of the graph: its name, shape, dtype and layout, and the node that makes it (None
    for a graph input or a weight)."""
    name: str
    shape: tuple
    dtype: str
    stride: tuple = ()
    offset: int = 0
    producer: str = None

    def to_dict(self):
        return {"shape": list(self.shape), "dtype": self.dtype, "stride": list(self.stride), "offset": self.offset,
                "producer": self.producer}


@dataclass
class WeightMeta:
    """A parameter or buffer by its state_dict name (and the other names it is tied under)."""
    name: str
    tensor: str
    shape: tuple
    dtype: str
    kind: str = "parameter"
    aliases: list = field(default_factory=list)


@dataclass
class Node:
    """One ATen (or custom) op: `op_type` as PyTorch prints the overload ("aten.mm.default"), its
    arguments (tensors by name, constants as they were), and the tensors it makes."""
    name: str
    op_type: str
    args: list
    kwargs: dict
    inputs: list   # TensorMeta of the tensors it reads, in argument order
    outputs: list  # TensorMeta of the tensors it makes (None where it returns no tensor)


class IR:
    """A model's graph: nodes in execution order, weights, graph inputs and outputs."""

    def __init__(self, nodes, weights, inputs, outputs, tensors, model="", producer=None):
        self.nodes = nodes
        self.weights = weights
        self.inputs = inputs      # TensorMeta of the graph inputs, in call order
        self.outputs = outputs    # TensorMeta of the graph outputs, in the flattened return order
        self.tensors = tensors    # name -> TensorMeta
        self.model = model
        self.producer = dict(producer or {})

    def __repr__(self):
        return (f"IR({self.model or 'graph'}: {len(self.nodes)} nodes, {len(self.weights)} weights, "
                f"{len(self.inputs)} inputs, {len(self.outputs)} outputs)")

    def __eq__(self, other):
        return isinstance(other, IR) and self.to_dict() == other.to_dict()

    # --- JSON ---
    def to_dict(self):
        return {
            "format": FORMAT,
            "version": VERSION,
            "model": self.model,
            "producer": self.producer,
            "inputs": [t.name for t in self.inputs],
            "outputs": [t.name for t in self.outputs],
            "weights": [{"name": w.name, "tensor": w.tensor, "kind": w.kind, "aliases": list(w.aliases)}
                        for w in self.weights],
            "tensors": {name: t.to_dict() for name, t in self.tensors.items()},
            "nodes": [{"name": n.name, "op": n.op_type, "args": [encode(a) for a in n.args],
                       "kwargs": {k: encode(v) for k, v in n.kwargs.items()},
                       "outputs": [t.name if t is not None else None for t in n.outputs]} for n in self.nodes],
        }

    def save(self, path):
        with open(path, "w") as f:
            json.dump(self.to_dict(), f, indent=1, sort_keys=False, allow_nan=False)
            f.write("\n")

    @classmethod
    def load(cls, path):
        try:
            with open(path) as f:
                data = json.load(f)
        except json.JSONDecodeError as e:
            raise ValueError(f"{path}: not JSON: {e}") from None
        return cls.from_dict(data, where=str(path))

    @classmethod
    def from_dict(cls, data, where="<ir>"):
        def need(obj, key, kind, at):
            if not isinstance(obj, dict) or key not in obj:
                raise ValueError(f"{where}: {at}: expected a field '{key}'")
            if not isinstance(obj[key], kind):
                raise ValueError(f"{where}: {at}/{key}: expected {kind.__name__ if isinstance(kind, type) else 'a value'}"
                                 f", found {type(obj[key]).__name__}")
            return obj[key]

        if need(data, "format", str, "") != FORMAT:
            raise ValueError(f"{where}: /format: expected \"{FORMAT}\", found {data['format']!r}")
        version = need(data, "version", int, "")
        if version != VERSION:
            raise ValueError(f"{where}: /version: this syntorch reads version {VERSION}, found {version}")
        tensors = {}
        for name, t in need(data, "tensors", dict, "").items():
            at = f"/tensors/{name}"
            shape = need(t, "shape", list, at)
            if not all(isinstance(s, int) and s >= 0 for s in shape):
                raise ValueError(f"{where}: {at}/shape: expected non-negative integers, found {shape}")
            stride = t.get("stride", [])
            if not isinstance(stride, list) or not all(isinstance(v, int) for v in stride):
                raise ValueError(f"{where}: {at}/stride: expected a list of integers, found {stride!r}")
            offset = t.get("offset", 0)
            if not isinstance(offset, int) or offset < 0:
                raise ValueError(f"{where}: {at}/offset: expected a non-negative integer, found {offset!r}")
            producer = t.get("producer")
            if producer is not None and not isinstance(producer, str):
                raise ValueError(f"{where}: {at}/producer: expected a node name or null, found {producer!r}")
            tensors[name] = TensorMeta(name, tuple(shape), need(t, "dtype", str, at), tuple(stride), offset, producer)

        def tensor(name, at):
            if name not in tensors:
                raise ValueError(f"{where}: {at}: names tensor '{name}', which /tensors does not hold")
            return tensors[name]

        # What exists before the first node: graph inputs and weights; each node's outputs after it.
        defined = set(data.get("inputs", []) if isinstance(data.get("inputs"), list) else [])
        defined |= {w.get("tensor") for w in data.get("weights", []) if isinstance(w, dict)}
        nodes = []
        for i, n in enumerate(need(data, "nodes", list, "")):
            at = f"/nodes/{i}"
            args = [decode(a, where, f"{at}/args/{j}", tensors) for j, a in enumerate(need(n, "args", list, at))]
            kwargs = {k: decode(v, where, f"{at}/kwargs/{k}", tensors)
                      for k, v in need(n, "kwargs", dict, at).items()}
            outs = [tensor(o, f"{at}/outputs") if o is not None else None for o in need(n, "outputs", list, at)]
            inputs = collect_refs(list(args) + list(kwargs.values()), [])
            for ref in inputs:
                if ref.name not in defined:
                    raise ValueError(f"{where}: {at}: reads tensor '{ref.name}' before any node makes it (nodes run in "
                                     "order; inputs and weights exist from the start)")
            defined.update(o for o in n.get("outputs", []) if o is not None)
            nodes.append(Node(need(n, "name", str, at), need(n, "op", str, at), args, kwargs,
                              [tensors[x.name] for x in inputs], outs))
        weights = []
        for i, w in enumerate(need(data, "weights", list, "")):
            at = f"/weights/{i}"
            t = tensor(need(w, "tensor", str, at), at + "/tensor")
            kind = w.get("kind", "parameter")
            if kind not in ("parameter", "buffer", "constant"):
                raise ValueError(f"{where}: {at}/kind: expected parameter, buffer or constant, found {kind!r}")
            aliases = w.get("aliases", [])
            if not isinstance(aliases, list) or not all(isinstance(x, str) for x in aliases):
                raise ValueError(f"{where}: {at}/aliases: expected a list of names, found {aliases!r}")
            weights.append(WeightMeta(need(w, "name", str, at), t.name, t.shape, t.dtype, kind, list(aliases)))
        inputs = [tensor(n, "/inputs") for n in need(data, "inputs", list, "")]
        outputs = [tensor(n, "/outputs") for n in need(data, "outputs", list, "")]
        return cls(nodes, weights, inputs, outputs, tensors, data.get("model", ""), data.get("producer"))


class TensorRef:
    """A tensor argument in a node's arguments (by name)."""
    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"%{self.name}"

    def __eq__(self, other):
        return isinstance(other, TensorRef) and other.name == self.name

    def __hash__(self):
        return hash(self.name)


class Constant:
    """A typed constant argument: a dtype, device, layout or memory format by its name."""
    __slots__ = ("kind", "value")

    def __init__(self, kind, value):
        self.kind, self.value = kind, value

    def __repr__(self):
        return f"{self.kind}:{self.value}"

    def __eq__(self, other):
        return isinstance(other, Constant) and (other.kind, other.value) == (self.kind, self.value)


_TYPED = ("dtype", "device", "layout", "memory_format")


def encode(x):
    if isinstance(x, TensorRef):
        return {"tensor": x.name}
    if isinstance(x, Constant):
        return {x.kind: x.value}
    if isinstance(x, float) and not math.isfinite(x):
        return {"float": "nan" if math.isnan(x) else ("inf" if x > 0 else "-inf")}
    if isinstance(x, (list, tuple)):
        return [encode(y) for y in x]
    if x is None or isinstance(x, (bool, int, float, str)):
        return x
    raise TypeError(f"an IR argument cannot be {type(x).__name__}: {x!r}")


def decode(x, where, at, tensors):
    if isinstance(x, dict):
        if len(x) != 1:
            raise ValueError(f"{where}: {at}: expected one of tensor, float, {', '.join(_TYPED)}; found {sorted(x)}")
        (kind, value), = x.items()
        if kind == "tensor":
            if value not in tensors:
                raise ValueError(f"{where}: {at}: names tensor '{value}', which /tensors does not hold")
            return TensorRef(value)
        if kind == "float":
            if value not in ("inf", "-inf", "nan"):
                raise ValueError(f"{where}: {at}/float: expected inf, -inf or nan, found {value!r}")
            return float(value)
        if kind in _TYPED:
            return Constant(kind, value)
        raise ValueError(f"{where}: {at}: expected one of tensor, float, {', '.join(_TYPED)}; found '{kind}'")
    if isinstance(x, list):
        return [decode(y, where, f"{at}/{i}", tensors) for i, y in enumerate(x)]
    return x


def collect_refs(x, acc):
    """The TensorRefs of an argument (nested lists included), appended to acc."""
    if isinstance(x, TensorRef):
        acc.append(x)
    elif isinstance(x, list):
        for y in x:
            collect_refs(y, acc)
    return acc
