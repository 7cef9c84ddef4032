"""torch.nn.parallel.DistributedDataParallel as PyTorch's reducer runs it: the gradients in
buckets of bucket_cap_mb (25 MB), in reverse parameter order; as soon as backward has made all of
a bucket's gradients, they are copied into one flat buffer, all-reduced on a stream of DDP's own
(overlapping the rest of backward, sharing the device's HBM and links with it) and copied back;
the default stream waits for the last bucket before the optimizer's step."""

import syntorch.torch as torch
import syntorch.torch.distributed as dist
from syntorch.torch.nn import Module


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
            flat = torch.cat([p.grad.reshape(-1) for p in bucket])
            dist.all_reduce(flat, group=self._group)
            offset = 0
            for p in bucket:
                n = p.numel()
                p.grad.copy_(flat[offset:offset + n].view(*p.shape))
                offset += n
        object.__setattr__(self, "_done", self._done + 1)
        if self._done == len(self._buckets):  # every bucket launched: the step waits for them
            compute.wait_stream(self._stream)
            object.__setattr__(self, "_done", 0)
            object.__setattr__(self, "_waiting", [len(b) for b in self._buckets])

    def forward(self, *args, **kwargs):
        return self.module(*args, **kwargs)
