"""The IR of a model: a weight-free graph of ATen ops with every tensor's shape and dtype, saved
as versioned JSON, executed with real values to verify it, and simulated as a workload
(docs/ir.md). Importable also as `torch_ir`, so code written for the IR-extraction design runs as
written:

    import torch
    from torch_ir import extract_ir, verify_ir_with_state_dict

    model = MyModel().to("meta")
    ir = extract_ir(model, (torch.randn(1, 3, 224, 224, device="meta"),))
    ir.save("model_ir.json")
    ok, report = verify_ir_with_state_dict(IR.load("model_ir.json"), weights, MyModel(), (x,))

Needs PyTorch (Debian: python3-torch)."""

try:
    import torch as _torch
except ImportError as e:  # pragma: no cover - depends on the machine
    raise ImportError("syntorch.ir needs PyTorch: install Debian's python3-torch (apt-get install python3-torch) "
                      "or pip's torch") from e

import os as _os

from ._execute import register_op, run as _run
from ._extract import extract_ir
from ._graph import FORMAT, IR, VERSION, Node, TensorMeta, WeightMeta
from ._onnx import from_onnx
from ._report import markdown as report_markdown, mermaid, statistics
from ._verify import verify_ir_with_state_dict

__all__ = ["IR", "Node", "TensorMeta", "WeightMeta", "extract_ir", "from_onnx", "verify_ir_with_state_dict",
           "register_op",
           "simulate", "statistics", "mermaid", "report_markdown", "schema_path", "FORMAT", "VERSION"]


def schema_path():
    """The JSON Schema file of the IR's JSON form (ir-v1.schema.json)."""
    return _os.path.join(_os.path.dirname(_os.path.abspath(__file__)), f"ir-v{VERSION}.schema.json")


def simulate(ir, hw=None, set=(), policy=None, trace=None, framework="eager", console=False, input_shapes=None):
    """Simulates an IR (an IR object, the path of its JSON, or an ONNX model's path, read with
    from_onnx and `input_shapes` for its symbolic dimensions) on the machine `hw`, as
    syntorch.pytorch.simulate simulates a model: each node's op runs on meta tensors under the
    bridge, weights placed as weights, every intermediate freed after its last use. Returns the
    run's statistics with the bridge's `aten` tally."""
    import syntorch
    from syntorch.pytorch import BridgeMode
    from syntorch.pytorch._tensors import adopt, begin_run

    if isinstance(ir, (str, _os.PathLike)):
        ir = from_onnx(ir, input_shapes)[0] if str(ir).endswith(".onnx") else IR.load(ir)
    if not isinstance(ir, IR):
        raise TypeError(f"simulate: expected an IR or the path of one, got {type(ir).__name__}")
    syntorch.init(hw=hw, set=set, framework=framework, trace=trace, policy=policy, console=console)
    begin_run()
    env = {}

    def meta(t):
        try:
            dtype = getattr(_torch, t.dtype)
        except AttributeError:
            raise ValueError(f"simulate: tensor {t.name} has dtype '{t.dtype}', which this PyTorch lacks") from None
        stride = t.stride if len(t.stride) == len(t.shape) else None
        if stride is None:
            return _torch.empty(t.shape, dtype=dtype, device="meta")
        return _torch.empty_strided(t.shape, stride, dtype=dtype, device="meta")

    for w in ir.weights:
        env[w.tensor] = meta(ir.tensors[w.tensor])
        adopt(env[w.tensor], weight=w.kind != "constant")
    for t in ir.inputs:
        env[t.name] = meta(t)
        adopt(env[t.name])
    mode = BridgeMode()
    with _torch.no_grad(), mode:
        outputs = _run(ir, env, "meta")
    del outputs, env
    stats = syntorch.trace_manager.stats()
    return dict(stats, aten=mode.tally.summary())
