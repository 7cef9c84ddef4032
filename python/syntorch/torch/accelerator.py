"""torch.accelerator (PyTorch 2.6's device-agnostic API): the simulated GPU."""

from syntorch._unsupported import module_getattr as _module_getattr

__getattr__ = _module_getattr("torch.accelerator")


def is_available():
    return True


def current_accelerator(check_available=False):
    import syntorch.torch as torch
    return torch.device("cuda")


def device_count():
    import syntorch.torch as torch
    return torch.cuda.device_count()


def current_device_index():
    import syntorch.torch as torch
    return torch.cuda.current_device()


def set_device_index(device):
    import syntorch.torch as torch
    torch.cuda.set_device(device)


def synchronize(device=None):
    import syntorch.torch as torch
    torch.cuda.synchronize(device)
