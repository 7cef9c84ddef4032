"""torch.backends.mps: Apple's Metal backend, which a simulated CUDA machine does not have."""


def is_available():
    return False


def is_built():
    return False
