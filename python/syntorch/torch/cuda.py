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
