"""torch.nn.attention: SDPBackend and sdpa_kernel, the context manager that lets
scaled_dot_product_attention choose only among the given backends (FLASH_ATTENTION: FlashAttention-2;
CUDNN_ATTENTION: cuDNN's fused kernel, FlashAttention-3-class on Hopper; EFFICIENT_ATTENTION: the
memory-efficient kernel; MATH: the unfused ops)."""

import enum

import _syntorch
from syntorch._unsupported import module_getattr as _module_getattr

__all__ = ["SDPBackend", "sdpa_kernel"]

__getattr__ = _module_getattr("torch.nn.attention")


class SDPBackend(enum.IntEnum):
    """scaled_dot_product_attention's backends, with PyTorch's values."""
    ERROR = -1
    MATH = 0
    FLASH_ATTENTION = 1
    EFFICIENT_ATTENTION = 2
    CUDNN_ATTENTION = 3


_SWITCH = {SDPBackend.MATH: "math", SDPBackend.FLASH_ATTENTION: "flash",
           SDPBackend.EFFICIENT_ATTENTION: "mem_efficient", SDPBackend.CUDNN_ATTENTION: "cudnn"}


class sdpa_kernel:
    """Within the block scaled_dot_product_attention chooses only among `backends` (one SDPBackend
    or a list); the switches are as before after it."""

    def __init__(self, backends, set_priority=False):
        if isinstance(backends, SDPBackend):
            backends = [backends]
        backends = list(backends)
        for b in backends:
            if not isinstance(b, SDPBackend) or b == SDPBackend.ERROR:
                raise ValueError(f"sdpa_kernel: expected SDPBackend.MATH, FLASH_ATTENTION, EFFICIENT_ATTENTION or "
                                 f"CUDNN_ATTENTION, got {b!r}")
        if set_priority:
            raise NotImplementedError("torch.nn.attention.sdpa_kernel: argument 'set_priority' is not supported")
        self._on = {_SWITCH[b] for b in backends}
        self._previous = None

    def __enter__(self):
        self._previous = {name: _syntorch._sdp_enabled(name) for name in _SWITCH.values()}
        for name in _SWITCH.values():
            _syntorch._set_sdp_enabled(name, name in self._on)
        return self

    def __exit__(self, *exc):
        for name, on in self._previous.items():
            _syntorch._set_sdp_enabled(name, on)
        return False
