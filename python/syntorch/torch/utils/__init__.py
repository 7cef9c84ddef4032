"""torch.utils: activation checkpointing (torch.utils.checkpoint)."""

from . import checkpoint
