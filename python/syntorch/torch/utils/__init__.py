"""torch.utils: activation checkpointing (torch.utils.checkpoint) and data loading
(torch.utils.data)."""

from syntorch._unsupported import module_getattr as _module_getattr

from . import checkpoint  # noqa: E402
from . import data  # noqa: E402
from . import _pytree  # noqa: E402
from . import tensorboard  # noqa: E402

__getattr__ = _module_getattr("torch.utils")
