"""The PyTorch API breadth real model and training code uses: loss and activation modules, Tensor
methods, module hooks and state dicts, the meta device, torch.profiler windows, torch.cuda's
device queries and memory statistics, value reads, pinned memory and the DataLoader."""

import json
import os
import warnings

import pytest

import syntorch
import syntorch.clock
import syntorch.torch as torch
import syntorch.torch.nn as nn
import syntorch.torch.nn.functional as F
from syntorch.torch.utils.data import (DataLoader, Dataset, IterableDataset, TensorDataset, RandomSampler,
                                       SequentialSampler, BatchSampler, Subset, ConcatDataset, SubsetRandomSampler,
                                       random_split, default_collate, DistributedSampler)

SOURCE = os.environ.get("SYNTORCH_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))


def config(name):
    return os.path.join(SOURCE, "hw_configs", name)


def test_loss_and_activation_modules_run_their_kernels_with_pytorchs_reductions():
    syntorch.init(hw=config("h100_sxm5_80gb.json"))
    logits = torch.randn(8, 10, requires_grad=True)
    target = torch.randint(0, 10, (8,))
    assert nn.CrossEntropyLoss()(logits, target).shape == ()
    assert nn.CrossEntropyLoss(reduction="none")(logits, target).shape == (8,)
    assert nn.CrossEntropyLoss(reduction="sum", label_smoothing=0.1)(logits, target).shape == ()
    assert F.cross_entropy(torch.randn(2, 10, 5), torch.randint(0, 10, (2, 5))).shape == ()  # [N, C, d]
    loss = nn.CrossEntropyLoss(ignore_index=0)(logits, target)
    loss.backward()
    assert logits.grad.shape == (8, 10)
    assert nn.NLLLoss()(F.log_softmax(logits, 1), target).shape == ()
    assert nn.NLLLoss(reduction="none")(F.log_softmax(logits, 1), target).shape == (8,)
    x, y = torch.randn(4, 3), torch.randn(4, 3)
    for module in (nn.MSELoss(), nn.L1Loss(), nn.SmoothL1Loss(beta=0.5), nn.BCEWithLogitsLoss(),
                   nn.BCELoss(reduction="sum")):
        assert module(x, y).shape == ()
    assert nn.MSELoss(reduction="none")(x, y).shape == (4, 3)
    assert F.mse_loss(x, y, size_average=False).shape == ()  # the legacy spelling of reduction="sum"
    assert F.l1_loss(x, y).shape == () and F.smooth_l1_loss(x, y).shape == ()
    assert F.binary_cross_entropy(x, y).shape == () and F.binary_cross_entropy_with_logits(x, y).shape == ()
    with pytest.raises(ValueError, match="not a valid value for reduction"):
        F.mse_loss(x, y, reduction="avg")
    with pytest.raises(ValueError, match="batch_size"):
        F.cross_entropy(torch.randn(4, 10), torch.randint(0, 10, (3,)))
    for module, shape in ((nn.Tanh(), (4, 3)), (nn.Sigmoid(), (4, 3)), (nn.Softmax(dim=-1), (4, 3)),
                          (nn.LogSoftmax(dim=1), (4, 3)), (nn.ReLU(inplace=True), (4, 3)), (nn.SiLU(), (4, 3))):
        assert module(x).shape == shape
    assert F.relu(x, inplace=True).shape == (4, 3) and F.silu(x).shape == (4, 3)
    syntorch.trace_manager.stats()


def test_tensor_methods_in_pytorchs_spellings():
    syntorch.init(hw=config("h100_sxm5_80gb.json"))
    x = torch.randn(2, 3, 4)
    assert x.relu().shape == x.sigmoid().shape == x.tanh().shape == (2, 3, 4)
    assert x.T.shape == (4, 3, 2) and x.mT.shape == (2, 4, 3) and torch.randn(5).T.shape == (5,)
    assert x.data.shape == (2, 3, 4) and not x.data.requires_grad
    with pytest.raises(NotImplementedError):
        x.data = torch.randn(2, 3, 4)
    z = torch.view_as_complex(torch.randn(3, 2))
    assert z.real.shape == (3,) and z.imag.shape == (3,) and z.real.dtype == torch.float32
    assert x.real is x
    with pytest.raises(RuntimeError, match="non-complex"):
        x.imag
    assert x.double().dtype == torch.float64 and x.long().dtype == torch.int64
    assert x.int().dtype == torch.int32 and x.bool().dtype == torch.bool
    assert x.nelement() == 24 and x.ndimension() == 3
    assert x.neg().shape == x.negative().shape == (2, 3, 4)
    assert x.add(x, alpha=2).shape == x.sub(x).shape == x.mul(2.0).shape == x.div(x).shape == (2, 3, 4)
    assert x.multiply(x).shape == x.divide(2.0).shape == x.subtract(x).shape == (2, 3, 4)
    assert [t.shape for t in x.unbind(1)] == [(2, 4)] * 3 and len(torch.unbind(x)) == 2
    assert x.movedim(0, -1).shape == (3, 4, 2) and torch.movedim(x, (0, 1), (2, 0)).shape == (3, 4, 2)
    assert x.moveaxis(2, 0).shape == (4, 2, 3) and torch.moveaxis(x, 1, 0).shape == (3, 2, 4)
    assert x.repeat(2, 1, 1).shape == (4, 3, 4) and x.repeat(3, 1, 1, 2).shape == (3, 2, 3, 8)
    with pytest.raises(RuntimeError, match="repeat dims"):
        x.repeat(2)
    for fill in (x.uniform_, x.normal_, x.bernoulli_, x.exponential_, x.random_):
        assert fill() is x
    assert not x.is_meta and not x.is_cpu and torch.randn(2, device="cpu").is_cpu
    assert x.to(x).dtype == x.dtype and x.to("cuda", torch.float16).dtype == torch.float16
    assert x.to(torch.float32, copy=True) is not x
    syntorch.trace_manager.stats()


def test_module_hooks_run_as_pytorchs_and_can_be_removed():
    syntorch.init(hw=config("h100_sxm5_80gb.json"))
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    seen = []
    pre = model[0].register_forward_pre_hook(lambda m, args: (args[0] * 2.0,))
    post = model[2].register_forward_hook(lambda m, args, out: seen.append(out.shape))
    kw = model[2].register_forward_hook(lambda m, args, kwargs, out: out.relu(), with_kwargs=True, prepend=True)
    kwpre = model[2].register_forward_pre_hook(lambda m, args, kwargs: (args, kwargs), with_kwargs=True)
    y = model(torch.randn(3, 4))
    assert y.shape == (3, 2) and seen == [(3, 2)]
    for handle in (pre, post, kw, kwpre):
        handle.remove()
    with model[0].register_forward_hook(lambda m, a, o: seen.append("ctx")):
        model(torch.randn(3, 4))
    model(torch.randn(3, 4))
    assert seen == [(3, 2), "ctx"]

    class Failing(nn.Module):
        def forward(self, x):
            raise ValueError("boom")

    failing, called = Failing(), []
    failing.register_forward_hook(lambda m, a, o: called.append(o), always_call=True)
    with pytest.raises(ValueError):
        failing(torch.randn(1))
    assert called == [None]
    with pytest.raises(NotImplementedError):
        model.register_full_backward_hook(lambda *a: None)
    syntorch.trace_manager.stats()


def test_state_dicts_load_with_shape_checks_strict_mode_and_hooks():
    syntorch.init(hw=config("h100_sxm5_80gb.json"))

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 4)
            self.register_buffer("steps", torch.zeros(1))
            self.register_buffer("scratch", torch.zeros(2), persistent=False)

        def forward(self, x):
            return self.fc(x)

    a, b = Net(), Net()
    sd = a.state_dict()
    assert list(sd) == ["steps", "fc.weight", "fc.bias"] and not sd["fc.weight"].requires_grad
    assert a.state_dict(keep_vars=True)["fc.weight"].requires_grad
    assert a.state_dict(prefix="m.").keys() == {"m.fc.weight", "m.fc.bias", "m.steps"}
    events = []
    b.register_load_state_dict_pre_hook(lambda m, *args: events.append("pre"))
    b.fc._register_load_state_dict_pre_hook(lambda *args: events.append("fc-pre"))
    b.register_load_state_dict_post_hook(lambda m, keys: events.append(("post", tuple(keys.missing_keys))))
    result = b.load_state_dict(sd)
    assert result.missing_keys == [] and result.unexpected_keys == [] and "All keys matched" in repr(result)
    assert events == ["pre", "fc-pre", ("post", ())]
    with pytest.raises(RuntimeError, match="size mismatch for fc.weight"):
        b.load_state_dict({**sd, "fc.weight": torch.randn(3, 4)})
    partial = {k: v for k, v in sd.items() if k != "steps"}
    partial["extra"] = torch.randn(1)
    with pytest.raises(RuntimeError, match='Missing key\\(s\\) in state_dict: "steps"'):
        b.load_state_dict(partial)
    keys = b.load_state_dict(partial, strict=False)
    assert keys.missing_keys == ["steps"] and keys.unexpected_keys == ["extra"] and "extra" in repr(keys)
    host = {k: v.cpu() for k, v in sd.items()}  # a checkpoint on the host: copied to the device
    b.load_state_dict(host, assign=False)
    fresh = {k: torch.randn(*v.shape) for k, v in sd.items()}
    b.load_state_dict(fresh, assign=True)
    assert b.fc.weight is fresh["fc.weight"] and b.fc.weight.requires_grad
    with pytest.raises(TypeError):
        b.load_state_dict([1, 2])
    pre_seen, post_seen = [], []
    b.register_state_dict_pre_hook(lambda m, prefix, keep_vars: pre_seen.append(prefix))
    b._register_state_dict_hook(lambda m, d, prefix, meta: post_seen.append(len(d)))
    b.register_state_dict_post_hook(lambda m, d, prefix, meta: None)
    b.state_dict()
    assert pre_seen == [""] and post_seen == [3]
    # Registration helpers and lookups.
    b.register_parameter("extra_p", nn.Parameter(torch.randn(2)))
    b.register_module("head", nn.Linear(4, 1))
    assert b.get_parameter("fc.weight") is b.fc.weight and b.get_buffer("steps").shape == (1,)
    assert b.get_submodule("head") is b.head and [n for n, _ in b.named_children()] == ["fc", "head"]
    assert [n for n, _ in b.named_parameters(recurse=False)] == ["extra_p"]
    assert len(list(b.parameters(recurse=False))) == 1 and len(list(b.buffers(recurse=False))) == 2
    assert [n for n, _ in b.named_buffers(recurse=False)] == ["steps", "scratch"]
    with pytest.raises(AttributeError):
        b.get_submodule("nothing")
    with pytest.raises(KeyError):
        b.register_buffer("a.b", torch.zeros(1))
    with pytest.raises(TypeError):
        b.register_parameter("p", 3)
    assert "Linear" in repr(b) and b.extra_repr() == ""
    syntorch.trace_manager.stats()


def test_a_model_built_on_the_meta_device_is_materialised_with_to_empty():
    syntorch.init(hw=config("h100_sxm5_80gb.json"))
    with torch.device("meta"):
        model = nn.Linear(1024, 1024)
    assert model.weight.is_meta and model.weight.device.type == "meta"
    assert torch.cuda.memory_allocated() == 0  # nothing on the device
    with pytest.raises(RuntimeError, match="meta"):
        model.weight.to("cuda")
    with pytest.raises(RuntimeError, match="meta"):
        model.weight.sum().item()
    model.to_empty(device="cuda")
    assert model.weight.device.type == "cuda" and model.weight.requires_grad
    assert torch.cuda.memory_allocated() >= 1024 * 1024 * 4
    assert model(torch.randn(8, 1024)).shape == (8, 1024)
    syntorch.trace_manager.stats()


def test_the_profiler_records_a_window_of_the_run_as_pytorchs_does(tmp_path):
    syntorch.init(hw=config("h100_sxm5_80gb.json"))
    w = torch.randn(512, 512)
    torch.randn(512, 512) @ w  # before the window
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU,
                                            torch.profiler.ProfilerActivity.CUDA],
                                record_shapes=True, profile_memory=True) as prof:
        with torch.profiler.record_function("my_block"):
            y = torch.relu(torch.randn(512, 512) @ w)
    path = prof.export_chrome_trace(str(tmp_path / "trace.json"))
    events = json.load(open(path))["traceEvents"]
    names = {e.get("name") for e in events}
    assert "aten::relu" in names and "my_block" in names and "ProfilerStep#0" in names
    assert any("gemm" in (e.get("name") or "").lower() or e.get("cat") == "kernel" for e in events)
    table = prof.key_averages().table(sort_by="cuda_time_total", row_limit=10)
    assert "aten::relu" in table and str(prof.key_averages()) == table
    # A schedule: windows on the active steps only, each handed to on_trace_ready.
    ready = []
    sched = torch.profiler.schedule(wait=1, warmup=1, active=2, repeat=1)
    assert [sched(i) for i in range(6)] == [torch.profiler.ProfilerAction.NONE, torch.profiler.ProfilerAction.WARMUP,
                                            torch.profiler.ProfilerAction.RECORD,
                                            torch.profiler.ProfilerAction.RECORD_AND_SAVE,
                                            torch.profiler.ProfilerAction.NONE, torch.profiler.ProfilerAction.NONE]
    handler = torch.profiler.tensorboard_trace_handler(str(tmp_path / "tb"), worker_name="w")
    with torch.profiler.profile(schedule=sched, on_trace_ready=lambda p: (ready.append(p.step_num), handler(p))) as p:
        for _ in range(6):
            y = y @ w
            p.step()
    assert ready == [4]
    assert os.listdir(tmp_path / "tb") == ["w.4.pt.trace.json"]
    with pytest.raises(RuntimeError, match="no window"):
        torch.profiler.profile().export_chrome_trace(str(tmp_path / "x.json"))
    with pytest.raises(TypeError):
        torch.profiler.profile(activities=["cuda"])
    with pytest.raises(NotImplementedError):
        torch.profiler.profile(execution_trace_observer=object())
    syntorch.trace_manager.stats()


def test_cuda_reports_the_simulated_device_and_its_allocator():
    syntorch.init(hw=config("h100_sxm5_80gb.json"))
    props = torch.cuda.get_device_properties(0)
    assert props.total_memory == 80 * 10 ** 9 or props.total_memory > 79 * 2 ** 30
    assert props.multi_processor_count == 132 and "H100" in props.name and "MB" in repr(props)
    assert torch.cuda.get_device_name() == props.name and torch.cuda.is_bf16_supported()
    with pytest.raises(RuntimeError, match="Invalid device id"):
        torch.cuda.get_device_properties(3)
    big = torch.empty(64 * 2 ** 20, dtype=torch.uint8 if hasattr(torch, "uint8") else torch.int8)
    stats = torch.cuda.memory_stats()
    assert stats["allocated_bytes.all.current"] == torch.cuda.memory_allocated() >= 64 * 2 ** 20
    assert stats["reserved_bytes.all.peak"] >= stats["reserved_bytes.all.current"] > 0
    del big
    assert torch.cuda.max_memory_allocated() >= 64 * 2 ** 20
    torch.cuda.reset_peak_memory_stats()
    assert torch.cuda.max_memory_allocated() == torch.cuda.memory_allocated()
    torch.cuda.reset_max_memory_allocated()
    free, total = torch.cuda.mem_get_info()
    assert 0 < free <= total == props.total_memory
    syntorch.trace_manager.stats()


def test_value_reads_return_placeholders_warn_once_per_site_and_are_listed(tmp_path):
    syntorch.init(hw=config("h100_sxm5_80gb.json"))
    syntorch.clear_value_reads()
    loss = torch.randn(4, 4).mean()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        values = [loss.item() for _ in range(3)]
    assert values == [0.0] * 3
    assert len([w for w in caught if issubclass(w.category, syntorch.ValuePlaceholderWarning)]) == 1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert torch.randn(2, 3).tolist() == [[0.0] * 3] * 2
        assert torch.randint(0, 5, (2,), device="cpu").numpy().tolist() == [0, 0]
        assert bool(torch.ones(1, dtype=torch.bool)) is False and float(loss) == 0.0 and int(loss) == 0
        assert f"{loss:.3f}" == "0.000" and torch.zeros(1, dtype=torch.int64).item() == 0
    reads = syntorch.value_reads()
    assert reads[0]["kind"] == "item" and reads[0]["count"] == 3 and reads[0]["file"] == __file__
    assert {r["kind"] for r in reads} >= {"item", "tolist", "numpy", "bool", "float", "int", "format"}
    assert syntorch.trace_manager.stats()["value_reads"] == reads
    with pytest.raises(TypeError, match="numpy"):
        torch.randn(2).numpy()
    with pytest.raises(RuntimeError, match="ambiguous"):
        bool(torch.randn(2))
    with pytest.raises(ValueError, match="one element"):
        float(torch.randn(2))
    syntorch.set_value_mode("strict")
    try:
        assert syntorch.value_mode() == "strict"
        with pytest.raises(RuntimeError, match="strict value mode"):
            torch.randn(1).item()
    finally:
        syntorch.set_value_mode("placeholder")
    with pytest.raises(ValueError, match="placeholder"):
        syntorch.set_value_mode("functional-please")
    syntorch.trace_manager.stats()


def test_pinned_non_blocking_copies_overlap_and_pageable_ones_wait():
    def run(pinned, non_blocking):
        syntorch.init(hw=config("h100_sxm5_80gb.json"))
        w = torch.randn(4096, 4096)
        batch = torch.empty(64, 2 ** 20, device="cpu", pin_memory=pinned)  # 256 MiB
        assert batch.is_pinned() == pinned
        for _ in range(4):
            w = w @ w  # the device is busy while the batch goes over
        x = batch.to("cuda", non_blocking=non_blocking)
        t_host = syntorch.clock.now()
        torch.cuda.synchronize()
        return t_host, syntorch.trace_manager.stats()["simulated_time_s"]

    async_host, async_total = run(True, True)
    sync_host, sync_total = run(True, False)
    pageable_host, pageable_total = run(False, True)
    assert async_host < sync_host  # the host ran ahead of a non-blocking pinned copy
    assert pageable_total > sync_total  # staged through a pinned buffer by the host: slower
    assert pageable_host > async_host
    syntorch.init(hw=config("h100_sxm5_80gb.json"))
    assert torch.randn(4, device="cpu").pin_memory().is_pinned()
    with pytest.raises(RuntimeError, match="pinned"):
        torch.empty(4, device="cuda", pin_memory=True)
    with pytest.raises(RuntimeError, match="pin"):
        torch.randn(4).pin_memory()
    assert torch.tensor([1, 2], pin_memory=True).is_pinned()
    syntorch.trace_manager.stats()

    # Back to the host: a non-blocking copy goes into pinned memory PyTorch allocates for it, and
    # the host does not wait; a blocking one waits for the copy and stages it into pageable memory.
    def back(non_blocking):
        syntorch.init(hw=config("h100_sxm5_80gb.json"))
        y = torch.empty(64, 2 ** 20, device="cuda").to("cpu", non_blocking=non_blocking)
        t_host = syntorch.clock.now()
        torch.cuda.synchronize()
        return t_host, y.is_pinned()

    (async_host, async_pinned), (sync_host, sync_pinned) = back(True), back(False)
    assert async_pinned and not sync_pinned and async_host < sync_host
    syntorch.trace_manager.stats()


class Squares(Dataset):
    def __init__(self, n):
        self.n = n

    def __getitem__(self, i):
        return torch.randn(3, 32, 32, device="cpu"), i % 10

    def __len__(self):
        return self.n


class Stream(IterableDataset):
    def __iter__(self):
        for i in range(5):
            yield {"x": torch.randn(4, device="cpu"), "y": float(i)}

    def __len__(self):
        return 5


def test_the_dataloader_batches_as_pytorchs_with_the_host_time_of_loading():
    syntorch.init(hw=config("h100_sxm5_80gb.json"))
    loader = DataLoader(Squares(10), batch_size=4, shuffle=True, drop_last=False)
    batches = list(loader)
    assert len(loader) == 3 and [b[0].shape for b in batches] == [(4, 3, 32, 32)] * 2 + [(2, 3, 32, 32)]
    assert batches[0][1].dtype == torch.int64 and batches[0][1].shape == (4,)
    first = [list(RandomSampler(range(10), generator=None))]
    assert first == [list(RandomSampler(range(10)))]  # deterministic
    assert len(RandomSampler(range(10), replacement=True, num_samples=4)) == 4
    assert list(SequentialSampler(range(3))) == [0, 1, 2]
    assert list(BatchSampler(range(5), 2, drop_last=True)) == [[0, 1], [2, 3]]
    assert sorted(SubsetRandomSampler([1, 5, 7])) == [1, 5, 7]
    ds = TensorDataset(torch.randn(6, 2, device="cpu"), torch.randint(0, 2, (6,), device="cpu"))
    assert len(ds) == 6 and ds[1][0].shape == (2,)
    a, b = random_split(ds, [4, 2])
    assert len(a) == 4 and len(b) == 2 and isinstance(a, Subset)
    assert [len(s) for s in random_split(ds, [0.5, 0.5])] == [3, 3]
    assert len(ConcatDataset([ds, ds])) == 12 and len(ds + ds) == 12 and (ds + ds)[-1][0].shape == (2,)
    assert default_collate([(torch.randn(2, device="cpu"), 1.0)] * 3)[0].shape == (3, 2)
    stream = list(DataLoader(Stream(), batch_size=2))
    assert [s["x"].shape for s in stream] == [(2, 4), (2, 4), (1, 4)] and len(DataLoader(Stream(), batch_size=2)) == 3
    assert list(DataLoader(ds, batch_size=None))[0][0].shape == (2,)
    samplers = [list(DistributedSampler(range(10), num_replicas=4, rank=r, shuffle=False)) for r in range(4)]
    assert samplers[0] == [0, 4, 8] and samplers[3] == [3, 7, 1]  # padded to equal shares
    s = DistributedSampler(range(10), num_replicas=2, rank=1, drop_last=True)
    s.set_epoch(1)
    assert len(s) == 5 and len(list(s)) == 5
    with pytest.raises(ValueError):
        DataLoader(ds, sampler=SequentialSampler(ds), shuffle=True)
    with pytest.raises(ValueError):
        DistributedSampler(range(4), num_replicas=2, rank=2)
    syntorch.trace_manager.stats()

    def host_time(**loader_args):
        syntorch.init(hw=config("h100_sxm5_80gb.json"))
        for x, y in DataLoader(Squares(64), batch_size=32, **loader_args):
            x.to("cuda", non_blocking=True)
        return syntorch.clock.now()

    inline, workers = host_time(num_workers=0), host_time(num_workers=4)
    pinned_by_workers = host_time(num_workers=4, pin_memory=True)
    # Collation costs the host unless workers do it; pinned batches (pinned by PyTorch's pin-memory
    # thread) go over without the host staging them.
    assert pinned_by_workers < workers < inline
    syntorch.trace_manager.stats()


# --- the xpuruntime extension as designed ---

def test_xpuruntime_policy_names_and_preferences():
    import syntorch.xpuruntime as xrt
    import syntorch.xpuruntime.pytorch as xrt_torch
    syntorch.init(hw=config("h100_sxm5_80gb.json"))
    xrt_torch.clear_kernel_policy()
    assert xrt_torch.get_kernel_policy() is None and syntorch.get_kernel_policy() is None
    xrt_torch.set_kernel_policy(matmul="cublasLt", attention="flash_v2")
    policy = xrt_torch.get_kernel_policy()
    assert policy.preferences == {"matmul": "cublasLt", "attention": "flash_v2"}
    xrt.set_kernel_policy(xrt.KernelPolicy(matmul="cublas", attention="torch"))  # the design's names
    a = torch.randn(256, 256, dtype=torch.float16)
    a @ a
    xrt_torch.set_kernel_policy()  # neither: cleared
    assert xrt.get_kernel_policy() is None
    syntorch.set_kernel_policy("gemm=cublas")
    assert syntorch.get_kernel_policy().preferences == {"gemm": "cublas"}
    xrt.clear_kernel_policy()
    with pytest.raises(ValueError, match="unknown implementation"):
        xrt_torch.set_kernel_policy(matmul="cublasXt")
    syntorch.trace_manager.stats()


def test_xpuruntime_fused_ops_graphs_autocast_and_capture_range():
    import syntorch.xpuruntime.pytorch as xrt_torch
    syntorch.init(hw=config("h100_sxm5_80gb.json"))
    q = torch.randn(2, 8, 128, 64, dtype=torch.float16)
    assert xrt_torch.ops.fused_attention(q, q, q, is_causal=True).shape == (2, 8, 128, 64)
    xrt_torch.set_kernel_policy(attention="torch")
    assert xrt_torch.ops.fused_attention(q, q, q).shape == (2, 8, 128, 64)
    xrt_torch.set_kernel_policy(attention="flash_v3")
    with pytest.raises(ValueError, match="Unknown attention kernel"):
        xrt_torch.ops.fused_attention(q, q, q)
    xrt_torch.clear_kernel_policy()
    with pytest.raises(RuntimeError, match="4D"):
        xrt_torch.ops.fused_attention(q[0], q[0], q[0])
    x = torch.randn(16, 1024)
    w, b = torch.randn(1024), torch.randn(1024)
    assert xrt_torch.ops.fused_layernorm(x, [1024], w, b).shape == (16, 1024)
    lin = nn.Linear(1024, 1024)
    with xrt_torch.autocast(dtype=torch.bfloat16):
        assert lin(x).dtype == torch.bfloat16
    with xrt_torch.autocast(enabled=False):
        assert lin(x).dtype == torch.float32
    graph = xrt_torch.CUDAGraphWrapper()
    with pytest.raises(RuntimeError, match="not captured"):
        graph.replay()
    with xrt_torch.capture_graph(warmup_iters=3):
        assert graph.capture(lambda t: lin(t), x).shape == (16, 1024)
    for _ in range(3):
        graph.replay()
    with pytest.raises(ValueError):
        with xrt_torch.capture_graph(warmup_iters=-1):
            pass
    steps = [s["name"] for s in syntorch.trace_manager.stats()["steps"]]
    assert "cuda_graph_capture" in steps


def test_xpuruntime_allocator_ablation_pays_cuda_malloc_and_free_per_tensor():
    import syntorch.xpuruntime.pytorch as xrt_torch

    def train(caching):
        syntorch.init(hw=config("h100_sxm5_80gb.json"))
        xrt_torch.set_allocator(enabled=caching)
        model = nn.Sequential(nn.Linear(1024, 4096), nn.GELU(), nn.Linear(4096, 1024))
        opt = torch.optim.AdamW(model.parameters())
        for _ in range(3):
            loss = model(torch.randn(64, 1024)).float().mean()
            loss.backward()
            opt.step()
            opt.zero_grad()
        stats = torch.cuda.memory_stats()
        xrt_torch.reset_allocator()
        return stats, syntorch.trace_manager.stats()["simulated_time_s"]

    (cached, t_cached), (uncached, t_uncached) = train(True), train(False)
    assert uncached["num_device_alloc"] > 5 * cached["num_device_alloc"]
    assert uncached["num_device_free"] > 10 and cached["num_device_free"] == 0
    assert t_uncached > 1.5 * t_cached  # each cudaFree waits for the device


def test_the_designs_training_examples_run_as_written(tmp_path):
    import subprocess
    import sys
    for script in ("basic_loop.py", "cuda_graph.py"):
        path = os.path.join(SOURCE, "examples", "xpuruntime_design", script)
        trace = tmp_path / (script + ".json")
        r = subprocess.run([sys.executable, "-m", "syntorch.run", "--trace", str(trace), path], capture_output=True,
                           text=True, cwd=SOURCE)
        assert r.returncode == 0, r.stderr
        assert "conv implicit_gemm" in r.stderr and "aten::convolution_backward" in r.stderr, r.stderr
        launches = trace.read_text().count('"cudaGraphLaunch"')
        assert launches == (4 if script == "cuda_graph.py" else 0)  # one per batch of the dataloader


def test_torch_functions_and_constants_model_code_reaches_for():
    import numpy as np
    syntorch.init(hw=config("h100_sxm5_80gb.json"))
    x = torch.randn(2, 3, 4)
    assert torch.flatten(x, 1).shape == (2, 12) and torch.is_tensor(x) and not torch.is_tensor(3)
    assert torch.is_floating_point(x) and torch.numel(x) == 24
    assert torch.from_numpy(np.zeros((3, 2), dtype=np.float32)).shape == (3, 2)
    assert torch.from_numpy(np.zeros(4, dtype=np.int64)).dtype == torch.int64
    with pytest.raises(TypeError, match="can't convert"):
        torch.from_numpy(np.zeros(2, dtype=np.uint16))
    assert torch.as_tensor(x) is x and torch.as_tensor(x, dtype=torch.float16).dtype == torch.float16
    assert torch.as_tensor([1, 2, 3]).shape == (3,) and torch.as_tensor(np.ones((2, 2)), device="cuda").is_cuda
    assert torch.eye(3).shape == (3, 3) and torch.eye(2, 5).shape == (2, 5)
    assert torch.linspace(0, 1, steps=7).shape == (7,) and torch.randperm(10).dtype == torch.int64
    assert torch.normal(0.0, 1.0, size=(3,)).shape == (3,) and torch.normal(x, 1.0).shape == x.shape
    assert torch.normal(0.0, x).shape == x.shape
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert torch.equal(x, x) and not torch.equal(x, torch.randn(2))
    assert torch.Size([2, 3]) == (2, 3) and torch.Size((2, 3)).numel() == 6 and "Size" in repr(torch.Size([1]))
    assert torch.finfo(torch.float16).max == 65504.0 and torch.finfo().bits == 32
    assert torch.finfo(torch.bfloat16).eps == 0.0078125 and torch.finfo(torch.float32).min < 0
    assert torch.iinfo(torch.int32).max == 2 ** 31 - 1 and torch.iinfo(torch.int8).min == -128
    with pytest.raises(TypeError):
        torch.finfo(torch.int32)
    with pytest.raises(TypeError):
        torch.iinfo(torch.float32)
    g = torch.Generator().manual_seed(7)
    assert g.initial_seed() == 7 == g.seed() and g.get_state().shape == (8,) and g.set_state(None) is g
    assert abs(torch.pi - 3.14159) < 1e-5 and torch.e > 2.7 and torch.inf > 1e300 and torch.nan != torch.nan
    assert torch.__version__.startswith("2.")
    assert x.type() == "torch.cuda.FloatTensor" and x.type(torch.float16).dtype == torch.float16
    assert torch.get_default_device().type == "cuda"
    torch.set_default_device("cpu")
    try:
        assert torch.randn(2).device.type == "cpu" and torch.get_default_device() == "cpu"
        with torch.device("cuda"):
            assert torch.randn(2).is_cuda
    finally:
        torch.set_default_device(None)
    assert F.pad(x, (1, 2)).shape == (2, 3, 7) and F.pad(x, (1, 1, 2, 2), value=1.0).shape == (2, 7, 6)
    assert F.pad(x, (1, 1), mode="reflect").shape == (2, 3, 6) and F.pad(x, (-1, 0)).shape == (2, 3, 3)
    with pytest.raises(RuntimeError, match="Padding size"):
        F.pad(x, (4, 0), mode="reflect")
    with pytest.raises(RuntimeError, match="divisible by 2"):
        F.pad(x, (1,))
    with pytest.raises(NotImplementedError):
        F.pad(x, (1, 1), mode="wrap")
    handle = nn.Linear(2, 2).register_forward_hook(lambda *a: None)
    assert isinstance(handle, nn.RemovableHandle)
    assert isinstance(SequentialSampler(range(2)), torch.utils.data.Sampler)
    assert torch.utils.data.default_convert(3) == 3 and torch.utils.data.get_worker_info() is None
    assert torch.utils.data.distributed.Sampler is torch.utils.data.Sampler
    syntorch.trace_manager.stats()


def test_syntorch_offers_the_extensions_names_and_its_profile_writes_two_traces(tmp_path):
    import syntorch.xpuruntime.pytorch as xrt_torch
    syntorch.init(hw=config("h100_sxm5_80gb.json"))
    syntorch.set_allocator(enabled=True)
    lin = nn.Linear(256, 256)
    with syntorch.autocast(dtype=torch.float16):
        with syntorch.capture_graph():
            assert lin(torch.randn(4, 256)).dtype == torch.float16
    syntorch.reset_allocator()
    path = tmp_path / "step.json"
    with xrt_torch.profile(export_chrome_trace=str(path)) as prof:
        lin(torch.randn(4, 256))
    assert "aten::linear" in prof.key_averages().table()
    assert json.load(open(path))["traceEvents"] and "xpuruntime" in json.load(open(tmp_path / "step_xrt.json"))
    with pytest.raises(NotImplementedError):  # the base sampler has no order of its own
        iter(torch.utils.data.Sampler(range(3)))
    with pytest.raises(NotImplementedError):
        iter(torch.utils.data.distributed.Sampler(None))
    syntorch.trace_manager.stats()


def test_checkpoints_keep_shapes_and_cost_the_copies_torch_save_and_load_make(tmp_path):
    syntorch.init(hw=config("h100_sxm5_80gb.json"))

    class Tied(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(1000, 64)
            self.head = nn.Linear(64, 1000, bias=False)
            self.head.weight = self.emb.weight

    model = Tied()
    opt_state = {"step": 7, "lr": 3e-4}
    path = tmp_path / "ckpt.pt"
    torch.save({"model": model.state_dict(), "opt": opt_state, "shape": torch.Size([2, 3])}, path)
    ckpt = torch.load(path)
    assert ckpt["opt"] == opt_state and ckpt["shape"] == (2, 3)
    assert ckpt["model"]["emb.weight"].shape == (1000, 64) and ckpt["model"]["emb.weight"].is_cuda
    assert ckpt["model"]["emb.weight"] is ckpt["model"]["head.weight"]  # tied, as saved
    assert not Tied().load_state_dict(ckpt["model"]).missing_keys
    host = torch.load(path, map_location="cpu")
    assert host["model"]["emb.weight"].device.type == "cpu"
    assert torch.load(path, map_location={"cuda": "meta"})["model"]["emb.weight"].is_meta
    buf = __import__("io").BytesIO()
    torch.serialization.save(nn.Parameter(torch.randn(3)), buf)  # where PyTorch defines them
    buf.seek(0)
    assert torch.serialization.load(buf).requires_grad
    (tmp_path / "bad.pt").write_bytes(b"not a zip")
    with pytest.raises(RuntimeError, match="not a zip"):
        torch.load(tmp_path / "bad.pt")
    with pytest.raises(NotImplementedError):
        torch.save({}, tmp_path / "x.pt", pickle_module=json)
    stats = syntorch.trace_manager.stats()
    assert stats["kernels"] >= 1


def test_a_real_pytorch_checkpoint_loads_its_shapes_and_dtypes(tmp_path):
    import subprocess
    import sys
    path = tmp_path / "real.pt"
    code = ("import torch, collections\n"
            "sd = collections.OrderedDict(w=torch.zeros(4, 3, dtype=torch.float16), n=torch.zeros(5, dtype=torch.int64))\n"
            f"torch.save({{'state_dict': sd, 'epoch': 2, 'p': torch.nn.Parameter(torch.zeros(2))}}, {str(path)!r})\n")
    made = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    if made.returncode != 0:
        pytest.skip("PyTorch is not installed: " + made.stderr[-200:])
    syntorch.init(hw=config("h100_sxm5_80gb.json"))
    ckpt = torch.load(path, map_location="cuda")
    assert ckpt["epoch"] == 2 and list(ckpt["state_dict"]) == ["w", "n"]
    assert ckpt["state_dict"]["w"].shape == (4, 3) and ckpt["state_dict"]["w"].dtype == torch.float16
    assert ckpt["state_dict"]["n"].dtype == torch.int64 and ckpt["state_dict"]["w"].is_cuda
    assert ckpt["p"].requires_grad and ckpt["p"].shape == (2,)
    assert torch.load(path)["state_dict"]["w"].device.type == "cpu"  # saved from the host: stays there
    syntorch.trace_manager.stats()


def test_data_ptr_tells_tensors_that_share_memory():
    syntorch.init(hw=config("h100_sxm5_80gb.json"))
    x = torch.randn(4, 4)
    assert x.data_ptr() == x.view(16).data_ptr() == x.detach().data_ptr() and x.storage_offset() == 0
    assert x[1].data_ptr() == x.data_ptr() + 16 and x.clone().data_ptr() != x.data_ptr()
    syntorch.trace_manager.stats()


def test_einsum_contracts_pairs_as_batched_matrix_products():
    syntorch.init(hw=config("h100_sxm5_80gb.json"))
    q, k = torch.randn(2, 8, 128, 64), torch.randn(2, 8, 256, 64)
    assert torch.einsum("bhid,bhjd->bhij", q, k).shape == (2, 8, 128, 256)
    assert torch.einsum("b h i d, b h j d -> b h i j", q, k).shape == (2, 8, 128, 256)
    assert torch.einsum("...id,...jd->...ij", q, k).shape == (2, 8, 128, 256)
    assert torch.einsum("ij,jk", torch.randn(3, 4), torch.randn(4, 5)).shape == (3, 5)  # implicit output
    assert torch.einsum("ij->j", torch.randn(3, 4)).shape == (4,) and torch.einsum("ij->ji", [torch.randn(3, 4)]).shape == (4, 3)
    assert torch.einsum("i,j->ij", torch.randn(3), torch.randn(4)).shape == (3, 4)
    assert torch.einsum("i,i->", torch.randn(3), torch.randn(3)).shape == ()
    assert torch.einsum("bn,anm,bm->ba", torch.randn(2, 3), torch.randn(5, 3, 4), torch.randn(2, 4)).shape == (2, 5)
    assert torch.einsum("bij,bjk->bik", torch.randn(1, 3, 4), torch.randn(6, 4, 5)).shape == (6, 3, 5)  # broadcast
    with pytest.raises(RuntimeError, match="operands"):
        torch.einsum("ij,jk->ik", torch.randn(3, 4))
    with pytest.raises(RuntimeError, match="subscripts"):
        torch.einsum("ijk->i", torch.randn(3, 4))
    with pytest.raises(NotImplementedError, match="diagonal"):
        torch.einsum("ii->i", torch.randn(3, 3))
    with pytest.raises(RuntimeError, match="broadcast"):
        torch.einsum("ij,ij->i", torch.randn(3, 4), torch.randn(3, 5))
    with pytest.raises(RuntimeError, match="at least one"):
        torch.einsum("i")
    with pytest.raises(RuntimeError, match="invalid subscript"):
        torch.einsum("i1->i", torch.randn(3, 3))
    syntorch.trace_manager.stats()
    # The attention-score contraction is one batched GEMM of its FLOPs.
    syntorch.init(hw=config("h100_sxm5_80gb.json"))
    q, k = torch.randn(2, 8, 128, 64), torch.randn(2, 8, 256, 64)
    before = syntorch.trace_manager.stats()["flops"]
    syntorch.init(hw=config("h100_sxm5_80gb.json"))
    q, k = torch.randn(2, 8, 128, 64), torch.randn(2, 8, 256, 64)
    torch.einsum("bhid,bhjd->bhij", q, k)
    assert syntorch.trace_manager.stats()["flops"] - before >= 2 * 2 * 8 * 128 * 256 * 64


def test_views_layouts_and_small_modules_model_code_uses():
    import syntorch.torch.utils._pytree as pytree
    syntorch.init(hw=config("h100_sxm5_80gb.json"))
    x, y = torch.meshgrid(torch.arange(3), torch.arange(4), indexing="ij")
    assert x.shape == y.shape == (3, 4)
    x, y = torch.meshgrid([torch.arange(3), torch.arange(4)], indexing="xy")
    assert x.shape == y.shape == (4, 3)
    with pytest.raises(ValueError):
        torch.meshgrid(torch.arange(3), indexing="yx")
    with pytest.raises(RuntimeError, match="1D"):
        torch.meshgrid(torch.randn(2, 2))
    t = torch.randn(2, 10)
    assert t.unfold(1, 4, 2).shape == (2, 4, 4) and t.unfold(1, 4, 2).stride() == (10, 2, 1)
    with pytest.raises(RuntimeError, match="maximum size"):
        t.unfold(1, 11, 1)
    with pytest.raises(RuntimeError, match="step"):
        t.unfold(1, 2, 0)
    assert t.unflatten(1, (2, 5)).shape == (2, 2, 5) and torch.unflatten(t, -1, (5, 2)).shape == (2, 5, 2)
    assert t.as_strided((5, 2), (2, 1)).shape == (5, 2) and torch.as_strided(t, (2, 2), (1, 2), 1).storage_offset() == 1
    img = torch.randn(8, 3, 32, 32)
    cl = img.contiguous(memory_format=torch.channels_last)
    assert cl.is_contiguous(memory_format=torch.channels_last) and not img.is_contiguous(memory_format=torch.channels_last)
    assert cl.stride() == (3072, 1, 96, 3) and cl.contiguous(memory_format=torch.channels_last) is cl
    assert img.to(memory_format=torch.channels_last).stride() == (3072, 1, 96, 3)
    assert img.contiguous(memory_format=torch.contiguous_format) is img and img.contiguous(torch.preserve_format) is img
    assert not t.is_contiguous(memory_format=torch.channels_last_3d) and repr(torch.channels_last) == "torch.channels_last"
    with pytest.raises(RuntimeError, match="rank 4"):
        t.contiguous(memory_format=torch.channels_last)
    conv = nn.Conv2d(3, 8, 3).to(memory_format=torch.channels_last)
    assert conv.weight.is_contiguous(memory_format=torch.channels_last) and conv.bias.shape == (8,)
    assert torch.empty(2, memory_format=torch.contiguous_format).shape == (2,)
    assert torch.FloatTensor(2, 3).shape == (2, 3) and torch.LongTensor([1, 2]).dtype == torch.int64
    assert torch.HalfTensor(4).dtype == torch.float16 and torch.DoubleTensor([0.5]).dtype == torch.float64
    assert torch.BFloat16Tensor(1).dtype == torch.bfloat16 and torch.IntTensor(2).dtype == torch.int32
    assert torch.BoolTensor(2).dtype == torch.bool and torch.CharTensor(2).dtype == torch.int8
    fn = lambda a: a  # noqa: E731
    assert torch.jit.script(fn) is fn and torch.jit.trace(fn, (t,)) is fn and torch.jit.unused(fn) is fn
    assert torch.jit.ignore(fn) is fn and torch.jit.ignore(drop=True)(fn) is fn
    assert not torch.jit.is_scripting() and not torch.jit.is_tracing()
    assert not torch.compiler.is_compiling() and not torch.compiler.is_dynamo_compiling()
    assert not torch.backends.mps.is_available() and not torch.backends.mps.is_built()
    opt = torch.optim.SGD(nn.Linear(2, 2).parameters(), lr=1.0)
    for cls, kwargs, lr_after_3 in ((torch.optim.lr_scheduler.StepLR, {"step_size": 2, "gamma": 0.5}, 0.5),
                                   (torch.optim.lr_scheduler.MultiStepLR, {"milestones": [1, 3]}, 0.01),
                                   (torch.optim.lr_scheduler.ExponentialLR, {"gamma": 0.5}, 0.125),
                                   (torch.optim.lr_scheduler.LinearLR, {"start_factor": 0.25, "total_iters": 3}, 1.0)):
        opt.param_groups[0]["lr"] = 1.0
        sched = cls(opt, **kwargs)
        for _ in range(3):
            sched.step()
        assert sched.get_last_lr()[0] == pytest.approx(lr_after_3)
    Point = __import__("collections").namedtuple("Point", "x y")
    tree = {"a": [1, (2, 3)], "b": Point(4, {"c": 5})}
    leaves, spec = pytree.tree_flatten(tree)
    assert leaves == [1, 2, 3, 4, 5] and pytree.tree_unflatten(leaves, spec) == tree and "TreeSpec" in repr(spec)
    assert pytree.tree_map(lambda v: v * 2, tree)["b"].x == 8 and pytree.tree_leaves([1, [2]]) == [1, 2]
    with pytest.raises(ValueError):
        pytree.tree_unflatten([1], spec)
    assert pytree.LeafSpec().num_leaves == 1
    syntorch.trace_manager.stats()


def test_reductions_scans_sorts_and_indexed_ops_in_pytorchs_overloads():
    syntorch.init(hw=config("h100_sxm5_80gb.json"))
    x = torch.randn(4, 8, requires_grad=True)
    assert x.max().shape == () and torch.max(x, x).shape == (4, 8) and torch.min(x, x).shape == (4, 8)
    values, indices = x.max(1)
    assert values.shape == (4,) and indices.dtype == torch.int64 and x.max(dim=1, keepdim=True).indices.shape == (4, 1)
    assert x.min().shape == () and x.min(0).values.shape == (8,) and torch.min(x, 1, True).values.shape == (4, 1)
    assert x.amax(-1).shape == (4,) and x.amin((0, 1)).shape == () and torch.amax(x, 0, keepdim=True).shape == (1, 8)
    assert torch.amin(x, 1).shape == (4,)
    assert x.all().dtype == torch.bool and x.any(1).shape == (4,) and torch.all(x, 0).shape == (8,)
    assert torch.any(x).shape == ()
    assert x.norm().shape == () and x.norm(dim=-1).shape == (4,) and torch.norm(x, 1, dim=0, keepdim=True).shape == (1, 8)
    assert torch.linalg.vector_norm(x, dim=1).shape == (4,) and torch.linalg.vector_norm(x, float("inf")).shape == ()
    assert torch.linalg.norm(x).shape == () and x.norm(dtype=torch.float64).dtype == torch.float64
    with pytest.raises(NotImplementedError):
        torch.norm(x, "nuc")
    with pytest.raises(NotImplementedError):
        torch.linalg.norm(x, "fro", (0, 1))
    assert x.cumsum(1).shape == (4, 8) and torch.cumsum(x, 0, dtype=torch.float64).dtype == torch.float64
    s = x.sort(descending=True)
    assert s.values.shape == (4, 8) and s.indices.dtype == torch.int64 and torch.sort(x, 0).values.shape == (4, 8)
    assert x.argsort().dtype == torch.int64 and torch.argsort(x, 0, descending=True).shape == (4, 8)
    assert x.median().shape == () and x.median(1).values.shape == (4,) and torch.median(x, 0, True).values.shape == (1, 8)
    idx = torch.randint(0, 8, (4, 3))
    assert x.gather(1, idx).shape == (4, 3) and torch.gather(x, 1, idx).shape == (4, 3)
    z = torch.zeros(4, 8)
    assert z.scatter_(1, idx, 1.0) is z and z.scatter_(1, idx, torch.randn(4, 3)) is z
    assert z.scatter_add_(1, idx, torch.randn(4, 3)) is z and z.scatter(1, idx, value=2.0).shape == (4, 8)
    assert torch.scatter(z, 1, idx, torch.randn(4, 3)).shape == (4, 8) and z.scatter_add(1, idx, torch.randn(4, 3)).shape == (4, 8)
    assert torch.scatter_add(z, 1, idx, torch.randn(4, 3)).shape == (4, 8) and z.index_select(0, idx[0]).shape == (3, 8)
    assert torch.maximum(x, x).shape == x.maximum(x).shape == torch.fmax(x, x).shape == (4, 8)
    assert torch.minimum(x, x).shape == x.minimum(x).shape == torch.fmin(x, x).shape == (4, 8)
    assert torch.logsumexp(x, -1).shape == (4,) and x.logsumexp((0, 1)).shape == () and x.logsumexp(1, True).shape == (4, 1)
    assert x.var(1).shape == (4,) and x.std().shape == () and torch.var(x, 0, keepdim=True).shape == (1, 8)
    assert torch.std(x, 1).shape == (4,)
    assert torch.lerp(x, x, 0.5).shape == x.lerp(x, 0.5).shape == (4, 8)
    assert x.flip(0).shape == torch.flip(x, [0, 1]).shape == x.roll(1).shape == torch.roll(x, 1, 0).shape == (4, 8)
    with pytest.raises(IndexError):
        x.flip(2)
    assert x.square().shape == torch.square(x).shape == (4, 8)
    for name in ("sign", "round", "floor", "ceil", "trunc"):
        assert getattr(x, name)().shape == getattr(torch, name)(x).shape == (4, 8)
    assert x.clamp_min(0.0).shape == torch.clamp_max(x, 1.0).shape == x.clamp_max(1.0).shape == (4, 8)
    assert torch.clamp_min(x, 0.0).shape == (4, 8)
    y = torch.randn(4, 8)
    for name in ("clamp_", "clamp_min_", "clamp_max_", "triu_", "tril_", "sign_", "round_", "floor_", "ceil_",
                 "square_"):
        method = getattr(y, name)
        args = {"clamp_": (0.0,), "clamp_min_": (0.0,), "clamp_max_": (1.0,)}.get(name, ())
        assert method(*args) is y
    assert y.lerp_(y, 0.1) is y
    (x.max() + x.norm() + x.cumsum(1).sum() + x.sort().values.sum() + x.gather(1, idx).sum() +
     F.leaky_relu(x).sum() + x.amax(1).sum() + torch.maximum(x, x).sum()).backward()
    assert x.grad.shape == (4, 8)
    assert F.leaky_relu(x, 0.2).shape == nn.LeakyReLU(0.1)(x).shape == (4, 8)
    assert F.softplus(x).shape == nn.Softplus(beta=2.0)(x).shape == (4, 8)
    assert F.hardswish(x).shape == nn.Hardswish()(x).shape == (4, 8)
    assert F.normalize(x, dim=-1).shape == (4, 8) and F.cosine_similarity(x, x).shape == (4,)
    logp, p = F.log_softmax(x, -1), F.softmax(x, -1)
    assert F.kl_div(logp, p, reduction="batchmean").shape == () and F.kl_div(logp, logp, log_target=True).shape == ()
    assert F.kl_div(logp, p, reduction="none").shape == (4, 8)
    img = torch.randn(2, 3, 8, 8)
    assert F.dropout2d(img).shape == nn.Dropout2d(0.2)(img).shape == (2, 3, 8, 8)
    syntorch.trace_manager.stats()


def test_multihead_attention_padding_distributions_and_distance_helpers():
    from syntorch.torch.nn.utils.rnn import pad_sequence
    syntorch.init(hw=config("h100_sxm5_80gb.json"))
    mha = nn.MultiheadAttention(64, 8, batch_first=True)
    x = torch.randn(2, 10, 64)
    out, weights = mha(x, x, x)
    assert out.shape == (2, 10, 64) and weights.shape == (2, 10, 10)
    out, weights = mha(x, x, x, need_weights=False, key_padding_mask=torch.zeros(2, 10, dtype=torch.bool))
    assert out.shape == (2, 10, 64) and weights is None
    cross = nn.MultiheadAttention(64, 8, kdim=32, vdim=32, bias=False)
    out, weights = cross(torch.randn(10, 2, 64), torch.randn(7, 2, 32), torch.randn(7, 2, 32),
                         average_attn_weights=False, attn_mask=torch.zeros(10, 7))
    assert out.shape == (10, 2, 64) and weights.shape == (2, 8, 10, 7)
    out, weights = mha(torch.randn(10, 64), torch.randn(10, 64), torch.randn(10, 64))  # unbatched
    assert out.shape == (10, 64) and weights.shape == (10, 10)
    with pytest.raises(AssertionError):
        nn.MultiheadAttention(64, 7)
    with pytest.raises(NotImplementedError):
        nn.MultiheadAttention(64, 8, add_bias_kv=True)
    assert pad_sequence([torch.randn(3, 4), torch.randn(5, 4)]).shape == (5, 2, 4)
    assert pad_sequence([torch.randn(3), torch.randn(5)], batch_first=True, padding_side="left").shape == (2, 5)
    with pytest.raises(RuntimeError, match="empty"):
        pad_sequence([])
    with pytest.raises(RuntimeError, match="beyond their first dim"):
        pad_sequence([torch.randn(3, 4), torch.randn(3, 5)])
    with pytest.raises(ValueError):
        pad_sequence([torch.randn(3)], padding_side="middle")
    dist = torch.distributions.Categorical(logits=torch.randn(4, 6))
    assert dist.sample().shape == (4,) and dist.sample((3,)).shape == (3, 4) and dist.param_shape == (4, 6)
    assert dist.log_prob(torch.randint(0, 6, (4,))).shape == (4,) and dist.entropy().shape == (4,)
    assert torch.distributions.Categorical(probs=torch.rand(6)).sample().shape == ()
    with pytest.raises(ValueError):
        torch.distributions.Categorical()
    assert torch.diag(torch.randn(3)).shape == (3, 3) and torch.diag(torch.randn(3), 1).shape == (4, 4)
    assert torch.diag(torch.randn(3, 4)).shape == (3,) and torch.diag(torch.randn(4, 4), -1).shape == (3,)
    with pytest.raises(RuntimeError, match="1D or 2D"):
        torch.diag(torch.randn(2, 2, 2))
    assert torch.trapezoid(torch.randn(5)).shape == () and torch.trapezoid(torch.randn(3, 5), dx=0.1).shape == (3,)
    assert torch.trapezoid(torch.randn(5), torch.randn(5)).shape == ()
    assert torch.cdist(torch.randn(2, 5, 3), torch.randn(2, 7, 3)).shape == (2, 5, 7)
    with pytest.raises(NotImplementedError):
        torch.cdist(torch.randn(5, 3), torch.randn(7, 3), p=1.0)
    syntorch.trace_manager.stats()


def test_custom_autograd_functions_run_their_own_backward():
    syntorch.init(hw=config("h100_sxm5_80gb.json"))
    calls = []

    class Scale(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, factor):
            assert not torch.is_grad_enabled()
            ctx.save_for_backward(x)
            ctx.factor = factor
            return x * factor

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            calls.append((ctx.needs_input_grad, x.shape))
            return grad * ctx.factor, None

    x = torch.randn(4, 4, requires_grad=True)
    y = Scale.apply(x, 2.0)
    assert y.requires_grad and y.grad_fn == "ScaleBackward"
    y.sum().backward()
    assert x.grad.shape == (4, 4) and calls == [((True, False), (4, 4))]
    with torch.no_grad():
        assert not Scale.apply(x, 2.0).requires_grad

    class Split(torch.autograd.Function):
        @staticmethod
        def forward(a):
            return a, a * 2.0

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.set_materialize_grads(True)
            ctx.mark_dirty()

        @staticmethod
        def backward(ctx, g1, g2):
            return g1 + g2

    z = torch.randn(3, requires_grad=True)
    first, second = Split.apply(z)
    assert first is not z and first.requires_grad
    second.sum().backward()  # the unused output's gradient is materialised as zeros
    assert z.grad.shape == (3,)

    class Bad(torch.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            ctx.mark_non_differentiable()
            return a + b

        @staticmethod
        def backward(ctx, g):
            return (g,)

    with pytest.raises(RuntimeError, match="incorrect number of gradients"):
        Bad.apply(torch.randn(2, requires_grad=True), torch.randn(2)).sum().backward()
    with pytest.raises(NotImplementedError):
        torch.autograd.Function.forward(None)
    with pytest.raises(NotImplementedError):
        torch.autograd.Function.backward(None)
    syntorch.trace_manager.stats()


def test_spawned_ranks_hub_accelerator_and_device_indices():
    import syntorch.torch.distributed as dist
    syntorch.init(hw=config("dgx_h100.json"))
    seen = []

    def worker(rank, size):
        dist.init_process_group("nccl", rank=rank, world_size=size)
        x = torch.randn(64, 64).to(rank)  # a device index, as PyTorch takes it
        dist.all_reduce(x)
        seen.append((rank, x.device.type))

    assert torch.multiprocessing.spawn(worker, args=(2,), nprocs=2) is None
    assert sorted(seen) == [(0, "cuda"), (1, "cuda")]
    with pytest.raises(torch.multiprocessing.ProcessRaisedException, match="rank 1"):
        torch.multiprocessing.spawn(lambda rank: [][0] if rank == 1 else None, nprocs=2)
    torch.multiprocessing.set_start_method("spawn", force=True)
    assert torch.multiprocessing.get_start_method() == "spawn" and "fork" in torch.multiprocessing.get_all_start_methods()
    assert torch.multiprocessing.cpu_count() >= 1
    assert torch.hub.get_dir().endswith("hub")
    torch.hub.set_dir("/tmp/hub")
    assert torch.hub.get_dir() == "/tmp/hub"
    for call in (lambda: torch.hub.load_state_dict_from_url("https://example.org/w.pt"),
                 lambda: torch.hub.download_url_to_file("https://example.org/w.pt", "/tmp/w"),
                 lambda: torch.hub.load("repo", "model")):
        with pytest.raises(NotImplementedError):
            call()
    assert torch.accelerator.is_available() and torch.accelerator.current_accelerator().type == "cuda"
    assert torch.accelerator.device_count() >= 1 and torch.accelerator.current_device_index() == 0
    torch.accelerator.set_device_index(0)
    torch.accelerator.synchronize()
    assert torch.randn(2, device=0).is_cuda and torch.randn(2, device="cpu").to(0).is_cuda
    syntorch.trace_manager.stats()


def test_optimizer_state_dicts_samplers_and_summary_writers():
    syntorch.init(hw=config("h100_sxm5_80gb.json"))
    model = nn.Linear(64, 64)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    assert opt.state_dict()["state"] == {} and opt.state_dict()["param_groups"][0]["params"] == [0, 1]
    model(torch.randn(8, 64)).sum().backward()
    opt.step()
    sd = opt.state_dict()
    assert set(sd["state"][0]) == {"exp_avg", "exp_avg_sq", "step"} and sd["state"][0]["exp_avg"].shape == (64, 64)
    assert sd["param_groups"][0]["lr"] == 1e-3 and len(opt.state) == 2
    sd["param_groups"][0]["lr"] = 5e-4
    host = {"state": {i: {k: v.cpu() if v.dim() else v for k, v in s.items()} for i, s in sd["state"].items()},
            "param_groups": sd["param_groups"]}
    fresh = torch.optim.AdamW(model.parameters())
    fresh.load_state_dict(host)
    assert fresh.param_groups[0]["lr"] == 5e-4
    with pytest.raises(ValueError, match="number of parameter groups"):
        fresh.load_state_dict({"state": {}, "param_groups": []})
    with pytest.raises(ValueError, match="doesn't match"):
        fresh.load_state_dict({"state": {}, "param_groups": [{"params": [0]}]})
    with pytest.raises(KeyError):
        fresh.load_state_dict({})
    extra = nn.Linear(64, 2)
    opt.add_param_group({"params": extra.parameters(), "lr": 1e-2})
    assert len(opt.param_groups) == 2 and opt.param_groups[1]["betas"] == (0.9, 0.999)
    with pytest.raises(ValueError, match="more than one"):
        opt.add_param_group({"params": extra.weight})
    with pytest.raises(TypeError):
        opt.add_param_group([extra.weight])
    sgd = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    model(torch.randn(8, 64)).sum().backward()
    sgd.step()
    assert set(sgd.state_dict()["state"][0]) == {"momentum_buffer", "step"}
    endless = RandomSampler(range(10), replacement=True, num_samples=10 ** 12)
    it = iter(endless)
    assert len(endless) == 10 ** 12 and 0 <= next(it) < 10  # drawn lazily
    loss = nn.CrossEntropyLoss()(torch.randn(4, 5), torch.softmax(torch.randn(4, 5), 1))  # class probabilities
    assert loss.shape == () and F.cross_entropy(torch.randn(4, 5), torch.rand(4, 5), label_smoothing=0.1,
                                                reduction="none").shape == (4,)
    with pytest.raises(RuntimeError, match="input's shape"):
        F.cross_entropy(torch.randn(4, 5), torch.rand(4, 3))
    assert torch.device(1) == "cuda:1"
    from syntorch.torch.utils.tensorboard import SummaryWriter
    with SummaryWriter("runs/x") as writer:
        writer.add_scalar("loss", 0.5, 1)
        writer.add_scalars("lr", {"a": 1.0, "b": 2.0}, 1)
        writer.add_histogram("w", torch.randn(3))
        writer.add_text("note", "hi")
        writer.add_graph(model)
        writer.add_hparams({"lr": 1e-3}, {"loss": 0.5})
        writer.flush()
    assert writer.closed and writer.scalars == [("loss", 1, 0.5), ("lr/a", 1, 1.0), ("lr/b", 1, 2.0)]
    syntorch.trace_manager.stats()


def test_review_fixes_hold():
    """Custom functions free their memory, unreduced cross-entropy keeps the target's shape,
    self-attention packs its projections, copy=True copies, collated floats are float64, the
    binary cross-entropies take a weight third, and a peak reset leaves the run's peak."""
    syntorch.init(hw=config("h100_sxm5_80gb.json"))

    class Square(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            y = x * x
            ctx.save_for_backward(x, y)  # an output saved too
            return y

        @staticmethod
        def backward(ctx, g):
            x, y = ctx.saved_tensors
            return g * x

    w = torch.randn(1024, 1024, requires_grad=True)
    levels = []
    for _ in range(4):
        y = Square.apply(w * 1.0)
        assert y.requires_grad
        y.sum().backward()
        del y
        levels.append(torch.cuda.memory_allocated())
    assert levels[1] == levels[2] == levels[3]  # nothing kept from one step to the next
    loss = F.cross_entropy(torch.randn(2, 5, 7), torch.randint(0, 5, (2, 7)), reduction="none")
    assert loss.shape == (2, 7) and F.cross_entropy(torch.randn(5), torch.randint(0, 5, ())).shape == ()
    syntorch.trace_manager.stats()
    syntorch.init(hw=config("h100_sxm5_80gb.json"))
    mha = nn.MultiheadAttention(64, 8, batch_first=True)
    x = torch.randn(2, 10, 64)
    mha(x, x, x, need_weights=False)
    table = syntorch.trace_manager.dump(path=os.devnull)
    import re
    assert re.search(r"aten::linear\s+2\s", table), table  # the packed input projection and the output one
    syntorch.init(hw=config("h100_sxm5_80gb.json"))
    x = torch.randn(4)
    assert x.to("cuda", copy=True).data_ptr() != x.data_ptr() and x.to(torch.float32, copy=True).data_ptr() != x.data_ptr()
    assert default_collate([0.5, 1.5]).dtype == torch.float64 and default_collate([1, 2]).dtype == torch.int64
    p, t, weight = torch.rand(4, 3), torch.rand(4, 3), torch.rand(4, 3)
    assert F.binary_cross_entropy(p, t, weight).shape == () and F.binary_cross_entropy_with_logits(p, t, weight).shape == ()
    assert F.binary_cross_entropy_with_logits(p, t, pos_weight=torch.rand(3), reduction="none").shape == (4, 3)
    big = torch.empty(256 * 2 ** 20, dtype=torch.int8)
    del big
    torch.cuda.reset_peak_memory_stats()
    assert syntorch.trace_manager.stats()["peak_memory_bytes"][0] >= 256 * 2 ** 20


def test_uint8_tensors_and_byte_conversions():
    import numpy as np
    syntorch.init(hw=config("h100_sxm5_80gb.json"))
    x = torch.zeros(2, 3, dtype=torch.uint8)
    assert x.dtype == torch.uint8 and repr(x.dtype) == "torch.uint8" and x.element_size() == 1
    assert torch.empty(4).byte().dtype == torch.uint8 and torch.empty(4).char().dtype == torch.int8
    assert (x + torch.zeros(3, dtype=torch.int8)).dtype == torch.int32  # PyTorch's int16, not modelled
    assert (x.float() * 2).dtype == torch.float32
    assert torch.from_numpy(np.zeros(3, np.uint8)).dtype == torch.uint8
    assert x.cpu().numpy().dtype == np.uint8
    syntorch.trace_manager.stats()


def test_prod_bucketize_and_adadelta():
    syntorch.init(hw=config("h100_sxm5_80gb.json"))
    x = torch.randn(4, 8, requires_grad=True)
    p = x.prod(1)
    assert p.shape == (4,) and torch.prod(x).shape == () and torch.prod(x, 0, keepdim=True).shape == (1, 8)
    assert torch.ones(3, dtype=torch.int32).prod().dtype == torch.int64
    p.sum().backward()
    assert x.grad.shape == (4, 8)
    with pytest.raises(IndexError):
        x.prod(2)
    b = torch.bucketize(torch.randn(5, 3), torch.tensor([-1.0, 0.0, 1.0]))
    assert b.shape == (5, 3) and b.dtype == torch.int64
    assert torch.bucketize(torch.randn(2), torch.tensor([0.0]), out_int32=True).dtype == torch.int32
    w = torch.randn(16, 16, requires_grad=True)
    opt = torch.optim.Adadelta([w], lr=1.0, rho=0.95)
    (w * w).sum().backward()
    opt.step()
    assert set(next(iter(opt.state.values()))) == {"square_avg", "acc_delta", "step"}
    with pytest.raises(ValueError, match="rho"):
        torch.optim.Adadelta([w], rho=1.5)
    syntorch.trace_manager.stats()


def test_recurrent_layers_have_pytorchs_parameters_and_shapes():
    syntorch.init(hw=config("h100_sxm5_80gb.json"))
    lstm = nn.LSTM(8, 16, num_layers=2, batch_first=True, bidirectional=True)
    assert [n for n, _ in lstm.named_parameters()][:4] == ["weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0"]
    assert lstm.weight_ih_l1.shape == (64, 32) and lstm.weight_hh_l0_reverse.shape == (64, 16)
    out, (h, c) = lstm(torch.randn(4, 10, 8))
    assert out.shape == (4, 10, 32) and h.shape == (4, 4, 16) and c.shape == (4, 4, 16)
    out.sum().backward()
    assert lstm.weight_hh_l1_reverse.grad.shape == (64, 16)
    gru = nn.GRU(8, 16)
    y, h = gru(torch.randn(10, 8))  # unbatched
    assert y.shape == (10, 16) and h.shape == (1, 16)
    rnn = nn.RNN(8, 16, nonlinearity="relu")
    y, h = rnn(torch.randn(10, 2, 8), torch.zeros(1, 2, 16))
    assert y.shape == (10, 2, 16)
    h, c = nn.LSTMCell(8, 16)(torch.randn(3, 8))
    assert h.shape == (3, 16) and nn.GRUCell(8, 16)(torch.randn(8)).shape == (16,)
    assert nn.RNNCell(8, 16)(torch.randn(2, 8)).shape == (2, 16)
    with pytest.raises(RuntimeError, match="Expected hidden size"):
        rnn(torch.randn(10, 2, 8), torch.zeros(2, 2, 16))
    with pytest.raises(ValueError, match="nonlinearity"):
        nn.RNN(8, 16, nonlinearity="gelu")
    with pytest.raises(NotImplementedError, match="proj_size"):
        nn.LSTM(8, 16, proj_size=4)
    assert "LSTM(8, 16, num_layers=2, batch_first=True, bidirectional=True)" == repr(lstm)
    syntorch.trace_manager.stats()


def test_integer_tensors_meet_python_floats_as_pytorch_promotes():
    syntorch.init(hw=config("h100_sxm5_80gb.json"))
    i = torch.ones(4, dtype=torch.int64)
    u = torch.ones(4, dtype=torch.uint8)
    assert (i * 1.5).dtype == torch.float32 and (u * 1.5).dtype == torch.float32 and (1.5 * u).dtype == torch.float32
    assert (i / 2).dtype == torch.float32 and (2 / i).dtype == torch.float32 and (i / i).dtype == torch.float32
    assert (i + 1).dtype == torch.int64 and (u * 2).dtype == torch.uint8 and (i - 1.0).dtype == torch.float32
    assert ((i > 0) + 1).dtype == torch.int64 and (torch.ones(2) * 3).dtype == torch.float32
    assert (torch.ones(2, dtype=torch.float16) * 2.5).dtype == torch.float16
    with pytest.raises(TypeError):
        i + "a"
    syntorch.trace_manager.stats()


def test_autograd_grad_returns_gradients_without_touching_grad():
    syntorch.init(hw=config("h100_sxm5_80gb.json"))
    x = torch.randn(8, 16, requires_grad=True)
    w = torch.randn(16, 4, requires_grad=True)
    y = (x @ w).tanh().sum()
    (gx,) = torch.autograd.grad(y, x, retain_graph=True)
    assert gx.shape == x.shape and x.grad is None and w.grad is None
    gx, gw = torch.autograd.grad([y], [x, w], grad_outputs=[torch.ones_like(y)], retain_graph=True)
    assert gw.shape == w.shape
    other = torch.randn(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="allow_unused"):
        torch.autograd.grad(y, [x, other], retain_graph=True)
    gx, none = torch.autograd.grad(y, [x, other], retain_graph=True, allow_unused=True)
    assert none is None
    gx, zeros = torch.autograd.grad(y, [x, other], retain_graph=True, materialize_grads=True)
    assert zeros.shape == (3,)
    with pytest.raises(NotImplementedError, match="create_graph"):
        torch.autograd.grad(y, x, create_graph=True)
    # A gradient penalty's first half: the gradient's norm, then the usual backward.
    (gx,) = torch.autograd.grad(y, x, grad_outputs=None)
    with pytest.raises(RuntimeError):
        y.backward()  # the graph was freed, as PyTorch's
