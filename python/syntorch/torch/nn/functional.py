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


# --- convolutions, batch norm, pooling, resampling (docs/torch.md) ---

def _cudnn_tf32():
    """torch.backends.cudnn.allow_tf32 as the program set it, for its fp32 convolutions."""
    from syntorch.torch.backends import cudnn
    allow = bool(cudnn.allow_tf32)
    if _syntorch._get_cudnn_allow_tf32() != allow:
        _syntorch._set_cudnn_allow_tf32(allow)


def _convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups):
    _cudnn_tf32()
    return _syntorch._aten_convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding,
                                       groups)


def _tuple(v, n, what="argument"):
    """One value or n of them, as n ints (PyTorch's _pair/_triple); a ValueError naming `what` else."""
    if isinstance(v, (list, tuple)):
        if len(v) == 1:
            return [int(v[0])] * n
        if len(v) != n:
            raise ValueError(f"{what} must have 1 or {n} values, got {len(v)}: {list(v)}")
        return [int(x) for x in v]
    return [int(v)] * n


def _conv(n):
    def conv(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
        if isinstance(padding, str):
            raise NotImplementedError(f"torch.nn.functional.conv{n}d: padding={padding!r} is not supported; give sizes")
        return _convolution(input, weight, bias, _tuple(stride, n), _tuple(padding, n), _tuple(dilation, n), False,
                            [0] * n, int(groups))
    conv.__name__ = f"conv{n}d"
    conv.__doc__ = f"torch.nn.functional.conv{n}d: an implicit GEMM (runtime op conv), then the bias."
    return conv


conv1d, conv2d, conv3d = _conv(1), _conv(2), _conv(3)


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """torch.nn.functional.conv_transpose2d: the input gradient of the convolution it transposes."""
    return _convolution(input, weight, bias, _tuple(stride, 2), _tuple(padding, 2), _tuple(dilation, 2), True,
                        _tuple(output_padding, 2), int(groups))


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1, eps=1e-5):
    return _syntorch._aten_batch_norm(input, weight, bias, running_mean, running_var, bool(training),
                                      float(momentum if momentum is not None else 0.1), float(eps))


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    return _syntorch._group_norm(input, int(num_groups), weight, bias, float(eps))


def _max_pool(n):
    def pool(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
        if return_indices:
            raise NotImplementedError(f"torch.nn.functional.max_pool{n}d: return_indices=True is not supported")
        what = f"max_pool{n}d"
        return _syntorch._max_pool(input, _tuple(kernel_size, n, f"{what}: kernel_size"),
                                   _tuple(stride, n, f"{what}: stride") if stride is not None else [],
                                   _tuple(padding, n, f"{what}: padding"), _tuple(dilation, n, f"{what}: dilation"),
                                   bool(ceil_mode))
    pool.__name__ = f"max_pool{n}d"
    return pool


def _avg_pool(n):
    def pool(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True, divisor_override=None):
        what = f"avg_pool{n}d"
        return _syntorch._avg_pool(input, _tuple(kernel_size, n, f"{what}: kernel_size"),
                                   _tuple(stride, n, f"{what}: stride") if stride is not None else [],
                                   _tuple(padding, n, f"{what}: padding"), bool(ceil_mode))
    pool.__name__ = f"avg_pool{n}d"
    return pool


max_pool1d, max_pool2d, max_pool3d = _max_pool(1), _max_pool(2), _max_pool(3)
avg_pool1d, avg_pool2d, avg_pool3d = _avg_pool(1), _avg_pool(2), _avg_pool(3)


def adaptive_avg_pool2d(input, output_size):
    """None in output_size keeps that dim's input size, as PyTorch's."""
    sizes = list(output_size) if isinstance(output_size, (list, tuple)) else [output_size] * 2
    if len(sizes) != 2:
        raise ValueError(f"adaptive_avg_pool2d: output_size must have 1 or 2 values, got {output_size!r}")
    spatial = list(input.shape[-2:])
    return _syntorch._adaptive_avg_pool(input, [spatial[i] if v is None else int(v) for i, v in enumerate(sizes)])


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None, recompute_scale_factor=None,
                antialias=False):
    """Nearest or (bi/tri)linear resampling to `size`, or to the spatial sizes times `scale_factor`."""
    spatial = list(input.shape[2:])
    if (size is None) == (scale_factor is None):
        raise ValueError("interpolate: give exactly one of size and scale_factor")
    if size is not None:
        out = _tuple(size, len(spatial), "interpolate: size")
    else:
        scales = scale_factor if isinstance(scale_factor, (list, tuple)) else [scale_factor] * len(spatial)
        if len(scales) != len(spatial):
            raise ValueError(f"interpolate: scale_factor must have 1 or {len(spatial)} values for a "
                             f"{input.dim()}-D input, got {list(scales)}")
        out = [int(s * f) for s, f in zip(spatial, scales)]
    return _syntorch._upsample(input, out, mode)
