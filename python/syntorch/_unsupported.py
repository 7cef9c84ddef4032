"""What a PyTorch name syntorch does not have raises: NotImplementedError naming it (and an
AttributeError too, so that hasattr() and getattr(..., default) probing for features works as
it does against an older PyTorch)."""


class Unsupported(NotImplementedError, AttributeError):
    pass


def module_getattr(prefix):
    """A module-level __getattr__ for `prefix` (e.g. "torch.nn.functional")."""
    def __getattr__(name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(f"module {prefix!r} has no attribute {name!r}")
        raise Unsupported(f"{prefix}.{name} is not supported by syntorch (docs/python.md lists what is)")
    return __getattr__
