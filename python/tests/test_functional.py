"""The functional value mode: real values computed on the host beside the timing simulation, equal
to PyTorch's own on the CPU, while time, memory and the trace stay the simulator's."""

import math
import os
import subprocess
import sys
import warnings

import pytest

import syntorch
import syntorch.torch as torch
import syntorch.torch.nn as nn
import syntorch.torch.nn.functional as F
from syntorch import _functional

SOURCE = os.environ.get("SYNTORCH_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
H100 = os.path.join(SOURCE, "hw_configs", "h100_sxm5_80gb.json")

try:
    real = _functional.real_torch()
except RuntimeError:
    pytest.skip("the functional mode computes with PyTorch, which is not installed", allow_module_level=True)


@pytest.fixture
def functional():
    syntorch.init(hw=H100)
    syntorch.set_value_mode("functional")
    try:
        yield
    finally:
        syntorch.set_value_mode("placeholder")


class TinyGPT:
    """The same small causal language model written twice, once per torch namespace: embeddings,
    a pre-norm attention block over scaled_dot_product_attention, an MLP, tied output weights."""

    @staticmethod
    def build(t, vocab=11, dim=16, heads=2, block=8):
        nn_, F_ = t.nn, t.nn.functional

        class Block(nn_.Module):
            def __init__(self):
                super().__init__()
                self.ln1, self.ln2 = nn_.LayerNorm(dim), nn_.LayerNorm(dim)
                self.qkv, self.proj = nn_.Linear(dim, 3 * dim), nn_.Linear(dim, dim)
                self.mlp = nn_.Sequential(nn_.Linear(dim, 4 * dim), nn_.GELU(), nn_.Linear(4 * dim, dim))

            def forward(self, x):
                B, T, C = x.size()
                q, k, v = self.qkv(self.ln1(x)).split(dim, dim=2)
                q, k, v = (z.view(B, T, heads, C // heads).transpose(1, 2) for z in (q, k, v))
                att = q @ k.transpose(-2, -1) * (1.0 / math.sqrt(k.size(-1)))
                att = att.masked_fill(t.ones(T, T, device=x.device).tril() == 0, float("-inf"))
                y = F_.softmax(att, dim=-1) @ v
                x = x + self.proj(y.transpose(1, 2).contiguous().view(B, T, C))
                return x + self.mlp(self.ln2(x))

        class GPT(nn_.Module):
            def __init__(self):
                super().__init__()
                self.wte, self.wpe = nn_.Embedding(vocab, dim), nn_.Embedding(block, dim)
                self.block, self.ln_f = Block(), nn_.LayerNorm(dim)
                self.head = nn_.Linear(dim, vocab, bias=False)
                self.head.weight = self.wte.weight  # tied, as GPT-2's
                self.apply(self._init)

            def _init(self, m):
                if isinstance(m, nn_.Linear):
                    nn_.init.normal_(m.weight, mean=0.0, std=0.02)
                    if m.bias is not None:
                        nn_.init.zeros_(m.bias)

            def forward(self, idx, targets):
                pos = t.arange(0, idx.size(1), dtype=t.long, device=idx.device)
                x = self.ln_f(self.block(self.wte(idx) + self.wpe(pos)))
                logits = self.head(x)
                return F_.cross_entropy(logits.view(-1, logits.size(-1)), targets.reshape(-1))

        return GPT()

    @staticmethod
    def train(t, device, steps=6):
        t.manual_seed(1234)
        model = TinyGPT.build(t).to(device)
        opt = t.optim.AdamW(model.parameters(), lr=3e-2, weight_decay=0.1)
        data = t.randint(0, 11, (4, 9))
        x, y = data[:, :-1].to(device), data[:, 1:].to(device)
        losses = []
        for _ in range(steps):
            loss = model(x, y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            t.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            losses.append(loss.item())
        return losses, model


def test_a_training_loop_computes_pytorchs_losses_and_they_fall(functional):
    mine, model = TinyGPT.train(torch, "cuda")
    theirs, _ = TinyGPT.train(real, "cpu")
    assert mine == pytest.approx(theirs, rel=1e-5, abs=1e-6)
    assert mine[-1] < mine[0] - 0.3  # it learns
    assert model.head.weight._storage_id == model.wte.weight._storage_id
    assert _functional.value(model.head.weight) is _functional.value(model.wte.weight)
    # The simulated machine ran it all: kernels, time and memory as without values.
    stats = syntorch.trace_manager.stats()
    assert stats["kernels"] > 100 and not syntorch.value_reads()


def test_the_simulated_time_is_the_same_with_and_without_values():
    def run(mode):
        syntorch.init(hw=H100)
        syntorch.set_value_mode(mode)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                TinyGPT.train(torch, "cuda", steps=2)
            return syntorch.trace_manager.stats()
        finally:
            syntorch.set_value_mode("placeholder")
    plain, functional_run = run("placeholder"), run("functional")
    for key in ("simulated_time_s", "kernels", "flops", "hbm_bytes", "events", "peak_memory_bytes"):
        assert plain[key] == functional_run[key], key


def test_reads_printing_and_control_flow_see_real_values(functional):
    x = torch.tensor([[1.0, -2.0], [3.0, 4.0]], device="cuda")
    assert x.sum().item() == 6.0 and float(x.abs().max()) == 4.0
    assert x.tolist() == [[1.0, -2.0], [3.0, 4.0]]
    assert x.cpu().numpy().tolist() == [[1.0, -2.0], [3.0, 4.0]]
    assert f"{x.mean():.2f}" == "1.50" and int(x[1, 1]) == 4 and bool((x < 0).any())
    assert repr(x) == "tensor([[ 1., -2.],\n        [ 3.,  4.]], device='cuda:0')"
    w = torch.ones(2, device="cuda", requires_grad=True)
    assert str(w * 2) == "tensor([2., 2.], device='cuda:0', grad_fn=<MulBackward0>)"
    i = torch.tensor(1)
    assert [10, 20, 30][i] == 20 and list(range(5))[i:i + 2] == [1, 2]  # __index__
    if (x > 3).sum() == 1:  # value-dependent control flow
        branch = "one"
    else:
        branch = "other"
    assert branch == "one"
    # In place, through views and index assignment, as PyTorch.
    v = x.view(4)
    v[0] = 7.0
    x[1] += 1.0
    assert x.tolist() == [[7.0, -2.0], [4.0, 5.0]]
    assert torch.equal(x, x.clone()) and not torch.equal(x, x + 1)
    with pytest.raises(TypeError):
        torch.tensor([1.5]).__index__()


def test_a_value_over_the_limit_is_not_computed_and_reads_fall_back_to_placeholders():
    syntorch.init(hw=H100)
    syntorch.set_value_mode("functional", limit_bytes=4096)
    try:
        small = torch.ones(8, device="cuda")
        assert (small * 3).sum().item() == 24.0
        with pytest.warns(RuntimeWarning, match="over the limit of 4096 bytes"):
            big = torch.ones(2048, device="cuda")  # 8 KiB of float32: over the limit
        assert _functional.value(big) is None
        with pytest.warns(syntorch.ValuePlaceholderWarning):
            assert big.sum().item() == 0.0
        assert (small + 1).sum().item() == 16.0  # still computed
        before = _functional.live_bytes()
        keep = [torch.ones(64, device="cuda") for _ in range(4)]
        assert _functional.live_bytes() == before + 4 * 256
        del keep
        assert _functional.live_bytes() == before  # dropped with their tensors
    finally:
        syntorch.set_value_mode("placeholder")
    with pytest.raises(ValueError, match="limit_bytes"):
        syntorch.set_value_mode("functional", limit_bytes=-1)
    with pytest.raises(ValueError, match="functional mode"):
        syntorch.set_value_mode("strict", limit_bytes=10)
    assert _functional.parse_bytes("512MiB", "x") == 512 << 20 and _functional.parse_bytes("2g", "x") == 2 << 30
    with pytest.raises(ValueError, match="SYNTORCH_VALUES_LIMIT"):
        _functional.parse_bytes("lots", "SYNTORCH_VALUES_LIMIT")


def test_layers_compute_as_pytorchs(functional):
    cases = [(lambda t: t.nn.Conv2d(3, 4, 3, padding=1), (2, 3, 5, 5)),
             (lambda t: t.nn.LayerNorm(6), (2, 6)),
             (lambda t: t.nn.BatchNorm1d(6), (4, 6)),
             (lambda t: t.nn.MultiheadAttention(8, 2, batch_first=True), (2, 3, 8)),
             (lambda t: t.nn.Embedding(10, 4), None)]
    for build, shape in cases:
        outs = []
        for t in (torch, real):
            t.manual_seed(3)
            layer = build(t)  # the parameters drawn as PyTorch draws them
            if shape is None:
                out = layer(t.tensor([[1, 2], [3, 9]]))
            else:
                x = t.randn(*shape)
                out = layer(x, x, x)[0] if isinstance(layer, (nn.MultiheadAttention, real.nn.MultiheadAttention)) \
                    else layer(x)
            outs.append(_functional.value(out) if t is torch else out)
        assert real.allclose(outs[0], outs[1], atol=1e-6), type(layer).__name__


def test_attention_and_rms_norm_have_values_where_pytorch_lacks_the_function(functional):
    q = torch.randn(1, 2, 4, 8, device="cuda")
    out = F.scaled_dot_product_attention(q, q, q, is_causal=True)
    rq = _functional.value(q)
    scores = (rq @ rq.transpose(-2, -1) / math.sqrt(8)).masked_fill(~real.ones(4, 4, dtype=real.bool).tril(),
                                                                        float("-inf"))
    assert real.allclose(_functional.value(out), scores.softmax(-1) @ rq, atol=1e-6)
    norm = nn.RMSNorm(8, eps=1e-6).cuda()
    y = norm(q)
    expect = rq * real.rsqrt(rq.pow(2).mean(-1, keepdim=True) + 1e-6)
    assert real.allclose(_functional.value(y), expect, atol=1e-6)


def test_data_loading_from_numpy_and_a_dataloader_carries_values(functional, tmp_path):
    import numpy as np
    tokens = np.arange(100, dtype=np.uint16)
    path = tmp_path / "train.bin"
    tokens.tofile(path)
    data = np.memmap(path, dtype=np.uint16, mode="r")
    torch.manual_seed(0)
    ix = torch.randint(len(data) - 8, (4,))
    x = torch.stack([torch.from_numpy(data[i:i + 8].astype(np.int64)) for i in ix])
    x = x.pin_memory().to("cuda", non_blocking=True)
    starts = ix.tolist()
    assert x.tolist() == [list(range(s, s + 8)) for s in starts]
    assert x.device == "cuda:0" or str(x.device).startswith("cuda")

    from syntorch.torch.utils.data import DataLoader, TensorDataset
    ds = TensorDataset(torch.arange(10).float().view(5, 2), torch.arange(5))
    batches = [(a.tolist(), b.tolist()) for a, b in DataLoader(ds, batch_size=2)]
    assert batches[0] == ([[0.0, 1.0], [2.0, 3.0]], [0, 1]) and batches[-1] == ([[8.0, 9.0]], [4])
    # Workers stack the batch elsewhere (no host cost here): its values are still the items'.
    with_workers = [(a.tolist(), b.tolist()) for a, b in DataLoader(ds, batch_size=2, num_workers=2, pin_memory=True)]
    assert with_workers == batches


def test_half_precision_ops_compute_in_float32_where_the_cpu_lacks_them(functional):
    a = torch.ones(4, 4, dtype=torch.float16, device="cuda")
    c = a @ a
    assert c.dtype == torch.float16 and _functional.value(c).dtype == real.float16
    assert c.sum().item() == 64.0


def test_a_script_under_syntorch_run_computes_values_from_the_environment(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(
        "import torch\n"
        "torch.manual_seed(0)\n"
        "model = torch.nn.Linear(4, 1).cuda()\n"
        "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "x, y = torch.randn(16, 4).cuda(), torch.randn(16, 1).cuda()\n"
        "for step in range(20):\n"
        "    loss = torch.nn.functional.mse_loss(model(x), y)\n"
        "    opt.zero_grad(); loss.backward(); opt.step()\n"
        "    if step in (0, 19): print(f'loss {loss.item():.6f}')\n")
    env = dict(os.environ, SYNTORCH_VALUES="functional", SYNTORCH_VALUES_LIMIT="64MiB")
    run = subprocess.run([sys.executable, "-m", "syntorch.run", "--hw", H100, str(script)], env=env,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    first, last = (float(line.split()[1]) for line in run.stdout.splitlines() if line.startswith("loss"))
    real.manual_seed(0)
    model = real.nn.Linear(4, 1)
    opt = real.optim.SGD(model.parameters(), lr=0.1)
    x, y = real.randn(16, 4), real.randn(16, 1)
    losses = []
    for _ in range(20):
        loss = real.nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert (first, last) == pytest.approx((losses[0], losses[-1]), abs=1e-6) and last < first
    bad = subprocess.run([sys.executable, "-m", "syntorch.run", "--hw", H100, str(script)],
                         env=dict(env, SYNTORCH_VALUES_LIMIT="plenty"), capture_output=True, text=True, timeout=300)
    assert bad.returncode == 2 and "SYNTORCH_VALUES_LIMIT" in bad.stderr and "Traceback" not in bad.stderr


def test_shapes_that_depend_on_values_are_known_from_them(functional):
    x = torch.tensor([[1.0, -2.0], [3.0, -4.0], [0.5, 6.0]], device="cuda")
    picked = x[x > 0]
    assert picked.shape == (4,) and picked.tolist() == [1.0, 3.0, 0.5, 6.0]
    rows = x[torch.tensor([True, False, True], device="cuda")]
    assert rows.shape == (2, 2) and rows.tolist() == [[1.0, -2.0], [0.5, 6.0]]
    idx = (x < 0).nonzero()
    assert idx.shape == (2, 2) and idx.tolist() == [[0, 1], [1, 1]]
    r, c = torch.nonzero(x < 0, as_tuple=True)
    assert r.tolist() == [0, 1] and c.tolist() == [1, 1]
    kernels = syntorch.trace_manager.stats()["kernels"]
    assert kernels > 0


def test_without_values_a_value_dependent_shape_is_refused_by_name():
    syntorch.init(hw=H100)
    x = torch.ones(3, 2, device="cuda")
    with pytest.raises(NotImplementedError, match="functional"):
        x[x > 0]
    with pytest.raises(NotImplementedError, match="torch.nonzero"):
        torch.nonzero(x)


def test_views_in_place_ops_and_stale_values_follow_pytorchs_aliasing(functional):
    # A whole-dim slice is the tensor itself in the simulator: the parameter keeps its value, a
    # leaf, and trains (a positional embedding read as pe[:, :T]).
    torch.manual_seed(0)
    pe = nn.Parameter(torch.zeros(1, 4, 3, device="cuda"))
    opt = torch.optim.SGD([pe], lr=0.5)
    x = torch.ones(2, 4, 3, device="cuda")
    for _ in range(3):
        opt.zero_grad()
        ((x + pe[:, :x.size(1)]) ** 2).sum().backward()
        opt.step()
    rp = real.zeros(1, 4, 3, requires_grad=True)
    ropt = real.optim.SGD([rp], lr=0.5)
    for _ in range(3):
        ropt.zero_grad()
        ((real.ones(2, 4, 3) + rp[:, :4]) ** 2).sum().backward()
        ropt.step()
    assert pe.sum().item() == pytest.approx(rp.sum().item())
    # Half-precision in-place ops PyTorch's CPU lacks write through the view into its base.
    b = torch.full((2, 3), -4.0, dtype=torch.float16, device="cuda")
    b[0].clamp_(0, 1)
    F.relu(b[1], inplace=True)
    assert b.tolist() == [[0.0, 0.0, 0.0], [0.0, 0.0, 0.0]]
    # An in-place write that cannot be computed leaves the tensor and its views without values,
    # rather than with stale ones.
    a = torch.ones(2, 3, device="cuda")
    row = a[1]
    src = torch.zeros(3, device="cuda")
    _functional.drop(src)
    a[0].copy_(src)
    assert _functional.value(a) is None and _functional.value(row) is None
    with pytest.warns(syntorch.ValuePlaceholderWarning):
        assert a.sum().item() == 0.0
    # A meta tensor has no values to compute.
    assert _functional.value(torch.empty(4, device="meta")) is None


def test_hooks_autocast_and_half_layers_compute_as_pytorch(functional):
    torch.manual_seed(0)
    lin = nn.Linear(4, 4).cuda()
    x = torch.randn(2, 4, device="cuda")
    w, bias, xv = (_functional.value(t).detach() for t in (lin.weight, lin.bias, x))
    handle = lin.register_forward_hook(lambda m, i, o: o * 2)
    assert real.allclose(_functional.value(lin(x)), 2 * (xv @ w.T + bias))
    handle.remove()
    with torch.autocast("cuda", dtype=torch.bfloat16):
        out = lin(x)
    expect = real.nn.functional.linear(xv.bfloat16(), w.bfloat16(), bias.bfloat16())
    assert out.dtype == torch.bfloat16 and real.equal(_functional.value(out), expect)
    half = nn.Linear(4, 4).cuda().half()
    y = half(x.half())
    assert y.dtype == torch.float16 and _functional.value(y) is not None and _functional.value(y).dtype == real.float16


def test_optimizer_hooks_state_and_lost_gradients(functional):
    # An optimizer stepping inside a post-accumulate hook sees this iteration's gradient.
    w = nn.Parameter(torch.ones(1, device="cuda"))
    opt = torch.optim.SGD([w], lr=0.1)
    w.register_post_accumulate_grad_hook(lambda p: opt.step())
    for k in (1.0, 2.0, 3.0):
        (w * k).sum().backward()
        opt.zero_grad()
    assert w.item() == pytest.approx(1.0 - 0.1 * (1 + 2 + 3))
    # add_param_group keeps the Adam moments; load_state_dict carries them to a new optimizer.
    torch.manual_seed(0)
    a, b = nn.Parameter(torch.randn(3, device="cuda")), nn.Parameter(torch.randn(3, device="cuda"))
    real.manual_seed(0)  # the same draws (the functional mode draws from PyTorch's generator)
    ra, rb = real.nn.Parameter(real.randn(3)), real.nn.Parameter(real.randn(3))
    mine, theirs = torch.optim.Adam([a], lr=0.1), real.optim.Adam([ra], lr=0.1)
    for step in range(3):
        for opt_, loss in ((mine, (a * a).sum() + (b * b).sum()), (theirs, (ra * ra).sum() + (rb * rb).sum())):
            opt_.zero_grad()
            loss.backward()
            opt_.step()
        if step == 0:
            mine.add_param_group({"params": [b]})
            theirs.add_param_group({"params": [rb]})
    assert a.tolist() == pytest.approx(ra.tolist()) and b.tolist() == pytest.approx(rb.tolist())
    again = torch.optim.Adam([{"params": [a]}, {"params": [b]}], lr=0.1)
    again.load_state_dict(mine.state_dict())
    rag = real.optim.Adam([{"params": [ra]}, {"params": [rb]}], lr=0.1)
    rag.load_state_dict(theirs.state_dict())
    for opt_, loss in ((again, (a * a).sum() + (b * b).sum()), (rag, (ra * ra).sum() + (rb * rb).sum())):
        opt_.zero_grad()
        loss.backward()
        opt_.step()
    assert a.tolist() == pytest.approx(ra.tolist()) and b.tolist() == pytest.approx(rb.tolist())

    # A custom autograd.Function's backward makes no value gradient: the values are dropped, with
    # a warning, rather than left unstepped.
    class Double(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    p = nn.Parameter(torch.ones(3, device="cuda"))
    sgd = torch.optim.SGD([p], lr=0.1)
    Double.apply(p * 3).sum().backward()
    with pytest.warns(RuntimeWarning, match="gradients have no values"):
        sgd.step()
    assert _functional.value(p) is None


def test_grad_scaler_skips_steps_backs_off_and_grows_on_the_values(functional):
    w = nn.Parameter(torch.ones(2, device="cuda"))
    opt = torch.optim.SGD([w], lr=0.1)
    scaler = torch.amp.GradScaler("cuda", init_scale=4.0, growth_interval=1)
    for k in (1.0, float("inf"), 1.0):
        opt.zero_grad()
        scaler.scale((w * k).sum()).backward()
        scaler.step(opt)
        scaler.update()
    # Steps 1 and 3 ran (gradient 1, unscaled), step 2 was skipped; the scale grew, backed off, grew.
    assert w.tolist() == pytest.approx([0.8, 0.8]) and scaler.get_scale() == 8.0


def test_generators_and_the_mode_off_again():
    syntorch.init(hw=H100)
    syntorch.set_value_mode("functional")
    try:
        g = torch.Generator().manual_seed(1)
        torch.manual_seed(0)
        mine = (torch.randn(3, generator=g).tolist(), torch.randn(3).tolist())
    finally:
        syntorch.set_value_mode("placeholder")
    rg = real.Generator().manual_seed(1)
    real.manual_seed(0)
    assert mine == (real.randn(3, generator=rg).tolist(), real.randn(3).tolist())
    # Off again: the wrappers stay installed and change nothing.
    w = torch.ones(2, device="cuda", requires_grad=True)
    with pytest.raises(NotImplementedError, match="create_graph"):
        (w * 2).sum().backward(create_graph=True)
    with pytest.raises(NotImplementedError, match="inputs"):
        (w * 2).sum().backward(inputs=[w])
    with pytest.warns(syntorch.ValuePlaceholderWarning):
        assert (w * 2).sum().item() == 0.0


def test_checkpoints_keep_values_both_formats(functional, tmp_path):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2)).cuda().to(torch.bfloat16)
    path = tmp_path / "ckpt.pt"
    torch.save({"model": model.state_dict(), "step": 7}, path)
    loaded = torch.load(path)
    for k, v in model.state_dict().items():
        assert real.equal(_functional.value(loaded["model"][k]), _functional.value(v)), k
    # A real PyTorch checkpoint: its values, read by PyTorch.
    real.manual_seed(5)
    theirs = real.nn.Linear(3, 2)
    real.save(theirs.state_dict(), tmp_path / "real.pt")
    mine = nn.Linear(3, 2).cuda()
    mine.load_state_dict(torch.load(tmp_path / "real.pt", map_location="cuda"))
    assert real.equal(_functional.value(mine.weight), theirs.weight.detach())
    x = torch.ones(1, 3, device="cuda")
    assert mine(x).tolist()[0] == pytest.approx(theirs(real.ones(1, 3)).tolist()[0])


def test_ranks_keep_syntorchs_torch_and_lost_values_are_not_stepped(tmp_path):
    script = tmp_path / "ddp.py"
    script.write_text(
        "import torch, torch.distributed as dist\n"
        "from torch.nn.parallel import DistributedDataParallel as DDP\n"
        "dist.init_process_group('nccl')\n"
        "rank = dist.get_rank()\n"
        "torch.cuda.set_device(rank)\n"
        "torch.manual_seed(0)\n"
        "lin = torch.nn.Linear(2, 1, bias=False).cuda()\n"
        "model = DDP(lin, device_ids=[rank])\n"
        "opt = torch.optim.SGD(model.parameters(), lr=1.0)\n"
        "for _ in range(3):\n"
        "    import torch.nn.functional as F\n"
        "    F.mse_loss(model(torch.full((4, 2), float(rank + 1), device='cuda')), torch.zeros(4, 1, device='cuda'))"
        ".backward()\n"
        "    opt.step()\n"
        "print('rank', rank, torch.__name__, F.__name__)\n")
    env = dict(os.environ, SYNTORCH_VALUES="functional")
    run = subprocess.run([sys.executable, "-m", "syntorch.run", "--nproc", "2", "--hw",
                          os.path.join(SOURCE, "hw_configs", "dgx_h100.json"), str(script)], env=env,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert sorted(line for line in run.stdout.splitlines() if line.startswith("rank")) == [
        "rank 0 syntorch.torch syntorch.torch.nn.functional", "rank 1 syntorch.torch syntorch.torch.nn.functional"]
    assert "dropped rather than stepped wrong" in run.stderr and "manual_seed failed" not in run.stderr


def test_prod_bucketize_and_adadelta_values(functional):
    x = torch.tensor([[1.0, 2.0, 3.0], [0.5, 4.0, -1.0]], device="cuda", requires_grad=True)
    p = x.prod(1)
    assert p.tolist() == [6.0, -2.0]
    p.sum().backward()
    assert x.grad.tolist() == [[6.0, 3.0, 2.0], [-4.0, -0.5, 2.0]]
    bounds = torch.tensor([1.0, 3.0, 5.0], device="cuda")
    v = torch.tensor([0.5, 1.0, 3.5, 9.0], device="cuda")
    assert torch.bucketize(v, bounds).tolist() == [0, 0, 2, 3]
    assert torch.bucketize(v, bounds, right=True).tolist() == [0, 1, 2, 3]
    w = nn.Parameter(torch.ones(2, device="cuda"))
    opt = torch.optim.Adadelta([w])
    (w * w).sum().backward()
    opt.step()
    rw = real.nn.Parameter(real.ones(2))
    ropt = real.optim.Adadelta([rw])
    (rw * rw).sum().backward()
    ropt.step()
    assert w.tolist() == pytest.approx(rw.tolist())


def test_recurrent_layers_compute_as_pytorchs(functional):
    cases = [lambda t: t.nn.LSTM(4, 6, num_layers=2, batch_first=True, bidirectional=True),
             lambda t: t.nn.GRU(4, 6), lambda t: t.nn.RNN(4, 6, nonlinearity="relu", bias=False),
             lambda t: t.nn.LSTMCell(4, 6), lambda t: t.nn.GRUCell(4, 6)]
    for build in cases:
        outs = []
        for t in (torch, real):
            t.manual_seed(7)
            layer = build(t)
            x = t.randn(3, 5, 4) if not isinstance(layer, (nn.RNNCellBase, real.nn.RNNCellBase)) else t.randn(3, 4)
            out = layer(x)
            first = out[0]
            outs.append(_functional.value(first) if t is torch else first)
            if t is torch:  # with a hook the layer computes op by op: the composed steps agree
                layer.register_forward_hook(lambda m, i, o: None)
                outs.append(_functional.value(layer(x)[0]))
        assert real.allclose(outs[0], outs[2], atol=1e-6), type(layer).__name__
        assert real.allclose(outs[1], outs[2], atol=1e-5), type(layer).__name__


def test_second_review_cases(functional, tmp_path):
    # inplace=True given by position, on half precision the CPU computes in float32.
    b = torch.full((2, 3), -4.0, dtype=torch.float16, device="cuda")
    F.relu(b, True)
    assert b.tolist() == [[0.0] * 3] * 2
    # Counting: a bool sum is an int64 count, as PyTorch's.
    hits = (torch.tensor([1.0, -1.0, 2.0], device="cuda") > 0).sum()
    assert hits.dtype == torch.int64 and hits.item() == 2
    assert torch.full((2,), 255, dtype=torch.uint8).sum().item() == 510
    # An empty tensor in a checkpoint.
    torch.save({"e": torch.empty(0, 4, device="cuda")}, tmp_path / "e.pt")
    assert torch.load(tmp_path / "e.pt")["e"].shape == (0, 4)
    # random_split draws PyTorch's order from PyTorch's generator.
    from syntorch.torch.utils.data import random_split
    torch.manual_seed(0)
    mine = [list(s.indices) for s in random_split(range(10), [5, 5])]
    real.manual_seed(0)
    theirs = [list(s.indices) for s in real.utils.data.random_split(range(10), [5, 5])]
    assert mine == theirs
    # Dropped values are forgotten with their tensors.
    syntorch.set_value_mode("functional", limit_bytes=0)
    for _ in range(50):
        torch.ones(4, device="cuda") * 2
    _functional.live_bytes()
    assert len(_functional._state.lost) < 10


def test_amp_imports_under_the_run_alias(tmp_path):
    script = tmp_path / "amp.py"
    script.write_text("import torch\nfrom torch.cuda.amp import autocast, GradScaler\n"
                      "scaler = GradScaler()\nwith autocast(dtype=torch.bfloat16):\n"
                      "    y = torch.ones(2, 2).cuda() @ torch.ones(2, 2).cuda()\n"
                      "print(y.dtype, y.sum().item())\n")
    env = dict(os.environ, SYNTORCH_VALUES="functional")
    run = subprocess.run([sys.executable, "-m", "syntorch.run", "--hw", H100, str(script)], env=env,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "torch.bfloat16 8.0"
