"""torch.nn.parallel.DistributedDataParallel as PyTorch's reducer runs it: the gradients in
buckets of bucket_cap_mb (25 MB), in reverse parameter order; as soon as backward has made all of
a bucket's gradients, they are copied into one flat buffer, all-reduced on a stream of DDP's own
(overlapping the rest of backward, sharing the device's HBM and links with it) and copied back;
the default stream waits for the last bucket before the optimizer's step. The constructor first
broadcasts rank 0's parameters and buffers, and each forward its buffers (broadcast_buffers)."""

import syntorch.torch as torch
import syntorch.torch.distributed as dist
from syntorch.torch.nn import Module


_BROADCAST_BUCKET_BYTES = 250 * 2 ** 20  # DDP's broadcast_bucket_size


def _through_flat(tensors, collective, copy_back=True):
    """The tensors flattened into one buffer (a cat), `collective` run on it, and (copy_back) its
    slices copied back into them."""
    flat = torch.cat([t.reshape(-1) for t in tensors])
    collective(flat)
    if copy_back:
        offset = 0
        for t in tensors:
            t.copy_(flat[offset:offset + t.numel()].view(*t.shape))
            offset += t.numel()


def _take(tensors, limit_bytes):
    """Buckets of consecutive tensors, each as large as it can be without passing limit_bytes (a
    tensor larger than that alone)."""
    bucket, size = [], 0
    for t in tensors:
        n = t.numel() * t.element_size()
        if bucket and size + n > limit_bytes:
            yield bucket
            bucket, size = [], 0
        bucket.append(t)
        size += n
    if bucket:
        yield bucket


def _broadcast_coalesced(tensors, group):
    """c10d's broadcast_coalesced from the group's first rank: buckets of up to 250 MiB, each
    flattened into one buffer per dtype, broadcast, and copied back into its tensors on the other
    ranks. Empty tensors move nothing."""
    tensors = [t for t in tensors if t.numel() > 0]
    if not tensors or dist.get_world_size(group) == 1:
        return
    src = group.ranks[0] if group is not None else 0
    receiving = dist.get_rank() != src
    with torch.no_grad():
        for bucket in _take(tensors, _BROADCAST_BUCKET_BYTES):
            for dtype in sorted({b.dtype for b in bucket}, key=str):  # one buffer per dtype
                _through_flat([b for b in bucket if b.dtype == dtype],
                              lambda flat: dist.broadcast(flat, src, group=group), copy_back=receiving)


class DistributedDataParallel(Module):
    def __init__(self, module, device_ids=None, output_device=None, dim=0, broadcast_buffers=True,
                 process_group=None, bucket_cap_mb=25, find_unused_parameters=False, check_reduction=False,
                 gradient_as_bucket_view=False, static_graph=False):
        super().__init__()
        if not dist.is_initialized():
            raise RuntimeError("Default process group has not been initialized, please make sure to call "
                               "init_process_group.")
        if gradient_as_bucket_view:
            raise NotImplementedError("DistributedDataParallel: gradient_as_bucket_view=True is not supported")
        self.module = module
        object.__setattr__(self, "_group", process_group)
        object.__setattr__(self, "_broadcast_buffers", bool(broadcast_buffers))
        # As PyTorch's DDP: the group's first rank's parameters (each once, tied ones too) and, with
        # broadcast_buffers, buffers to every rank before training starts.
        _broadcast_coalesced(list(module.parameters()) + (list(module.buffers()) if broadcast_buffers else []),
                             process_group)
        params = [p for p in module.parameters() if p.requires_grad]
        cap = int(bucket_cap_mb * 2 ** 20)
        buckets, current, size = [], [], 0
        for p in reversed(params):  # backward makes the last layers' gradients first
            current.append(p)
            size += p.numel() * p.element_size()
            if size >= cap:
                buckets.append(current)
                current, size = [], 0
        if current:
            buckets.append(current)
        object.__setattr__(self, "_buckets", buckets)
        object.__setattr__(self, "_waiting", [len(b) for b in buckets])
        object.__setattr__(self, "_done", 0)
        object.__setattr__(self, "_stream", torch.cuda.Stream())
        for i, bucket in enumerate(buckets):
            for p in bucket:
                p.register_post_accumulate_grad_hook(lambda param, i=i: self._ready(i))

    def _ready(self, i):
        self._waiting[i] -= 1
        if self._waiting[i]:
            return
        bucket = self._buckets[i]
        compute = torch.cuda.current_stream()
        with torch.cuda.stream(self._stream):
            self._stream.wait_stream(compute)  # the gradients are made
            _through_flat([p.grad for p in bucket], lambda flat: dist.all_reduce(flat, group=self._group))
        object.__setattr__(self, "_done", self._done + 1)
        if self._done == len(self._buckets):  # every bucket launched: the step waits for them
            compute.wait_stream(self._stream)
            object.__setattr__(self, "_done", 0)
            object.__setattr__(self, "_waiting", [len(b) for b in self._buckets])

    def forward(self, *args, **kwargs):
        # The first rank's buffers (running statistics) to every rank, before each forward that
        # will run a backward (PyTorch's require_forward_param_sync: not under no_grad).
        if self._broadcast_buffers and torch.is_grad_enabled():
            _broadcast_coalesced(list(self.module.buffers()), self._group)
        return self.module(*args, **kwargs)
