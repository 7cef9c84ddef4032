"""torch.utils.data: datasets, samplers and the DataLoader, as PyTorch's.

A dataset's items are tensors of the right shapes (values are not simulated). The DataLoader
costs the simulated host what loading costs the training process: with num_workers=0 the
collation (a stack of each field: a host memory copy of the batch) and, with pin_memory, the
copy into page-locked memory, on the program's own host thread; with workers the batch arrives
collated (and pinned, by PyTorch's pin-memory thread) at no cost to it, as when the workers keep
ahead of the steps. The order is deterministic: shuffling draws from the generator's seed (or a
fixed one), so the same program gives the same run."""

import bisect
import builtins
import itertools
import math
import random

from syntorch._unsupported import module_getattr as _module_getattr

__getattr__ = _module_getattr("torch.utils.data")


def _torch():
    import syntorch.torch as torch
    return torch


class Dataset:
    """A map-style dataset: __getitem__(index) and __len__."""

    def __getitem__(self, index):
        raise NotImplementedError("Subclasses of Dataset should implement __getitem__.")

    def __add__(self, other):
        return ConcatDataset([self, other])


class IterableDataset(Dataset):
    """A dataset read by iterating it (__iter__)."""

    def __iter__(self):
        raise NotImplementedError("Subclasses of IterableDataset should implement __iter__.")


class TensorDataset(Dataset):
    """Item i is (t[i] for t in tensors); all tensors have the same first dim."""

    def __init__(self, *tensors):
        if any(t.shape[0] != tensors[0].shape[0] for t in tensors):
            raise AssertionError("Size mismatch between tensors")
        self.tensors = tensors

    def __getitem__(self, index):
        return tuple(t[index] for t in self.tensors)

    def __len__(self):
        return self.tensors[0].shape[0]


class ConcatDataset(Dataset):
    def __init__(self, datasets):
        self.datasets = list(datasets)
        if not self.datasets:
            raise AssertionError("datasets should not be an empty iterable")
        self.cumulative_sizes = list(itertools.accumulate(len(d) for d in self.datasets))

    def __len__(self):
        return self.cumulative_sizes[-1]

    def __getitem__(self, index):
        if index < 0:
            index += len(self)
        which = bisect.bisect_right(self.cumulative_sizes, index)
        start = self.cumulative_sizes[which - 1] if which else 0
        return self.datasets[which][index - start]


class Subset(Dataset):
    def __init__(self, dataset, indices):
        self.dataset = dataset
        self.indices = list(indices)

    def __getitem__(self, index):
        return self.dataset[self.indices[index]]

    def __len__(self):
        return len(self.indices)


def _seed_of(generator):
    return getattr(generator, "_seed", 0) if generator is not None else 0


def _pytorch_order(make, generator):
    """In the functional mode, PyTorch's own sampler's order (the same draws from the same
    generators, so a seeded program gets PyTorch's batches); None otherwise."""
    from syntorch import _functional
    if not _functional.enabled():
        return None
    return iter(make(_functional.real_torch().utils.data, _functional.real_generator(generator)))


def random_split(dataset, lengths, generator=None):
    """Subsets of the given lengths (or fractions summing to 1) over a shuffled order."""
    n = len(dataset)
    if all(isinstance(x, float) for x in lengths) and math.isclose(builtins.sum(lengths), 1.0) and \
            builtins.sum(lengths) <= 1:
        counts = [int(math.floor(n * f)) for f in lengths]
        for i in range(n - builtins.sum(counts)):
            counts[i % len(counts)] += 1
        lengths = counts
    if builtins.sum(lengths) != n:
        raise ValueError("Sum of input lengths does not equal the length of the input dataset!")
    from syntorch import _functional
    if _functional.enabled():  # PyTorch's order, drawn from PyTorch's generator (the global one by default)
        real = _functional.real_torch()
        gen = _functional.real_generator(generator) if generator is not None else real.default_generator
        order = real.randperm(n, generator=gen).tolist()
    else:
        order = list(range(n))
        random.Random(_seed_of(generator)).shuffle(order)
    out, start = [], 0
    for length in lengths:
        out.append(Subset(dataset, order[start:start + length]))
        start += length
    return out


class Sampler:
    def __init__(self, data_source=None):
        pass

    def __iter__(self):
        raise NotImplementedError


class SequentialSampler(Sampler):
    def __init__(self, data_source):
        self.data_source = data_source

    def __iter__(self):
        return iter(range(len(self.data_source)))

    def __len__(self):
        return len(self.data_source)


class RandomSampler(Sampler):
    """A shuffled order (a new one each epoch), or num_samples draws with replacement."""

    def __init__(self, data_source, replacement=False, num_samples=None, generator=None):
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self._generator = generator
        self._random = random.Random(_seed_of(generator))
        if num_samples is not None and (not isinstance(num_samples, int) or num_samples <= 0):
            raise ValueError(f"num_samples should be a positive integer value, but got num_samples={num_samples}")

    @property
    def num_samples(self):
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self):
        n = len(self.data_source)
        order = _pytorch_order(lambda data, gen: data.RandomSampler(range(n), self.replacement, self._num_samples,
                                                                    generator=gen), self._generator)
        if order is not None:
            return order
        if self.replacement:  # drawn as they are asked for (num_samples may be effectively endless)
            return (self._random.randrange(n) for _ in range(self.num_samples))
        order = list(range(n))
        self._random.shuffle(order)
        return iter(order[:self.num_samples])

    def __len__(self):
        return self.num_samples


class SubsetRandomSampler(Sampler):
    def __init__(self, indices, generator=None):
        self.indices = list(indices)
        self._generator = generator
        self._random = random.Random(_seed_of(generator))

    def __iter__(self):
        order = _pytorch_order(lambda data, gen: data.SubsetRandomSampler(self.indices, generator=gen), self._generator)
        if order is not None:
            return order
        order = list(self.indices)
        self._random.shuffle(order)
        return iter(order)

    def __len__(self):
        return len(self.indices)


class BatchSampler(Sampler):
    def __init__(self, sampler, batch_size, drop_last):
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0:
            raise ValueError(f"batch_size should be a positive integer value, but got batch_size={batch_size}")
        self.sampler, self.batch_size, self.drop_last = sampler, batch_size, drop_last

    def __iter__(self):
        batch = []
        for i in self.sampler:
            batch.append(i)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self):
        n = len(self.sampler)
        return n // self.batch_size if self.drop_last else (n + self.batch_size - 1) // self.batch_size


class _Collation:
    """How a batch is put together: by stacking (the program's own host pays the copy) or, for
    workers, as a fresh host tensor of the batch's shape (made elsewhere, so no copy here)."""

    def __init__(self, stack, pin):
        self.stack = stack
        self.pin = pin

    def tensors(self, items):
        torch = _torch()
        first = items[0]
        if self.stack:
            out = torch.stack(items)
            return out.pin_memory() if self.pin and out.device.type == "cpu" else out
        device = first.device.type
        out = torch.empty(len(items), *first.shape, dtype=first.dtype, device=device,
                          pin_memory=self.pin and device == "cpu")
        from syntorch import _functional
        _functional.derive(out, lambda real, values: real.stack(values), items, "DataLoader worker's collation")
        return out


def _collate(batch, how):
    torch = _torch()
    first = batch[0]
    if isinstance(first, torch.Tensor):
        return how.tensors(batch)
    if isinstance(first, builtins.float):
        return torch.tensor(batch, dtype=torch.float64)  # as PyTorch's default_collate
    if isinstance(first, (builtins.bool, builtins.int)):
        return torch.tensor(batch)
    if isinstance(first, (str, bytes)):
        return list(batch)
    if isinstance(first, dict):
        return {k: _collate([b[k] for b in batch], how) for k in first}
    if isinstance(first, tuple) and hasattr(first, "_fields"):  # a namedtuple
        return type(first)(*(_collate(list(f), how) for f in zip(*batch)))
    if isinstance(first, (tuple, list)):
        if any(len(b) != len(first) for b in batch):
            raise RuntimeError("each element in list of batch should be of equal size")
        return [_collate(list(f), how) for f in zip(*batch)]
    if type(first).__module__ == "numpy":
        return how.tensors([torch.as_tensor(b) for b in batch])
    raise TypeError(f"default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; found "
                    f"{type(first)}")


def default_collate(batch):
    """Stacks a list of samples field by field into a batch (tensors stacked, numbers made a
    tensor, dicts, tuples and lists collated per entry)."""
    return _collate(batch, _Collation(stack=True, pin=False))


def default_convert(data):
    return data


class DataLoader:
    """Batches of a dataset, as PyTorch's DataLoader makes them (see the module's docstring for
    their host cost). Its arguments are PyTorch's; a batch_size of None yields single items."""

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None, num_workers=0,
                 collate_fn=None, pin_memory=False, drop_last=False, timeout=0, worker_init_fn=None,
                 multiprocessing_context=None, generator=None, *, prefetch_factor=None, persistent_workers=False,
                 pin_memory_device="", in_order=True):
        if num_workers < 0:
            raise ValueError("num_workers option should be non-negative; use num_workers=0 to disable "
                             "multiprocessing.")
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError("prefetch_factor option could only be specified in multiprocessing.let num_workers > 0 "
                             "to enable multiprocessing, otherwise set prefetch_factor to None.")
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")
        self.dataset = dataset
        self.num_workers = num_workers
        self.pin_memory = pin_memory
        self.drop_last = drop_last
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.generator = generator
        self.prefetch_factor = prefetch_factor
        self.persistent_workers = persistent_workers
        self._iterable = isinstance(dataset, IterableDataset)
        if self._iterable:
            if shuffle not in (None, False):
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified shuffle option, but got "
                                 f"shuffle={shuffle}")
            if sampler is not None or batch_sampler is not None:
                raise ValueError("DataLoader with IterableDataset: expected unspecified sampler and batch_sampler")
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, and "
                                 "drop_last")
            batch_size, drop_last = None, False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually exclusive with drop_last")
        if sampler is None and not self._iterable:
            sampler = RandomSampler(dataset, generator=generator) if shuffle else SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None and not self._iterable:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        self.batch_size = batch_size
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.collate_fn = collate_fn

    def _collate(self, samples):
        how = _Collation(stack=self.num_workers == 0, pin=self.pin_memory)
        if self.collate_fn is not None:
            batch = self.collate_fn(samples)
            return _pin(batch) if self.pin_memory else batch
        return _collate(samples, how)

    def _batches_of_iterable(self):
        it = iter(self.dataset)
        if self.batch_size is None:
            yield from it
            return
        while True:
            samples = list(itertools.islice(it, self.batch_size))
            if not samples or (self.drop_last and len(samples) < self.batch_size):
                return
            yield self._collate(samples)

    def __iter__(self):
        from syntorch import _functional
        # PyTorch's iterator draws its workers' base seed, as here (once, with persistent workers).
        if _functional.enabled() and not (self.persistent_workers and self.__dict__.get("_functional_drawn")):
            real = _functional.real_torch()
            real.empty((), dtype=real.int64).random_(generator=_functional.real_generator(self.generator))
            self.__dict__["_functional_drawn"] = True
        if self._iterable:
            batches = self._batches_of_iterable()
        elif self.batch_sampler is None:
            batches = (self.dataset[i] for i in self.sampler)
        else:
            batches = (self._collate([self.dataset[i] for i in indices]) for indices in self.batch_sampler)
        if self.num_workers == 0:
            return batches
        return _from_workers(batches)

    def __len__(self):
        if self._iterable:
            n = len(self.dataset)
            if self.batch_size is None:
                return n
            return n // self.batch_size if self.drop_last else math.ceil(n / self.batch_size)
        return len(self.batch_sampler) if self.batch_sampler is not None else len(self.sampler)


def _from_workers(batches):
    """Each batch made as workers make it: its host work (the dataset's items, their collation) in
    other processes, at no cost to the program's host."""
    import _syntorch
    while True:
        scope = _syntorch._HostWorkElsewhere()
        scope.__enter__()
        try:
            batch = next(batches)
        except StopIteration:
            return
        finally:
            scope.__exit__(None, None, None)
        yield batch


def _pin(batch):
    torch = _torch()
    if isinstance(batch, torch.Tensor):
        return batch.pin_memory() if batch.device.type == "cpu" else batch
    if isinstance(batch, dict):
        return {k: _pin(v) for k, v in batch.items()}
    if isinstance(batch, (tuple, list)):
        return type(batch)(_pin(v) for v in batch) if not hasattr(batch, "_fields") else type(batch)(
            *(_pin(v) for v in batch))
    return batch


def get_worker_info():
    """None: the program's own process loads (workers are not separate processes here)."""
    return None


from . import distributed  # noqa: E402
from .distributed import DistributedSampler  # noqa: E402,F401
from . import dataloader  # noqa: E402,F401
