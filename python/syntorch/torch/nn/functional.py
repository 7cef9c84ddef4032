"""torch.nn.functional over syntorch's ops."""

import _syntorch
from syntorch._unsupported import module_getattr as _module_getattr

__getattr__ = _module_getattr("torch.nn.functional")
from _syntorch import tanh, sigmoid, scaled_dot_product_attention  # noqa: F401
# scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False,
# scale=None, enable_gqa=False), as PyTorch's


from _syntorch import linear  # noqa: E402  linear(input, weight, bias=None), as PyTorch's


def relu(input, inplace=False):
    """inplace=True writes into input's memory in PyTorch; the kernel is the same."""
    return _syntorch.relu(input)


def silu(input, inplace=False):
    return _syntorch.silu(input)


def leaky_relu(input, negative_slope=0.01, inplace=False):
    return _syntorch._leaky_relu(input, negative_slope)


def softplus(input, beta=1.0, threshold=20.0):
    """log(1 + exp(beta x)) / beta: composed here (three kernels; PyTorch's is one)."""
    x = input * beta if beta != 1.0 else input
    out = (x.exp() + 1.0).log()
    return out / beta if beta != 1.0 else out


def hardswish(input, inplace=False):
    """x * relu6(x + 3) / 6, composed (PyTorch's is one kernel)."""
    return input * (input + 3.0).clamp(0.0, 6.0) / 6.0


def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    """input / max(||input||_p along dim, eps): a norm, a clamp and a divide, as PyTorch's."""
    import syntorch.torch as torch
    return input / torch.norm(input, p, dim, keepdim=True).clamp(min=eps)


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """The product's sum over dim over the norms' product, composed."""
    import syntorch.torch as torch
    dot = (x1 * x2).sum(dim=dim)
    return dot / (torch.norm(x1, 2.0, dim) * torch.norm(x2, 2.0, dim)).clamp(min=eps)


def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    """target * (log target - input) per element (exp(target) * (target - input) with log_target),
    then the reduction ("batchmean": the sum over the batch size), composed."""
    per = (target.exp() * (target - input)) if log_target else target * (target.log() - input)
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if reduction == "batchmean":
        return per.sum() / float(input.shape[0])
    return _reduce(per, reduction, "kl_div")


def dropout2d(input, p=0.5, training=True, inplace=False):
    """Whole channels dropped: the dropout kernel over the input."""
    return _syntorch.dropout(input, p, training)


def gelu(input, approximate="none"):
    return _syntorch.gelu(input, approximate)


def softmax(input, dim=None, dtype=None):
    return _syntorch.softmax(input, -1 if dim is None else dim, dtype)


def log_softmax(input, dim=None, dtype=None):
    return _syntorch.log_softmax(input, -1 if dim is None else dim, dtype)


def pad(input, pad, mode="constant", value=None):
    """Pads the last dims by (before, after) counts, last dim first; negative counts crop. Every
    mode writes the padded output in one kernel, as PyTorch's; reflect, replicate and circular
    differ from constant in values only (not simulated), and need pads the input can give."""
    pad = list(pad)
    if len(pad) % 2 or len(pad) // 2 > input.dim():
        raise RuntimeError(f"Padding length must be divisible by 2 and at most twice the input's dims "
                           f"({input.dim()}), got {len(pad)}")
    if mode not in ("constant", "reflect", "replicate", "circular"):
        raise NotImplementedError(f"Unsupported padding mode: {mode}")
    if mode != "constant":
        if value not in (None, 0, 0.0):
            raise ValueError(f"Padding mode \"{mode}\" doesn't take in value argument.")
        for i in range(len(pad) // 2):
            size = input.shape[-1 - i]
            if mode == "reflect" and max(pad[2 * i], pad[2 * i + 1]) >= size:
                raise RuntimeError(f"Argument #4: Padding size should be less than the corresponding input dimension, "
                                   f"but got: padding ({pad[2 * i]}, {pad[2 * i + 1]}) at dimension {input.dim() - 1 - i} "
                                   f"of input {list(input.shape)}")
    return _syntorch._pad(input, pad, float(value or 0.0))


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    return _syntorch._layer_norm(input, list(normalized_shape), weight, bias, eps)


def rms_norm(input, normalized_shape, weight=None, eps=None):
    return _syntorch._rms_norm(input, list(normalized_shape), weight, eps)


def embedding(input, weight, padding_idx=None):
    return _syntorch.embedding(input, weight)


def dropout(input, p=0.5, training=True, inplace=False):
    return _syntorch.dropout(input, p, training)


def _reduce(loss, reduction, name):
    """A per-element loss reduced as PyTorch's `reduction` says (one reduction kernel, or none)."""
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    if reduction == "none":
        return loss
    raise ValueError(f"{name}: {reduction} is not a valid value for reduction (expected 'mean', 'sum' or 'none')")


def _legacy_reduction(size_average, reduce, reduction):
    """size_average and reduce, PyTorch's deprecated spellings of reduction."""
    if size_average is None and reduce is None:
        return reduction
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    return ("mean" if size_average else "sum") if reduce else "none"


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean",
                  label_smoothing=0.0):
    """log_softmax over the classes (dim 1), then the negative log-likelihood of the targets
    (class indices). [N, C] inputs run as PyTorch's kernels do (a log_softmax, an nll_loss); [N, C,
    d1, ...] ones are moved to [N * d1 * ..., C] first (a copy PyTorch does not make). ignore_index
    and a class weight change values only (not simulated), not the kernels' cost;
    label_smoothing adds the mean over classes of the log-probabilities (one more reduction)."""
    import syntorch.torch as torch
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if not 0.0 <= label_smoothing <= 1.0:
        raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    if target.dtype.is_floating_point:
        # Class probabilities: -(target * log_softmax(input)) summed over the classes, as PyTorch's.
        if list(target.shape) != list(input.shape):
            raise RuntimeError(f"cross_entropy: class-probability targets must have the input's shape "
                               f"{list(input.shape)}, got {list(target.shape)}")
        if label_smoothing > 0.0:
            classes = input.shape[1 if input.dim() > 1 else 0]
            target = target * (1.0 - label_smoothing) + label_smoothing / classes
        per = -(target * log_softmax(input, 1 if input.dim() > 1 else 0)).sum(dim=1 if input.dim() > 1 else 0)
        return _reduce(per, reduction, "cross_entropy")
    out_shape = list(target.shape)  # an unreduced loss has the target's shape
    if input.dim() == 1:
        input, target = input.unsqueeze(0), target.unsqueeze(0)
    elif input.dim() > 2:
        classes = input.shape[1]
        input = input.movedim(1, -1).reshape(-1, classes)
        target = target.reshape(-1)
    elif input.dim() != 2:
        raise RuntimeError(f"cross_entropy: expected an input of 1 or more dims, got {input.dim()}")
    if target.dim() != 1 or target.shape[0] != input.shape[0]:
        raise ValueError(f"Expected input batch_size ({input.shape[0]}) to match target batch_size "
                         f"({target.shape[0] if target.dim() else 1}).")
    if reduction == "mean" and label_smoothing == 0.0:
        return _syntorch.cross_entropy(input, target)
    logp = log_softmax(input, 1)
    loss = nll_loss(logp, target, reduction=reduction)
    if label_smoothing > 0.0:
        smooth = _reduce(-logp.mean(1), reduction, "cross_entropy")
        loss = loss * (1.0 - label_smoothing) + smooth * label_smoothing
    return loss.reshape(out_shape) if reduction == "none" else loss


def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean"):
    """The negative log-likelihood of class indices under log-probabilities [N, C]: with
    reduction "mean" PyTorch's fused kernel; "sum" and "none" as a gather of the N values (then a
    sum). ignore_index and weight change values only."""
    import syntorch.torch as torch
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if input.dim() != 2:
        raise NotImplementedError("torch.nn.functional.nll_loss: only [N, C] inputs are supported; flatten "
                                  "the leading dims with .view(-1, C)")
    if reduction == "mean":
        return _syntorch.nll_loss(input, target)
    picked = -input[torch.arange(input.shape[0], device=input.device), target]
    return _reduce(picked, reduction, "nll_loss")


def _pointwise_loss(name, per_element):
    def loss(input, target, size_average=None, reduce=None, reduction="mean", **kwargs):
        reduction = _legacy_reduction(size_average, reduce, reduction)
        if list(input.shape) != list(target.shape):
            import warnings
            warnings.warn(f"Using a target size ({list(target.shape)}) that is different to the input size "
                          f"({list(input.shape)}). This will likely lead to incorrect results due to broadcasting.",
                          stacklevel=2)
        return _reduce(per_element(input, target, **kwargs), reduction, name)
    loss.__name__ = name
    return loss


def _mse(input, target):
    d = input - target
    return d * d


def _l1(input, target):
    return (input - target).abs()


def _smooth_l1(input, target, beta=1.0):
    d = (input - target).abs()
    return _syntorch.where(d < beta, d * d * (0.5 / beta), d - 0.5 * beta) if beta > 0 else d


def _bce_logits(input, target, weight=None, pos_weight=None):
    # max(x, 0) - x t + log(1 + exp(-|x|)), the stable form
    loss = input.clamp(min=0.0) - input * target + ((-input.abs()).exp() + 1.0).log()
    if pos_weight is not None:
        loss = loss * pos_weight
    return loss * weight if weight is not None else loss


def _bce(input, target, weight=None):
    loss = -(target * input.clamp(min=1e-12).log() + (1.0 - target) * (1.0 - input).clamp(min=1e-12).log())
    return loss * weight if weight is not None else loss


# Losses PyTorch runs as a pointwise kernel and a reduction; here composed of the pointwise ops
# (a few kernels where PyTorch fuses them into one).
mse_loss = _pointwise_loss("mse_loss", _mse)
l1_loss = _pointwise_loss("l1_loss", _l1)
smooth_l1_loss = _pointwise_loss("smooth_l1_loss", _smooth_l1)
_bce_logits_loss = _pointwise_loss("binary_cross_entropy_with_logits", _bce_logits)
_bce_loss = _pointwise_loss("binary_cross_entropy", _bce)


def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None, reduction="mean",
                                     pos_weight=None):
    return _bce_logits_loss(input, target, size_average, reduce, reduction, weight=weight, pos_weight=pos_weight)


def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    return _bce_loss(input, target, size_average, reduce, reduction, weight=weight)


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
