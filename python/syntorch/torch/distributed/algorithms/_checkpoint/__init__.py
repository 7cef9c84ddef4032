"""torch.distributed.algorithms._checkpoint: checkpoint_wrapper."""

from . import checkpoint_wrapper  # noqa: F401
