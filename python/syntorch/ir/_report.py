"""An IR's statistics, its DAG as Mermaid, and both as a markdown report."""

import collections
import math

_BYTES = {"float64": 8, "float32": 4, "float16": 2, "bfloat16": 2, "int64": 8, "int32": 4, "int16": 2, "int8": 1,
          "uint8": 1, "bool": 1, "complex64": 8, "complex128": 16, "float8_e4m3fn": 1, "float8_e5m2": 1}


def statistics(ir):
    """Counts: nodes by op type, tensors, weights (and their bytes), inputs, outputs, and the
    graph's depth (the longest chain of nodes)."""
    by_op = collections.Counter(n.op_type for n in ir.nodes)
    weight_bytes = sum(math.prod(w.shape) * _BYTES.get(w.dtype, 4) for w in ir.weights)
    depth = {}
    for n in ir.nodes:
        d = 1 + max((depth.get(t.producer, 0) for t in n.inputs if t.producer), default=0)
        depth[n.name] = d
    return {"nodes": len(ir.nodes), "op_types": len(by_op), "by_op": dict(by_op.most_common()),
            "tensors": len(ir.tensors), "weights": len(ir.weights),
            "parameters": sum(math.prod(w.shape) for w in ir.weights if w.kind == "parameter"),
            "weight_bytes": weight_bytes, "inputs": len(ir.inputs), "outputs": len(ir.outputs),
            "depth": max(depth.values(), default=0)}


def mermaid(ir, max_nodes=200):
    """The graph as a Mermaid flowchart: inputs and weights, each node with its op, edges labelled
    with the tensor's shape (the first max_nodes nodes)."""
    lines = ["graph TD"]
    ident = {}

    def node_id(name):
        if name not in ident:
            ident[name] = f"N{len(ident)}"
        return ident[name]

    for t in ir.inputs:
        lines.append(f'  {node_id(t.name)}[/"{t.name} {list(t.shape)}"/]')
    used_weights = set()
    for n in ir.nodes[:max_nodes]:
        short = n.op_type.split(".")[1] if n.op_type.count(".") >= 2 else n.op_type
        lines.append(f'  {node_id(n.name)}["{n.name}: {short}"]')
        for t in n.inputs:
            src = t.producer if t.producer else t.name
            if not t.producer and t.name not in {i.name for i in ir.inputs}:
                if t.name not in used_weights:
                    used_weights.add(t.name)
                    lines.append(f'  {node_id(t.name)}[("{t.name}")]')
            lines.append(f'  {node_id(src)} -->|"{list(t.shape)}"| {node_id(n.name)}')
    if len(ir.nodes) > max_nodes:
        lines.append(f'  more["... {len(ir.nodes) - max_nodes} more nodes"]')
    for i, t in enumerate(ir.outputs):
        out = f"out{i}"
        lines.append(f'  {out}[\\"{t.name} {list(t.shape)}"\\]')
        lines.append(f"  {node_id(t.producer or t.name)} --> {out}")
    return "\n".join(lines) + "\n"


def markdown(ir):
    s = statistics(ir)
    lines = [f"# IR report: {ir.model or 'graph'}", "",
             "| | |", "|---|---|",
             f"| nodes | {s['nodes']} ({s['op_types']} op types) |",
             f"| tensors | {s['tensors']} |",
             f"| weights | {s['weights']} ({s['parameters']:,} parameters, {s['weight_bytes']:,} bytes) |",
             f"| inputs | " + ", ".join(f"{t.name} {list(t.shape)} {t.dtype}" for t in ir.inputs) + " |",
             f"| outputs | " + ", ".join(f"{t.name} {list(t.shape)} {t.dtype}" for t in ir.outputs) + " |",
             f"| depth | {s['depth']} |", "", "## Ops", "", "| op | count |", "|---|---|"]
    lines += [f"| `{op}` | {n} |" for op, n in s["by_op"].items()]
    lines += ["", "## Graph", "", "```mermaid", mermaid(ir).rstrip(), "```", ""]
    return "\n".join(lines)
