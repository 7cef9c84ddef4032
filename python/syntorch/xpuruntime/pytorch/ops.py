"""xpuruntime.pytorch.ops: the design's fused operators."""

import syntorch.torch as torch
from syntorch import get_kernel_policy

__all__ = ["fused_attention", "fused_layernorm"]


def fused_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None):
    """Fused multi-head attention over (batch, heads, seq, head_dim) tensors: FlashAttention-2
    (the default, or the policy's attention="flash_v2"), or PyTorch's own
    scaled_dot_product_attention (attention="torch"); another kernel name is a ValueError, as the
    design's."""
    policy = get_kernel_policy()
    kernel = "flash_v2"
    if policy is not None and "attention" in policy.preferences:
        kernel = policy.preferences["attention"]
    if kernel == "flash_v2":
        from syntorch.torch.nn.attention import sdpa_kernel, SDPBackend
        if query.dim() != 4:
            raise RuntimeError(f"fused_attention: query must be 4D (batch, heads, seq_len, head_dim), got "
                               f"{query.dim()}D")
        with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
            return torch.nn.functional.scaled_dot_product_attention(
                query.contiguous(), key.contiguous(), value.contiguous(), attn_mask=attn_mask, dropout_p=dropout_p,
                is_causal=is_causal, scale=scale if scale is not None else query.shape[-1] ** -0.5)
    if kernel == "torch":
        return torch.nn.functional.scaled_dot_product_attention(query, key, value, attn_mask, dropout_p, is_causal)
    raise ValueError(f"Unknown attention kernel: {kernel}")


def fused_layernorm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    """Layer normalisation in one kernel (mean, variance, normalise, scale and shift)."""
    return torch.nn.functional.layer_norm(input.contiguous(), list(normalized_shape), weight, bias, eps)
