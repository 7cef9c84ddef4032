"""torch.utils.checkpoint: a function run without keeping its activations, and run again in the
backward to rebuild them (what activation checkpointing trades: memory for a second forward)."""

import _syntorch
from syntorch._unsupported import module_getattr as _module_getattr

__all__ = ["checkpoint"]

__getattr__ = _module_getattr("torch.utils.checkpoint")


def checkpoint(function, *args, use_reentrant=None, context_fn=None, determinism_check="default", debug=False,
               preserve_rng_state=True, **kwargs):
    """Runs function(*args, **kwargs) keeping only its tensor arguments; the backward runs it again
    and back-propagates through it. Parameters used inside get their gradients either way (as
    use_reentrant=False does). The function returns a tensor, or a tuple or list (a named tuple
    too) of tensors and other values."""
    if not callable(function):
        raise TypeError(f"checkpoint(): argument 'function' must be callable, not {type(function).__name__}")
    if use_reentrant and kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
    if context_fn is not None:
        raise NotImplementedError("torch.utils.checkpoint.checkpoint: argument 'context_fn' is not supported")
    if determinism_check not in ("default", "none"):
        raise ValueError(f"torch.utils.checkpoint.checkpoint: determinism_check should be one of 'default', 'none', "
                         f"but got {determinism_check!r}")
    del debug, preserve_rng_state  # one behaviour: the simulator computes no values
    # The arguments as a template with the tensors taken out: the recomputation must not hold the
    # tensors (nor the results) through this closure, or they would outlive the backward.
    names = list(kwargs)
    values = list(args) + [kwargs[k] for k in names]
    is_tensor = [isinstance(v, _syntorch.Tensor) for v in values]
    tensors = [v for v, t in zip(values, is_tensor) if t]
    template = [None if t else v for v, t in zip(values, is_tensor)]
    del values
    n_args = len(args)
    result = {}  # the first run's layout: its type and its non-tensor items

    def run(inputs):
        it = iter(inputs)
        filled = [next(it) if t else v for v, t in zip(template, is_tensor)]
        out = function(*filled[:n_args], **dict(zip(names, filled[n_args:])))
        if isinstance(out, _syntorch.Tensor):
            result.setdefault("type", None)
            return [out]
        if isinstance(out, (tuple, list)):
            result.setdefault("type", type(out))
            result.setdefault("items", [None if isinstance(o, _syntorch.Tensor) else o for o in out])
            return [o if isinstance(o, _syntorch.Tensor) else None for o in out]
        raise NotImplementedError(f"torch.utils.checkpoint.checkpoint: the function returned a "
                                  f"{type(out).__name__}; a tensor, or a tuple or list of them, is supported")

    outs = _syntorch._checkpoint(run, tensors)
    kind = result["type"]
    if kind is None:
        return outs[0]
    items = [o if o is not None else item for o, item in zip(outs, result["items"])]
    return kind(*items) if hasattr(kind, "_fields") else kind(items)
