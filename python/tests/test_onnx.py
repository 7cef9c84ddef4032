"""ONNX in (syntorch.ir.from_onnx): ONNX models exported by PyTorch read as IRs, verified with real
values against the models they came from, and simulated."""

import json
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")
onnx = pytest.importorskip("onnx")

import syntorch.ir as sir  # noqa: E402

from models.design import MODELS  # noqa: E402
from models.gpt import make_gpt  # noqa: E402


def _export(model, args, path, **kw):
    model.eval()
    torch.onnx.export(model, args, str(path), opset_version=14, **kw)
    return path


@pytest.mark.parametrize("name", sorted(MODELS))
def test_the_designs_models_come_in_through_onnx_and_verify(name, tmp_path):
    cls, make_inputs = MODELS[name]
    model, inputs = cls(), make_inputs()
    ir, values = sir.from_onnx(_export(model, inputs, tmp_path / f"{name}.onnx"))
    ok, report = sir.verify_ir_with_state_dict(ir, values, model, inputs)
    assert ok, report
    ir.save(tmp_path / "ir.json")
    jsonschema = pytest.importorskip("jsonschema")
    with open(sir.schema_path()) as f:
        jsonschema.validate(json.loads((tmp_path / "ir.json").read_text()), json.load(f))
    assert {w.name for w in ir.weights if w.kind == "parameter"} <= set(values)


def test_resnet18_and_a_gpt_verify_from_onnx_and_simulate(tmp_path):
    torchvision = pytest.importorskip("torchvision")
    resnet, x = torchvision.models.resnet18(), torch.randn(1, 3, 64, 64)
    ir, values = sir.from_onnx(_export(resnet, (x,), tmp_path / "r18.onnx"))
    ok, report = sir.verify_ir_with_state_dict(ir, values, resnet, (x,), rtol=1e-3, atol=1e-4)
    assert ok, report
    assert sum(1 for n in ir.nodes if n.op_type == "aten.convolution.default") == 20  # batch norm folded in
    gpt = make_gpt(torch, vocab=512, d=128, heads=4, layers=2, block=64)
    idx = torch.randint(0, 512, (2, 64))
    path = _export(gpt, (idx, idx), tmp_path / "gpt.onnx")
    ir, values = sir.from_onnx(path)
    ok, report = sir.verify_ir_with_state_dict(ir, values, gpt, (idx, idx), rtol=1e-3, atol=1e-4)
    assert ok, report
    report = sir.simulate(str(path))
    ops = report["aten"]["by_op"]
    # ONNX spells layer norm and GELU out (ReduceMean, Pow, Sqrt, ...; Erf): run op by op, as ONNX Runtime
    # without fusion would, they cost more kernels than the model's own fused ones.
    assert ops["aten::bmm"] == 2 * 2 and "aten::native_layer_norm" not in ops and ops["aten::erf"] == 2
    assert report["kernels"] > 60 and report["simulated_time_s"] > 0
    # The IR read from ONNX, saved, runs on the simulator alone to the same kernels and time; so
    # does ResNet-18's own IR (convolutions, batch norm, pooling).
    import syntorch
    ir.save(tmp_path / "gpt_onnx.json")
    native = syntorch.simulate_graph(tmp_path / "gpt_onnx.json")
    assert native["kernels"] == report["kernels"]
    assert native["simulated_time_s"] == pytest.approx(report["simulated_time_s"], rel=1e-3)
    sir.extract_ir(resnet.eval(), (torch.randn(8, 3, 224, 224),)).save(tmp_path / "r18.json")
    bridged, native = sir.simulate(str(tmp_path / "r18.json")), syntorch.simulate_graph(tmp_path / "r18.json")
    assert native["kernels"] == bridged["kernels"] and native["aten"]["by_op"]["aten::convolution"] == 20
    assert native["simulated_time_s"] == pytest.approx(bridged["simulated_time_s"], rel=1e-3)


def test_symbolic_dimensions_take_their_sizes_from_input_shapes(tmp_path):
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU())
    path = _export(model, (torch.randn(4, 16),), tmp_path / "dyn.onnx", input_names=["x"],
                   dynamic_axes={"x": {0: "batch"}})
    with pytest.raises(ValueError, match=r"input 'x' dim 0 is symbolic \('batch'\): give its size in input_shapes"):
        sir.from_onnx(path)
    ir, _ = sir.from_onnx(path, input_shapes={"x": [64, 16]})
    assert list(ir.inputs[0].shape) == [64, 16] and list(ir.outputs[0].shape) == [64, 32]
    with pytest.raises(ValueError, match=r"input_shapes\['x'\] = \[64, 8\] does not fit the model's shape \['\?', 16\]"):
        sir.from_onnx(path, input_shapes={"x": [64, 8]})
    with pytest.raises(ValueError, match=r"input_shapes names \['y'\], which are not inputs"):
        sir.from_onnx(path, input_shapes={"x": [1, 16], "y": [1]})
    # The command line: converted to an IR file with the sizes, then run by the simulator alone.
    import json
    import os
    import subprocess
    import sys

    import _syntorch
    out = tmp_path / "dyn_ir.json"
    proc = subprocess.run([sys.executable, "-m", "syntorch.ir", "convert", str(path), "-o", str(out),
                           "--input-shapes", "x=64x16"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert sir.IR.load(out).inputs[0].shape == (64, 16)
    binary = os.path.join(os.path.dirname(os.path.realpath(_syntorch.__file__)), "..", "syntorch")
    run = subprocess.run([binary, "simulate", "--graph", str(out), "--json"], capture_output=True, text=True)
    assert run.returncode == 0 and json.loads(run.stdout)["aten"]["by_op"]["aten::addmm"] == 1, run.stderr
    refused = subprocess.run([binary, "simulate", "--graph", str(path)], capture_output=True, text=True)
    assert refused.returncode == 2 and "python3 -m syntorch.ir convert" in refused.stderr


def test_an_unsupported_op_or_a_bad_file_is_refused_by_name(tmp_path):
    from onnx import TensorProto, helper
    node = helper.make_node("Hardmax", ["x"], ["y"], name="odd")
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])])
    path = tmp_path / "odd.onnx"
    onnx.save(helper.make_model(graph), str(path))
    with pytest.raises(NotImplementedError, match=r"odd.onnx: node 0 \(Hardmax 'odd'\): the ONNX op Hardmax is not"):
        sir.from_onnx(path)
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"not a protobuf at all")
    with pytest.raises(ValueError, match="bad.onnx: not an ONNX model"):
        sir.from_onnx(bad)
    with pytest.raises(FileNotFoundError, match="missing.onnx: no such file"):
        sir.from_onnx(tmp_path / "missing.onnx")
    proc = subprocess.run([sys.executable, "-m", "syntorch.ir", "report", str(path)], capture_output=True, text=True)
    assert proc.returncode == 2 and "Hardmax" in proc.stderr


def _one_op_model(tmp_path, node, inputs, outputs, initializers=(), opset=14):
    from onnx import helper
    graph = helper.make_graph([node], "g", inputs, outputs, list(initializers))
    path = tmp_path / f"{node.op_type}.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)]), str(path))
    return path


@pytest.mark.parametrize("op, attrs, shape, expected", [
    ("Flatten", {"axis": 2}, [2, 3, 4, 5], [6, 20]),
    ("Flatten", {"axis": 0}, [2, 3, 4, 5], [1, 120]),
    ("Flatten", {"axis": -1}, [2, 3, 4, 5], [24, 5]),
    ("MaxPool", {"kernel_shape": [2, 2]}, [1, 1, 8, 8], [1, 1, 7, 7]),  # ONNX's strides default to 1
    ("MaxPool", {"kernel_shape": [3, 3], "dilations": [2, 2]}, [1, 1, 8, 8], [1, 1, 4, 4]),
    ("AveragePool", {"kernel_shape": [2], "strides": [2]}, [1, 1, 8], [1, 1, 4]),
    ("Shape", {"start": 2}, [1, 2, 3, 4], [2]),
])
def test_onnx_ops_follow_the_onnx_spec_not_pytorchs_defaults(tmp_path, op, attrs, shape, expected):
    from onnx import TensorProto, helper
    out_type = TensorProto.INT64 if op == "Shape" else TensorProto.FLOAT
    node = helper.make_node(op, ["x"], ["y"], name="n", **attrs)
    path = _one_op_model(tmp_path, node, [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                         [helper.make_tensor_value_info("y", out_type, None)])
    if op == "Shape":  # a constant: folded, so the graph's output is a named constant of the values
        ir, values = sir.from_onnx(path)
        assert values["y"].tolist() == [3, 4]
        return
    ir, _ = sir.from_onnx(path)
    assert list(ir.outputs[0].shape) == expected


def test_gather_with_a_negative_constant_index_and_unsupported_pooling_forms(tmp_path):
    from onnx import TensorProto, helper, numpy_helper
    import numpy as np
    index = numpy_helper.from_array(np.array([-1], dtype=np.int64), "i")
    node = helper.make_node("Gather", ["x", "i"], ["y"], axis=1, name="g")
    path = _one_op_model(tmp_path, node, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 5])],
                         [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [index])
    ir, values = sir.from_onnx(path)
    assert list(ir.outputs[0].shape) == [2, 1]
    x = torch.randn(2, 5)

    class Last(torch.nn.Module):
        def forward(self, t):
            return t[:, 4:5]
    ok, report = sir.verify_ir_with_state_dict(ir, values, Last(), (x,))
    assert ok, report
    node = helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[2, 2], auto_pad="SAME_UPPER", name="p")
    path = _one_op_model(tmp_path, node, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 7, 7])],
                         [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    with pytest.raises(NotImplementedError, match="auto_pad"):
        sir.from_onnx(path)
