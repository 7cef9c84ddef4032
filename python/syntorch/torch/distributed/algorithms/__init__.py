"""torch.distributed.algorithms: activation checkpointing's module wrapper (_checkpoint)."""

from . import _checkpoint  # noqa: F401
