"""torch.nn.functional over syntorch's ops."""

import _syntorch
from syntorch._unsupported import module_getattr as _module_getattr

__getattr__ = _module_getattr("torch.nn.functional")
from _syntorch import relu, silu, tanh, sigmoid, scaled_dot_product_attention  # noqa: F401
# scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False,
# scale=None, enable_gqa=False), as PyTorch's


from _syntorch import linear  # noqa: E402  linear(input, weight, bias=None), as PyTorch's


def gelu(input, approximate="none"):
    return _syntorch.gelu(input, approximate)


def softmax(input, dim=None, dtype=None):
    return _syntorch.softmax(input, -1 if dim is None else dim, dtype)


def log_softmax(input, dim=None, dtype=None):
    return _syntorch.log_softmax(input, -1 if dim is None else dim, dtype)


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    return _syntorch._layer_norm(input, list(normalized_shape), weight, bias, eps)


def rms_norm(input, normalized_shape, weight=None, eps=None):
    return _syntorch._rms_norm(input, list(normalized_shape), weight, eps)


def embedding(input, weight, padding_idx=None):
    return _syntorch.embedding(input, weight)


def dropout(input, p=0.5, training=True, inplace=False):
    return _syntorch.dropout(input, p, training)


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean",
                  label_smoothing=0.0):
    """log_softmax over the classes, then nll_loss (mean reduction)."""
    for name, value, default in (("weight", weight, None), ("size_average", size_average, None),
                                 ("reduce", reduce, None), ("reduction", reduction, "mean"),
                                 ("label_smoothing", label_smoothing, 0.0)):
        if value != default:
            raise NotImplementedError(f"torch.nn.functional.cross_entropy: argument {name!r} is not supported "
                                      f"(got {value!r})")
    if input.dim() != 2:
        raise NotImplementedError("torch.nn.functional.cross_entropy: only [N, C] inputs are supported; flatten "
                                  "the leading dims with .view(-1, C)")
    return _syntorch.cross_entropy(input, target)


def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean"):
    if weight is not None or reduction != "mean":
        raise NotImplementedError("torch.nn.functional.nll_loss: only the unweighted mean is supported")
    return _syntorch.nll_loss(input, target)
