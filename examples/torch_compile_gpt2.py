"""torch.compile against eager mode on a GPT-2 124M training step, as nanoGPT wrote its model in
December 2022 (attention as explicit matmuls, mask, softmax and dropout) and timed it: batch 12 x
1024 tokens under bfloat16 autocast, fused AdamW. nanoGPT's README reported one A100's iteration
going from about 250 ms to 135 ms with torch.compile (1.85x).

    python examples/torch_compile_gpt2.py [hw_configs/a100_sxm4_80gb.json]

prints five steps' simulated times, eager then compiled (the first compiled step holds the compile
of the forward and backward graphs), and the steady speed-up."""

import math
import sys

import syntorch
import syntorch.clock
import syntorch.torch as torch
import syntorch.torch.nn.functional as F
from syntorch.torch import nn


class CausalSelfAttention(nn.Module):
    def __init__(self, dim, heads, block):
        super().__init__()
        self.c_attn = nn.Linear(dim, 3 * dim)
        self.c_proj = nn.Linear(dim, dim)
        self.heads = heads
        self.register_buffer("bias", torch.tril(torch.ones(block, block)).view(1, 1, block, block))
        self.attn_dropout = nn.Dropout(0.1)
        self.resid_dropout = nn.Dropout(0.1)

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(C, dim=2)
        k = k.view(B, T, self.heads, C // self.heads).transpose(1, 2)
        q = q.view(B, T, self.heads, C // self.heads).transpose(1, 2)
        v = v.view(B, T, self.heads, C // self.heads).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
        att = self.attn_dropout(F.softmax(att, dim=-1))
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        return self.resid_dropout(self.c_proj(y))


class Block(nn.Module):
    def __init__(self, dim, heads, block):
        super().__init__()
        self.ln_1 = nn.LayerNorm(dim)
        self.attn = CausalSelfAttention(dim, heads, block)
        self.ln_2 = nn.LayerNorm(dim)
        self.c_fc = nn.Linear(dim, 4 * dim)
        self.c_proj = nn.Linear(4 * dim, dim)
        self.dropout = nn.Dropout(0.1)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.dropout(self.c_proj(F.gelu(self.c_fc(self.ln_2(x)))))


class GPT(nn.Module):
    def __init__(self, vocab=50304, dim=768, heads=12, layers=12, block=1024):
        super().__init__()
        self.wte = nn.Embedding(vocab, dim)
        self.wpe = nn.Embedding(block, dim)
        self.drop = nn.Dropout(0.1)
        self.h = nn.ModuleList([Block(dim, heads, block) for _ in range(layers)])
        self.ln_f = nn.LayerNorm(dim)
        self.lm_head = nn.Linear(dim, vocab, bias=False)
        self.wte.weight = self.lm_head.weight

    def forward(self, idx, targets):
        t = idx.size(1)
        pos = torch.arange(0, t, dtype=torch.long, device=idx.device).unsqueeze(0)
        x = self.drop(self.wte(idx) + self.wpe(pos))
        for block in self.h:
            x = block(x)
        logits = self.lm_head(self.ln_f(x))
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1)


def step_times_ms(compiled, hw, steps=5, batch=12, **shape):
    """The simulated time of each training step, in ms (`shape`: GPT's arguments, GPT-2 124M's by
    default; a batch of `batch` sequences of its block size)."""
    syntorch.init(hw=hw)
    model = GPT(**shape)
    if compiled:
        model = torch.compile(model)
    opt = torch.optim.AdamW(model.parameters(), lr=6e-4, fused=True)
    block = shape.get("block", 1024)
    x = torch.randint(50304, (batch, block))
    y = torch.randint(50304, (batch, block))
    times = []
    for _ in range(steps):
        torch.cuda.synchronize()
        start = syntorch.clock.now()
        with torch.autocast(device_type="cuda", dtype=torch.bfloat16):
            loss = model(x, y)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        torch.cuda.synchronize()
        times.append((syntorch.clock.now() - start) * 1e3)
    return times


if __name__ == "__main__":
    hw = sys.argv[1] if len(sys.argv) > 1 else "hw_configs/a100_sxm4_80gb.json"
    eager = step_times_ms(False, hw)
    compiled = step_times_ms(True, hw)
    print("eager ms", [round(t, 1) for t in eager])
    print("compiled ms", [round(t, 1) for t in compiled])
    print(f"speed-up (steady, step 5): {eager[-1] / compiled[-1]:.2f}x")
