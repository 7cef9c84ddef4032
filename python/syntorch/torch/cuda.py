"""torch.cuda over the simulated device."""


def is_available():
    return True


def device_count():
    return 1


def synchronize(device=None):
    """Meta tensors carry no data: the program never waits for the device, so this returns at once.
    The simulated host still pays the synchronisation (issued as ops need it)."""
    return None


class OutOfMemoryError(RuntimeError):
    pass


try:
    import _syntorch
    OutOfMemoryError = _syntorch.OutOfMemoryError  # noqa: F811
except ImportError:  # pragma: no cover
    pass
