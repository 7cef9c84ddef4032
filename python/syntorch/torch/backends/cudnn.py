"""torch.backends.cudnn: allow_tf32 (PyTorch's default True) puts fp32 convolutions on the TF32
matrix units; benchmark and deterministic are kept as set (the simulator's kernel choice is its
policy's)."""

from syntorch._unsupported import module_getattr as _module_getattr

__getattr__ = _module_getattr("torch.backends.cudnn")

allow_tf32 = True  # PyTorch's default
benchmark = False
deterministic = False
enabled = True


def is_available():
    return True
