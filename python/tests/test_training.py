"""Training from Python: autograd, optimizers, autocast, loss scaling, clipping and graph capture
run the same kernels a C++ program's do."""

import json
import os
import re
import subprocess
import sys

import pytest

import _syntorch
import syntorch
import syntorch.torch as torch
import syntorch.torch.nn as nn
import syntorch.torch.nn.functional as F

SOURCE = os.environ.get("SYNTORCH_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
H100 = os.path.join(SOURCE, "hw_configs", "h100_sxm5_80gb.json")


class MLP(nn.Module):
    def __init__(self, d=256, h=1024, classes=10):
        super().__init__()
        self.fc1 = nn.Linear(d, h)
        self.fc2 = nn.Linear(h, classes)

    def forward(self, x):
        return self.fc2(F.gelu(self.fc1(x)))


def test_backward_fills_every_parameters_grad_and_no_grad_records_nothing():
    syntorch.init(hw=H100)
    model = MLP()
    assert all(p.requires_grad and p.is_leaf and p.grad is None for p in model.parameters())
    x = torch.randn(32, 256)
    loss = F.cross_entropy(model(x), torch.empty(32, dtype=torch.int64))
    assert loss.requires_grad and loss.grad_fn is not None and not loss.is_leaf
    loss.backward()
    for name, p in model.named_parameters():
        assert p.grad is not None and p.grad.shape == p.shape and p.grad.dtype == p.dtype, name
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        loss.backward()
    with torch.no_grad():
        assert not model(x).requires_grad
        assert not torch.is_grad_enabled()
    assert torch.is_grad_enabled()

    @torch.no_grad()
    def evaluate():
        return model(x)
    assert not evaluate().requires_grad
    model.zero_grad()
    assert all(p.grad is None for p in model.parameters())
    syntorch.trace_manager.stats()


def test_a_training_step_costs_three_forwards():
    syntorch.init(hw=H100)
    model = MLP()
    x = torch.randn(64, 256).requires_grad_()  # so that the first layer's input gradient runs too
    with torch.no_grad():
        model(x)
    forward = syntorch.trace_manager.stats()["flops"]
    syntorch.init(hw=H100)
    model = MLP()
    x = torch.randn(64, 256).requires_grad_()
    torch.mean(model(x)).backward()
    step = syntorch.trace_manager.stats()["flops"]
    assert step == pytest.approx(3 * forward, rel=0.02)


def test_checkpointing_a_block_runs_its_forward_again_and_keeps_less():
    from syntorch.torch.utils.checkpoint import checkpoint

    def run(checkpointed):
        syntorch.init(hw=H100)
        model = MLP(d=1024, h=4096)
        x = torch.randn(512, 1024).requires_grad_()
        scale = 2.0

        def block(inp, factor):  # a non-tensor argument and a tuple result with a non-tensor in it
            h = F.gelu(model.fc1(inp)) * factor
            return h, "kept"

        h, tag = checkpoint(block, x, scale, use_reentrant=False) if checkpointed else block(x, scale)
        assert tag == "kept" and h.requires_grad
        after_forward = torch.cuda.memory_allocated()
        torch.mean(model.fc2(h)).backward()
        assert x.grad is not None and model.fc1.weight.grad is not None
        return dict(syntorch.trace_manager.stats(), after_forward=after_forward)

    plain, again = run(False), run(True)
    # After the forward the plain block holds fc1's output for GELU's backward (a product by a
    # number saves nothing); the checkpointed one only its inputs and result: 512 x 4096 fp32 less.
    assert plain["after_forward"] - again["after_forward"] == 512 * 4096 * 4
    fc1 = 2 * 512 * 1024 * 4096
    assert again["flops"] - plain["flops"] == pytest.approx(fc1, rel=0.02)  # fc1 run a second time
    # Nothing outlives the backward: the inputs, results and what the recomputation made are freed
    # (a named tuple comes back as one; keyword tensors are inputs too).
    import collections
    Pair = collections.namedtuple("Pair", "out scale")
    syntorch.init(hw=H100)
    layer = nn.Linear(256, 256)
    start = torch.cuda.memory_allocated()
    for _ in range(3):
        x = torch.randn(64, 256).requires_grad_()
        bias = torch.randn(256).requires_grad_()
        pair = checkpoint(lambda inp, b=None: Pair(F.gelu(layer(inp)) + b, 2), x, b=bias, use_reentrant=False)
        assert isinstance(pair, Pair) and pair.scale == 2
        torch.mean(pair.out).backward()
        assert bias.grad is not None
        del x, bias, pair
    layer.zero_grad()
    assert torch.cuda.memory_allocated() == start
    with pytest.raises(NotImplementedError, match="returned a dict"):
        checkpoint(lambda t: {"t": t}, torch.randn(4, 4).requires_grad_())
    with pytest.raises(ValueError, match="Unexpected keyword arguments: b"):
        checkpoint(lambda t, b=None: t, torch.randn(4, 4), b=1, use_reentrant=True)
    with pytest.raises(TypeError, match="must be callable"):
        checkpoint(3, torch.randn(4, 4))
    with pytest.raises(NotImplementedError):
        torch.utils.checkpoint.checkpoint_sequential


def test_optimizers_launch_foreach_or_fused_kernels_and_refuse_what_is_not_modelled():
    counts = {}
    for fused in (False, True):
        syntorch.init(hw=H100)
        model = MLP()
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3, fused=fused)
        torch.mean(model(torch.randn(8, 256))).backward()
        before = syntorch.current_session()  # noqa: F841 (the same run)
        opt.step()
        opt.zero_grad()
        assert all(p.grad is None for p in model.parameters())
        assert opt.state_bytes() == 2 * 4 * sum(p.numel() for p in model.parameters())  # two fp32 moments
        counts[fused] = syntorch.trace_manager.stats()["kernels"]
    assert counts[True] < counts[False]  # one fused kernel where foreach runs several
    syntorch.init(hw=H100)
    params = list(MLP().parameters())
    with pytest.raises(NotImplementedError, match="foreach=False"):
        torch.optim.SGD(params, lr=0.1, foreach=False)
    with pytest.raises(NotImplementedError, match="amsgrad"):
        torch.optim.Adam(params, amsgrad=True)
    with pytest.raises(ValueError):
        torch.optim.Adam(params, lr=-1)
    groups = [{"params": params[:2], "weight_decay": 0.1}, {"params": params[2:]}]
    opt = torch.optim.AdamW(groups, lr=1e-3)
    assert opt.param_groups[1]["weight_decay"] == 1e-2 and opt.param_groups[0]["weight_decay"] == 0.1
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda step: 0.5)
    assert sched.get_last_lr() == [5e-4, 5e-4]
    syntorch.trace_manager.stats()


def test_autocast_runs_gemms_in_16_bits_and_keeps_fp32_gradients():
    syntorch.init(hw=H100)
    model = MLP()
    x = torch.randn(16, 256)
    with torch.autocast("cuda", dtype=torch.bfloat16):
        assert torch.is_autocast_enabled() and torch.get_autocast_dtype() == torch.bfloat16
        h = model.fc1(x)
        assert h.dtype == torch.bfloat16
        assert F.layer_norm(h, (1024,)).dtype == torch.float32
        loss = F.cross_entropy(model(x), torch.empty(16, dtype=torch.int64))
    assert not torch.is_autocast_enabled()
    assert model.fc1(x).dtype == torch.float32
    assert loss.dtype == torch.float32
    loss.backward()
    assert model.fc1.weight.grad.dtype == torch.float32
    with pytest.raises(NotImplementedError, match="device_type"):
        torch.autocast("cpu")
    with pytest.raises(RuntimeError, match="float16, torch.bfloat16 and torch.float32"):
        with torch.autocast("cuda", dtype=torch.float64):
            pass
    with torch.autocast("cuda", dtype=torch.float32):  # as PyTorch's: the listed ops stay in float32
        assert model.fc1(x.half()).dtype == torch.float32
    syntorch.trace_manager.stats()


def test_grad_scaler_clipping_and_a_captured_step():
    def run(eager_steps, capture, replays):
        syntorch.init(hw=H100)
        model = MLP()
        opt = torch.optim.AdamW(model.parameters(), fused=True)
        scaler = torch.cuda.amp.GradScaler()
        x, y = torch.randn(16, 256), torch.empty(16, dtype=torch.int64)

        def step():
            with torch.cuda.amp.autocast(dtype=torch.float16):
                loss = F.cross_entropy(model(x), y)
            scaler.scale(loss).backward()
            scaler.unscale_(opt)
            norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            assert norm.shape == () and norm.dtype == torch.float32
            scaler.step(opt)
            scaler.update()
            opt.zero_grad()

        for _ in range(eager_steps):
            step()
        if capture:
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):  # the fused step syncs nowhere, so it can be captured
                step()
            for _ in range(replays):
                g.replay()
        with pytest.raises(RuntimeError, match="No inf checks"):
            scaler.update()
        return syntorch.trace_manager.stats()["kernels"]

    one, two = run(1, False, 0), run(2, False, 0)
    per_step = two - one
    assert run(1, True, 0) == one  # a capture runs nothing
    assert run(1, True, 3) == one + 3 * per_step  # each replay runs the step
    syntorch.init(hw=H100)
    with pytest.raises(RuntimeError, match="nothing captured"):
        torch.cuda.CUDAGraph().replay()
    syntorch.trace_manager.stats()
    scaler = torch.cuda.amp.GradScaler()
    # fp16 parameters: PyTorch's scaler refuses to unscale their gradients.
    syntorch.init(hw=H100)
    model = MLP().half()
    assert all(p.requires_grad and p.is_leaf and p.dtype == torch.float16 for p in model.parameters())
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler.scale(torch.mean(model(torch.randn(4, 256, dtype=torch.float16)))).backward()
    with pytest.raises(RuntimeError, match="FP16 gradients"):
        scaler.unscale_(opt)
    syntorch.trace_manager.stats()


def test_unsupported_loss_arguments_raise_not_implemented():
    syntorch.init(hw=H100)
    logits, target = torch.randn(4, 10), torch.empty(4, dtype=torch.int64)
    with pytest.raises(NotImplementedError, match="matrix norm"):
        torch.norm(logits, "nuc")
    with pytest.raises(NotImplementedError, match="create_graph"):
        torch.autograd.backward([torch.mean(logits)], create_graph=True)
    syntorch.trace_manager.stats()


def _step_times(text):
    return re.findall(r"^\s+(step .*?\))\s+([0-9.]+) ms", text, re.M)


def test_the_python_training_loop_matches_the_cpp_one():
    """examples/xpuruntime_train.py and examples/xpuruntime_train.cpp build the same model and run
    the same loop: the simulated steps take the same time."""
    args = ["--layers", "2", "--hidden", "256", "--batch", "2", "--seq", "128", "--dtype", "fp16", "--steps", "2"]
    env = dict(os.environ)
    py = subprocess.run([sys.executable, os.path.join(SOURCE, "examples", "xpuruntime_train.py")] + args,
                        capture_output=True, text=True, env=env, cwd=SOURCE, check=True)
    py_steps = _step_times(py.stdout)
    assert len(py_steps) == 3 and float(py_steps[2][1]) < float(py_steps[1][1]), py.stdout
    binary = os.path.join(os.path.dirname(_syntorch.__file__), "..", "examples", "xpuruntime_train")
    if not os.path.exists(binary):
        pytest.skip("the C++ example is not built next to the extension")
    cpp = subprocess.run([binary] + args, capture_output=True, text=True, cwd=SOURCE, check=True)
    assert _step_times(cpp.stdout) == py_steps, (cpp.stdout, py.stdout)


def test_the_quickstart_dumps_the_ops_and_kernels_it_ran():
    out = subprocess.run([sys.executable, os.path.join(SOURCE, "examples", "quickstart.py")], capture_output=True,
                         text=True, cwd=SOURCE, check=True).stdout
    assert "ColumnParallelLinear shard: torch.Size([4, 3])" in out
    for op in ("aten::add", "aten::matmul", "aten::linear", "aten::relu"):
        assert re.search(rf"^\s+{re.escape(op)}\s+\d+", out, re.M), (op, out)
    assert re.search(r"^\s+gemm \S+\s+3\s", out, re.M), out  # x @ y.t(), SimpleModel's and the shard's linear
    assert re.search(r"kernels\s+7$", out, re.M), out


def test_parallel_layers_hold_one_ranks_shard_and_refuse_collectives_alone():
    from syntorch.parallel import ColumnParallelLinear, RowParallelLinear, VocabParallelEmbedding
    syntorch.init(hw=H100)
    col = [ColumnParallelLinear(input_size=10, output_size=5, tp_size=2, tp_rank=r) for r in (0, 1)]
    assert [c.weight.shape for c in col] == [(3, 10), (2, 10)]
    row = RowParallelLinear(input_size=8, output_size=4, tp_size=2, tp_rank=1, reduce_results=False)
    assert row(torch.randn(2, 4)).shape == (2, 4) and row.weight.shape == (4, 4)
    emb = VocabParallelEmbedding(100, 16, tp_size=4, tp_rank=0, reduce_results=False)
    assert emb.weight.shape == (25, 16)
    with pytest.raises(NotImplementedError, match="other ranks"):
        RowParallelLinear(8, 4, tp_size=2, tp_rank=0)(torch.randn(2, 4))
    with pytest.raises(NotImplementedError, match="gather_output"):
        ColumnParallelLinear(10, 4, tp_size=2, tp_rank=0, gather_output=True)(torch.randn(2, 10))
    with pytest.raises(ValueError, match="tp_rank"):
        ColumnParallelLinear(10, 4, tp_size=2, tp_rank=2)
    syntorch.trace_manager.stats()


def test_sampling_and_masking_ops_a_generation_loop_uses():
    syntorch.init(hw=H100)
    logits = torch.randn(2, 100, dtype=torch.bfloat16)
    v, idx = torch.topk(logits, 10)
    assert v.shape == (2, 10) and idx.dtype == torch.int64 and torch.topk(logits, 5).values.shape == (2, 5)
    mask = logits < v[:, -1:]
    assert mask.dtype == torch.bool and mask.shape == (2, 100)
    assert (logits >= 0.5).dtype == torch.bool
    masked = logits.masked_fill(mask, float("-inf"))
    tokens = torch.multinomial(F.softmax(masked, dim=-1), num_samples=1)
    assert tokens.shape == (2, 1) and tokens.dtype == torch.int64
    assert torch.where(mask, logits, torch.zeros(2, 100, dtype=torch.float32)).dtype == torch.float32
    causal = torch.ones(8, 8, dtype=torch.bool).triu(1)
    assert torch.tril(torch.ones(8, 8)).shape == (8, 8) and causal.dtype == torch.bool
    assert torch.randint(0, 50, (3, 4)).dtype == torch.int64 and torch.randint(10, (5,)).shape == (5,)
    with pytest.raises(RuntimeError, match="Bool"):
        logits.masked_fill(torch.zeros(2, 100), 0.0)
    with pytest.raises(RuntimeError, match="without replacement"):
        torch.multinomial(F.softmax(logits, dim=-1), 101)
    syntorch.trace_manager.stats()


def test_a_gpt2_in_idiomatic_pytorch_trains_and_generates():
    out = subprocess.run([sys.executable, os.path.join(SOURCE, "examples", "nanogpt_style.py"), "--layers", "2",
                          "--batch", "2", "--block", "128", "--prompt", "8", "--new-tokens", "4"],
                         capture_output=True, text=True, cwd=SOURCE, check=True).stdout
    assert "tokens torch.Size([1, 12])" in out, out
    assert re.search(r"train step\s+[0-9.]+ ms", out) and re.search(r"generate\s+[0-9.]+ ms", out), out


UNMODIFIED = '''
import argparse
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.backends.cudnn as cudnn

torch.manual_seed(1337)
torch.backends.cuda.matmul.allow_tf32 = True
cudnn.allow_tf32 = True

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=2)
args = p.parse_args()
device = "cuda" if torch.cuda.is_available() else "cpu"
model = nn.Sequential(nn.Linear(512, 2048), nn.GELU(), nn.Linear(2048, 10)).to(device)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
for step in range(args.steps):
    x = torch.randn(64, 512, device=device)
    y = torch.randint(0, 10, (64,), device=device)
    with torch.autocast(device_type="cuda", dtype=torch.bfloat16):
        loss = F.cross_entropy(model(x), y)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    print(f"step {step} loss {loss.item():.3f}")
assert not hasattr(torch, "vmap")  # probing for a feature finds it missing, as on an old PyTorch
torch.distributed.init_process_group("nccl")
torch.distributed.all_reduce(loss)
print("world", torch.distributed.get_world_size())
'''


def _run(tmp_path, source, *args):
    script = tmp_path / "script.py"
    script.write_text(source)
    return subprocess.run([sys.executable, "-m", "syntorch.run", *args, str(script), "--steps", "3"],
                          capture_output=True, text=True, cwd=SOURCE)


def test_syntorch_run_runs_an_unmodified_pytorch_script(tmp_path):
    r = _run(tmp_path, UNMODIFIED, "--hw", H100)
    assert r.returncode == 0, r.stderr
    assert r.stdout.count("loss 0.000") == 3 and "world 1" in r.stdout
    assert re.search(r"kernels\s+\d+", r.stderr) and "aten::linear" in r.stderr, r.stderr
    refused = _run(tmp_path, UNMODIFIED, "--nproc", "0")
    assert refused.returncode == 2 and "--nproc" in refused.stderr
    missing = _run(tmp_path, "import torch\ntorch.fft.fft(torch.randn(4))\n")
    assert missing.returncode == 1
    assert "torch.fft is not supported by syntorch" in missing.stderr
    bad_hw = _run(tmp_path, UNMODIFIED, "--hw", "no_such.json")
    assert bad_hw.returncode == 2 and "no_such.json" in bad_hw.stderr


def test_unsupported_names_raise_not_implemented_but_hasattr_still_works():
    syntorch.init(hw=H100)
    with pytest.raises(NotImplementedError, match="torch.fft"):
        torch.fft
    with pytest.raises(NotImplementedError, match="torch.nn.functional.grid_sample"):
        F.grid_sample
    with pytest.raises(NotImplementedError, match="torch.Tensor.stft"):
        torch.randn(3).stft
    assert not hasattr(torch, "vmap") and not hasattr(nn, "Transformer")
    with pytest.raises(NotImplementedError, match="world of 4"):
        torch.distributed.init_process_group("nccl", world_size=4, rank=0)
    syntorch.trace_manager.stats()


def test_docs_python_md_lists_the_api_the_code_has():
    from syntorch import api_listing
    with open(os.path.join(SOURCE, "docs", "python.md")) as f:
        section = api_listing.current_section(f.read())
    assert section == api_listing.listing(), (
        "docs/python.md's generated section is out of date: run "
        "PYTHONPATH=python:build/python python3 -m syntorch.api_listing --write docs/python.md")


def test_streams_and_events_order_work_as_on_a_gpu():
    def waited_for(side, event):
        """How long the host waits for the default stream after a GEMM went to `side` or not."""
        syntorch.init(hw=H100)
        a = torch.randn(4096, 4096, dtype=torch.float16)
        torch.cuda.synchronize()
        s = torch.cuda.Stream()
        with torch.profiler.record_function("wait"):
            with torch.cuda.stream(s if side else None):
                a @ a
            assert torch.cuda.current_stream() == torch.cuda.default_stream()
            if event:  # the default stream's later work waits for the side stream's GEMM
                done = torch.cuda.Event()
                done.record(s)
                done.wait()
            torch.cuda.current_stream().synchronize()
        steps = syntorch.trace_manager.stats()["steps"]
        return steps[0]["end_s"] - steps[0]["begin_s"]
    on_default, on_side, waited = waited_for(False, False), waited_for(True, False), waited_for(True, True)
    assert on_side < on_default / 3  # the default stream had nothing to wait for
    assert waited > on_default * 0.9  # the event made it wait for the GEMM


def test_cuda_events_time_kernels_on_the_simulated_clock():
    """A benchmark written for a GPU (events around the work, elapsed_time after a synchronize)
    reads the simulated device's times, the same on every run."""
    def timed():
        syntorch.init(hw=H100)
        a = torch.randn(8192, 8192, dtype=torch.float16)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(3):
            a @ a
        end.record()
        pending = end.query()  # the host is ahead of the device
        torch.cuda.synchronize()
        ms = start.elapsed_time(end)
        done = end.query() and torch.cuda.current_stream().query()
        syntorch.trace_manager.stats()
        return ms, pending, done
    ms, pending, done = timed()
    assert not pending and done
    # Three 8192^3 fp16 GEMMs on an H100: about 1.1 TFLOP at several hundred TFLOP/s.
    assert 1.0 < ms < 10.0, ms
    assert timed() == (ms, pending, done)
    syntorch.init(hw=H100)
    with pytest.raises(RuntimeError, match="recorded"):
        torch.cuda.Event().elapsed_time(torch.cuda.Event())
    begin, end = torch.cuda.Event(), torch.cuda.Event()
    begin.record()
    torch.randn(8192, 8192, dtype=torch.float16) @ torch.randn(8192, 8192, dtype=torch.float16)
    end.record()
    with pytest.raises(RuntimeError, match="not completed"):
        begin.elapsed_time(end)
    syntorch.trace_manager.stats()


def test_the_simulated_clock_drives_a_loop_the_same_way_every_run():
    import syntorch.clock

    def serve():
        syntorch.init(hw=H100)
        w = torch.randn(4096, 4096, dtype=torch.float16)
        arrivals = [0.0, 0.002, 0.002, 0.010]  # request arrival times, in simulated seconds
        served = []
        while arrivals:
            now = syntorch.clock.now()
            ready = [t for t in arrivals if t <= now]
            if not ready:
                syntorch.clock.sleep_until(arrivals[0])
                continue
            arrivals = arrivals[len(ready):]
            torch.randn(64 * len(ready), 4096, dtype=torch.float16) @ w
            torch.cuda.synchronize()
            served.append((len(ready), round(syntorch.clock.now(), 9)))
        syntorch.trace_manager.stats()
        return served

    served = serve()
    assert [n for n, _ in served] == [1, 2, 1]  # the two close arrivals went together
    assert served[-1][1] > 0.010
    assert serve() == served
    with pytest.raises(RuntimeError, match="no run"):
        syntorch.clock.now()
    syntorch.init(hw=H100)
    with pytest.raises(ValueError, match="seconds"):
        syntorch.clock.sleep(-1)
    syntorch.trace_manager.stats()


def test_indexing_with_lists_and_tensors_gathers_and_index_assignment_copies():
    syntorch.init(hw=H100)
    x = torch.randn(4, 10, 8)
    assert x[:, [1, 3, 5]].shape == (4, 3, 8)
    assert x[[0, -1]].shape == (2, 10, 8)
    idx = torch.tensor([[0, 1], [2, 3]], device="cuda")
    assert idx.dtype == torch.int64 and idx.shape == (2, 2)
    assert x[:, idx].shape == (4, 2, 2, 8)
    assert torch.tensor([1.0, 2.0]).dtype == torch.float32 and torch.tensor([True]).dtype == torch.bool
    logits = torch.randn(2, 100)
    v, _ = torch.topk(logits, 5)
    assert v[:, [-1]].shape == (2, 1)  # nanoGPT's top-k threshold
    w = torch.randn(10, 8).requires_grad_()
    torch.sum(w[[1, 2, 2]]).backward()
    assert w.grad.shape == (10, 8)
    cache = torch.zeros(2, 16, 8)
    cache[:, [3, 4]] = torch.randn(2, 2, 8)
    cache[:, torch.tensor([5])] = 0.0
    with pytest.raises(NotImplementedError, match="boolean mask"):
        x[x > 0]  # its shape is the mask's count of set elements: a value, which is not simulated
    with pytest.raises(IndexError, match="out of bounds"):
        x[:, [10]]
    with pytest.raises(ValueError, match="ragged"):
        torch.tensor([[1, 2], [3]])
    syntorch.trace_manager.stats()


def test_several_indices_broadcast_together_and_masks_fill(tmp_path):
    """x[i, j] is one gather (aten::index) whose indices broadcast, their shape in the indexed
    dims' place when those are adjacent and first when not; x[i, j] = v one index_put_; x[mask] =
    number one masked_fill_."""
    syntorch.init(hw=H100, trace=str(tmp_path / "ops.json"))
    x = torch.randn(4, 5, 6)
    i, j = torch.tensor([0, 1, 2]), torch.tensor([[1], [2]])
    assert x[i, j].shape == (2, 3, 6)            # adjacent: in place
    assert x[:, [0, 1], [2, 3]].shape == (4, 2)
    assert x[i, :, [0, 1, 2]].shape == (3, 5)    # apart: the indices' shape first
    assert x[i, 0, j].shape == (2, 3)            # the integer selects first, as in PyTorch
    x[i, j] = torch.randn(3, 6)                  # broadcast to [2, 3, 6]
    x[[0, 1], :, [2, 3]] = 0.5
    mask = x > 0
    x[mask] = 0.0
    x[mask[:, :, 0]] = 1.0                       # a mask over the leading dims
    x[mask] = torch.tensor(2.0)
    with pytest.raises(NotImplementedError, match="one-element"):
        x[mask] = torch.randn(3)
    with pytest.raises(IndexError, match="shape of the mask"):
        x[mask[0]] = 0.0
    with pytest.raises(RuntimeError, match="cannot be broadcast"):
        x[i, j] = torch.randn(4, 6)
    with pytest.raises(RuntimeError, match="too many indices"):
        _syntorch._index(x, [i, None, None, i])
    w = torch.randn(10, 8).requires_grad_()
    torch.sum(w[[1, 2], [3, 4]]).backward()
    assert w.grad.shape == (10, 8)
    assert torch.mean(x, dim=(0, 2), keepdim=True).shape == (1, 5, 1) and x.mean(1).shape == (4, 6)
    assert torch.randint(5, (3,)).dtype == torch.int64
    q, k, v = torch.randn(2, 12, 4).split([4, 4, 4], 1)
    assert q.shape == k.shape == v.shape == (2, 4, 4)
    assert torch.split(torch.randn(6), [1, 5])[1].shape == (5,) and torch.narrow(x, 1, 1, 2).shape == (4, 2, 6)
    syntorch.trace_manager.stats()
    with open(tmp_path / "ops.json") as f:
        ops = {e["name"] for e in json.load(f)["traceEvents"] if e.get("cat") == "op"}
    assert {"aten::index", "aten::index_put_", "aten::masked_fill_", "aten::mean", "aten::randint"} <= ops


MANY_RANKS = """
import os
import torch
import torch.distributed as dist
from syntorch.parallel import ColumnParallelLinear, RowParallelLinear

dist.init_process_group("nccl")
r, n = dist.get_rank(), dist.get_world_size()
assert int(os.environ["RANK"]) == r and int(os.environ["WORLD_SIZE"]) == n
col = ColumnParallelLinear(1024, 4096, tp_size=n, tp_rank=r, dtype=torch.float16)
row = RowParallelLinear(4096, 1024, tp_size=n, tp_rank=r, dtype=torch.float16)
y = row(torch.relu(col(torch.randn(8, 1024, dtype=torch.float16))))  # an all-reduce closes it
assert y.shape == (8, 1024)
parts = [torch.empty(2) for _ in range(n)]
dist.all_gather(parts, torch.zeros(2))
if r == 0:
    dist.send(torch.empty(16), 1)
elif r == 1:
    dist.recv(torch.empty(16), 0)
dist.barrier()
print("rank", r, "of", n)
"""


def test_syntorch_run_runs_every_rank_of_a_distributed_script(tmp_path):
    dgx = os.path.join(SOURCE, "hw_configs", "dgx_h100.json")
    r = _run(tmp_path, MANY_RANKS, "--nproc", "4", "--hw", dgx)
    assert r.returncode == 0, r.stderr
    assert sorted(r.stdout.split("\n")[:4]) == [f"rank {i} of 4" for i in range(4)], r.stdout
    assert "syntorch run of 4 ranks" in r.stderr and re.search(r"nccl:all_reduce\s+\d+", r.stderr), r.stderr
    failing = _run(tmp_path, "import torch\nimport torch.distributed as dist\ndist.init_process_group('nccl')\n"
                             "if dist.get_rank() == 2:\n    torch.randn(4) @ torch.randn(5)\n", "--nproc", "4",
                   "--hw", dgx)
    assert failing.returncode != 0 and "rank 2" in failing.stderr, failing.stderr


def test_gpt3_inference_from_python_runs_out_of_memory_on_one_gpu_and_fits_on_eight():
    script = os.path.join(SOURCE, "examples", "gpt3", "inference.py")
    dgx = os.path.join(SOURCE, "hw_configs", "dgx_h100.json")
    one = subprocess.run([sys.executable, script, "--num_input_tokens", "10", "--num_output_tokens", "20", "--tp", "1"],
                         capture_output=True, text=True, cwd=SOURCE)
    assert one.returncode == 3 and "simulated out of memory" in one.stdout, (one.stdout, one.stderr)
    small = subprocess.run([sys.executable, script, "--model", "gpt3-350m", "--num_input_tokens", "16",
                            "--num_output_tokens", "4", "--tp", "2", "--hw", dgx], capture_output=True, text=True,
                           cwd=SOURCE)
    assert small.returncode == 0, small.stderr
    assert re.search(r"time per output token\s+[0-9.]+ ms", small.stdout), small.stdout
    bad = subprocess.run([sys.executable, script, "--tp", "5"], capture_output=True, text=True, cwd=SOURCE)
    assert bad.returncode == 2 and "--tp" in bad.stderr


def _report(text):
    """time to first token, time per output token, end-to-end latency (ms) and kernels, from the
    example's or `syntorch simulate`'s report."""
    times = [re.search(rf"{name}\s+([0-9.]+) ms", text).group(1)
             for name in ("time to first token", "time per output token", "end-to-end latency")]
    return times + [re.search(r"([0-9]+) kernels", text).group(1)]


def test_the_python_gpt3_and_the_zoo_gpt3_take_the_same_simulated_time():
    """examples/gpt3/inference.py is the zoo's GPT-3 op for op (Megatron's shards and padded
    vocabulary, the gathered logits, a KV cache per layer): the same run through the CLI gives the
    same times and kernels, whether every rank's Python program runs or rank 0's is mirrored."""
    script = os.path.join(SOURCE, "examples", "gpt3", "inference.py")
    dgx = os.path.join(SOURCE, "hw_configs", "dgx_h100.json")
    # The program and the zoo model take different segments from the device (the program holds its
    # tensors a little differently): their cudaMalloc costs aside, the runs are the same.
    common = ["--model", "gpt3-350m", "--tp", "2", "--batch", "3", "--hw", dgx,
              "--set", "/components/host/device_malloc=0 us", "--set", "/components/host/device_free=0 us"]
    py = [subprocess.run([sys.executable, script, *common, "--num_input_tokens", "300", "--num_output_tokens", "4",
                          *extra], capture_output=True, text=True, cwd=SOURCE, check=True).stdout
          for extra in ([], ["--all-ranks"])]
    assert _report(py[0]) == _report(py[1]), py
    binary = os.path.join(os.path.dirname(_syntorch.__file__), "..", "syntorch")
    if not os.path.exists(binary):
        pytest.skip("the CLI is not built next to the extension")
    cli = subprocess.run([binary, "simulate", *common, "--input-tokens", "300", "--output-tokens", "4"],
                         capture_output=True, text=True, cwd=SOURCE, check=True).stdout
    assert _report(cli) == _report(py[0]), (cli, py[0])


def test_a_mirrored_run_is_the_full_run_and_refuses_ranks_that_differ():
    """mirror=True runs rank 0's program for every rank: the same times as every rank running
    it; a point-to-point transfer, which only differing ranks make, is refused by name."""
    import syntorch.torch.distributed as dist
    dgx = os.path.join(SOURCE, "hw_configs", "dgx_h100.json")

    def alike(rank):
        dist.init_process_group("nccl")
        x = torch.randn(4096, 4096, dtype=torch.float16)
        dist.all_reduce(x @ x)
        torch.cuda.synchronize()

    full = syntorch.launch(alike, 4, hw=dgx, console=False)
    mirrored = syntorch.launch(alike, 4, hw=dgx, console=False, mirror=True)
    assert full["simulated_time_s"] == mirrored["simulated_time_s"] > 0
    assert full["kernels"] == mirrored["kernels"] and full["peak_memory_bytes"] == mirrored["peak_memory_bytes"]

    def differing(rank):
        dist.init_process_group("nccl")
        dist.send(torch.empty(16), 1)

    with pytest.raises(Exception, match="mirrors rank 0"):
        syntorch.launch(differing, 2, hw=dgx, mirror=True)


DDP_SCRIPT = """
import torch
import torch.nn as nn
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("nccl")
model = DDP(nn.Sequential(*[nn.Linear(2048, 2048) for _ in range(4)]), bucket_cap_mb=25)
opt = torch.optim.AdamW(model.parameters(), fused=True)
for step in range(2):
    model(torch.randn(32, 2048)).mean().backward()
    opt.step()
    opt.zero_grad()
print("done", dist.get_rank())
"""


def test_ddp_reduces_gradient_buckets_during_backward(tmp_path):
    r = _run(tmp_path, DDP_SCRIPT, "--nproc", "2", "--hw", os.path.join(SOURCE, "hw_configs", "dgx_h100.json"))
    assert r.returncode == 0, r.stderr
    # 4 layers of 16 MiB fp32 weights, in reverse order, into buckets of 25 MiB: a bucket closes
    # once it reaches the cap, so two layers a bucket; per step and rank one all-reduce a bucket.
    # Before that the constructor broadcasts rank 0's 64 MiB of parameters: one 250 MiB bucket.
    m = re.search(r'category "collective": (\d+) spans', r.stderr)
    assert m and int(m.group(1)) == 2 * (2 * 2 + 1), r.stderr  # 2 ranks x (2 steps x 2 buckets + 1 broadcast)


def test_one_grad_mode_object_used_from_two_threads_keeps_each_threads_scopes():
    """A module-level @torch.no_grad() runs on every rank's thread of a many-rank run at once:
    leaving it on one thread must restore that thread's own state."""
    import threading
    g = torch.no_grad()
    entered, release = threading.Event(), threading.Event()
    seen = {}

    def other():
        with g:
            entered.set()
            release.wait()
            seen["inside"] = torch.is_grad_enabled()
        seen["after"] = torch.is_grad_enabled()

    t = threading.Thread(target=other)
    with torch.no_grad():  # this thread's grad mode is off before it enters g
        with g:
            t.start()
            entered.wait()
        seen["main_after"] = torch.is_grad_enabled()  # left g while the other thread is inside it
    release.set()
    t.join()
    assert seen == {"inside": False, "after": True, "main_after": False}


class LlamaAttention(nn.Module):
    """LLaMA's reference attention as its authors wrote it: rotary embeddings through complex
    numbers (torch.polar, view_as_complex, view_as_real), grouped K/V heads repeated with
    repeat_interleave, and a hand-written RMSNorm (pow, mean over the last dim, rsqrt)."""

    def __init__(self, dim=256, heads=8, kv_heads=2, seq=32):
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = heads, kv_heads, dim // heads
        self.wq = nn.Linear(dim, dim, bias=False)
        self.wk = nn.Linear(dim, kv_heads * self.head_dim, bias=False)
        self.wv = nn.Linear(dim, kv_heads * self.head_dim, bias=False)
        self.wo = nn.Linear(dim, dim, bias=False)
        self.norm = nn.Parameter(torch.ones(dim))
        freqs = 1.0 / (10000.0 ** (torch.arange(0, self.head_dim, 2)[: self.head_dim // 2].float() / self.head_dim))
        freqs = torch.outer(torch.arange(seq).float(), freqs)
        self.register_buffer("freqs_cis", torch.polar(torch.ones_like(freqs), freqs))

    def forward(self, x):
        b, s, _ = x.shape
        h = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * self.norm
        q = self.wq(h).view(b, s, self.heads, self.head_dim)
        k = self.wk(h).view(b, s, self.kv_heads, self.head_dim)
        v = self.wv(h).view(b, s, self.kv_heads, self.head_dim)
        cis = self.freqs_cis[:s].view(1, s, 1, self.head_dim // 2)
        q = torch.view_as_real(torch.view_as_complex(q.float().reshape(b, s, self.heads, -1, 2)) * cis).flatten(3)
        k = torch.view_as_real(torch.view_as_complex(k.float().reshape(b, s, self.kv_heads, -1, 2)) * cis).flatten(3)
        q, k = q.type_as(x), k.type_as(x)
        rep = self.heads // self.kv_heads
        k, v = torch.repeat_interleave(k, rep, dim=2), v.repeat_interleave(rep, dim=2)
        a = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=True)
        return x + self.wo(a.transpose(1, 2).reshape(b, s, -1))


def test_llama_reference_code_runs_with_complex_rotary_tables(tmp_path):
    syntorch.init(hw=H100, trace=str(tmp_path / "llama.json"))
    model = LlamaAttention()
    assert model.freqs_cis.dtype == torch.complex64 and model.freqs_cis.shape == (32, 16)
    assert model.freqs_cis.is_complex() and not model.freqs_cis.dtype.is_floating_point
    x = torch.randn(2, 32, 256, requires_grad=True)
    out = model(x)
    assert out.shape == (2, 32, 256) and out.dtype == torch.float32
    out.sum().backward()
    assert x.grad.shape == x.shape and model.wk.weight.grad.shape == (64, 256)
    pair = torch.randn(4, 8, 2)
    c = torch.view_as_complex(pair)
    assert c.shape == (4, 8) and torch.view_as_real(c).shape == (4, 8, 2) and (c * c).dtype == torch.complex64
    assert (c * torch.randn(8, dtype=torch.float64)).dtype == torch.complex128
    with pytest.raises(RuntimeError, match="last dimension of size 2"):
        torch.view_as_complex(torch.randn(4, 3))
    with pytest.raises(RuntimeError, match="stride 1"):
        torch.view_as_complex(torch.randn(2, 4).t())
    with pytest.raises(RuntimeError, match="complex tensors"):
        torch.view_as_real(pair)
    with pytest.raises(NotImplementedError, match="repeats"):
        torch.repeat_interleave(x, torch.tensor([1, 2]))
    assert (2.0 ** torch.randn(3)).shape == (3,) and (1 - torch.randn(3)).shape == (3,)
    assert torch.sqrt(torch.randn(3)).shape == torch.sin(torch.randn(3)).shape == torch.cos(torch.randn(3)).shape
    syntorch.trace_manager.stats()
    with open(tmp_path / "llama.json") as f:
        ops = {e["name"] for e in json.load(f)["traceEvents"] if e.get("cat") == "op"}
    assert {"aten::polar", "aten::view_as_complex", "aten::view_as_real", "aten::rsqrt", "aten::pow",
            "aten::rsub", "aten::sqrt", "aten::sin", "aten::cos"} <= ops


def test_a_tied_weight_is_one_parameter_as_in_pytorch():
    """named_parameters removes duplicates (GPT-2's tied embedding and head): the optimizer steps
    it once and DDP reduces its gradient once; state_dict keeps both names."""
    syntorch.init(hw=H100)

    class Tied(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte = nn.Embedding(100, 16)
            self.head = nn.Linear(16, 100, bias=False)
            self.head.weight = self.wte.weight
            self.again = self.head  # a module reached twice

    m = Tied()
    assert [n for n, _ in m.named_parameters()] == ["wte.weight"]
    assert len(list(m.parameters())) == 1 and len(list(m.modules())) == 3
    assert len(list(m.named_parameters(remove_duplicate=False))) == 3
    assert set(m.state_dict()) == {"wte.weight", "head.weight", "again.weight"}
    syntorch.trace_manager.stats()


def test_ranks_reading_the_clock_meet_in_collectives_and_agree():
    """Each rank's Python program reads the simulated clock while the others run: waiting for an
    answer gives the interpreter up, so no rank starves another, and after an all-reduce and a
    synchronize every rank reads the same time, run after run."""
    import syntorch.clock
    import syntorch.torch.distributed as dist

    def run():
        seen = {}

        def program(rank):
            dist.init_process_group("nccl")
            x = torch.randn(4096, 4096 * (1 + rank), dtype=torch.float16)  # rank 1 works twice as long
            x @ torch.randn(4096 * (1 + rank), 4096, dtype=torch.float16)
            early = syntorch.clock.now()
            y = torch.randn(1 << 20, dtype=torch.float16)
            dist.all_reduce(y)
            torch.cuda.synchronize()
            seen[rank] = (early, syntorch.clock.now())
            dist.destroy_process_group()

        syntorch.launch(program, 2, hw=os.path.join(SOURCE, "hw_configs", "dgx_h100.json"), console=False)
        return seen

    seen = run()
    assert seen[0][1] == pytest.approx(seen[1][1], abs=1e-5)  # both left the all-reduce together
    assert seen[0][1] > seen[0][0] and seen[1][1] > seen[1][0]
    assert run() == seen
