"""torch.backends.cuda: matmul.allow_tf32, the switch over fp32 products' precision, and the switches over
scaled_dot_product_attention's backends (enable_flash_sdp, ..., sdp_kernel)."""

import _syntorch
from syntorch._unsupported import module_getattr as _module_getattr

__getattr__ = _module_getattr("torch.backends.cuda")


class _Matmul:
    """torch.backends.cuda.matmul: allow_tf32 reads and sets torch.set_float32_matmul_precision."""

    @property
    def allow_tf32(self):
        return _syntorch.get_float32_matmul_precision() != "highest"

    @allow_tf32.setter
    def allow_tf32(self, value):
        _syntorch.set_float32_matmul_precision("high" if value else "highest")


matmul = _Matmul()


def is_built():
    return True


# scaled_dot_product_attention's backends: which ones it may choose from (all by default), as
# PyTorch's switches; per thread, as in a process of its own. Each backend has a setter,
# enable_<name>_sdp(enabled), and a getter, <name>_sdp_enabled().
def _switch(backend):
    def enable(enabled):
        _syntorch._set_sdp_enabled(backend, bool(enabled))

    def enabled():
        return _syntorch._sdp_enabled(backend)

    enable.__name__ = enable.__qualname__ = f"enable_{backend}_sdp"
    enabled.__name__ = enabled.__qualname__ = f"{backend}_sdp_enabled"
    return enable, enabled


enable_flash_sdp, flash_sdp_enabled = _switch("flash")
enable_mem_efficient_sdp, mem_efficient_sdp_enabled = _switch("mem_efficient")
enable_math_sdp, math_sdp_enabled = _switch("math")
enable_cudnn_sdp, cudnn_sdp_enabled = _switch("cudnn")


class sdp_kernel:
    """Context manager: only the backends enabled here for the block, the previous switches after
    (PyTorch's deprecated torch.backends.cuda.sdp_kernel; torch.nn.attention.sdpa_kernel is its
    successor)."""

    def __init__(self, enable_flash=True, enable_math=True, enable_mem_efficient=True, enable_cudnn=True):
        self._wanted = {"flash": enable_flash, "math": enable_math, "mem_efficient": enable_mem_efficient,
                        "cudnn": enable_cudnn}
        self._previous = None

    def __enter__(self):
        self._previous = {name: _syntorch._sdp_enabled(name) for name in self._wanted}
        for name, on in self._wanted.items():
            _syntorch._set_sdp_enabled(name, bool(on))
        return self

    def __exit__(self, *exc):
        for name, on in self._previous.items():
            _syntorch._set_sdp_enabled(name, on)
        return False
