"""torch.nn's activation modules over nn.functional (ReLU, GELU and SiLU are in nn itself)."""

from . import Module, functional as F


class Tanh(Module):
    def forward(self, input):
        return F.tanh(input)


class Sigmoid(Module):
    def forward(self, input):
        return F.sigmoid(input)


class Softmax(Module):
    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return F.softmax(input, self.dim)


class LogSoftmax(Module):
    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return F.log_softmax(input, self.dim)


class LeakyReLU(Module):
    def __init__(self, negative_slope=0.01, inplace=False):
        super().__init__()
        self.negative_slope, self.inplace = negative_slope, inplace

    def forward(self, input):
        return F.leaky_relu(input, self.negative_slope)


class Softplus(Module):
    def __init__(self, beta=1.0, threshold=20.0):
        super().__init__()
        self.beta, self.threshold = beta, threshold

    def forward(self, input):
        return F.softplus(input, self.beta, self.threshold)


class Hardswish(Module):
    def __init__(self, inplace=False):
        super().__init__()

    def forward(self, input):
        return F.hardswish(input)


class Dropout2d(Module):
    def __init__(self, p=0.5, inplace=False):
        super().__init__()
        self.p = p

    def forward(self, input):
        return F.dropout2d(input, self.p, self.training)


class MultiheadAttention(Module):
    """torch.nn.MultiheadAttention: the input projections (one packed one when the three
    dimensions agree), attention per head and the output projection. With need_weights (PyTorch's
    default) the scores are computed explicitly, as PyTorch's math path does to return the
    head-averaged weights; without, one fused scaled_dot_product_attention."""

    def __init__(self, embed_dim, num_heads, dropout=0.0, bias=True, add_bias_kv=False, add_zero_attn=False,
                 kdim=None, vdim=None, batch_first=False, device=None, dtype=None):
        super().__init__()
        from . import Linear, _parameter
        if embed_dim % num_heads:
            raise AssertionError("embed_dim must be divisible by num_heads")
        if add_bias_kv or add_zero_attn:
            raise NotImplementedError("nn.MultiheadAttention: add_bias_kv and add_zero_attn are not supported")
        self.embed_dim, self.num_heads, self.dropout, self.batch_first = embed_dim, num_heads, dropout, batch_first
        self.head_dim = embed_dim // num_heads
        self.kdim, self.vdim = kdim or embed_dim, vdim or embed_dim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        if self._qkv_same_embed_dim:
            self.in_proj_weight = _parameter(3 * embed_dim, embed_dim, device=device, dtype=dtype)
        else:
            self.q_proj_weight = _parameter(embed_dim, embed_dim, device=device, dtype=dtype)
            self.k_proj_weight = _parameter(embed_dim, self.kdim, device=device, dtype=dtype)
            self.v_proj_weight = _parameter(embed_dim, self.vdim, device=device, dtype=dtype)
        if bias:
            self.in_proj_bias = _parameter(3 * embed_dim, device=device, dtype=dtype)
        else:
            object.__setattr__(self, "in_proj_bias", None)
        self.out_proj = Linear(embed_dim, embed_dim, bias=bias, device=device, dtype=dtype)

    def forward(self, query, key, value, key_padding_mask=None, need_weights=True, attn_mask=None,
                average_attn_weights=True, is_causal=False):
        import syntorch.torch as torch
        self_attention = query is key and key is value  # before any transpose makes them new objects
        batched = query.dim() == 3
        if not batched:
            query = query.unsqueeze(1)
            key, value = (query, query) if self_attention else (key.unsqueeze(1), value.unsqueeze(1))
        elif self.batch_first:
            query = query.transpose(0, 1)
            key, value = (query, query) if self_attention else (key.transpose(0, 1), value.transpose(0, 1))
        tgt, bsz, _ = query.shape
        src = key.shape[0]
        e = self.embed_dim
        bias = self.in_proj_bias
        biases = (None, None, None) if bias is None else (bias[:e], bias[e:2 * e], bias[2 * e:])
        if self._qkv_same_embed_dim:
            weights = (self.in_proj_weight[:e], self.in_proj_weight[e:2 * e], self.in_proj_weight[2 * e:])
        else:
            weights = (self.q_proj_weight, self.k_proj_weight, self.v_proj_weight)
        if self._qkv_same_embed_dim and self_attention:
            q, k, v = F.linear(query, self.in_proj_weight, bias).chunk(3, -1)  # one packed projection
        else:
            q, k, v = (F.linear(x, w, b) for x, w, b in zip((query, key, value), weights, biases))
        heads = lambda t, n: t.reshape(n, bsz * self.num_heads, self.head_dim).transpose(0, 1).reshape(  # noqa: E731
            bsz, self.num_heads, n, self.head_dim)
        q, k, v = heads(q, tgt), heads(k, src), heads(v, src)
        mask = attn_mask
        if key_padding_mask is not None:
            pad = key_padding_mask.reshape(bsz, 1, 1, src)
            mask = pad if mask is None else mask + pad
        # With a mask, the scores explicitly too (the fused kernel's backward with a mask is not
        # modelled); PyTorch's memory-efficient kernel would run it fused.
        if need_weights or mask is not None:
            scores = torch.matmul(q, k.transpose(-2, -1)) * (self.head_dim ** -0.5)
            if mask is not None:
                scores = scores + mask if mask.dtype != torch.bool else scores.masked_fill(mask, float("-inf"))
            probs = F.softmax(scores, -1)
            probs_d = F.dropout(probs, self.dropout, self.training)
            out = torch.matmul(probs_d, v)
            attn = (probs.mean(1) if average_attn_weights else probs) if need_weights else None
        else:
            out = F.scaled_dot_product_attention(q, k, v, dropout_p=self.dropout if self.training else 0.0,
                                                 is_causal=is_causal)
            attn = None
        out = out.permute(2, 0, 1, 3).reshape(tgt, bsz, e)
        out = self.out_proj(out)
        if not batched:
            out = out.squeeze(1)
            attn = attn.squeeze(0) if attn is not None else None
        elif self.batch_first:
            out = out.transpose(0, 1)
        return out, attn
