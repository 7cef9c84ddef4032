"""The bridge from real PyTorch (syntorch.pytorch): real modules on the meta device or the CPU,
simulated op by op through syntorch's torch layer."""

import json
import os
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")

import syntorch  # noqa: E402
import syntorch.pytorch as sp  # noqa: E402
import syntorch.torch as storch  # noqa: E402

from models.gpt import make_gpt  # noqa: E402

SIZES = dict(vocab=50304, d=768, heads=12, layers=2, block=1024)
B, T = 8, 1024


def _syntorch_torch_run(train):
    syntorch.init(console=False)
    model = make_gpt(storch, **SIZES)
    idx = storch.randint(0, SIZES["vocab"], (B, T), device="cuda")
    tgt = storch.randint(0, SIZES["vocab"], (B, T), device="cuda")
    if train:
        loss = model(idx, tgt)
        loss.backward()
    else:
        model.eval()
        with storch.no_grad():
            loss = model(idx, tgt)
    del loss
    return syntorch.trace_manager.stats()


def _bridge_run(train, **kw):
    model = make_gpt(torch, **SIZES)
    idx = torch.randint(0, SIZES["vocab"], (B, T))
    tgt = torch.randint(0, SIZES["vocab"], (B, T))
    return sp.simulate(model, (idx, tgt), train=train, **kw)


@pytest.mark.parametrize("train", [False, True], ids=["inference", "training"])
def test_a_gpt_in_plain_pytorch_costs_what_the_same_code_on_syntorch_torch_costs(train):
    bridged = _bridge_run(train)
    own = _syntorch_torch_run(train)
    assert bridged["simulated_time_s"] == pytest.approx(own["simulated_time_s"], rel=0.01)
    assert bridged["flops"] == pytest.approx(own["flops"], rel=0.01)
    # The allocator follows the real tensors' lifetimes (autograd's saved tensors included).
    assert bridged["peak_memory_bytes"][0] == pytest.approx(own["peak_memory_bytes"][0], rel=0.01)
    aten = bridged["aten"]
    assert aten["unmodelled"] == [] and aten["layout_mismatches"] == {}
    assert aten["by_op"]["aten::addmm"] == 4 * SIZES["layers"]  # qkv, proj, fc, out
    if train:
        assert aten["by_op"]["aten::native_layer_norm_backward"] == 2 * SIZES["layers"] + 1
        assert aten["by_op"]["aten::embedding_dense_backward"] == 2


def test_a_cpu_model_is_simulated_from_its_shapes_and_left_as_it_was():
    model = torch.nn.Sequential(torch.nn.Linear(256, 1024), torch.nn.GELU(), torch.nn.Linear(1024, 256))
    before = model[0].weight.detach().clone()
    report = sp.simulate(model, (torch.randn(64, 256),), train=True, optimizer="adamw")
    assert model[0].weight.device.type == "cpu" and model[0].weight.grad is None
    assert torch.equal(model[0].weight.detach(), before)
    ops = report["aten"]["by_op"]
    assert ops["aten::addmm"] == 2 and ops["aten::gelu_backward"] == 1 and ops["aten::mm"] >= 3
    weights = sum(p.numel() * 4 for p in model.parameters())
    assert report["peak_memory_bytes"][0] >= 4 * weights  # weights, grads and AdamW's two moments


def test_a_model_already_on_meta_runs_as_it_is():
    model = torch.nn.Linear(512, 512).to("meta")
    report = sp.simulate(model, (torch.empty(32, 512, device="meta"),))
    assert report["aten"]["by_op"] == {"aten::addmm": 1, "aten::t": 1}
    assert report["kernels"] == 1


def test_ops_without_a_cost_model_are_listed_with_their_share_never_dropped():
    class Odd(torch.nn.Module):  # a cumulative sum and a sort: no model of their own
        def forward(self, x):
            return torch.sort(torch.cumsum(x, dim=1), dim=1).values

    report = sp.simulate(Odd(), (torch.randn(256, 4096),))
    unmodelled = {row["op"]: row for row in report["aten"]["unmodelled"]}
    generic = {row["op"]: row for row in report["aten"]["generic_elementwise"]}
    assert set(unmodelled) | set(generic) == {"aten::cumsum", "aten::sort"}
    assert sum(r["bytes_share"] for r in list(unmodelled.values()) + list(generic.values())) == pytest.approx(1.0)
    assert report["kernels"] == 2 and report["simulated_time_s"] > 0  # they still cost their bytes


def test_resnet_runs_on_the_convolution_and_batch_norm_models():
    torchvision = pytest.importorskip("torchvision")
    report = sp.simulate(torchvision.models.resnet18(), (torch.randn(4, 3, 224, 224),))
    assert report["aten"]["unmodelled"] == [] and report["aten"]["generic_elementwise"] == []
    assert report["aten"]["by_op"]["aten::convolution"] == 20


def test_torchvision_resnet_trains_through_the_bridge():
    torchvision = pytest.importorskip("torchvision")
    report = sp.simulate(torchvision.models.resnet18(), (torch.randn(4, 3, 224, 224),), train=True,
                         loss_fn=lambda out: out.sum(), optimizer="sgd")
    ops = report["aten"]["by_op"]
    assert ops["aten::convolution_backward"] == 20  # shapes from the bridge's rule: 1.13 has no meta kernel
    assert ops["aten::threshold_backward"] >= 17
    assert report["kernels"] > 200


def test_elementwise_ops_without_a_model_fall_back_to_a_memory_bound_cost_and_say_so():
    class Erf(torch.nn.Module):
        def forward(self, x):
            return torch.erf(x) * 2

    report = sp.simulate(Erf(), (torch.randn(1024, 1024),))
    generic = report["aten"]["generic_elementwise"]
    assert [row["op"] for row in generic] == ["aten::erf"]
    assert generic[0]["bytes_share"] == pytest.approx(0.5)
    assert report["kernels"] == 2


def test_the_context_manager_form_wraps_any_code_and_follows_lifetimes(tmp_path):
    trace = tmp_path / "bridge.json"
    model = torch.nn.Linear(4096, 4096).to("meta")
    with sp.bridge(trace=str(trace), model=model) as b:
        x = torch.empty(1024, 4096, device="meta")
        for _ in range(4):
            y = model(x)  # each y freed when the next replaces it
        del y
    assert b.report["aten"]["by_op"]["aten::addmm"] == 4
    weights, activation = 4096 * 4096 * 4 + 4096 * 4, 1024 * 4096 * 4
    assert b.report["peak_memory_bytes"][0] <= weights + 3 * activation
    names = {e.get("name") for e in json.loads(trace.read_text())["traceEvents"]}
    assert "aten::addmm" in names


def test_the_same_inputs_give_the_same_report():
    model = make_gpt(torch, vocab=1000, d=128, heads=4, layers=1, block=64)
    idx = torch.randint(0, 1000, (2, 64))
    a = sp.simulate(model, (idx, idx), train=True)
    b = sp.simulate(model, (idx, idx), train=True)
    assert a == b


def test_bad_arguments_are_refused_by_name():
    with pytest.raises(TypeError, match="torch.nn.Module"):
        sp.simulate("gpt2", ())
    with pytest.raises(ValueError, match="steps must be at least 1"):
        sp.simulate(torch.nn.Linear(2, 2), (torch.randn(1, 2),), steps=0)
    with pytest.raises(ValueError, match="optimizer 'lion' is not one of"):
        sp.simulate(torch.nn.Linear(2, 2), (torch.randn(1, 2),), train=True, optimizer="lion")
    with pytest.raises(ValueError, match="loss_fn is for train=True"):
        sp.simulate(torch.nn.Linear(2, 2), (torch.randn(1, 2),), loss_fn=lambda o: o.sum())
    with pytest.raises(NotImplementedError, match="dtype torch.quint8"):
        sp._tensors.sdtype(torch.quint8)


def test_importing_the_bridge_without_pytorch_says_how_to_install_it():
    code = "import sys; sys.modules['torch'] = None\nimport syntorch.pytorch"
    env = dict(os.environ)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert proc.returncode != 0
    assert "ImportError" in proc.stderr and "python3-torch" in proc.stderr


def test_a_multi_tensor_optimizer_step_runs_its_foreach_kernels():
    model = torch.nn.Sequential(torch.nn.Linear(256, 1024), torch.nn.GELU(), torch.nn.Linear(1024, 256))
    report = sp.simulate(model, (torch.randn(64, 256),), train=True,
                         optimizer=lambda params: torch.optim.AdamW(params, foreach=True))
    ops = report["aten"]["by_op"]
    assert ops["aten::_foreach_addcdiv_"] == 1 and ops["aten::_foreach_mul_"] >= 1
    assert report["aten"]["unmodelled"] == []
    per_tensor = sp.simulate(model, (torch.randn(64, 256),), train=True, optimizer="adamw")
    assert report["kernels"] < per_tensor["kernels"]  # one kernel a list, not one a parameter


def test_resnet50_training_rows_come_within_their_tolerance(tmp_path):
    pytest.importorskip("torchvision")
    import io

    from syntorch.pytorch.validate import validate
    root = os.environ.get("SYNTORCH_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
    out = io.StringIO()
    results = validate(os.path.join(root, "calibration", "published.csv"), os.path.join(root, "hw_configs"), out)
    by_id = {r[0]: r for r in results}
    assert set(by_id) >= {"V001", "V002"}
    assert abs(by_id["V001"][3]) < 0.05  # TF32: published 938 img/s
    assert abs(by_id["V002"][3]) < 0.15  # mixed precision (the model in fp16): published 2470 img/s
    assert "median |error|" in out.getvalue()
    bad = tmp_path / "bad.csv"
    bad.write_text("id,op,hw,params,metric,value,unit,source\nX1,pytorch_infer,a100_sxm4_80gb,model=nosuchnet,"
                   "throughput,1,img/s,test\n")
    proc = subprocess.run([sys.executable, "-m", "syntorch.pytorch", "validate", str(bad), "--hw-dir",
                           os.path.join(root, "hw_configs")], capture_output=True, text=True)
    assert proc.returncode == 2 and "model='nosuchnet' is not a torchvision.models model" in proc.stderr


def test_vit_and_a_unet_with_transposed_convolutions_run_fully_modelled():
    torchvision = pytest.importorskip("torchvision")
    vit = sp.simulate(torchvision.models.vit_b_16(), (torch.randn(2, 3, 224, 224),), train=True,
                      loss_fn=lambda out: out.sum())
    assert vit["aten"]["unmodelled"] == [] and vit["aten"]["generic_elementwise"] == []

    class UNetish(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.down = torch.nn.Conv2d(3, 16, 3, stride=2, padding=1)
            self.norm = torch.nn.GroupNorm(4, 16)
            self.up = torch.nn.ConvTranspose2d(16, 8, 2, stride=2)
            self.resize = torch.nn.Upsample(scale_factor=2, mode="bilinear")

        def forward(self, x):
            h = torch.relu(self.norm(self.down(x)))
            return torch.cat([self.up(h), self.resize(h)[:, :8]], 1)

    unet = sp.simulate(UNetish(), (torch.randn(2, 3, 64, 64),), train=True)
    assert unet["aten"]["unmodelled"] == [] and unet["aten"]["generic_elementwise"] == []
    assert unet["aten"]["by_op"]["aten::convolution_backward"] == 2


def test_a_second_run_places_its_tensors_again_and_undefined_outputs_keep_their_places():
    model = torch.nn.Linear(1024, 1024).to("meta")
    x = torch.empty(4096, 1024, device="meta")
    first, second = sp.simulate(model, (x,)), sp.simulate(model, (x,))
    assert first["peak_memory_bytes"] == second["peak_memory_bytes"]  # the input placed in each run
    conv = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.ReLU())
    report = sp.simulate(conv, (torch.randn(2, 3, 16, 16),), train=True)  # no input gradient asked
    assert report["aten"]["layout_mismatches"] == {}
