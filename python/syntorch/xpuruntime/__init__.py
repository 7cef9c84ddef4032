"""xpuruntime, as its design describes it, on the simulated machine: the core's KernelPolicy and
its policy calls here, the PyTorch extension in xpuruntime.pytorch. Under `python -m
syntorch.run` `import xpuruntime` resolves to this package, so the design's examples run as
written."""

from syntorch import KernelPolicy, set_kernel_policy, get_kernel_policy, clear_kernel_policy  # noqa: F401

__all__ = ["KernelPolicy", "set_kernel_policy", "get_kernel_policy", "clear_kernel_policy"]
