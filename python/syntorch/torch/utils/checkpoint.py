"""torch.utils.checkpoint: a function run without keeping its activations, and run again in the
backward to rebuild them (what activation checkpointing trades: memory for a second forward)."""

import _syntorch

__all__ = ["checkpoint"]


def checkpoint(function, *args, use_reentrant=None, context_fn=None, determinism_check="default", debug=False,
               preserve_rng_state=True, **kwargs):
    """Runs function(*args, **kwargs) keeping only its tensor arguments; the backward runs it again
    and back-propagates through it. Parameters used inside get their gradients either way (as
    use_reentrant=False does). The function returns a tensor, or a tuple or list of tensors and
    other values."""
    if not callable(function):
        raise TypeError(f"checkpoint(): argument 'function' must be callable, not {type(function).__name__}")
    if context_fn is not None:
        raise NotImplementedError("torch.utils.checkpoint.checkpoint: argument 'context_fn' is not supported")
    if determinism_check not in ("default", "none"):
        raise ValueError(f"torch.utils.checkpoint.checkpoint: determinism_check should be one of 'default', 'none', "
                         f"but got {determinism_check!r}")
    del use_reentrant, debug, preserve_rng_state  # one behaviour: the simulator computes no values
    tensors = [a for a in args if isinstance(a, _syntorch.Tensor)]
    shape = {}  # how the function's result is laid out: filled by its first run

    def run(inputs):
        it = iter(inputs)
        call = [next(it) if isinstance(a, _syntorch.Tensor) else a for a in args]
        out = function(*call, **kwargs)
        if isinstance(out, _syntorch.Tensor):
            shape.setdefault("kind", "tensor")
            return [out]
        if isinstance(out, (tuple, list)):
            shape.setdefault("kind", type(out))
            shape.setdefault("items", list(out))
            return [o if isinstance(o, _syntorch.Tensor) else None for o in out]
        raise NotImplementedError(f"torch.utils.checkpoint.checkpoint: the function returned a "
                                  f"{type(out).__name__}; a tensor, or a tuple or list of them, is supported")

    outs = _syntorch._checkpoint(run, tensors)
    if shape["kind"] == "tensor":
        return outs[0]
    items = [o if isinstance(item, _syntorch.Tensor) else item for o, item in zip(outs, shape["items"])]
    return shape["kind"](items)
