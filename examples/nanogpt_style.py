"""A GPT-2 (124M) written in plain, idiomatic PyTorch, run on a simulated GPU: a training step
with AdamW, then text generation the way small research codebases do it (the whole context
through the model for every new token, top-k sampling). Only the imports differ from a real
PyTorch script.

    PYTHONPATH=python:build/python python3 examples/nanogpt_style.py [--hw F] [--batch 8]
        [--block 1024] [--prompt 64] [--new-tokens 16] [--layers 12]
"""

import argparse
import math
import sys

import syntorch
import syntorch.torch as torch
import syntorch.torch.nn as nn
import syntorch.torch.nn.functional as F


class CausalSelfAttention(nn.Module):
    def __init__(self, n_embd, n_head):
        super().__init__()
        assert n_embd % n_head == 0
        self.n_head = n_head
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(C, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.c_proj(y)


class MLP(nn.Module):
    def __init__(self, n_embd):
        super().__init__()
        self.c_fc = nn.Linear(n_embd, 4 * n_embd)
        self.gelu = nn.GELU(approximate="tanh")
        self.c_proj = nn.Linear(4 * n_embd, n_embd)

    def forward(self, x):
        return self.c_proj(self.gelu(self.c_fc(x)))


class Block(nn.Module):
    def __init__(self, n_embd, n_head):
        super().__init__()
        self.ln_1 = nn.LayerNorm(n_embd)
        self.attn = CausalSelfAttention(n_embd, n_head)
        self.ln_2 = nn.LayerNorm(n_embd)
        self.mlp = MLP(n_embd)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self, vocab_size=50304, block_size=1024, n_layer=12, n_head=12, n_embd=768):
        super().__init__()
        self.block_size = block_size
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(vocab_size, n_embd),
            wpe=nn.Embedding(block_size, n_embd),
            h=nn.ModuleList([Block(n_embd, n_head) for _ in range(n_layer)]),
            ln_f=nn.LayerNorm(n_embd),
        ))
        self.lm_head = nn.Linear(n_embd, vocab_size, bias=False)
        self.apply(self._init_weights)

    def _init_weights(self, module):
        if isinstance(module, nn.Linear):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if module.bias is not None:
                nn.init.zeros_(module.bias)

    def forward(self, idx, targets=None):
        B, T = idx.size()
        assert T <= self.block_size, f"sequence of {T} tokens is longer than the block size {self.block_size}"
        pos = torch.arange(0, T, dtype=torch.long, device=idx.device)
        x = self.transformer.wte(idx) + self.transformer.wpe(pos)
        for block in self.transformer.h:
            x = block(x)
        logits = self.lm_head(self.transformer.ln_f(x))
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))
        return logits, loss

    @torch.no_grad()
    def generate(self, idx, max_new_tokens, temperature=1.0, top_k=50):
        for _ in range(max_new_tokens):
            idx_cond = idx if idx.size(1) <= self.block_size else idx[:, -self.block_size:]
            logits, _ = self(idx_cond)
            logits = logits[:, -1, :] / temperature
            if top_k is not None:
                v, _ = torch.topk(logits, min(top_k, logits.size(-1)))
                logits = logits.masked_fill(logits < v[:, -1:], -math.inf)
            probs = F.softmax(logits, dim=-1)
            idx_next = torch.multinomial(probs, num_samples=1)
            idx = torch.cat((idx, idx_next), dim=1)
        return idx


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--hw", default=None, help="hardware config JSON (default: the bundled H100)")
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--block", type=int, default=1024, help="training sequence length")
    p.add_argument("--prompt", type=int, default=64, help="prompt tokens for generation")
    p.add_argument("--new-tokens", type=int, default=16)
    p.add_argument("--layers", type=int, default=12)
    args = p.parse_args(argv)
    for name in ("batch", "block", "prompt", "new_tokens", "layers"):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')}: expected a positive number, got {getattr(args, name)}")

    syntorch.init(hw=args.hw)
    model = GPT(n_layer=args.layers)
    optimizer = torch.optim.AdamW(model.parameters(), lr=6e-4, betas=(0.9, 0.95), weight_decay=0.1, fused=True)
    x = torch.randint(0, 50304, (args.batch, args.block))
    y = torch.randint(0, 50304, (args.batch, args.block))
    with torch.profiler.record_function("train step"):
        with torch.autocast(device_type="cuda", dtype=torch.bfloat16):
            logits, loss = model(x, y)
        loss.backward()
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        torch.cuda.synchronize()
    model.eval()
    with torch.profiler.record_function("generate"):
        with torch.autocast(device_type="cuda", dtype=torch.bfloat16):
            out = model.generate(torch.randint(0, 50304, (1, args.prompt)), args.new_tokens)
        out[0, -1].item()  # the host reads the last token (a sync)
    stats = syntorch.trace_manager.stats()
    params = sum(p.numel() for p in model.parameters())
    print(f"GPT-2 style, {params / 1e6:.0f}M parameters, on {stats['device']}; norm {norm.shape}, tokens {out.shape}")
    for s in stats["steps"]:
        took = s["end_s"] - s["begin_s"]
        extra = ""
        if s["name"] == "train step":
            extra = f"  {args.batch * args.block / took:10.0f} tokens/s"
        elif s["name"] == "generate":
            extra = f"  {took / args.new_tokens * 1e3:8.3f} ms a token"
        print(f"  {s['name']:<12} {took * 1e3:9.3f} ms{extra}")
    print(f"  kernels {stats['kernels']}, peak memory {stats['peak_memory_bytes'][0] / 2 ** 30:.2f} GiB")
    return stats


if __name__ == "__main__":
    main(sys.argv[1:])
