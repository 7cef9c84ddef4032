"""Output shapes for the ATen ops some PyTorch versions have no meta-device kernel for (1.13 lacks
convolution's backward on meta): each rule makes the op's outputs as meta tensors from its bound
arguments. Adding one is a function and a line in META_RULES."""

import torch


def _meta_like(t):
    return torch.empty_strided(t.shape, t.stride(), dtype=t.dtype, device="meta")


def _convolution_backward(a):
    mask = a["output_mask"]
    grad_input = _meta_like(a["input"]) if mask[0] else None
    grad_weight = _meta_like(a["weight"]) if mask[1] else None
    bias = a.get("bias_sizes")
    grad_bias = torch.empty(list(bias), dtype=a["grad_output"].dtype, device="meta") if mask[2] and bias else None
    return grad_input, grad_weight, grad_bias


def _foreach(a):
    """The _foreach_ ops (optimizers' multi-tensor steps): an in-place one returns nothing, a norm
    one 0-dim value a tensor, any other a list shaped as its first list."""
    first = next(iter(a.values()))
    return [_meta_like(t) for t in first]


def _foreach_norm(a):
    first = next(iter(a.values()))
    return [torch.empty((), dtype=t.dtype, device="meta") for t in first]


def _foreach_inplace(a):
    return None


META_RULES = {
    "convolution_backward": _convolution_backward,
}


def rule_for(name):
    """The shape rule for the op `name` (ATen's name without the namespace), or None."""
    if name in META_RULES:
        return META_RULES[name]
    if name == "_foreach_norm":
        return _foreach_norm
    if name.startswith("_foreach_"):
        return _foreach_inplace if name.endswith("_") else _foreach
    return None
