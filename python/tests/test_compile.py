"""torch.compile: fused generated kernels beside eager mode's library calls, compile time on the
first call, guards and recompiles, graph breaks, reduce-overhead's CUDA graphs, OptimizedModule."""

import json
import warnings
from pathlib import Path

import pytest

import syntorch
import syntorch.clock
import syntorch.torch as torch
import syntorch.torch.nn.functional as F
from syntorch.torch import nn

ROOT = Path(__file__).resolve().parents[2]


def config(name):
    return str(ROOT / "hw_configs" / name)


class Block(nn.Module):
    def __init__(self, d=1024):
        super().__init__()
        self.ln = nn.LayerNorm(d)
        self.fc = nn.Linear(d, 4 * d)
        self.proj = nn.Linear(4 * d, d)

    def forward(self, x):
        h = F.gelu(self.fc(self.ln(x))) * 2.0 + 1.0
        return x + self.proj(h)


def kernels(path):
    events = json.load(open(path))
    events = events["traceEvents"] if isinstance(events, dict) else events
    return [e for e in events if e.get("cat") == "kernel"], events


def run_block(tmp_path, compiled, steps=3, **kwargs):
    path = tmp_path / f"{'compiled' if compiled else 'eager'}.json"
    syntorch.init(hw=config("h100_sxm5_80gb.json"), trace=str(path))
    m = Block()
    if compiled:
        m = torch.compile(m, **kwargs)
    x = torch.randn(8, 512, 1024, requires_grad=True)
    for _ in range(steps):
        m(x).sum().backward()
    torch.cuda.synchronize()
    stats = syntorch.trace_manager.stats()
    return kernels(path), stats, m


def test_compiled_and_eager_differ_in_the_trace_exactly_by_the_fused_kernels(tmp_path):
    (eager, _), eager_stats, _ = run_block(tmp_path, False)
    (compiled, events), compiled_stats, m = run_block(tmp_path, True)
    library = lambda ks: sorted(k["name"] for k in ks if k["name"].startswith("gemm") or k["name"] == "sum")
    assert library(eager) == library(compiled)  # matmuls (and eager's own sums outside) unchanged
    generated = [k for k in compiled if k["name"].startswith("triton_")]
    names = {k["name"] for k in generated}
    assert "triton_poi_fused_gelu_mul_add_1" in names and "triton_red_fused_layer_norm_0" in names
    assert any("gelu_backward" in n for n in names)  # the backward graph is fused too
    assert not {"gelu", "mul", "gelu_backward"} & {k["name"] for k in compiled}
    assert len(compiled) < len(eager)
    assert sum(k["dur"] for k in compiled) < sum(k["dur"] for k in eager)
    # The generated kernel of gelu(h) * 2 + 1 reads h and writes its result once.
    fused = next(k for k in generated if k["name"] == "triton_poi_fused_gelu_mul_add_1")
    assert fused["args"]["hbm_bytes"] == 2 * 8 * 512 * 4096 * 4
    # Compiling costs the host on the first call only, forward and backward.
    spans = [e for e in events if e.get("name", "").startswith("torch.compile:")]
    assert len(spans) == 2 and any("backward of" in e["name"] for e in spans)
    assert compiled_stats["simulated_time_s"] > 1.0 > eager_stats["simulated_time_s"]
    assert list(m.state_dict())[0].startswith("_orig_mod.")
    assert m.fc.out_features == 4096 and isinstance(m._orig_mod, Block)
    assert "OptimizedModule" in repr(m)


def test_new_shapes_recompile_then_run_as_dynamic_and_the_cache_has_a_limit():
    syntorch.init(hw=config("h100_sxm5_80gb.json"))
    torch._dynamo.reset()
    seen = []

    @torch.compile
    def f(x):
        seen.append(torch.compiler.is_compiling() and torch._dynamo.is_compiling())
        return torch.relu(x) * 2

    for n in (8, 16, 32, 64):
        f(torch.randn(n, 128))
    assert all(seen)
    counters = torch._dynamo.utils.counters
    assert counters["stats"]["unique_graphs"] == 2  # static, then one dynamic graph for the rest
    assert counters["recompiles"]["test_new_shapes_recompile_then_run_as_dynamic_and_the_cache_has_a_limit.<locals>.f"] == 1
    assert not torch.compiler.is_compiling()

    g = torch.compile(lambda x: x + 1, dynamic=False)
    with pytest.warns(UserWarning, match="cache_size_limit"):
        for n in range(1, torch._dynamo.config.cache_size_limit + 3):
            g(torch.randn(n))
    assert counters["stats"]["cache_limit_fallbacks"] == 2
    torch.compiler.reset()
    assert not counters


def test_value_reads_break_the_graph_and_fullgraph_refuses_them():
    syntorch.init(hw=config("h100_sxm5_80gb.json"))

    def f(x):
        y = torch.exp(x) + 1
        if y.sum() > 0:  # data-dependent control flow: a graph break
            y = y * 3
        return torch.sigmoid(y)

    out = torch._dynamo.explain(f)(torch.randn(64, 64))
    assert out.graph_count == 2 and out.graph_break_count == 1
    assert "data-dependent" in out.break_reasons[0].reason and "Graph Count: 2" in str(out)
    with pytest.raises(torch._dynamo.exc.Unsupported, match="fullgraph"):
        torch.compile(f, fullgraph=True)(torch.randn(64, 64))

    inside = []

    @torch.compiler.disable
    def helper(t):
        inside.append(torch.compiler.is_compiling())
        return t * 2

    def g(x):
        torch._dynamo.graph_break()
        return helper(torch.exp(x)) + 1
    out = torch._dynamo.explain(g, torch.randn(8))
    # The disabled function runs eagerly between two graphs.
    assert out.graph_count == 2 and out.graph_break_count == 2 and inside == [False]
    assert "torch.compiler.disable" in out.break_reasons[1].reason and "BreakReason" in repr(out.break_reasons[1])
    assert torch._dynamo.disable(helper)(torch.randn(2)).shape == (2,)
    assert torch._dynamo.utils.counters["graph_break"]["never seen"] == 0
    assert torch.compiler.allow_in_graph(helper) is helper
    assert torch.compiler.assume_constant_result(helper) is helper

    class WithMethod(nn.Module):
        @torch.compile
        def forward(self, x):
            return torch.relu(x) + 1
    assert WithMethod()(torch.randn(3)).shape == (3,)


def test_reduce_overhead_records_a_cuda_graph_and_replays_it():
    def host_time(mode):
        syntorch.init(hw=config("h100_sxm5_80gb.json"))
        m = torch.compile(nn.Sequential(*[nn.Linear(64, 64) for _ in range(8)]), mode=mode)
        x = torch.randn(4, 64)
        with torch.no_grad():
            for _ in range(3):
                m(x)  # compile, then (reduce-overhead) record
            start = syntorch.clock.now()
            for _ in range(20):
                m(x)
            elapsed = syntorch.clock.now() - start
        return elapsed, m._compiled
    default_s, _ = host_time(None)
    graphs_s, compiled = host_time("reduce-overhead")
    runs = next(iter(compiled._cache.values())).runs
    assert len(runs) == 1 and next(iter(runs.values()))[1] > 0  # calls, its CUDA graph
    assert graphs_s < default_s / 2  # one graph launch instead of 16 kernel launches per call


def test_torch_compile_checks_its_arguments_as_pytorch_does():
    with pytest.raises(torch._dynamo.exc.InvalidBackend):
        torch.compile(lambda x: x, backend="tvm2")
    with pytest.raises(RuntimeError, match="Either mode or options"):
        torch.compile(lambda x: x, mode="max-autotune", options={"triton.cudagraphs": False})
    with pytest.raises(RuntimeError, match="Unrecognized mode"):
        torch.compile(lambda x: x, mode="fastest")
    with pytest.raises(NotImplementedError, match="custom backend"):
        torch.compile(lambda x: x, backend=lambda gm, inputs: gm)
    assert torch.compile(disable=True)(len) is len
    assert "inductor" in torch._dynamo.list_backends()
    t = torch.randn(4, 4)
    torch._dynamo.mark_dynamic(t, 0)
    torch._dynamo.mark_static(t, 0)
    syntorch.init(hw=config("h100_sxm5_80gb.json"))
    eager = torch.compile(lambda x: x * 2, backend="eager")
    assert eager(t).shape == (4, 4)
    graphs = torch.compile(lambda x: torch.relu(x * 2), backend="cudagraphs")
    for _ in range(3):
        graphs(t)
    assert graphs.last_stats["generated_kernels"] == 0 and graphs.last_stats["launched_kernels"] == 2


def test_a_dynamic_graph_records_a_cuda_graph_per_size_and_replays_only_its_own_plan():
    syntorch.init(hw=config("h100_sxm5_80gb.json"))
    f = torch.compile(lambda x: torch.relu(x) * 2 + 1, mode="reduce-overhead", dynamic=True)
    for n in (8, 8, 8, 16, 16, 16, 8):
        f(torch.randn(n, 64))
    entry = next(iter(f._cache.values()))
    assert len(f._cache) == 1 and len(entry.runs) == 2  # one graph, a CUDA graph per size
    assert f.last_stats["replayed"]
    assert all(run[1] > 0 for run in entry.runs.values())
    # A new simulation compiles (and records) again: its rank has none of the old one's graphs.
    syntorch.init(hw=config("h100_sxm5_80gb.json"))
    for _ in range(3):
        f(torch.randn(8, 64))
    assert f.last_stats["replayed"] and len(entry.runs) == 3 and len(entry.compiled_on) == 2


def test_the_gpt2_example_compiles_faster_steps_after_a_slow_first_one():
    """examples/torch_compile_gpt2.py, at a small size: the first compiled step holds the compile,
    the later ones beat eager mode's."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("torch_compile_gpt2", ROOT / "examples" / "torch_compile_gpt2.py")
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    shape = dict(dim=128, heads=4, layers=2, block=128)
    eager = example.step_times_ms(False, config("a100_sxm4_80gb.json"), steps=3, batch=4, **shape)
    compiled = example.step_times_ms(True, config("a100_sxm4_80gb.json"), steps=3, batch=4, **shape)
    assert compiled[0] > 1000 * example_compile_floor_s() > eager[0]
    assert compiled[2] < eager[2]


def example_compile_floor_s():
    """The least a first compiled training step costs: the forward and backward graphs' fixed parts."""
    return 2 * torch._dynamo.eval_frame.COMPILE_COSTS["per_graph_s"]
