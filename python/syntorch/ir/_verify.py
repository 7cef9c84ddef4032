"""verify_ir_with_state_dict: the IR executed with real values on the CPU against the original
model's own outputs."""

import torch

from . import _execute
from ._extract import flatten_outputs


def verify_ir_with_state_dict(ir, state_dict, original_model, test_inputs, rtol=1e-4, atol=1e-5):
    """Executes `ir` on the CPU with `state_dict`'s weights and `test_inputs` (the same arguments
    the model takes), runs `original_model` on them, and compares every output. Returns
    (is_valid, report): the report says, per output, its shape against the IR's and the largest
    difference, and names what is missing."""
    if isinstance(test_inputs, (torch.Tensor, dict)) or not isinstance(test_inputs, (tuple, list)):
        test_inputs = (test_inputs,)
    lines = [f"# IR verification: {ir.model or 'graph'}", "",
             f"{len(ir.nodes)} nodes, {len(ir.weights)} weights, rtol {rtol:g}, atol {atol:g}", ""]
    env = {}
    problems = []
    # The IR runs on copies: an in-place op of the graph must not change what the model then sees.
    given = [t.clone() for t in flatten_outputs(list(test_inputs)) if t is not None]
    if len(given) != len(ir.inputs):
        problems.append(f"the IR takes {len(ir.inputs)} input tensors, the test inputs hold {len(given)}")
    for meta, t in zip(ir.inputs, given):
        if tuple(t.shape) != tuple(meta.shape):
            problems.append(f"input {meta.name}: the IR was extracted for shape {list(meta.shape)}, got {list(t.shape)}")
        env[meta.name] = t
    for w in ir.weights:
        if w.kind == "constant" and w.name not in state_dict:
            problems.append(f"{w.name}: a constant tensor made outside the model's parameters; the IR holds no values "
                            "(pass them in the state_dict by this name)")
            continue
        names = [w.name] + list(w.aliases)
        value = next((state_dict[n] for n in names if n in state_dict), None)
        if value is None and w.kind == "buffer":  # a non-persistent buffer: the model's own
            value = next((b for n, b in original_model.named_buffers() if n in names), None)
        if value is None:
            problems.append(f"weight {w.name}: not in the state_dict")
            continue
        if tuple(value.shape) != tuple(w.shape):
            problems.append(f"weight {w.name}: shape {list(value.shape)} in the state_dict, {list(w.shape)} in the IR")
        env[w.tensor] = value.detach()
    if problems:
        return False, "\n".join(lines + ["FAILED before running:"] + [f"- {p}" for p in problems]) + "\n"
    with torch.no_grad():
        try:
            got = _execute.run(ir, env, "cpu")
        except (RuntimeError, NotImplementedError, ValueError, KeyError, TypeError) as e:
            return False, "\n".join(lines + [f"FAILED: {e}"]) + "\n"
        was_training = original_model.training
        original_model.eval()
        try:
            expected = [t for t in flatten_outputs(original_model(*test_inputs)) if t is not None]
        finally:
            original_model.train(was_training)
    ok = len(got) == len(expected)
    lines += ["| output | shape | IR shape | max abs diff | close |", "|---|---|---|---|---|"]
    for i, (meta, g) in enumerate(zip(ir.outputs, got)):
        e = expected[i] if i < len(expected) else None
        if e is None or g.shape != e.shape:
            ok = False
            lines.append(f"| {meta.name} | {list(g.shape)} | {list(meta.shape)} | - | no (the model gave "
                         f"{'nothing' if e is None else list(e.shape)}) |")
            continue
        diff = (g.double() - e.double()).abs().max().item() if g.numel() else 0.0
        close = bool(torch.allclose(g, e, rtol=rtol, atol=atol, equal_nan=True)) if g.is_floating_point() \
            else bool(torch.equal(g, e))
        ok = ok and close and tuple(g.shape) == tuple(meta.shape)
        lines.append(f"| {meta.name} | {list(g.shape)} | {list(meta.shape)} | {diff:.3g} | {'yes' if close else 'no'} |")
    if len(got) != len(expected):
        lines.append(f"\nthe IR gives {len(got)} outputs, the model {len(expected)}")
    lines += ["", "PASSED" if ok else "FAILED"]
    return ok, "\n".join(lines) + "\n"
