#!/usr/bin/env python3
"""Time a small Llama-style decoder's prefill and decode steps with CUDA events, in eager PyTorch.

The same file runs unmodified on a real GPU and on syntorch's simulated one:

    python3 calibration/device/llama_decode.py --out real.jsonl
    PYTHONPATH=python:build/python python3 -m syntorch.run --hw hw_configs/h100_sxm5_80gb.json \\
        calibration/device/llama_decode.py --out simulated.jsonl

The model is plain torch.nn: token embedding, per layer an RMSNorm, q/k/v/o Linear (no bias), rotary
position embedding applied with the rotate-half form on cos/sin tables, F.scaled_dot_product_attention
against a KV cache preallocated per layer and written by slice assignment, an RMSNorm and a SwiGLU MLP
(gate/up/down Linear); a final RMSNorm and the LM head. Weights are random (values do not change
the time), fp16 by default. No torch.compile, no CUDA graphs.

For each config, batch and prompt length: the prefill (the whole prompt through the model, filling
the cache, logits for the last position) is timed with CUDA events after a warm-up prefill; then
--warmup decode steps (one token per sequence, greedy argmax of the logits fed back) run untimed and
--steps decode steps are timed as one span between two events, divided by --steps. Each timing is
the median over --reps repetitions of that. One JSON line per case: config, batch, prompt,
prefill_ms, decode_ms_per_token (and the shapes), to --out (default stdout).
"""

import argparse
import json
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

CONFIGS = {
    # name: hidden, layers, heads, ffn, vocab
    "llama-1b": dict(hidden=2048, layers=16, heads=16, ffn=5632, vocab=32000),
    "llama-7b": dict(hidden=4096, layers=32, heads=32, ffn=11008, vocab=32000),
}


class RMSNorm(nn.Module):
    def __init__(self, dim, eps, dtype, device):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim, dtype=dtype, device=device))
        self.dim, self.eps = dim, eps

    def forward(self, x):
        return F.rms_norm(x, (self.dim,), self.weight, self.eps)


def rotate_half(x):
    half = x.shape[-1] // 2
    x1 = x[..., :half]
    x2 = x[..., half:]
    return torch.cat([-x2, x1], dim=-1)


def apply_rotary(x, cos, sin):
    # x [B, H, T, D]; cos, sin [T, D]
    return x * cos + rotate_half(x) * sin


class Attention(nn.Module):
    def __init__(self, hidden, heads, dtype, device):
        super().__init__()
        self.heads, self.head_dim = heads, hidden // heads
        self.q_proj = nn.Linear(hidden, hidden, bias=False, dtype=dtype, device=device)
        self.k_proj = nn.Linear(hidden, hidden, bias=False, dtype=dtype, device=device)
        self.v_proj = nn.Linear(hidden, hidden, bias=False, dtype=dtype, device=device)
        self.o_proj = nn.Linear(hidden, hidden, bias=False, dtype=dtype, device=device)

    def forward(self, x, cos, sin, k_cache, v_cache, pos):
        b, t, _ = x.shape
        q = self.q_proj(x).view(b, t, self.heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(b, t, self.heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(b, t, self.heads, self.head_dim).transpose(1, 2)
        q = apply_rotary(q, cos, sin)
        k = apply_rotary(k, cos, sin)
        k_cache[:, :, pos:pos + t] = k
        v_cache[:, :, pos:pos + t] = v
        keys = k_cache[:, :, :pos + t]
        values = v_cache[:, :, :pos + t]
        # Prefill: causal over the prompt; decode: the one new query sees the whole cache.
        y = F.scaled_dot_product_attention(q, keys, values, is_causal=(t > 1))
        y = y.transpose(1, 2).reshape(b, t, self.heads * self.head_dim)
        return self.o_proj(y)


class MLP(nn.Module):
    def __init__(self, hidden, ffn, dtype, device):
        super().__init__()
        self.gate_proj = nn.Linear(hidden, ffn, bias=False, dtype=dtype, device=device)
        self.up_proj = nn.Linear(hidden, ffn, bias=False, dtype=dtype, device=device)
        self.down_proj = nn.Linear(ffn, hidden, bias=False, dtype=dtype, device=device)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class Block(nn.Module):
    def __init__(self, cfg, dtype, device):
        super().__init__()
        self.input_layernorm = RMSNorm(cfg["hidden"], 1e-5, dtype, device)
        self.self_attn = Attention(cfg["hidden"], cfg["heads"], dtype, device)
        self.post_attention_layernorm = RMSNorm(cfg["hidden"], 1e-5, dtype, device)
        self.mlp = MLP(cfg["hidden"], cfg["ffn"], dtype, device)

    def forward(self, x, cos, sin, k_cache, v_cache, pos):
        x = x + self.self_attn(self.input_layernorm(x), cos, sin, k_cache, v_cache, pos)
        return x + self.mlp(self.post_attention_layernorm(x))


class Llama(nn.Module):
    def __init__(self, cfg, max_seq, dtype, device):
        super().__init__()
        self.cfg = cfg
        self.embed_tokens = nn.Embedding(cfg["vocab"], cfg["hidden"], dtype=dtype, device=device)
        self.layers = nn.ModuleList([Block(cfg, dtype, device) for _ in range(cfg["layers"])])
        self.norm = RMSNorm(cfg["hidden"], 1e-5, dtype, device)
        self.lm_head = nn.Linear(cfg["hidden"], cfg["vocab"], bias=False, dtype=dtype, device=device)
        head_dim = cfg["hidden"] // cfg["heads"]
        # Rotary tables for every position, [max_seq, head_dim], computed once.
        inv_freq = torch.pow(10000.0, torch.arange(0, head_dim, 2, dtype=torch.float32, device=device)
                             * (-2.0 / head_dim))
        t = torch.arange(max_seq, dtype=torch.float32, device=device)
        freqs = torch.outer(t, inv_freq)
        emb = torch.cat([freqs, freqs], dim=-1)
        self.register_buffer("cos_table", torch.cos(emb).to(dtype))
        self.register_buffer("sin_table", torch.sin(emb).to(dtype))

    def new_cache(self, batch, max_seq):
        cfg = self.cfg
        head_dim = cfg["hidden"] // cfg["heads"]
        shape = (batch, cfg["heads"], max_seq, head_dim)
        dtype, device = self.lm_head.weight.dtype, self.lm_head.weight.device
        return [(torch.empty(shape, dtype=dtype, device=device), torch.empty(shape, dtype=dtype, device=device))
                for _ in range(cfg["layers"])]

    def forward(self, tokens, cache, pos):
        t = tokens.shape[1]
        x = self.embed_tokens(tokens)
        cos = self.cos_table[pos:pos + t]
        sin = self.sin_table[pos:pos + t]
        for layer, (k_cache, v_cache) in zip(self.layers, cache):
            x = layer(x, cos, sin, k_cache, v_cache, pos)
        x = self.norm(x[:, -1:, :])          # logits for the last position only
        return self.lm_head(x)               # [B, 1, vocab]


def time_case(model, batch, prompt, steps, warmup, reps, device):
    max_seq = prompt + warmup + steps
    cache = model.new_cache(batch, max_seq)
    vocab = model.cfg["vocab"]
    tokens = torch.randint(0, vocab, (batch, prompt), device=device)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)

    model(tokens, cache, 0)                  # warm-up prefill (cuBLAS heuristics, allocator)
    torch.cuda.synchronize()
    prefill, decode = [], []
    for _ in range(reps):
        start.record()
        logits = model(tokens, cache, 0)
        end.record()
        torch.cuda.synchronize()
        prefill.append(start.elapsed_time(end))

        nxt = logits.argmax(dim=-1)          # [B, 1]
        pos = prompt
        for _ in range(warmup):
            nxt = model(nxt, cache, pos).argmax(dim=-1)
            pos += 1
        torch.cuda.synchronize()
        start.record()
        for _ in range(steps):
            nxt = model(nxt, cache, pos).argmax(dim=-1)
            pos += 1
        end.record()
        torch.cuda.synchronize()
        decode.append(start.elapsed_time(end) / steps)
    return sorted(prefill)[len(prefill) // 2], sorted(decode)[len(decode) // 2]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", default=None, help="JSON lines output (default stdout)")
    p.add_argument("--configs", default="llama-1b,llama-7b")
    p.add_argument("--layers", type=int, default=None, help="override every config's layer count")
    p.add_argument("--batches", default="1,8")
    p.add_argument("--prompts", default="128,512")
    p.add_argument("--steps", type=int, default=32, help="timed decode steps")
    p.add_argument("--warmup", type=int, default=4, help="untimed decode steps before them")
    p.add_argument("--reps", type=int, default=3, help="repetitions; the median is reported")
    p.add_argument("--dtype", default="float16", choices=["float16", "bfloat16"])
    args = p.parse_args()

    device = "cuda"
    dtype = getattr(torch, args.dtype)
    torch.manual_seed(0)
    batches = [int(b) for b in args.batches.split(",")]
    prompts = [int(s) for s in args.prompts.split(",")]
    out = open(args.out, "w") if args.out else None
    with torch.inference_mode():
        for name in args.configs.split(","):
            cfg = dict(CONFIGS[name])
            if args.layers is not None:
                cfg["layers"] = args.layers
            max_seq = max(prompts) + args.warmup + args.steps
            model = Llama(cfg, max_seq, dtype, device).eval()
            for batch in batches:
                for prompt in prompts:
                    prefill_ms, decode_ms = time_case(model, batch, prompt, args.steps, args.warmup,
                                                      args.reps, device)
                    row = dict(config=name, **cfg, dtype=args.dtype, batch=batch, prompt=prompt,
                               decode_steps=args.steps, prefill_ms=round(prefill_ms, 4),
                               decode_ms_per_token=round(decode_ms, 4))
                    line = json.dumps(row)
                    print(line, flush=True)
                    if out is not None:
                        out.write(line + "\n")
                        out.flush()
            del model
            torch.cuda.empty_cache()
    if out is not None:
        out.close()


if __name__ == "__main__":
    sys.exit(main())
