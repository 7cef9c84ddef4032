"""torch.utils.data.distributed.DistributedSampler: each rank's share of a dataset's indices."""

import math
import random

from . import Sampler


class DistributedSampler(Sampler):
    """Rank `rank` of `num_replicas` gets every num_replicas-th index of the (shuffled per epoch,
    set_epoch) order, padded (or cut, drop_last) to equal shares, as PyTorch's."""

    def __init__(self, dataset, num_replicas=None, rank=None, shuffle=True, seed=0, drop_last=False):
        import syntorch.torch as torch
        if num_replicas is None:
            num_replicas = torch.distributed.get_world_size() if torch.distributed.is_initialized() else 1
        if rank is None:
            rank = torch.distributed.get_rank() if torch.distributed.is_initialized() else 0
        if rank >= num_replicas or rank < 0:
            raise ValueError(f"Invalid rank {rank}, rank should be in the interval [0, {num_replicas - 1}]")
        self.dataset, self.num_replicas, self.rank = dataset, num_replicas, rank
        self.shuffle, self.seed, self.drop_last, self.epoch = shuffle, seed, drop_last, 0
        n = len(dataset)
        if drop_last and n % num_replicas:
            self.num_samples = math.ceil((n - num_replicas) / num_replicas)
        else:
            self.num_samples = math.ceil(n / num_replicas)
        self.total_size = self.num_samples * num_replicas

    def __iter__(self):
        order = list(range(len(self.dataset)))
        from syntorch import _functional
        if self.shuffle and _functional.enabled():  # PyTorch's order: randperm seeded with seed + epoch
            real = _functional.real_torch()
            order = real.randperm(len(self.dataset), generator=real.Generator().manual_seed(self.seed + self.epoch)).tolist()
        elif self.shuffle:
            random.Random(self.seed + self.epoch).shuffle(order)
        if not self.drop_last:
            pad = self.total_size - len(order)
            order += (order * math.ceil(pad / len(order)))[:pad] if pad > 0 else []
        else:
            order = order[:self.total_size]
        return iter(order[self.rank:self.total_size:self.num_replicas])

    def __len__(self):
        return self.num_samples

    def set_epoch(self, epoch):
        self.epoch = epoch
