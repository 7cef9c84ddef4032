"""torch.backends.cudnn: its switches concern convolutions, which syntorch does not run; scripts
set them, and they are kept as set."""

from syntorch._unsupported import module_getattr as _module_getattr

__getattr__ = _module_getattr("torch.backends.cudnn")

allow_tf32 = True  # PyTorch's default
benchmark = False
deterministic = False
enabled = True


def is_available():
    return True
