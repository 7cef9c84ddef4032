"""torch.nn.utils: gradient clipping, and padding sequences (rnn)."""

import _syntorch

from . import rnn  # noqa: F401


def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """Scales the gradients so their total 2-norm is at most max_norm, on the device with no sync
    (PyTorch 2's foreach path); returns the norm as a 0-dim tensor."""
    if error_if_nonfinite:
        raise NotImplementedError("torch.nn.utils.clip_grad_norm_: argument 'error_if_nonfinite' is not supported "
                                  "(values are not simulated)")
    if isinstance(parameters, _syntorch.Tensor):
        parameters = [parameters]
    return _syntorch.clip_grad_norm_(list(parameters), float(max_norm), float(norm_type))
