"""The ATen ops the bridge lowers onto syntorch's torch layer: one entry per op (its ATen name, as
`aten::<name>` without the overload), each a function of the op's bound arguments and real outputs
that returns the outputs' mirrors. Views, in-place updates and factories follow from the op's
schema (views.py's rules in the bridge); an op in neither is costed as memory-bound and reported.

Adding an op is a function here and a line in TABLE."""

import _syntorch

from ._tensors import sdtype, tensors_in as _tensors

LOWERINGS = {}


def lowers(*names):
    def register(fn):
        for n in names:
            LOWERINGS[n] = fn
        return fn
    return register


def _scalar(x):
    return float(x) if not isinstance(x, bool) else float(x)


# --- matrix products ---

@lowers("mm")
def _mm(b, a, out):
    return _syntorch.mm(b.m(a["self"]), b.m(a["mat2"]))


@lowers("bmm")
def _bmm(b, a, out):
    return _syntorch.bmm(b.m(a["self"]), b.m(a["mat2"]))


@lowers("addmm")
def _addmm(b, a, out):
    return _syntorch._aten_addmm(b.m(a["self"]), b.m(a["mat1"]), b.m(a["mat2"]))


@lowers("baddbmm")
def _baddbmm(b, a, out):  # the added input is read in the GEMM's epilogue
    return _syntorch.bmm(b.m(a["batch1"]), b.m(a["batch2"]))


@lowers("_scaled_dot_product_flash_attention", "_scaled_dot_product_efficient_attention",
        "_scaled_dot_product_cudnn_attention", "_scaled_dot_product_attention_math",
        "_scaled_dot_product_flash_attention_for_cpu")
def _sdpa(b, a, out):
    mask = a.get("attn_bias", a.get("attn_mask"))
    o = _syntorch.scaled_dot_product_attention(b.m(a["query"]), b.m(a["key"]), b.m(a["value"]),
                                               b.m(mask) if mask is not None else None,
                                               float(a.get("dropout_p") or 0.0), bool(a.get("is_causal")))
    return (o,) + tuple(b.fresh(x) for x in out[1:])


@lowers("_scaled_dot_product_flash_attention_backward", "_scaled_dot_product_efficient_attention_backward",
        "_scaled_dot_product_cudnn_attention_backward", "_scaled_dot_product_flash_attention_for_cpu_backward")
def _sdpa_backward(b, a, out):
    dq, dk, dv = _syntorch._aten_attention_backward(b.m(a["grad_out"]), b.m(a["query"]), b.m(a["key"]),
                                                    b.m(a["value"]), bool(a.get("is_causal")),
                                                    float(a.get("dropout_p") or 0.0) > 0)
    return (dq, dk, dv) + tuple(b.fresh(x) for x in out[3:])


# --- row-wise ops ---

@lowers("_softmax")
def _softmax(b, a, out):
    return _syntorch.softmax(b.m(a["self"]), a["dim"], _syntorch.float32 if a["half_to_float"] else None)


@lowers("_log_softmax")
def _log_softmax(b, a, out):
    return _syntorch.log_softmax(b.m(a["self"]), a["dim"], _syntorch.float32 if a["half_to_float"] else None)


@lowers("_softmax_backward_data", "_log_softmax_backward_data")
def _softmax_backward(b, a, out):
    return _syntorch._aten_softmax_backward(b.m(a["grad_output"]), b.m(a["output"]), a["dim"],
                                            sdtype(a["input_dtype"]), b.name == "_log_softmax_backward_data")


@lowers("native_layer_norm")
def _layer_norm(b, a, out):
    w, bias = a["weight"], a["bias"]
    y = _syntorch._layer_norm(b.m(a["input"]), list(a["normalized_shape"]), b.m(w) if w is not None else None,
                              b.m(bias) if bias is not None else None, float(a["eps"]))
    return (y, b.fresh(out[1]), b.fresh(out[2]))  # mean and rstd: written by the same kernel


@lowers("native_layer_norm_backward")
def _layer_norm_backward(b, a, out):
    w, bias = a["weight"], a["bias"]
    return _syntorch._aten_layer_norm_backward(b.m(a["grad_out"]), b.m(a["input"]), len(a["normalized_shape"]),
                                               b.m(w) if w is not None else None,
                                               b.m(bias) if bias is not None else None,
                                               list(a["output_mask"]), False)


@lowers("_fused_rms_norm")
def _rms_norm(b, a, out):
    w = a.get("weight")
    y = _syntorch._rms_norm(b.m(a["input"]), list(a["normalized_shape"]), b.m(w) if w is not None else None,
                            a.get("eps"))
    return (y,) + tuple(b.fresh(x) for x in out[1:])


# --- activations and their backward ---

for _name, _fn in (("gelu", None), ("silu", _syntorch.silu), ("relu", _syntorch.relu), ("tanh", _syntorch.tanh),
                   ("sigmoid", _syntorch.sigmoid), ("exp", _syntorch.exp), ("log", _syntorch.log),
                   ("sqrt", _syntorch.sqrt), ("rsqrt", _syntorch.rsqrt), ("sin", _syntorch.sin),
                   ("cos", _syntorch.cos), ("abs", _syntorch.abs)):
    if _fn is not None:
        LOWERINGS[_name] = (lambda fn: lambda b, a, out: fn(b.m(a["self"])))(_fn)


@lowers("gelu")
def _gelu(b, a, out):
    return _syntorch.gelu(b.m(a["self"]), a.get("approximate") or "none")


@lowers("neg")
def _neg(b, a, out):
    return -b.m(a["self"])


@lowers("gelu_backward", "silu_backward", "threshold_backward", "tanh_backward", "sigmoid_backward")
def _activation_backward(b, a, out):
    forward = {"threshold_backward": "relu"}.get(b.name, b.name[:-len("_backward")])
    saved = a.get("self", a.get("output"))
    return _syntorch._aten_activation_backward(forward, b.m(a["grad_output"]), b.m(saved), "aten::" + b.name)


@lowers("pow")
def _pow(b, a, out):
    if "exponent" in a and not b.is_tensor(a["exponent"]) and b.is_tensor(a.get("self")):
        return _syntorch._pow(b.m(a["self"]), _scalar(a["exponent"]))
    return None  # a tensor exponent or scalar base: the generic cost


# --- binary arithmetic and comparisons ---

def _binary(fn):
    def lower(b, a, out):
        x, y = a["self"], a["other"]
        if not b.is_tensor(x):
            return None
        y = b.m(y) if b.is_tensor(y) else _scalar(y)
        return fn(b.m(x), y)
    return lower


import operator as _operator  # noqa: E402

for _name, _fn in (("add", _operator.add), ("sub", _operator.sub), ("mul", _operator.mul),
                   ("div", _operator.truediv)):
    LOWERINGS[_name] = _binary(_fn)
for _name in ("eq", "ne", "lt", "le", "gt", "ge"):
    LOWERINGS[_name] = _binary(getattr(_syntorch, _name))


@lowers("where")
def _where(b, a, out):
    c, x, y = a["condition"], a["self"], a["other"]
    if all(b.is_tensor(t) for t in (c, x, y)):
        return _syntorch.where(b.m(c), b.m(x), b.m(y))
    return None


@lowers("masked_fill")
def _masked_fill(b, a, out):
    if b.is_tensor(a["value"]):
        return None
    return _syntorch.masked_fill(b.m(a["self"]), b.m(a["mask"]), _scalar(a["value"]))


@lowers("tril", "triu")
def _tri(b, a, out):
    return getattr(_syntorch, b.name)(b.m(a["self"]), a.get("diagonal") or 0)


# --- gathers, copies, shapes ---

@lowers("embedding")
def _embedding(b, a, out):
    return _syntorch.embedding(b.m(a["indices"]), b.m(a["weight"]))


@lowers("embedding_dense_backward")
def _embedding_backward(b, a, out):
    return _syntorch._aten_embedding_backward(b.m(a["grad_output"]), a["num_weights"])


@lowers("index_select")
def _index_select(b, a, out):
    return _syntorch.index_select(b.m(a["self"]), a["dim"], b.m(a["index"]))


@lowers("cat")
def _cat(b, a, out):
    ts = [b.m(t) for t in a["tensors"]]
    return _syntorch.cat(ts, a.get("dim") or 0)


@lowers("stack")
def _stack(b, a, out):
    return _syntorch.stack([b.m(t) for t in a["tensors"]], a.get("dim") or 0)


@lowers("clone")
def _clone(b, a, out):
    return b.m(a["self"]).clone()


@lowers("_to_copy")
def _to_copy(b, a, out):
    s = b.m(a["self"])
    target = sdtype(out.dtype)
    return s._to_dtype(target) if target != s.dtype else s.clone()


@lowers("copy_")
def _copy_(b, a, out):
    s = b.m(a["self"])
    s.copy_(b.m(a["src"]))
    return s


@lowers("topk")
def _topk(b, a, out):
    return tuple(_syntorch.topk(b.m(a["self"]), a["k"], a.get("dim", -1), bool(a.get("largest", True)),
                                bool(a.get("sorted", True))))


@lowers("native_dropout")
def _dropout(b, a, out):
    train = a.get("train")
    y = _syntorch.dropout(b.m(a["input"]), float(a["p"]), True if train is None else bool(train))
    return (y, b.fresh(out[1]))


@lowers("_local_scalar_dense")
def _item(b, a, out):
    b.m(a["self"]).item()  # the host waits for the device
    return ()  # a number, no tensor


# --- reductions and losses ---

@lowers("sum", "mean", "amax", "amin", "prod", "var", "std", "norm", "linalg_vector_norm", "logsumexp", "any",
        "all", "argmax", "argmin")
def _reduce(b, a, out):
    return _syntorch._aten_reduce(b.m(a["self"]), list(out.shape), sdtype(out.dtype), "aten::" + b.name)


@lowers("max", "min", "var_mean", "std_mean")
def _reduce_pair(b, a, out):
    if not isinstance(out, (tuple, list)):  # max(self): one value
        return _syntorch._aten_reduce(b.m(a["self"]), list(out.shape), sdtype(out.dtype), "aten::" + b.name)
    first = _syntorch._aten_reduce(b.m(a["self"]), list(out[0].shape), sdtype(out[0].dtype), "aten::" + b.name)
    return (first,) + tuple(b.fresh(x) for x in out[1:])


@lowers("nll_loss_forward")
def _nll_loss(b, a, out):
    x = b.m(a["self"])
    if a.get("reduction", 1) == 1 and a.get("weight") is None and len(x.size()) == 2:
        return (_syntorch.nll_loss(x, b.m(a["target"])), b.fresh(out[1]))
    return None


@lowers("nll_loss_backward")
def _nll_loss_backward(b, a, out):
    x = b.m(a["self"])
    if a.get("reduction", 1) == 1 and a.get("weight") is None and len(x.size()) == 2:
        return _syntorch._aten_nll_loss_backward(b.m(a["grad_output"]), x)
    return None


# --- convolutions, batch norm, pooling ---

def _cudnn_tf32():
    """The program's torch.backends.cudnn.allow_tf32, for its fp32 convolutions."""
    import torch
    allow = bool(torch.backends.cudnn.allow_tf32)
    if _syntorch._get_cudnn_allow_tf32() != allow:
        _syntorch._set_cudnn_allow_tf32(allow)


@lowers("convolution")
def _convolution(b, a, out):
    _cudnn_tf32()
    bias = a.get("bias")
    return _syntorch._aten_convolution(b.m(a["input"]), b.m(a["weight"]), b.m(bias) if bias is not None else None,
                                       list(a["stride"]), list(a["padding"]), list(a["dilation"]),
                                       bool(a["transposed"]), list(a["output_padding"]), int(a["groups"]))


@lowers("convolution_backward")
def _convolution_backward(b, a, out):
    _cudnn_tf32()
    return _syntorch._aten_convolution_backward(b.m(a["grad_output"]), b.m(a["input"]), b.m(a["weight"]),
                                                list(a["stride"]), list(a["padding"]), list(a["dilation"]),
                                                bool(a["transposed"]), list(a["output_padding"]), int(a["groups"]),
                                                list(a["output_mask"]))


def _optional(b, t):
    return b.m(t) if t is not None else None


@lowers("native_batch_norm", "_native_batch_norm_legit", "_native_batch_norm_legit_no_training", "cudnn_batch_norm")
def _batch_norm(b, a, out):
    training = bool(a.get("training", False))
    momentum = a.get("momentum", a.get("exponential_average_factor", 0.1))  # cudnn_batch_norm's names
    eps = a.get("eps", a.get("epsilon", 1e-5))
    y = _syntorch._aten_batch_norm(b.m(a["input"]), _optional(b, a.get("weight")), _optional(b, a.get("bias")),
                                   _optional(b, a.get("running_mean")), _optional(b, a.get("running_var")),
                                   training or a.get("running_mean") is None, float(momentum), float(eps))
    return (y,) + tuple(b.fresh(x) for x in out[1:])  # the saved statistics: written by the same kernels


@lowers("native_batch_norm_backward", "cudnn_batch_norm_backward")
def _batch_norm_backward(b, a, out):
    mask = list(a.get("output_mask") or (True, True, True))
    return _syntorch._aten_batch_norm_backward(b.m(a["grad_out"] if "grad_out" in a else a["grad_output"]),
                                               b.m(a["input"]), _optional(b, a.get("weight")), mask)


# Pooling and resampling: memory-bound passes (each input read once, each output written once;
# max pooling's indices too), named by their ATen op.
@lowers("max_pool2d_with_indices", "max_pool3d_with_indices", "max_pool2d_with_indices_backward",
        "max_pool3d_with_indices_backward", "avg_pool2d", "avg_pool3d", "avg_pool2d_backward", "avg_pool3d_backward",
        "_adaptive_avg_pool2d", "_adaptive_avg_pool3d", "_adaptive_avg_pool2d_backward", "_adaptive_avg_pool3d_backward",
        "adaptive_max_pool2d", "adaptive_max_pool2d_backward", "upsample_nearest2d", "upsample_bilinear2d",
        "upsample_nearest2d_backward", "upsample_bilinear2d_backward", "native_group_norm",
        "native_group_norm_backward", "select_backward", "slice_backward", "index_select_backward",
        "embedding_backward", "unfold_backward", "diagonal_backward", "as_strided_backward")
def _memory_pass(b, a, out):
    outs = out if isinstance(out, (tuple, list)) else (out,)
    ins = [b.m(t) for t in _tensors(list(a.values()), [])]
    specs = [(list(o.shape), sdtype(o.dtype)) for o in outs if o is not None]
    made = _syntorch._aten_memory_bound("aten::" + b.name, ins, specs, [])
    it = iter(made)
    return tuple(next(it) if o is not None else None for o in outs)
