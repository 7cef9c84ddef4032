"""torch.utils.data.dataloader: where PyTorch defines DataLoader (the same class)."""

from . import DataLoader, default_collate, get_worker_info  # noqa: F401
