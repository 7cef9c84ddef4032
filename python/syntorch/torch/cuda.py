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
