"""torch.compiler: whether code runs under torch.compile's tracing (it never does here)."""

from syntorch._unsupported import module_getattr as _module_getattr

__getattr__ = _module_getattr("torch.compiler")


def is_compiling():
    return False


def is_dynamo_compiling():
    return False
