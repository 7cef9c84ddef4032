"""Running an IR with real PyTorch: on real values (verification) or on meta tensors (simulation,
under the bridge's dispatch mode)."""

import torch

from ._graph import Constant, TensorRef

_CUSTOM = {}


def register_op(op_type, execute):
    """Makes the IR executor run `execute(*args, **kwargs)` for nodes of `op_type` (a custom
    operator's name as the IR holds it, "mylib.fused_gelu.default"), for ops PyTorch itself does
    not know in the executing process."""
    if not isinstance(op_type, str) or op_type.count(".") < 1:
        raise ValueError(f"register_op: op_type must be 'namespace.op[.overload]', got {op_type!r}")
    if not callable(execute):
        raise TypeError("register_op: execute must be callable")
    _CUSTOM[op_type] = execute


def resolve(op_type):
    """The callable for an IR op type: a registered custom op, else PyTorch's torch.ops entry."""
    if op_type in _CUSTOM:
        return _CUSTOM[op_type]
    parts = op_type.split(".")
    if len(parts) not in (2, 3):
        raise ValueError(f"IR op type '{op_type}': expected namespace.op.overload")
    try:
        op = getattr(getattr(torch.ops, parts[0]), parts[1])
        return getattr(op, parts[2]) if len(parts) == 3 else op
    except (AttributeError, RuntimeError):
        raise NotImplementedError(f"IR op type '{op_type}' is not an operator this PyTorch knows "
                                  "(a custom operator: syntorch.ir.register_op)") from None


def _value(x, env, device):
    if isinstance(x, TensorRef):
        return env[x.name]
    if isinstance(x, Constant):
        if x.kind == "device":
            return torch.device(device)
        return getattr(torch, x.value)
    if isinstance(x, list):
        return [_value(y, env, device) for y in x]
    return x


def last_uses(ir):
    """For each node, the tensors whose last reader (or maker, for one never read) it is: what
    can go once it has run. Graph inputs, weights and outputs stay."""
    keep = {t.name for t in ir.inputs} | {w.tensor for w in ir.weights} | {t.name for t in ir.outputs}
    last = {}
    for i, node in enumerate(ir.nodes):
        for t in node.outputs:
            if t is not None:
                last[t.name] = i
        for t in node.inputs:
            last[t.name] = i
    drop = [[] for _ in ir.nodes]
    for name, i in last.items():
        if name not in keep:
            drop[i].append(name)
    return drop


def run(ir, env, device):
    """Runs every node of `ir` in order on the tensors of `env` (graph inputs and weights by
    name, filled in with every output as it is made, and each intermediate dropped after its
    last use, so tensors live as long as in the original program)."""
    from ._extract import flatten_outputs

    drop = last_uses(ir)
    for index, node in enumerate(ir.nodes):
        fn = resolve(node.op_type)
        args = [_value(a, env, device) for a in node.args]
        kwargs = {k: _value(v, env, device) for k, v in node.kwargs.items()}
        try:
            out = fn(*args, **kwargs)
        except Exception as e:
            raise RuntimeError(f"IR node {node.name} ({node.op_type}) failed: {e}") from e
        flat = flatten_outputs(out)
        for meta, t in zip(node.outputs, flat):
            if meta is not None:
                env[meta.name] = t
        del out, flat, args, kwargs
        for name in drop[index]:
            env.pop(name, None)
    return [env[t.name] for t in ir.outputs]
