"""xpuruntime.pytorch, the design's PyTorch extension, over syntorch's torch layer:

- set_kernel_policy / get_kernel_policy / clear_kernel_policy: the implementation each op runs
  ("cublas", "cublasLt", "flash_v2", "torch" and the op table's names), from the next op on;
- autocast(dtype=torch.float16, enabled=True, cache_enabled=True): mixed precision;
- capture_graph(warmup_iters=3, pool=None): the named range the design marks graph capture with
  (capture itself: torch.cuda.graph, or CUDAGraphWrapper.capture);
- ops.fused_attention and ops.fused_layernorm with the design's signatures;
- set_allocator(enabled) / reset_allocator(): the caching allocator on, or off (a cudaMalloc and
  a cudaFree per tensor, with their host costs: the allocator ablation);
- profile(...): a torch.profiler window exported as the design's two traces."""

import contextlib
import json

import _syntorch
import syntorch
import syntorch.torch as torch
from syntorch import KernelPolicy, get_kernel_policy, clear_kernel_policy  # noqa: F401

from . import ops  # noqa: F401

__all__ = ["KernelPolicy", "set_kernel_policy", "get_kernel_policy", "clear_kernel_policy", "autocast",
           "capture_graph", "CUDAGraphWrapper", "ops", "set_allocator", "reset_allocator", "profile"]


def set_kernel_policy(policy=None, **kwargs):
    """The design's semantics: a policy, or op=kernel keywords; neither clears the policy."""
    if policy is None and not kwargs:
        clear_kernel_policy()
    else:
        syntorch.set_kernel_policy(policy, **kwargs)


def autocast(dtype=None, enabled=True, cache_enabled=True):
    """Mixed precision in the block (float16 unless told): torch.autocast("cuda", ...)."""
    return torch.autocast("cuda", dtype=dtype if dtype is not None else torch.float16, enabled=enabled,
                          cache_enabled=cache_enabled)


@contextlib.contextmanager
def capture_graph(warmup_iters=3, pool=None):
    """As the design: a "cuda_graph_capture" range on the host timeline around the block, in which
    the program captures (torch.cuda.graph(g)) after its warmup iterations."""
    if warmup_iters < 0:
        raise ValueError(f"capture_graph: warmup_iters must be at least 0, got {warmup_iters}")
    with torch.profiler.record_function("cuda_graph_capture"):
        yield


class CUDAGraphWrapper:
    """capture(fn, *args, **kwargs) runs fn once on a side stream (warmup), then captures it into a
    CUDA graph; replay() launches the graph (one launch, no per-kernel launch cost)."""

    def __init__(self):
        self._graph = None
        self._captured = False

    def capture(self, fn, *args, **kwargs):
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            fn(*args, **kwargs)
        torch.cuda.current_stream().wait_stream(s)
        self._graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self._graph):
            out = fn(*args, **kwargs)
        self._captured = True
        return out

    def replay(self):
        if not self._captured:
            raise RuntimeError("Graph not captured yet")
        self._graph.replay()


_caching = [True]


def set_allocator(enabled=True):
    """enabled: the caching allocator (blocks reused, segments kept); disabled: every tensor is a
    cudaMalloc and its release a cudaFree (which waits for the device), as with
    PYTORCH_NO_CUDA_MEMORY_CACHING=1, each at the host's cost from the hardware config."""
    syntorch.current_session()
    _syntorch.cuda_set_caching_allocator(bool(enabled))
    _caching[0] = bool(enabled)


def reset_allocator():
    """Back to the caching allocator."""
    set_allocator(True)


@contextlib.contextmanager
def profile(activities=None, record_shapes=True, profile_memory=True, with_stack=False, export_chrome_trace=None):
    """A torch.profiler window around the block, yielding the profiler; with export_chrome_trace
    its Chrome trace goes there, and the runtime's own trace next to it (name_xrt.json): the same
    events with the run's runtime data (kernel policy, allocator mode and statistics, the window's
    ops and kernels by name)."""
    activities = activities or [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
    with torch.profiler.profile(activities=activities, record_shapes=record_shapes, profile_memory=profile_memory,
                                with_stack=with_stack) as prof:
        yield prof
    if export_chrome_trace:
        path = str(export_chrome_trace)
        prof.export_chrome_trace(path)
        trace = json.load(open(path))
        policy = get_kernel_policy()
        trace["xpuruntime"] = {
            "kernel_policy": dict(policy.preferences) if policy is not None else {},
            "caching_allocator": _caching[0],
            "allocator": torch.cuda.memory_stats(),
            "summary": prof.key_averages().table(),
        }
        second = path[:-len(".json")] + "_xrt.json" if path.endswith(".json") else path + "_xrt.json"
        with open(second, "w") as f:
            json.dump(trace, f)
