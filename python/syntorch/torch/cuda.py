"""torch.cuda over the simulated device."""


def is_available():
    return True


def device_count():
    """The devices the run uses: its world in a many-rank run (each rank on its own), else one."""
    import _syntorch
    return max(1, _syntorch.current_world_size())


def _index(device):
    if device is None:
        return None
    if isinstance(device, int):
        return device
    text = str(device)
    if text == "cuda":
        return None
    if text.startswith("cuda:"):
        return int(text.split(":", 1)[1])
    raise ValueError(f"Expected a cuda device, but got: {device}")


def current_device():
    """This rank's device: each rank of a run has one of its own."""
    import _syntorch
    return max(0, _syntorch.current_rank_index())


def set_device(device):
    """As torchrun scripts do with LOCAL_RANK: the rank's own device is accepted; another one is
    refused, since a rank's work stays on the device the run gave it."""
    index = _index(device)
    if index is not None and index != current_device():
        raise NotImplementedError(f"torch.cuda.set_device({device!r}): rank {current_device()} runs on device "
                                  f"{current_device()}; moving a rank to another device is not supported")


def manual_seed(seed):
    """Values are not simulated: a seed changes no cost."""


manual_seed_all = manual_seed


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


def memory_stats(device=None):
    """The simulated caching allocator's statistics by PyTorch's keys ("allocated_bytes.all.current",
    "allocated_bytes.all.peak", "reserved_bytes.all.current", "reserved_bytes.all.peak",
    "requested_bytes.all.current", "segment.all.current", "allocation.all.allocated", "num_ooms",
    ...; num_device_alloc and num_device_free count cudaMalloc and cudaFree calls)."""
    import _syntorch
    return dict(sorted(_syntorch.cuda_memory_stats().items()))


def reset_peak_memory_stats(device=None):
    """The peaks (max_memory_allocated, max_memory_reserved) restart from what is in use now."""
    import _syntorch
    _syntorch.cuda_reset_peak_memory_stats()


reset_max_memory_allocated = reset_peak_memory_stats


def mem_get_info(device=None):
    """(free, total) bytes of the simulated device: total its memory, free what the caching
    allocator has not reserved."""
    stats = memory_stats()
    total = get_device_properties(device).total_memory
    return total - stats["reserved_bytes.all.current"], total


class _CudaDeviceProperties:
    """What get_device_properties returns: name, total_memory (bytes), multi_processor_count,
    L2_cache_size (bytes) and clock_rate (kHz) of the simulated device, from its hardware config."""

    def __init__(self, name, total_memory, multi_processor_count, l2_cache_size, clock_hz, bf16):
        self.name = name
        self.total_memory = total_memory
        self.multi_processor_count = multi_processor_count
        self.L2_cache_size = l2_cache_size
        self.clock_rate = int(clock_hz / 1e3)
        self.is_integrated = False
        self._bf16 = bf16

    def __repr__(self):
        return (f"_CudaDeviceProperties(name='{self.name}', total_memory={self.total_memory // 2**20}MB, "
                f"multi_processor_count={self.multi_processor_count}, L2_cache_size={self.L2_cache_size // 2**20}MB)")


def get_device_properties(device=None):
    import _syntorch
    import syntorch
    syntorch.current_session()
    _check_device(device)
    return _CudaDeviceProperties(*_syntorch.cuda_device_properties())


def get_device_name(device=None):
    return get_device_properties(device).name


def is_bf16_supported(including_emulation=True):
    """Whether the simulated device's matrix units take bfloat16 (its hardware config says)."""
    return get_device_properties()._bf16


def _check_device(device):
    index = _index(device) if not hasattr(device, "type") else device.index
    if index is not None and not 0 <= index < device_count():
        raise RuntimeError(f"Invalid device id {index}: the run has {device_count()} device(s)")


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


def _ext():
    import _syntorch
    return _syntorch


class Stream:
    """torch.cuda.Stream(): a new stream of the simulated device. Work on different streams may
    overlap, and then shares the device's SMs, HBM and links."""

    def __init__(self, device=None, priority=0, _impl=None):
        self._impl = _impl if _impl is not None else _ext()._Stream()

    def wait_event(self, event):
        self._impl.wait_event(event._impl)

    def wait_stream(self, stream):
        self._impl.wait_stream(stream._impl)

    def record_event(self, event=None):
        event = event if event is not None else Event()
        event.record(self)
        return event

    def synchronize(self):
        self._impl.synchronize()

    def query(self):
        """Whether the stream's work so far is done when the host gets here (cudaStreamQuery, on
        the simulated host's clock)."""
        return self._impl.query()

    def __eq__(self, other):
        return isinstance(other, Stream) and self._impl == other._impl

    def __hash__(self):
        return hash(self._impl)

    def __repr__(self):
        return f"<torch.cuda.Stream id={self._impl.id}>"


class Event:
    """torch.cuda.Event(): record() marks the point a stream has reached; wait() makes a stream's
    later work wait for it; synchronize() blocks the host until it completes; query() says whether
    it has completed and elapsed_time(end) the milliseconds to end's completion, both read on the
    simulated host's clock when the program gets there (the same answers on every run)."""

    def __init__(self, enable_timing=False, blocking=False, interprocess=False):
        self._impl = _ext()._Event()

    def record(self, stream=None):
        self._impl.record(None if stream is None else stream._impl)

    def wait(self, stream=None):
        self._impl.wait(None if stream is None else stream._impl)

    def synchronize(self):
        self._impl.synchronize()

    def query(self):
        return self._impl.query()

    def elapsed_time(self, end_event):
        if not isinstance(end_event, Event):
            raise TypeError(f"elapsed_time(): expected a torch.cuda.Event, got {type(end_event).__name__}")
        return self._impl.elapsed_time(end_event._impl)


def current_stream(device=None):
    return Stream(_impl=_ext().current_stream())


def default_stream(device=None):
    return Stream(_impl=_ext().default_stream())


def set_stream(stream):
    _ext().set_stream(stream._impl)


class stream:
    """with torch.cuda.stream(s): ops in the block go to stream s (None: unchanged)."""

    def __init__(self, stream):
        self.stream = stream
        self._previous = []

    def __enter__(self):
        if self.stream is not None:
            self._previous.append(current_stream())
            set_stream(self.stream)
        return self.stream

    def __exit__(self, *exc):
        if self.stream is not None:
            set_stream(self._previous.pop())
        return False
