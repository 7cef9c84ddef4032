"""The Python package runs PyTorch-style code on the simulated machine."""

import os

import pytest

import syntorch
import syntorch.torch as torch
import syntorch.torch.nn as nn
import syntorch.torch.nn.functional as F

SOURCE = os.environ.get("SYNTORCH_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))


def config(name):
    return os.path.join(SOURCE, "hw_configs", name)


def test_tensors_have_pytorchs_shapes_dtypes_and_devices():
    syntorch.init(hw=config("h100_sxm5_80gb.json"))
    x = torch.empty(4, 8, dtype=torch.float16, device="cuda")
    assert x.shape == (4, 8) and x.size() == (4, 8) and x.size(1) == 8 and x.size(-1) == 8
    assert x.dim() == 2 and x.numel() == 32 and x.dtype == torch.float16 and repr(x.dtype) == "torch.float16"
    assert x.device == "cuda" and x.is_cuda and x.stride() == (8, 1)
    y = x.view(2, 16).transpose(0, 1)
    assert y.shape == (16, 2) and not y.is_contiguous()
    assert torch.zeros((3, 5)).dtype == torch.float32  # the default dtype
    assert (x @ torch.empty(8, 2, dtype=torch.float16)).shape == (4, 2)
    assert (x * 0.5 + x).shape == (4, 8)
    with pytest.raises(RuntimeError):
        x @ torch.empty(3, 2, dtype=torch.float16)  # the inner sizes differ, as PyTorch refuses
    with pytest.raises(RuntimeError):
        torch.empty(2, -1)
    syntorch.trace_manager.stats()


def test_a_python_module_runs_as_kernels_with_their_flops():
    syntorch.init(hw=config("h100_sxm5_80gb.json"))

    class MLP(nn.Module):
        def __init__(self, d, h):
            super().__init__()
            self.up = nn.Linear(d, h, bias=False, dtype=torch.float16)
            self.act = nn.GELU()
            self.down = nn.Linear(h, d, bias=False, dtype=torch.float16)

        def forward(self, x):
            return self.down(self.act(self.up(x)))

    model = MLP(1024, 4096)
    names = [n for n, _ in model.named_parameters()]
    assert names == ["up.weight", "down.weight"]
    assert sum(p.numel() for p in model.parameters()) == 2 * 1024 * 4096
    x = torch.randn(256, 1024, dtype=torch.float16)
    y = model(x)
    assert y.shape == (256, 1024)
    s = syntorch.trace_manager.stats()
    gemm_flops = 2 * (2 * 256 * 1024 * 4096)
    assert s["flops"] >= gemm_flops and s["flops"] < 1.01 * gemm_flops + 256 * 4096 * 20
    assert s["kernels"] >= 3 and s["simulated_time_s"] > 0
    assert s["peak_memory_bytes"][0] >= 2 * 1024 * 4096 * 2


def test_the_machine_decides_the_time():
    def run(hw):
        syntorch.init(hw=config(hw))
        a = torch.empty(8192, 8192, dtype=torch.float16)
        b = torch.empty(8192, 8192, dtype=torch.float16)
        for _ in range(4):
            torch.matmul(a, b)
        return syntorch.trace_manager.stats()["simulated_time_s"]

    assert run("a100_sxm4_80gb.json") > 2 * run("h100_sxm5_80gb.json")


def test_a_simulated_out_of_memory_is_pytorchs_error():
    syntorch.init(hw=config("h100_sxm5_80gb.json"))
    with pytest.raises(torch.cuda.OutOfMemoryError):
        torch.empty(100 * 2**30, dtype=torch.float16)
    assert syntorch.trace_manager.stats()["out_of_memory"]


def test_bad_machine_arguments_are_value_errors():
    with pytest.raises(ValueError, match="no such file"):
        syntorch.init(hw="does_not_exist.json")
    with pytest.raises(ValueError, match="--set"):
        syntorch.init(hw=config("h100_sxm5_80gb.json"), set=["/components/gpu/components/hbm/bandwidth"])
    with pytest.raises(TypeError):
        syntorch.init(set="/name=x")
    with pytest.raises(ValueError, match="matmull"):
        syntorch.init(hw=config("h100_sxm5_80gb.json"), policy="matmull=tiled")
    # A refused init() is not remembered: the next op starts a run on the last arguments that made one.
    assert torch.empty(4, 4).shape == (4, 4)


def test_indexing_gives_views_and_index_assignment_copies_into_them():
    syntorch.init(hw=config("h100_sxm5_80gb.json"))
    cache = torch.zeros(2, 8, 1024, 128, dtype=torch.float16)
    assert cache[0].shape == (8, 1024, 128)
    assert cache[:, :, 5].shape == (2, 8, 128)
    assert cache[..., :64].shape == (2, 8, 1024, 64)
    assert cache[:, None, 1:3].shape == (2, 1, 2, 1024, 128)
    assert cache[:, :, ::2].shape == (2, 8, 512, 128)
    assert cache[-1, -1, -1, -1].shape == ()
    with pytest.raises(IndexError):
        cache[2]
    with pytest.raises(IndexError):
        cache[0, 0, 0, 0, 0]
    kv = torch.randn(2, 8, 128, dtype=torch.float16)
    cache[:, :, 7] = kv        # a copy kernel into the cache's slice
    cache[:, :, 8] = 0.0       # a fill kernel
    assert torch.empty(1, dtype=torch.float16).item() == 0.0
    torch.cuda.synchronize()
    s = syntorch.trace_manager.stats()
    assert s["kernels"] >= 4  # zeros, randn, the copy, the fill (and the item's copy)


def test_memory_queries_follow_the_caching_allocator():
    syntorch.init(hw=config("h100_sxm5_80gb.json"))
    assert torch.cuda.memory_allocated() == 0
    x = torch.empty(1024, 1024, dtype=torch.float16)   # 2 MiB
    assert torch.cuda.memory_allocated() == 2 * 2**20
    assert torch.cuda.memory_reserved() >= 2 * 2**20
    del x
    assert torch.cuda.memory_allocated() == 0
    assert torch.cuda.max_memory_allocated() == 2 * 2**20
    assert torch.cuda.memory_reserved() >= 2 * 2**20     # cached, as PyTorch's allocator keeps it
    torch.cuda.empty_cache()
    assert torch.cuda.memory_reserved() == 0
    assert "allocated" in torch.cuda.memory_summary()
    syntorch.trace_manager.stats()


def test_a_tensor_outliving_its_run_does_not_touch_the_next_one():
    syntorch.init(hw=config("h100_sxm5_80gb.json"))
    old = torch.empty(1024, 1024, dtype=torch.float16)
    syntorch.trace_manager.stats()
    syntorch.init(hw=config("h100_sxm5_80gb.json"))
    new = torch.empty(512, 1024, dtype=torch.float16)
    del old                                            # released with its run gone: nothing to free
    assert torch.cuda.memory_allocated() == 2**20
    assert new.shape == (512, 1024)
    syntorch.trace_manager.stats()


def test_the_sdpa_backend_switches_choose_the_attention_kernel():
    from syntorch.torch.nn.attention import SDPBackend, sdpa_kernel

    def attention(context):
        syntorch.init(hw=config("h100_sxm5_80gb.json"))
        q = torch.empty(2, 16, 1024, 64, dtype=torch.float16)
        with context:
            F.scaled_dot_product_attention(q, q, q, is_causal=True)
        stats = syntorch.trace_manager.stats()
        # The finished run's ops and kernels by name, as trace_manager.dump() prints them.
        return stats["kernels"], stats["peak_memory_bytes"][0], stats["simulated_time_s"], syntorch._session.console()

    import contextlib
    fused = attention(contextlib.nullcontext())
    math = attention(sdpa_kernel(SDPBackend.MATH))
    assert fused[0] == 1 and math[0] == 3            # QK^T, softmax and AV
    assert math[1] - fused[1] >= 2 * 16 * 1024 * 1024 * 2   # the scores and probabilities in memory
    flash2 = attention(sdpa_kernel([SDPBackend.FLASH_ATTENTION, SDPBackend.MATH]))
    cudnn = attention(sdpa_kernel(SDPBackend.CUDNN_ATTENTION))
    assert cudnn[2] < flash2[2]                      # Hopper's cuDNN kernel overlaps its softmax
    efficient = attention(torch.backends.cuda.sdp_kernel(enable_flash=False, enable_math=False, enable_cudnn=False))
    assert efficient[0] == 1
    assert "mem_efficient" in efficient[3] and "flash_v3" in fused[3] and "flash_v2" in flash2[3]
    # The switches one by one, and restored after each block.
    assert torch.backends.cuda.flash_sdp_enabled() and torch.backends.cuda.math_sdp_enabled()
    assert torch.backends.cuda.mem_efficient_sdp_enabled() and torch.backends.cuda.cudnn_sdp_enabled()
    for switch in (torch.backends.cuda.enable_flash_sdp, torch.backends.cuda.enable_mem_efficient_sdp,
                   torch.backends.cuda.enable_cudnn_sdp):
        switch(False)
    assert not torch.backends.cuda.flash_sdp_enabled()
    assert attention(contextlib.nullcontext())[0] == 3
    torch.backends.cuda.enable_math_sdp(False)
    syntorch.init(hw=config("h100_sxm5_80gb.json"))
    q = torch.empty(1, 8, 128, 64, dtype=torch.float16)
    with pytest.raises(ValueError, match="no scaled_dot_product_attention backend"):
        F.scaled_dot_product_attention(q, q, q)
    for switch in (torch.backends.cuda.enable_flash_sdp, torch.backends.cuda.enable_mem_efficient_sdp,
                   torch.backends.cuda.enable_math_sdp, torch.backends.cuda.enable_cudnn_sdp):
        switch(True)
    with pytest.raises(ValueError, match="expected SDPBackend"):
        sdpa_kernel(SDPBackend.ERROR)
    assert SDPBackend(0) is SDPBackend.MATH          # PyTorch's values
    syntorch.trace_manager.stats()


def test_policy_as_code_takes_effect_from_the_next_op():
    def attention_time(**policy):
        syntorch.init(hw=config("h100_sxm5_80gb.json"))
        q = torch.empty(4, 32, 4096, 128, dtype=torch.float16)
        if policy:
            syntorch.set_kernel_policy(**policy)
        F.scaled_dot_product_attention(q, q, q, is_causal=True)
        return syntorch.trace_manager.stats()["simulated_time_s"]

    fa2 = attention_time(scaled_dot_product_attention="flash_v2")
    fa3 = attention_time(attention="flash_v3")
    assert fa3 < fa2                                   # FlashAttention-3 overlaps its softmax on H100
    assert str(syntorch.get_kernel_policy()) == "attention=flash_v3"
    assert str(syntorch.KernelPolicy(matmul="cublasLt")) == "gemm=cublasLt,bmm=cublasLt"
    syntorch.init(hw=config("a100_sxm4_80gb.json"))
    syntorch.set_kernel_policy(attention="flash_v3")
    q = torch.empty(1, 8, 128, 64, dtype=torch.float16)
    with pytest.raises(ValueError, match="flash_v3"):
        F.scaled_dot_product_attention(q, q, q)         # A100 has no asynchronous matrix units
    with pytest.raises(ValueError, match="unknown implementation"):
        syntorch.set_kernel_policy("gemm=fastest")
    syntorch.clear_kernel_policy()
    syntorch.trace_manager.stats()
    with pytest.raises(ValueError, match="unknown op"):
        syntorch.init(hw=config("h100_sxm5_80gb.json"), policy="matmull=tiled")


def test_pytorch_spellings_users_reach_for_first():
    syntorch.init(hw=config("h100_sxm5_80gb.json"))
    x = torch.empty(2, 3, 4, dtype=torch.float16)
    assert x.view(-1).shape == (24,) and x.reshape(2, -1).shape == (2, 12) and torch.reshape(x, (-1, 4)).shape == (6, 4)
    assert x.permute(2, 0, 1).shape == (4, 2, 3) and x.permute((2, 0, 1)).shape == (4, 2, 3)
    assert torch.arange(0, 128, 2).shape == (64,) and torch.arange(10).shape == (10,)
    assert (-x).shape == x.shape and (1 - x).shape == x.shape
    assert torch.float16 != None and not (torch.float16 == "auto")  # noqa: E711
    q = torch.empty(1, 8, 16, 64, dtype=torch.float16)
    y = F.scaled_dot_product_attention(q, q, q, attn_mask=None, dropout_p=0.0, is_causal=True)
    assert y.shape == (1, 8, 16, 64)

    class WithIds(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.empty(4, 4)
            self.register_buffer("ids", torch.arange(4))

    m = WithIds().half()
    assert m.w.dtype == torch.float16 and m.ids.dtype == torch.int64   # integer buffers keep their dtype
    syntorch.trace_manager.stats()


def test_an_op_the_device_refuses_can_be_issued_again():
    syntorch.init(hw=config("a100_sxm4_80gb.json"), policy="attention=flash_v3")
    q = torch.empty(1, 8, 128, 64, dtype=torch.float16)
    for _ in range(2):                                  # the refusal leaves nothing half-made behind
        with pytest.raises(ValueError, match="flash_v3"):
            F.scaled_dot_product_attention(q, q, q)
    syntorch.clear_kernel_policy()
    assert F.scaled_dot_product_attention(q, q, q).shape == (1, 8, 128, 64)
    syntorch.trace_manager.stats()


def test_ops_after_the_run_ended_refuse_and_a_new_run_keeps_the_machine():
    syntorch.init(hw=config("a100_sxm4_80gb.json"))
    a = torch.empty(64, 64, dtype=torch.float16)
    syntorch.trace_manager.stats()
    with pytest.raises(RuntimeError, match="no run is going"):
        a @ a
    b = torch.empty(8, dtype=torch.float16)             # a new tensor starts a new run, on the same machine
    assert "A100" in syntorch.trace_manager.stats()["machine"]
    assert b.shape == (8,)


def test_profile_writes_a_chrome_trace_of_what_ran_inside(tmp_path):
    import json
    syntorch.init(hw=config("h100_sxm5_80gb.json"))
    path = tmp_path / "trace.json"
    a = torch.empty(1024, 1024, dtype=torch.float16)  # made before: the run goes on through the block
    with syntorch.profile(export_chrome_trace=path) as prof:
        torch.matmul(a, a)
    assert "aten::matmul" in prof.key_averages().table()
    events = json.loads(path.read_text())["traceEvents"]
    names = {e.get("name") for e in events}
    assert any(n and "gemm" in n for n in names), sorted(n for n in names if n)[:20]
    runtime = json.loads((tmp_path / "trace_xrt.json").read_text())["xpuruntime"]
    assert runtime["caching_allocator"] and runtime["allocator"]["allocated_bytes.all.current"] >= 2 * 2 ** 20
    with syntorch.profile():  # nothing exported
        torch.matmul(a, a)
    # An error inside the block is the one raised (ending the run does not mask it).
    with pytest.raises(KeyError):
        with syntorch.profile(export_chrome_trace=tmp_path / "failed.json"):
            raise KeyError("in the block")


def test_in_place_arithmetic_updates_the_tensor_itself():
    """x += y, x.add_(y) and friends update x (a view writes through, nothing is allocated), as in
    PyTorch; index_copy_ writes rows of a cache."""
    syntorch.init(hw=config("h100_sxm5_80gb.json"))
    cache = torch.zeros(2, 16, 8, dtype=torch.float16)
    view = cache[:, 4:8]
    alias = view
    ones = torch.ones(2, 4, 8, dtype=torch.float16)
    before = torch.cuda.memory_allocated()
    view += ones
    view -= 1.0
    view *= ones
    view /= 2.0
    assert view is alias and view.shape == (2, 4, 8)
    assert torch.cuda.memory_allocated() == before  # no new tensor for any of them
    assert view.add_(ones) is view and view.sub_(ones) is view
    assert view.mul_(2.0) is view and view.div_(ones) is view
    cache.index_copy_(1, torch.tensor([0, 1], device="cuda"), torch.ones(2, 2, 8, dtype=torch.float16))
    stats = syntorch.trace_manager.stats()
    assert stats["kernels"] >= 9
