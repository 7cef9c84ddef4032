"""torch.cuda over the simulated device."""


def is_available():
    return True


def device_count():
    return 1


def synchronize(device=None):
    """Waits, on the simulated host, until the device has finished everything issued (the
    program itself never waits: meta tensors carry no data)."""
    import _syntorch
    _syntorch.cuda_synchronize()


class OutOfMemoryError(RuntimeError):
    pass


try:
    import _syntorch
    OutOfMemoryError = _syntorch.OutOfMemoryError  # noqa: F811
except ImportError:  # pragma: no cover
    pass


def memory_allocated(device=None):
    """Bytes in live tensors on the simulated device (the caching allocator's view)."""
    import _syntorch
    return _syntorch.cuda_memory_allocated()


def max_memory_allocated(device=None):
    import _syntorch
    return _syntorch.cuda_max_memory_allocated()


def memory_reserved(device=None):
    """Bytes the caching allocator holds from the device, in use or cached."""
    import _syntorch
    return _syntorch.cuda_memory_reserved()


def max_memory_reserved(device=None):
    import _syntorch
    return _syntorch.cuda_max_memory_reserved()


def empty_cache():
    """Gives the allocator's cached segments that hold no live tensor back to the device."""
    import _syntorch
    _syntorch.cuda_empty_cache()


def memory_summary(device=None, abbreviated=False):
    mib = 2 ** 20
    return ("|  syntorch simulated memory summary  |\n"
            f"|  allocated: {memory_allocated() / mib:.1f} MiB (peak {max_memory_allocated() / mib:.1f} MiB)\n"
            f"|  reserved:  {memory_reserved() / mib:.1f} MiB (peak {max_memory_reserved() / mib:.1f} MiB)\n")


class CUDAGraph:
    """torch.cuda.CUDAGraph: the ops between capture_begin() and capture_end() are recorded, not
    run; replay() runs them as one graph launch (no per-kernel launch cost), as often as called."""

    def __init__(self):
        import _syntorch
        self._impl = _syntorch.CUDAGraph()

    def capture_begin(self, pool=None, capture_error_mode="global"):
        self._impl.capture_begin()

    def capture_end(self):
        self._impl.capture_end()

    def replay(self):
        self._impl.replay()


class graph:
    """with torch.cuda.graph(g): ... captures the block into g (g.replay() runs it)."""

    def __init__(self, cuda_graph, pool=None, stream=None, capture_error_mode="global"):
        if stream is not None:
            raise NotImplementedError("torch.cuda.graph: argument 'stream' is not supported")
        self.cuda_graph = cuda_graph

    def __enter__(self):
        self.cuda_graph.capture_begin()
        return self

    def __exit__(self, exc_type, *exc):
        self.cuda_graph.capture_end()
        return False


class amp:
    """torch.cuda.amp (the older spelling): autocast(dtype) and GradScaler()."""

    @staticmethod
    def autocast(enabled=True, dtype=None, cache_enabled=True):
        from . import amp as torch_amp
        return torch_amp.autocast("cuda", dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)

    @staticmethod
    def GradScaler(init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000, enabled=True):
        from . import amp as torch_amp
        return torch_amp.GradScaler("cuda", init_scale, growth_factor, backoff_factor, growth_interval, enabled)
