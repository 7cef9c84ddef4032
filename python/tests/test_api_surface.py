"""Every name docs/python.md lists is exercised: the ones the other tests do not reach are called
here with their PyTorch signatures, and what they return is checked (shapes, dtypes, grad modes,
kernels). conftest.py fails the suite for a listed callable nothing calls;
test_every_listed_name_is_exercised does the same for the listed constants."""

import glob
import importlib
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
import syntorch.torch.nn.init as init

SOURCE = os.environ.get("SYNTORCH_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
H100 = os.path.join(SOURCE, "hw_configs", "h100_sxm5_80gb.json")
DGX = os.path.join(SOURCE, "hw_configs", "dgx_h100.json")


def test_factories_and_dtypes():
    syntorch.init(hw=H100)
    x = torch.randn(4, 8, dtype=torch.float16)
    for like in (torch.empty_like(x), torch.zeros_like(x), torch.randn_like(x), torch.full_like(x, 2.0)):
        assert like.shape == (4, 8) and like.dtype == torch.float16
    assert torch.full_like(x, 1.0, dtype=torch.float32).dtype == torch.float32
    assert torch.rand(3, 5).shape == (3, 5) and torch.rand(3, 5).dtype == torch.float32
    assert torch.get_default_dtype() == torch.float32
    torch.set_default_dtype(torch.bfloat16)
    try:
        assert torch.get_default_dtype() == torch.bfloat16 and torch.randn(2).dtype == torch.bfloat16
    finally:
        torch.set_default_dtype(torch.float32)
    for dtype, size in ((torch.double, 8), (torch.int8, 1), (torch.int32, 4), (torch.float8_e4m3fn, 1),
                        (torch.cfloat, 8), (torch.cdouble, 16)):
        assert torch.empty(2, dtype=dtype).element_size() == size, dtype
    assert torch.cfloat == torch.complex64 and torch.cdouble == torch.complex128
    with pytest.raises(RuntimeError, match="floating point and complex"):
        torch.zeros(3, dtype=torch.int32, requires_grad=True)
    with pytest.raises(NotImplementedError, match="out"):
        torch.empty(3, out=x)
    syntorch.trace_manager.stats()


def test_pointwise_functions_and_comparisons():
    syntorch.init(hw=H100)
    a, b = torch.randn(4, 8), torch.randn(4, 8)
    for out in (torch.mul(a, b), torch.sub(a, b), torch.div(a, b), torch.exp(a), torch.log(a), torch.sigmoid(a),
                torch.silu(a), torch.abs(a), torch.clamp(a, min=0.0), torch.log_softmax(a, 1), a.exp(), a.log(),
                a.abs(), a.clamp(max=1.0), a.log_softmax(-1)):
        assert out.shape == (4, 8) and out.dtype == torch.float32
    for cmp in (torch.eq, torch.ne, torch.lt, torch.le, torch.gt, torch.ge):
        assert cmp(a, b).dtype == torch.bool
    for cmp in (a.eq, a.ne, a.lt, a.le, a.gt, a.ge):
        assert cmp(0.5).dtype == torch.bool and cmp(b).shape == (4, 8)
    assert torch.mm(a, b.t()).shape == (4, 4)
    assert torch.stack([a, b]).shape == (2, 4, 8) and torch.stack([a, b], dim=2).shape == (4, 8, 2)
    assert [c.shape for c in torch.chunk(a, 2, 1)] == [(4, 4), (4, 4)] and len(a.chunk(4)) == 4
    assert torch.index_select(a, 1, torch.tensor([0, 3])).shape == (4, 2)
    assert torch.ger(torch.randn(3), torch.randn(5)).shape == (3, 5)
    syntorch.trace_manager.stats()


def test_tensor_methods():
    syntorch.init(hw=H100)
    x = torch.randn(2, 1, 6)
    assert x.ndim == 3 and x.squeeze().shape == (2, 6) and x.squeeze(1).shape == (2, 6)
    assert x.unsqueeze(0).shape == (1, 2, 1, 6) and x.select(2, 0).shape == (2, 1)
    assert x.expand(2, 5, 6).shape == (2, 5, 6) and x.expand_as(torch.empty(2, 5, 6)).shape == (2, 5, 6)
    assert x.view_as(torch.empty(12)).shape == (12,) and x.reshape_as(torch.empty(3, 4)).shape == (3, 4)
    assert [t.shape for t in torch.randn(7, 2).split_with_sizes([3, 4])] == [(3, 2), (4, 2)]
    c = x.clone()
    assert c.shape == x.shape and c is not x and x.cpu().device.type == "cpu" and x.device == torch.device("cuda")
    assert x.device.type == "cuda" and x.device.index is None and {x.device: 1}[torch.device("cuda")] == 1
    assert c.fill_(1.0) is c and c.zero_() is c and c.masked_fill_(c > 0, 2.0) is c
    assert x.new_empty(3).shape == (3,) and x.new_zeros(2, 2).dtype == torch.float32
    assert x.new_ones((4,), dtype=torch.float16).dtype == torch.float16 and x.new_full((2,), 7.0).shape == (2,)
    w = torch.randn(3, requires_grad=True)
    assert w.detach().requires_grad is False and w.detach().shape == (3,)
    seen = []
    w.register_post_accumulate_grad_hook(lambda p: seen.append(p.grad.shape))
    (w * 2.0).sum().backward()
    assert seen == [(3,)]
    syntorch.trace_manager.stats()


def test_grad_modes():
    syntorch.init(hw=H100)
    w = torch.randn(4, requires_grad=True)
    with torch.set_grad_enabled(False):
        assert not (w * 2.0).requires_grad
        with torch.enable_grad():
            assert (w * 2.0).requires_grad and torch.is_grad_enabled()
    with torch.inference_mode():
        assert not (w * 2.0).requires_grad
    with torch.inference_mode(False):
        assert (w * 2.0).requires_grad

    @torch.set_grad_enabled(False)
    def frozen():
        return w * 3.0

    assert not frozen().requires_grad
    syntorch.trace_manager.stats()


def test_layers_functional_and_init():
    syntorch.init(hw=H100)
    x = torch.randn(8, 16)
    for layer in (nn.Dropout(0.1), nn.Identity(), nn.ReLU(), nn.SiLU()):
        assert layer(x).shape == (8, 16)
    assert nn.Identity()(x) is x
    assert F.dropout(x, 0.5, training=True).shape == (8, 16)
    torch.cuda.synchronize()
    before = syntorch.trace_manager.stats()["kernels"]
    syntorch.init(hw=H100)
    x = torch.randn(8, 16)
    nn.Dropout(0.1).eval()(x)
    F.dropout(x, 0.5, training=False)  # no kernel outside training, as in PyTorch
    assert syntorch.trace_manager.stats()["kernels"] == 1 and before > 1
    syntorch.init(hw=H100)
    x = torch.randn(8, 16)
    logp = F.log_softmax(x, dim=1)
    assert logp.shape == (8, 16) and F.nll_loss(logp, torch.randint(0, 16, (8,))).shape == ()
    assert F.rms_norm(x, (16,), torch.ones(16), 1e-6).shape == (8, 16)
    assert F.sigmoid(x).shape == F.silu(x).shape == (8, 16)
    w = torch.empty(16, 32)
    for fill in (lambda t: init.constant_(t, 0.5), init.ones_, init.uniform_, init.xavier_uniform_,
                 init.xavier_normal_, init.kaiming_uniform_, init.kaiming_normal_, init.trunc_normal_,
                 init.orthogonal_):
        assert fill(w) is w  # shape-only: the tensor back, no values
    syntorch.trace_manager.stats()


def test_optimizer_and_scheduler_bases():
    syntorch.init(hw=H100)
    model = nn.Linear(16, 16)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    assert isinstance(opt, torch.optim.Optimizer)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=10, eta_min=1e-5)
    assert isinstance(sched, torch.optim.lr_scheduler.LRScheduler)
    lrs = []
    for _ in range(10):
        model(torch.randn(4, 16)).sum().backward()
        opt.step()
        opt.zero_grad()
        sched.step()
        lrs.append(sched.get_last_lr()[0])
    assert lrs[0] < 1e-3 and lrs == sorted(lrs, reverse=True) and abs(lrs[-1] - 1e-5) < 1e-12
    syntorch.trace_manager.stats()


def test_cuda_queries():
    syntorch.init(hw=H100)
    assert torch.cuda.device_count() == 1
    torch.randn(1024, 1024)
    assert torch.cuda.max_memory_reserved() >= torch.cuda.memory_reserved() >= 4 * 1024 * 1024
    s = torch.cuda.Stream()
    torch.cuda.set_stream(s)
    assert torch.cuda.current_stream() == s
    torch.cuda.set_stream(torch.cuda.default_stream())
    syntorch.trace_manager.stats()


def test_distributed_names_over_two_ranks():
    import syntorch.torch.distributed as dist
    from syntorch.parallel import reduce_from_tensor_model_parallel_region, shard_size
    seen = {}

    def program(rank):
        assert dist.is_nccl_available() and not dist.is_initialized()
        dist.init_process_group("nccl")
        assert dist.is_initialized() and torch.cuda.device_count() == 2
        group = dist.new_group([0, 1])
        assert isinstance(group, dist.ProcessGroup)
        out = torch.empty(8)
        dist.all_gather_into_tensor(out, torch.randn(4), group=group)
        dist.reduce_scatter_tensor(torch.empty(2), torch.randn(4), op=dist.ReduceOp.SUM)
        with pytest.raises(RuntimeError, match="needs 8"):
            dist.all_gather_into_tensor(torch.empty(6), torch.randn(4))
        with pytest.raises(RuntimeError, match="needs 2"):
            dist.reduce_scatter_tensor(torch.empty(4), torch.randn(4))
        y = reduce_from_tensor_model_parallel_region(torch.randn(16))
        seen[rank] = (y.shape, shard_size(10, 2, rank))
        dist.destroy_process_group()
        assert not dist.is_initialized()

    stats = syntorch.launch(program, 2, hw=DGX, console=False)
    assert seen == {0: ((16,), 5), 1: ((16,), 5)} and stats["kernels"] > 0
    with pytest.raises(ValueError):
        shard_size(3, 4, 0)


def test_run_aliases_torch():
    code = ("import syntorch.run, sys\n"
            "torch = syntorch.run.alias_torch()\n"
            "import torch as t, torch.nn.functional as F\n"
            "assert t is torch and F is sys.modules['syntorch.torch.nn.functional']\n"
            "print('aliased', t.__name__)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "aliased syntorch.torch"


def test_every_listed_name_is_exercised():
    """What conftest.py covers by calls (with SYNTORCH_API_COVERAGE=1, as the test command sets
    it), it checks at the end of the session; every other listed name (constants, extension
    types, syntorch.run's functions, all of them without the variable) must appear in a test or
    in an example a test runs."""
    from conftest import covered_by_calls
    from syntorch import api_listing
    by_calls = covered_by_calls()
    files = glob.glob(os.path.join(SOURCE, "python", "tests", "test_*.py"))
    files += [os.path.join(SOURCE, "examples", f) for f in ("quickstart.py", "nanogpt_style.py",
                                                            "xpuruntime_train.py", os.path.join("gpt3", "inference.py"))]
    own = open(__file__).read()
    start = own.index("def test_every_listed_name_is_exercised")
    end = own.index("\ndef ", start)
    text = "".join(open(f).read() for f in files).replace(own, own[:start] + own[end:])  # not this test's own words
    missing = [f"{m}.{name}" for m in api_listing.MODULES
               for name, obj in api_listing._public(importlib.import_module(m))
               if f"{m}.{name}" not in by_calls and not re.search(rf"\b{re.escape(name)}\b", text)]
    missing += [f"Tensor.{name}" for name in dir(_syntorch.Tensor)
                if not name.startswith("_") and f"Tensor.{name}" not in by_calls
                and not re.search(rf"\.{re.escape(name)}\b", text)]
    assert not missing, f"listed in docs/python.md but used nowhere: {missing}"

def test_result_dtypes_refusals_and_edges_as_pytorch():
    syntorch.init(hw=H100)
    ints = torch.arange(6)
    assert torch.sqrt(ints).dtype == torch.float32 and (ints ** 0.5).dtype == torch.float32
    assert (ints ** 2).dtype == torch.int64 and torch.sin(ints).dtype == torch.float32
    c = torch.view_as_complex(torch.randn(4, 2))
    assert torch.abs(c).dtype == torch.float32 and abs(c).shape == (4,)
    with pytest.raises(RuntimeError, match="complex tensors"):
        c @ c
    with pytest.raises(RuntimeError, match="complex tensors"):
        torch.softmax(c, -1)
    with pytest.raises(RuntimeError, match="complex tensors"):
        torch.sum(c)
    # Zero-dim operands defer to a dimensioned one of their category or a higher one.
    half = torch.randn(3, dtype=torch.float16)
    assert (half + torch.tensor(2.0, dtype=torch.float64)).dtype == torch.float16
    assert (torch.randn(3) * torch.tensor(1.0, dtype=torch.complex128)).dtype == torch.complex64
    x = torch.randn(2, 3)
    assert x.sum(keepdim=True).shape == (1, 1) and torch.mean(x, dim=(), keepdim=False).shape == ()
    assert x.mean(dim=[], keepdim=True).shape == (1, 1)
    with pytest.raises(IndexError, match="Dimension out of range"):
        torch.repeat_interleave(x, 2, dim=2)
    assert torch.repeat_interleave(x, 2, dim=-1).shape == (2, 6)
    assert torch.zeros(size=(2, 3)).shape == (2, 3) and torch.randn(2, generator=None).shape == (2,)
    with pytest.raises(RuntimeError, match="pin_memory"):
        torch.empty(2, device="cuda", pin_memory=True)
    with pytest.raises(TypeError, match="unexpected keyword"):
        torch.ones(2, colour="red")
    # An index tensor on the host is copied to the indexed tensor's device, as ATen does.
    assert x[torch.tensor([1, 0], device="cpu")].shape == (2, 3)
    with pytest.raises(RuntimeError, match="dtypes match"):
        x[[0, 1], [1, 2]] = torch.randn(2, dtype=torch.float16)
    syntorch.trace_manager.stats()


def test_a_mirrored_run_refuses_a_group_without_rank_0():
    import syntorch.torch.distributed as dist

    def program(rank):
        dist.init_process_group("nccl")
        dist.new_group([0, 1])
        dist.new_group([2, 3])  # its all-reduces would never run: refused

    with pytest.raises(Exception, match="leaves out rank 0"):
        syntorch.launch(program, 4, hw=DGX, mirror=True, console=False)


def test_the_names_examples_and_scripts_use_in_their_own_processes():
    """What the examples and syntorch.run scripts call in subprocesses, called here too (the API
    coverage notes calls in this process only)."""
    syntorch.init(hw=H100)
    x = torch.randn(2, 8, 16)
    assert x.half().dtype == torch.float16 and x.bfloat16().dtype == torch.bfloat16 and x.cuda().device.type == "cuda"
    assert x.transpose(1, 2).contiguous().is_contiguous() and torch.transpose(x, 0, 1).shape == (8, 2, 16)
    assert x.matmul(torch.randn(16, 4)).shape == (2, 8, 4) and torch.bmm(x, x.transpose(1, 2)).shape == (2, 8, 8)
    assert torch.add(x, x).shape == x.shape and torch.cat([x, x], dim=1).shape == (2, 16, 16)
    assert x.softmax(-1).shape == x.shape and x.argmax(-1).shape == (2, 8) and torch.argmax(x).shape == ()
    assert x.sqrt().dtype == x.rsqrt().dtype == x.sin().dtype == x.cos().dtype == torch.float32
    assert torch.relu(x).shape == torch.tanh(x).shape == F.tanh(x).shape == x.shape
    assert torch.randn(3).outer(torch.randn(4)).shape == (3, 4) and x.tril().shape == x.shape
    probs = torch.randn(2, 10).softmax(-1)
    assert probs.multinomial(1).shape == (2, 1) and probs.topk(3)[0].shape == (2, 3)
    emb = nn.Embedding(100, 16)
    tokens = torch.randint(0, 100, (2, 8))
    assert emb(tokens).shape == (2, 8, 16) and F.embedding(tokens, emb.weight).shape == (2, 8, 16)
    block = nn.Sequential(nn.LayerNorm(16), nn.Linear(16, 16), nn.RMSNorm(16))
    stack = nn.ModuleList([block, nn.Linear(16, 16)])
    heads = nn.ModuleDict({"a": nn.Linear(16, 2)})
    assert heads["a"](stack[1](stack[0](x))).shape == (2, 8, 2) and len(list(stack.parameters())) == 7
    w = torch.empty(4, 4)
    assert init.normal_(w) is w and init.zeros_(w) is w
    assert torch.cuda.is_available()
    syntorch.trace_manager.stats()

    import syntorch.torch.distributed as dist
    from syntorch.parallel import gather_from_tensor_model_parallel_region

    def program(rank):
        assert dist.is_available()
        dist.init_process_group("nccl")
        assert dist.get_rank() == rank and dist.get_world_size() == 2
        parts = [torch.empty(4) for _ in range(2)]
        dist.all_gather(parts, torch.randn(4))
        if rank == 0:
            dist.send(torch.empty(8), 1)
        else:
            dist.recv(torch.empty(8), 0)
        assert gather_from_tensor_model_parallel_region(torch.randn(3, 5)).shape == (3, 10)
        dist.barrier()

    syntorch.launch(program, 2, hw=DGX, console=False)


def test_broadcast_and_reduce_run_as_chains_and_ddp_broadcasts_rank_0s_state(tmp_path):
    """broadcast and reduce move the whole message over every hop of a pipelined chain: about the
    time of an all-gather of the same buffer, and far less than n - 1 times a send. DDP's
    constructor broadcasts rank 0's parameters (PyTorch's _sync_module_states)."""
    import json
    import syntorch.torch.distributed as dist
    times = {}

    def timed(name, call):
        def program(rank):
            dist.init_process_group("nccl")
            x = torch.empty(64 * 2 ** 20, dtype=torch.float16)  # 128 MiB
            torch.cuda.synchronize()
            with torch.profiler.record_function(name):
                work = call(x, rank)
                if work is not None:
                    assert isinstance(work, dist.Work) and work.wait() and work.is_completed()
                torch.cuda.synchronize()
        stats = syntorch.launch(program, 8, hw=DGX, console=False)
        step = stats["steps"][-1]
        times[name] = step["end_s"] - step["begin_s"]

    timed("broadcast", lambda x, rank: dist.broadcast(x, 3, async_op=True))
    timed("reduce", lambda x, rank: dist.reduce(x, 5, op=dist.ReduceOp.SUM))
    timed("all_reduce", lambda x, rank: dist.all_reduce(x))
    assert 0.3 * times["all_reduce"] < times["broadcast"] < 1.2 * times["all_reduce"], times
    assert abs(times["reduce"] / times["broadcast"] - 1) < 0.05, times

    def bad(rank):
        dist.init_process_group("nccl")
        dist.broadcast(torch.empty(4), 9)

    with pytest.raises(Exception, match="rank 9 is not in the group"):
        syntorch.launch(bad, 2, hw=DGX, console=False)

    from syntorch.torch.nn.parallel import DistributedDataParallel as DDP

    def ddp(rank):
        dist.init_process_group("nccl")
        DDP(nn.Sequential(nn.Linear(1024, 1024), nn.Linear(1024, 1024)))

    trace = tmp_path / "ddp.json"
    syntorch.launch(ddp, 2, hw=DGX, console=False, trace=str(trace))
    names = [e["name"] for e in json.load(open(trace))["traceEvents"] if e.get("ph") == "X"]
    assert names.count("nccl:broadcast") >= 2, sorted(set(names))  # each rank's one bucket



def test_the_switches_training_scripts_set_first():
    syntorch.init(hw=H100)
    assert torch.manual_seed(1337) == 1337 and torch.cuda.manual_seed(1) is None and torch.seed() == 0
    torch.cuda.manual_seed_all(2)
    assert torch.cuda.current_device() == 0
    torch.cuda.set_device(0)
    torch.cuda.set_device("cuda:0")
    with pytest.raises(NotImplementedError, match="moving a rank"):
        torch.cuda.set_device(3)
    assert torch.get_float32_matmul_precision() == "highest" and not torch.backends.cuda.matmul.allow_tf32
    a = torch.randn(4096, 4096)
    torch.cuda.synchronize()
    for allow in (False, True):
        torch.backends.cuda.matmul.allow_tf32 = allow
        with torch.profiler.record_function(f"tf32={allow}"):
            a @ a
            torch.cuda.synchronize()
    assert torch.get_float32_matmul_precision() == "high"
    torch.set_float32_matmul_precision("highest")
    with pytest.raises(RuntimeError, match="expected"):
        torch.set_float32_matmul_precision("fast")
    cudnn = torch.backends.cudnn
    saved = (cudnn.benchmark, cudnn.deterministic)
    cudnn.benchmark, cudnn.deterministic = True, True  # convolutions only: kept, no effect
    assert cudnn.benchmark and cudnn.deterministic and cudnn.is_available() and torch.backends.cuda.is_built()
    cudnn.benchmark, cudnn.deterministic = saved
    import importlib as _importlib
    assert _importlib.import_module("syntorch.torch.backends.cudnn") is cudnn
    steps = {s["name"]: s["end_s"] - s["begin_s"] for s in syntorch.trace_manager.stats()["steps"]}
    # H100: 67 TFLOP/s of fp32 on the vector units, 495 of TF32 on the matrix units.
    assert steps["tf32=False"] > 4 * steps["tf32=True"], steps


def _hw(name):
    return os.path.join(SOURCE, "hw_configs", name)


def _syntorch_binary():
    return os.path.join(os.path.dirname(os.path.realpath(_syntorch.__file__)), "..", "syntorch")


def test_simulate_and_train_take_every_parameter_the_cli_does():
    """syntorch.simulate and syntorch.train are the CLI's simulate and train: the same parameter
    tables (every key a keyword, listed in the docstring, shown back in the report), the same
    reports, the same errors."""
    import json
    for kind, fn in (("generate", syntorch.simulate), ("train", syntorch.train)):
        table = _syntorch.workload_parameters(kind)
        assert len(table) > 10
        for key, alias, typ, unit, help_text, default in table:
            assert f"    {key}" in fn.__doc__, key
            assert typ in ("int", "float", "bool", "choice", "str") and help_text
    report = syntorch.simulate("gpt3-125m", hw=_hw("dgx_a100.json"), tp=2, batch=2, input=32, output_tokens=3,
                               cuda_graphs=True, framework="native")
    assert report["status"] == "ok"
    for key, *_ in _syntorch.workload_parameters("generate"):
        assert key in report, key
    assert (report["tp"], report["batch"], report["input_tokens"], report["cuda_graphs"]) == (2, 2, 32, True)
    assert report["ttft_ms"] > 0 and report["tokens_per_s"] > 0
    # The CLI gives the same report for the same run.
    cli = subprocess.run([_syntorch_binary(), "simulate", "--json", "--hw", _hw("dgx_a100.json"), "--model",
                          "gpt3-125m", "--tp", "2", "--batch", "2", "--input-tokens", "32", "--output-tokens", "3",
                          "--cuda-graphs", "--framework", "native"], capture_output=True, text=True, check=True)
    assert json.loads(cli.stdout)["ttft_ms"] == report["ttft_ms"]
    import tempfile
    trace = os.path.join(tempfile.mkdtemp(), "train.json")
    trained = syntorch.train("gpt3-125m", hw=_hw("dgx_a100.json"), seq=128, dp=2, sp=True, tp=2, trace=trace,
                             trace_ranks=[0, 1])
    assert os.path.getsize(trace) > 0
    assert trained["sequence_parallel"] is True and trained["trace_ranks"] == "0-1"
    assert trained["iteration_time_s"] > 0
    with pytest.raises(ValueError, match='did you mean "tp"'):
        syntorch.simulate("gpt3-125m", tpp=2)
    with pytest.raises(ValueError, match="batch"):
        syntorch.simulate("gpt3-125m", batch=0)
    with pytest.raises(ValueError, match="llama3.1-405b"):
        syntorch.train("llama3-405b")
    with pytest.raises(ValueError, match="parameters:model:"):
        syntorch.simulate("no/such/config.json")
    with pytest.raises(ValueError, match="trace_ranks"):
        syntorch.train("gpt3-125m", trace_ranks=[0])
    with pytest.raises(ValueError, match="global_batch"):
        syntorch.train("gpt3-125m", global_batch=0)
    assert syntorch.simulate("gpt3-125m", output_tokens=2, kv_dtype=None)["kv_dtype"] == "fp16"  # None: the default
    with pytest.raises(ValueError, match="kind"):
        _syntorch.run_workload("deploy", "", [], "", "", [])
    oom = syntorch.simulate("gpt3-175b", hw=_hw("a100_sxm4_80gb.json"))
    assert oom["status"] == "oom" and oom["oom"]["requested_bytes"] > 0


def test_a_runs_chakra_trace_replays_from_python_as_from_the_cli():
    import json
    import tempfile
    et = os.path.join(tempfile.mkdtemp(), "run.et")
    # A Chakra trace holds the device's work and the collectives, not the host's cudaMalloc calls:
    # the run leaves them out (a warm allocator) to be the trace's own.
    warm = ["/components/host/device_malloc=0 us", "/components/host/device_free=0 us"]
    run = syntorch.simulate("gpt3-125m", tp=2, output_tokens=2, framework="native", trace=et, set=warm)
    replayed = syntorch.replay(et)
    assert replayed["status"] == "ok" and replayed["ranks"] == 2 and replayed["nodes"]["collective"] > 0
    assert replayed["simulated_time_s"] == pytest.approx(run["e2e_ms"] * 1e-3, rel=0.01)
    cli = subprocess.run([_syntorch_binary(), "replay", et, "--json"], capture_output=True, text=True, check=True)
    assert json.loads(cli.stdout)["simulated_time_s"] == replayed["simulated_time_s"]
    with pytest.raises(ValueError, match="no such file"):
        syntorch.replay(et.replace("run.et", "none.et"))
    with pytest.raises(ValueError, match="framework"):
        syntorch.replay(et, framework="jax")


def test_functional_collectives_and_the_checkpoint_wrapper():
    import syntorch.torch.distributed as dist
    import syntorch.torch.distributed._functional_collectives as funcol
    from syntorch.torch.distributed.algorithms._checkpoint import checkpoint_wrapper as cw
    seen = {}

    def program(rank):
        dist.init_process_group("nccl")
        group = dist.new_group([0, 1])
        x = torch.randn(4, 6)
        y = funcol.wait_tensor(funcol.all_reduce(x, "sum", group))
        g = funcol.all_gather_tensor(x, 0, group)
        r = funcol.reduce_scatter_tensor(x, "avg", 1, group)
        a, b = funcol.all_reduce_coalesced([x, x], "max", group)
        (c,) = funcol.all_gather_into_tensor_coalesced([x], group)
        seen[rank] = (y.shape, g.shape, r.shape, a.shape, c.shape, y is x)
        with pytest.raises(ValueError, match="reduceOp"):
            funcol.all_reduce(x, "median", group)
        with pytest.raises(RuntimeError, match="does not divide"):
            funcol.reduce_scatter_tensor(torch.randn(3), "sum", 0, group)
        with pytest.raises(NotImplementedError, match="ProcessGroup"):
            funcol.all_reduce(x, "sum", [0, 1])
        dist.destroy_process_group()

    stats = syntorch.launch(program, 2, hw=DGX, console=False)
    assert seen[0] == ((4, 6), (8, 6), (4, 3), (4, 6), (8, 6), False) and stats["kernels"] > 0

    # The wrapper: the wrapped block's activations recomputed in the backward, names unchanged.
    syntorch.init(hw=DGX)
    model = nn.Sequential(nn.Linear(32, 64), nn.GELU(), nn.Linear(64, 32))
    names = [n for n, _ in model.named_parameters()]
    wrapped = cw.apply_activation_checkpointing(model, check_fn=lambda m: isinstance(m, nn.Linear))
    assert isinstance(model[0], cw.CheckpointWrapper) and model[0].out_features == 64
    assert [n for n, _ in wrapped.named_parameters()] == names == list(wrapped.state_dict())
    assert not wrapped.load_state_dict(wrapped.state_dict()).missing_keys  # and back, by the same names
    wrapped(torch.randn(4, 32, requires_grad=True)).sum().backward()
    assert model[0].weight.grad is not None
    block = cw.checkpoint_wrapper(nn.Linear(8, 8), checkpoint_impl=cw.CheckpointImpl.REENTRANT)
    assert block(torch.randn(2, 8)).shape == (2, 8)
    calls = []
    custom = cw.checkpoint_wrapper(nn.Linear(8, 8), checkpoint_fn=lambda m, *a: calls.append(1) or m(*a))
    custom(torch.randn(2, 8))
    assert calls == [1]
    with pytest.raises(TypeError):
        cw.checkpoint_wrapper(lambda x: x)
    with pytest.raises(NotImplementedError, match="auto_wrap_policy"):
        cw.apply_activation_checkpointing(model, auto_wrap_policy=object())
    syntorch.trace_manager.stats()
