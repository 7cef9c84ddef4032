"""The IR (syntorch.ir, also torch_ir): extraction from real PyTorch models, the JSON form and its
schema, verification with real values, the report command, simulation of an IR."""

import json
import os
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")

import _syntorch  # noqa: E402
import syntorch.pytorch as sp  # noqa: E402
import torch_ir  # noqa: E402
from syntorch import ir as sir  # noqa: E402

from models.design import MODELS  # noqa: E402
from models.gpt import make_gpt  # noqa: E402


def _schema_check(path):
    jsonschema = pytest.importorskip("jsonschema")
    with open(sir.schema_path()) as f:
        schema = json.load(f)
    with open(path) as f:
        jsonschema.validate(json.load(f), schema)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_the_designs_models_extract_from_meta_round_trip_and_verify_with_real_values(name, tmp_path):
    cls, make_inputs = MODELS[name]
    with torch.no_grad():
        meta_model = cls().to("meta")
    example = tuple(torch.empty_like(t, device="meta") for t in make_inputs())
    ir = torch_ir.extract_ir(meta_model, example)  # weight-free: the model never held values
    assert ir.nodes and all(t.shape is not None for n in ir.nodes for t in n.outputs if t is not None)
    path = tmp_path / f"{name}.json"
    ir.save(path)
    _schema_check(path)
    loaded = torch_ir.IR.load(path)
    assert loaded == ir
    original = cls()
    inputs = make_inputs()
    ok, report = torch_ir.verify_ir_with_state_dict(loaded, original.state_dict(), original, inputs)
    assert ok, report
    assert "PASSED" in report


def test_nodes_carry_op_types_shapes_dtypes_and_producers():
    model = MODELS["multi_io"][0]()
    ir = sir.extract_ir(model, (torch.randn(2, 16), torch.randn(2, 8)))
    assert [t.name for t in ir.inputs] == ["input_0", "input_1"] and len(ir.outputs) == 2
    addmm = [n for n in ir.nodes if n.op_type == "aten.addmm.default"]
    assert len(addmm) == 4
    assert [list(t.shape) for t in addmm[0].inputs] == [[32], [2, 16], [16, 32]]
    assert addmm[0].inputs[2].producer is not None  # the transposed weight, a t node's output
    assert addmm[0].outputs[0].dtype == "float32"
    assert {w.name for w in ir.weights} == {f"{m}.{p}" for m in ("a", "b", "head1", "head2") for p in ("weight", "bias")}
    assert model.a.weight.device.type == "cpu"  # taken from its shapes; the model is untouched


def test_shared_weights_are_one_weight_under_each_name():
    ir = sir.extract_ir(MODELS["shared_weights"][0](), (torch.randint(0, 100, (2, 12)),))
    embed = next(w for w in ir.weights if w.name == "embed.weight")
    assert embed.aliases == ["out.weight"]
    assert len(ir.weights) == 3


def test_ir_verification_passes_on_resnet18_and_a_small_gpt():
    torchvision = pytest.importorskip("torchvision")
    resnet = torchvision.models.resnet18()
    x = torch.randn(1, 3, 64, 64)
    ir = sir.extract_ir(resnet, (x,))
    ok, report = sir.verify_ir_with_state_dict(ir, resnet.state_dict(), resnet, (x,), rtol=1e-3, atol=1e-4)
    assert ok, report
    gpt = make_gpt(torch, vocab=500, d=64, heads=4, layers=2, block=32)
    idx = torch.randint(0, 500, (2, 32))
    ir = sir.extract_ir(gpt, (idx, idx))
    ok, report = sir.verify_ir_with_state_dict(ir, gpt.state_dict(), gpt, (idx, idx))
    assert ok, report


def test_verification_fails_clearly_on_wrong_weights_or_inputs():
    model = MODELS["multi_io"][0]()
    inputs = (torch.randn(2, 16), torch.randn(2, 8))
    ir = sir.extract_ir(model, inputs)
    other = MODELS["multi_io"][0]()
    ok, report = sir.verify_ir_with_state_dict(ir, other.state_dict(), model, inputs)
    assert not ok and "| no |" in report and "FAILED" in report
    state = dict(model.state_dict())
    del state["a.bias"]
    ok, report = sir.verify_ir_with_state_dict(ir, state, model, inputs)
    assert not ok and "weight a.bias: not in the state_dict" in report
    ok, report = sir.verify_ir_with_state_dict(ir, model.state_dict(), model, (torch.randn(3, 16), torch.randn(3, 8)))
    assert not ok and "extracted for shape [2, 16], got [3, 16]" in report


def test_a_custom_operator_is_recorded_by_name_and_executed_through_its_registration(tmp_path):
    lib = torch.library.Library("syntorch_test", "DEF")
    lib.define("scaled(Tensor x, float s) -> Tensor")
    lib.impl("scaled", lambda x, s: x * s, "CPU")
    lib.impl("scaled", lambda x, s: torch.empty_like(x), "Meta")

    def below_autograd(x, s):  # PyTorch 1.13 has no autograd fallthrough for meta tensors
        guard = torch._C.ExcludeDispatchKeyGuard(torch._C.DispatchKeySet(torch._C.DispatchKey.AutogradMeta))
        try:
            return torch.ops.syntorch_test.scaled(x, s)
        finally:
            del guard

    lib.impl("scaled", below_autograd, "AutogradMeta")

    class Custom(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = torch.nn.Linear(8, 8)

        def forward(self, x):
            return torch.ops.syntorch_test.scaled(self.fc(x), 3.0)

    model, x = Custom(), torch.randn(4, 8)
    ir = sir.extract_ir(model, (x,))
    assert ir.nodes[-1].op_type == "syntorch_test.scaled.default"
    ok, report = sir.verify_ir_with_state_dict(ir, model.state_dict(), model, (x,))
    assert ok, report
    # An op the executing PyTorch does not know: refused by name until registered.
    data = ir.to_dict()
    data["nodes"][-1]["op"] = "elsewhere.scaled.default"
    moved = sir.IR.from_dict(data)
    ok, report = sir.verify_ir_with_state_dict(moved, model.state_dict(), model, (x,))
    assert not ok and "elsewhere.scaled.default" in report and "register_op" in report
    sir.register_op("elsewhere.scaled.default", lambda t, s: t * s)
    ok, report = sir.verify_ir_with_state_dict(moved, model.state_dict(), model, (x,))
    assert ok, report
    report = sir.simulate(ir)  # simulated: a memory-bound stand-in, listed
    assert [row["op"] for row in report["aten"]["generic_elementwise"]] == ["syntorch_test::scaled"]


def test_an_ir_simulates_as_its_model_does(tmp_path):
    gpt = make_gpt(torch, vocab=50304, d=768, heads=12, layers=2, block=1024)
    idx = torch.randint(0, 50304, (8, 1024))
    path = tmp_path / "gpt.json"
    sir.extract_ir(gpt, (idx, idx)).save(path)
    from_ir = sir.simulate(str(path))
    from_model = sp.simulate(gpt, (idx, idx))
    assert from_ir["simulated_time_s"] == pytest.approx(from_model["simulated_time_s"], rel=0.01)
    assert from_ir["peak_memory_bytes"][0] == pytest.approx(from_model["peak_memory_bytes"][0], rel=0.01)
    assert from_ir["aten"]["by_op"] == from_model["aten"]["by_op"]
    # The simulator alone (no PyTorch) runs the same file to the same kernels and time, from
    # Python and from the command line.
    import syntorch
    native = syntorch.simulate_graph(path)
    assert native["status"] == "ok" and native["kernels"] == from_ir["kernels"]
    assert native["simulated_time_s"] == pytest.approx(from_ir["simulated_time_s"], rel=1e-3)
    assert native["peak_memory_bytes"] == from_ir["peak_memory_bytes"]
    assert native["aten"]["by_op"] == from_ir["aten"]["by_op"]
    binary = os.path.join(os.path.dirname(os.path.realpath(_syntorch.__file__)), "..", "syntorch")
    cli = subprocess.run([binary, "simulate", "--graph", str(path), "--json"], capture_output=True, text=True)
    assert cli.returncode == 0, cli.stderr
    assert json.loads(cli.stdout)["simulated_time_s"] == native["simulated_time_s"]


def test_a_zoo_models_exported_graph_loads_validates_and_runs(tmp_path):
    import syntorch
    path = tmp_path / "gpt.json"
    binary = os.path.join(os.path.dirname(os.path.realpath(_syntorch.__file__)), "..", "syntorch")
    proc = subprocess.run([binary, "graph", "export", "--model", "gpt3-125m", "--seq", "64", "-o", str(path)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    _schema_check(path)
    ir = sir.IR.load(path)
    stats = sir.statistics(ir)
    assert ir.model == "gpt3-125m" and stats["by_op"]["aten.linear.default"] == 12 * 4 + 1
    assert [w.kind for w in ir.weights].count("constant") == 0
    report = syntorch.simulate_graph(path)
    assert report["aten"]["ops"] == len(ir.nodes) and report["kernels"] > 0


def test_a_syntorch_torch_models_graph_is_extracted_and_runs_as_the_model_does(tmp_path):
    """The same GPT written once against PyTorch's API: run with syntorch.torch, its IR extracted
    from the syntorch.torch model and from the real PyTorch model, each IR run by the simulator
    alone: the same time within 1%."""
    import syntorch
    import syntorch.torch as storch
    sizes = dict(vocab=50304, d=768, heads=12, layers=2, block=1024)
    syntorch.init(console=False)
    model = make_gpt(storch, **sizes)
    idx = storch.randint(0, sizes["vocab"], (8, 1024), device="cuda")
    model.eval()
    with storch.no_grad():
        loss = model(idx, idx)
    del loss
    own = syntorch.trace_manager.stats()
    syntorch.init(console=False)
    model = make_gpt(storch, **sizes)
    idx = storch.randint(0, sizes["vocab"], (8, 1024), device="cuda")
    ir = torch_ir.extract_ir(model, (idx, idx))
    syntorch.trace_manager.stats()
    assert [w.kind for w in ir.weights].count("constant") == 0
    tied = [w for w in ir.weights if "wte.weight" in [w.name] + w.aliases][0]  # one weight under both names
    assert {"wte.weight", "head.weight"} <= {tied.name, *tied.aliases}
    by_op = sir.statistics(ir)["by_op"]
    assert by_op["aten.linear.default"] == 4 * 2 + 1 and by_op["aten.cross_entropy_loss.default"] == 1
    path = tmp_path / "storch_gpt.json"
    ir.save(path)
    _schema_check(path)
    from_ir = syntorch.simulate_graph(path)
    assert from_ir["aten"]["unmodelled"] == [] and from_ir["aten"]["generic_elementwise"] == []
    assert from_ir["simulated_time_s"] == pytest.approx(own["simulated_time_s"], rel=0.01)
    real = make_gpt(torch, **sizes)
    ridx = torch.randint(0, sizes["vocab"], (8, 1024))
    real_path = tmp_path / "torch_gpt.json"
    sir.extract_ir(real, (ridx, ridx)).save(real_path)
    assert syntorch.simulate_graph(real_path)["simulated_time_s"] == pytest.approx(own["simulated_time_s"], rel=0.01)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_the_simulator_alone_runs_every_design_model_as_the_bridge_does(name, tmp_path):
    import syntorch
    cls, make_inputs = MODELS[name]
    path = tmp_path / f"{name}.json"
    sir.extract_ir(cls(), make_inputs()).save(path)
    bridge, native = sir.simulate(str(path)), syntorch.simulate_graph(path)
    assert native["kernels"] == bridge["kernels"], (native["aten"], bridge["aten"])
    assert native["simulated_time_s"] == pytest.approx(bridge["simulated_time_s"], rel=1e-3)
    assert [r["op"] for r in native["aten"]["unmodelled"]] == [r["op"] for r in bridge["aten"]["unmodelled"]]


def test_the_report_command_writes_statistics_and_a_mermaid_dag(tmp_path):
    ir = sir.extract_ir(MODELS["attention"][0](), (torch.randn(2, 10, 32),))
    path = tmp_path / "attention.json"
    ir.save(path)
    out, dag = tmp_path / "report.md", tmp_path / "dag.mmd"
    proc = subprocess.run([sys.executable, "-m", "syntorch.ir", "report", str(path), "--out", str(out),
                           "--mermaid", str(dag)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    text = out.read_text()
    stats = sir.statistics(ir)
    assert f"| nodes | {stats['nodes']} (" in text and "```mermaid" in text and "`aten.bmm.default`" in text
    assert stats["by_op"]["aten.bmm.default"] == 2 and stats["parameters"] == 32 * 96 + 96 + 32 * 32 + 32 + 64
    assert dag.read_text().startswith("graph TD") and "-->" in dag.read_text()
    assert sir.report_markdown(ir) == text and sir.mermaid(ir) == dag.read_text()  # the same from Python


def test_a_bad_ir_file_is_refused_with_its_path_and_field(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"format": "syntorch-ir", "version": 7}))
    with pytest.raises(ValueError, match=r"bad.json: /version: this syntorch reads version 1, found 7"):
        sir.IR.load(bad)
    ir = sir.extract_ir(MODELS["multi_io"][0](), (torch.randn(2, 16), torch.randn(2, 8)))
    data = ir.to_dict()
    assert (data["format"], data["version"]) == (sir.FORMAT, sir.VERSION)
    data["nodes"][0]["args"][0] = {"tensor": "nowhere"}
    bad.write_text(json.dumps(data))
    with pytest.raises(ValueError, match=r"/nodes/0/args/0: names tensor 'nowhere'"):
        sir.IR.load(bad)
    proc = subprocess.run([sys.executable, "-m", "syntorch.ir", "report", str(bad)], capture_output=True, text=True)
    assert proc.returncode == 2 and "names tensor 'nowhere'" in proc.stderr
    with pytest.raises(TypeError, match="torch.nn.Module"):
        sir.extract_ir("resnet", ())


def test_verification_runs_on_copies_and_finds_non_persistent_buffers():
    class InPlace(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("scale", torch.full((4,), 3.0), persistent=False)

        def forward(self, x):
            return x.mul_(2) * self.scale

    model, x = InPlace(), torch.randn(2, 4)
    ir = sir.extract_ir(model, (x,))
    ok, report = sir.verify_ir_with_state_dict(ir, model.state_dict(), model, (x,))
    assert ok, report


def test_an_ir_reading_a_tensor_before_it_is_made_is_refused(tmp_path):
    ir = sir.extract_ir(MODELS["multi_io"][0](), (torch.randn(2, 16), torch.randn(2, 8)))
    data = ir.to_dict()
    data["nodes"][0], data["nodes"][1] = data["nodes"][1], data["nodes"][0]
    with pytest.raises(ValueError, match="reads tensor '.*' before any node makes it"):
        sir.IR.from_dict(data)
    data = ir.to_dict()
    first = next(iter(data["tensors"]))
    data["tensors"][first]["stride"] = 5
    with pytest.raises(ValueError, match=r"/stride: expected a list of integers, found 5"):
        sir.IR.from_dict(data)
