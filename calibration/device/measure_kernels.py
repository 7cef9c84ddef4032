#!/usr/bin/env python3
"""Measure single-GPU kernels on an NVIDIA H100 or H200 with PyTorch, in the format `syntorch validate` reads.

Usage (on a machine with one H100 or H200 and PyTorch with CUDA; no network needed):

    python3 calibration/device/measure_kernels.py --out DIR [--budget SECONDS] [--gpu h100|h200]

writes, under DIR (GPU: h100 or h200, from the device's name unless --gpu names it):
  measured_GPU.csv         rows id,op,hw,params,metric,value,unit,source (timing=device latency in us)
  measured_GPU_detail.csv  per row: repetitions, median/min/p10/p90 with a cold L2, the median with a
                           warm L2 (no flush), and the CUDA kernels one call launched (torch.profiler)
  GPU_environment.json     GPU, driver, clocks, torch and CUDA versions, as reported before and after
  GPU_environment.txt      the same, readable, and the plain nvidia-smi table

Rows name the GPU's config under hw_configs/ (GPUS below) and take its id prefix (H001.. on an H100,
J001.. on an H200). `python3 calibration/device/measure_kernels.py --list-rows FILE --gpu h100`
writes the rows it would measure, with a placeholder value, without importing torch (to check them
with `build/syntorch validate FILE`).

Method. Each case is called a few times to warm up (cuBLAS heuristics, allocator), then timed over N
repetitions (200 below 0.3 ms, 100 below 2 ms, 40 above). Before each repetition a 256 MiB buffer is
read (a sum), which evicts the 50 MB L2 with clean lines, so every operand starts in HBM as in a
model's forward pass (each layer's weights are different); then CUDA events are recorded right
before and after the call. The host enqueues the whole loop ahead of the GPU (a sleep kernel first,
and each flush takes ~90 us of GPU time), so the events see device time: the kernels and the gaps
between back-to-back kernels of one call, no host launch cost (timing=device). The value is the
median over the N repetitions. Nothing about the GPU's settings (clocks, power, persistence) is
changed; the clocks are recorded as nvidia-smi reports them.

GEMMs are computed as torch.nn.Linear does: C[m,n] = A[m,k] @ W[n,k]^T (cuBLAS "TN"), fp16 and bf16
with torch.mm, fp8 (e4m3 inputs, per-tensor scales of 1, bf16 output, fast accumulation as
inference engines run the forward) with torch._scaled_mm. Norms, softmax and elementwise ops are
PyTorch's own CUDA kernels; a norm row's impl= names what the profiler saw one call launch (one
kernel: fused, two: torch); the rmsnorm impl=eager rows are Hugging Face's LlamaRMSNorm.forward.
Attention is F.scaled_dot_product_attention restricted to the flash backend (FlashAttention-2).
paged_attention rows are FlashAttention-2's varlen forward as PyTorch ships it
(torch.ops.aten._flash_attention_forward with cumulative sequence offsets, causal, so each
sequence's new tokens attend to its whole context, aligned bottom-right): a packed batch of
sequences of different lengths, as a serving engine's iteration runs it, with the keys and values
contiguous per sequence (page_tokens=0: PyTorch's kernel takes no block table).
"""

import argparse
import csv
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import time

DATE = "2026-11-28"
SCRIPT = "calibration/device/measure_kernels.py"
# --gpu: the device-name substring that detects it, the config the rows name, their id prefix.
GPUS = {"h100": ("H100", "h100_sxm5_80gb", "H"), "h200": ("H200", "h200_sxm_141gb", "J")}
HW = None  # set in main()
FIELDS = ["id", "op", "hw", "params", "metric", "value", "unit", "source"]

torch = None  # imported in main() unless --list-rows
F = None


class Case:
    """One row: op and params as validate reads them, and how to build the call on the GPU.

    make() returns a zero-argument function that launches the op (holding its tensors).
    impl_by_kernels: a norm whose impl= is decided by the kernels one call launches
    ({count: impl}); the row is skipped if the count is not in the map.
    need_kernel: a substring that a launched kernel's name must contain (else the row is skipped).
    """

    def __init__(self, op, params, make, impl_by_kernels=None, need_kernel=None, note=""):
        self.op = op
        self.params = params
        self.make = make
        self.impl_by_kernels = impl_by_kernels
        self.need_kernel = need_kernel
        self.note = note
        self.id = None

    def row_params(self, impl=None):
        p = self.params
        if impl is not None:
            # impl= before timing=, as the existing rows write it
            p = p.replace(" timing=", f" impl={impl} timing=")
        return p


def tdtype(name):
    return {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}[name]


def randn(shape, dtype):
    return torch.randn(*shape, device="cuda", dtype=dtype)


# ---------------------------------------------------------------- builders (run only on the GPU)

def make_gemm(m, n, k, dt):
    def make():
        a = randn((m, k), tdtype(dt))
        w = randn((n, k), tdtype(dt))
        out = torch.empty((m, n), device="cuda", dtype=tdtype(dt))
        wt = w.t()
        return lambda: torch.mm(a, wt, out=out)
    return make


def make_gemm_fp8(m, n, k):
    def make():
        a = randn((m, k), torch.bfloat16).to(torch.float8_e4m3fn)
        w = randn((n, k), torch.bfloat16).to(torch.float8_e4m3fn)
        wt = w.t()  # column-major [k, n], as _scaled_mm wants its second operand
        one_a = torch.tensor(1.0, device="cuda", dtype=torch.float32)
        one_b = torch.tensor(1.0, device="cuda", dtype=torch.float32)

        def call():
            r = torch._scaled_mm(a, wt, scale_a=one_a, scale_b=one_b, out_dtype=torch.bfloat16,
                                 use_fast_accum=True)
            return r[0] if isinstance(r, tuple) else r
        return call
    return make


def make_bmm(b, m, n, k, dt):
    def make():
        x = randn((b, m, k), tdtype(dt))
        y = randn((b, k, n), tdtype(dt))
        out = torch.empty((b, m, n), device="cuda", dtype=tdtype(dt))
        return lambda: torch.bmm(x, y, out=out)
    return make


def make_layernorm(rows, cols, dt):
    def make():
        x = randn((rows, cols), tdtype(dt))
        w = randn((cols,), tdtype(dt))
        b = randn((cols,), tdtype(dt))
        return lambda: F.layer_norm(x, (cols,), w, b, 1e-5)
    return make


def make_rmsnorm_torch(rows, cols, dt):
    def make():
        x = randn((rows, cols), tdtype(dt))
        w = randn((cols,), tdtype(dt))
        return lambda: F.rms_norm(x, (cols,), w, 1e-6)
    return make


def make_rmsnorm_eager(rows, cols, dt):
    # Hugging Face transformers LlamaRMSNorm.forward
    def make():
        x = randn((rows, cols), tdtype(dt))
        weight = randn((cols,), tdtype(dt))
        eps = 1e-6

        def call():
            input_dtype = x.dtype
            h = x.to(torch.float32)
            variance = h.pow(2).mean(-1, keepdim=True)
            h = h * torch.rsqrt(variance + eps)
            return weight * h.to(input_dtype)
        return call
    return make


def make_softmax(rows, cols, dt):
    def make():
        x = randn((rows, cols), tdtype(dt))
        return lambda: torch.softmax(x, dim=-1)
    return make


def make_unary(fn_name, elements, dt):
    def make():
        x = randn((elements,), tdtype(dt))
        if fn_name == "gelu":
            return lambda: F.gelu(x, approximate="tanh")
        if fn_name == "silu":
            return lambda: F.silu(x)
        if fn_name == "copy":
            out = torch.empty_like(x)
            return lambda: out.copy_(x)
        raise ValueError(fn_name)
    return make


def make_binary(fn_name, elements, dt):
    def make():
        x = randn((elements,), tdtype(dt))
        y = randn((elements,), tdtype(dt))
        out = torch.empty_like(x)
        if fn_name == "add":
            return lambda: torch.add(x, y, out=out)
        if fn_name == "mul":
            return lambda: torch.mul(x, y, out=out)
        raise ValueError(fn_name)
    return make


def make_swiglu_unfused(elements, dt):
    def make():
        gate = randn((elements,), tdtype(dt))
        up = randn((elements,), tdtype(dt))
        return lambda: F.silu(gate) * up
    return make


def flash_context():
    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel
        return sdpa_kernel(SDPBackend.FLASH_ATTENTION)
    except ImportError:
        return torch.backends.cuda.sdp_kernel(enable_flash=True, enable_math=False, enable_mem_efficient=False)


def make_attention(batch, heads, kv_heads, seq_q, seq_kv, head_dim, causal, dt):
    def make():
        q = randn((batch, heads, seq_q, head_dim), tdtype(dt))
        k = randn((batch, kv_heads, seq_kv, head_dim), tdtype(dt))
        v = randn((batch, kv_heads, seq_kv, head_dim), tdtype(dt))
        kwargs = {"is_causal": causal}
        if kv_heads != heads:
            kwargs["enable_gqa"] = True

        def call():
            with flash_context():
                return F.scaled_dot_product_attention(q, k, v, **kwargs)
        return call
    return make


def make_varlen_attention(q_lens, kv_lens, heads, kv_heads, head_dim, dt):
    def make():
        q = randn((sum(q_lens), heads, head_dim), tdtype(dt))
        k = randn((sum(kv_lens), kv_heads, head_dim), tdtype(dt))
        v = randn((sum(kv_lens), kv_heads, head_dim), tdtype(dt))

        def offsets(lens):
            out = [0]
            for n in lens:
                out.append(out[-1] + n)
            return torch.tensor(out, device="cuda", dtype=torch.int32)
        cu_q, cu_k = offsets(q_lens), offsets(kv_lens)
        max_q, max_k = max(q_lens), max(kv_lens)
        return lambda: torch.ops.aten._flash_attention_forward(q, k, v, cu_q, cu_k, max_q, max_k, 0.0, True, False)
    return make


def make_embedding(tokens, hidden, vocab, dt):
    def make():
        table = randn((vocab, hidden), tdtype(dt))
        ids = torch.randint(0, vocab, (tokens,), device="cuda")
        return lambda: F.embedding(ids, table)
    return make


def make_topk(rows, cols, k, dt):
    def make():
        x = randn((rows, cols), tdtype(dt))
        return lambda: torch.topk(x, k, dim=-1)
    return make


# ---------------------------------------------------------------- the cases, in id order

def cases(prefix):
    out = []

    def add(c):
        out.append(c)

    dev = "timing=device"
    # GEMMs, fp16 and bf16: decode-like small m against Llama-sized weights, then large products.
    nk = [(4096, 4096), (12288, 4096), (8192, 8192), (28672, 8192), (8192, 28672), (12288, 12288)]
    big = [(1024, 1024, 1024), (2048, 2048, 2048), (4096, 4096, 4096), (6144, 6144, 6144),
           (8192, 8192, 8192), (2048, 2048, 13312), (1024, 10240, 5120), (1024, 12288, 12288),
           (4096, 12288, 12288), (8192, 28672, 8192), (8192, 8192, 28672), (16384, 8192, 8192)]
    for dt in ("fp16", "bf16"):
        for n, k in nk:
            for m in (1, 8, 16, 32, 64, 128, 256):
                add(Case("gemm", f"m={m} n={n} k={k} dtype={dt} {dev}", make_gemm(m, n, k, dt)))
        for m, n, k in big:
            add(Case("gemm", f"m={m} n={n} k={k} dtype={dt} {dev}", make_gemm(m, n, k, dt)))
    # Norms (shapes of the shared rows B045-B062 and Llama widths).
    for rows, cols, dt in [(4096, 4096, "fp16"), (32768, 4096, "fp16"), (4096, 8192, "fp16"),
                           (4096, 16384, "fp32"), (4096, 8192, "bf16"), (16384, 8192, "bf16")]:
        add(Case("layernorm", f"rows={rows} cols={cols} dtype={dt} {dev}", make_layernorm(rows, cols, dt),
                 impl_by_kernels={1: "fused", 2: "torch"}))
    for rows, cols, dt in [(2048, 4096, "bf16"), (4096, 8192, "bf16"), (16384, 4096, "bf16")]:
        add(Case("rmsnorm", f"rows={rows} cols={cols} dtype={dt} impl=eager {dev}", make_rmsnorm_eager(rows, cols, dt),
                 note="Hugging Face LlamaRMSNorm.forward"))
        add(Case("rmsnorm", f"rows={rows} cols={cols} dtype={dt} {dev}", make_rmsnorm_torch(rows, cols, dt),
                 impl_by_kernels={1: "fused", 2: "torch"}, note="torch.nn.functional.rms_norm"))
    for rows, cols, dt in [(4096, 4096, "fp16"), (32768, 4096, "fp16"), (4096, 32768, "fp16"),
                           (16384, 1024, "fp16"), (8192, 32000, "bf16")]:
        add(Case("softmax", f"rows={rows} cols={cols} dtype={dt} {dev}", make_softmax(rows, cols, dt)))
    # Elementwise.
    for e, dt in [(1 << 24, "fp16"), (1 << 26, "fp16"), (536870912, "fp16"), (1 << 26, "bf16")]:
        add(Case("gelu", f"elements={e} dtype={dt} {dev}", make_unary("gelu", e, dt), note="tanh form"))
    for e in (1 << 24, 1 << 26, 1 << 28):
        add(Case("silu", f"elements={e} dtype=bf16 {dev}", make_unary("silu", e, "bf16")))
    for name in ("add", "mul"):
        for e in (1 << 24, 1 << 26, 1 << 28):
            add(Case(name, f"elements={e} dtype=bf16 {dev}", make_binary(name, e, "bf16")))
    for e in (1 << 26, 1 << 28):
        add(Case("copy", f"elements={e} dtype=bf16 {dev}", make_unary("copy", e, "bf16")))
    for e in (1 << 24, 1 << 26):
        add(Case("swiglu", f"elements={e} dtype=bf16 impl=unfused {dev}", make_swiglu_unfused(e, "bf16"),
                 note="F.silu(gate) * up"))
    # fp8 GEMMs (torch._scaled_mm needs m, n, k multiples of 16).
    for n, k in [(8192, 8192), (28672, 8192)]:
        for m in (16, 64, 256):
            add(Case("gemm", f"m={m} n={n} k={k} dtype=fp8 {dev}", make_gemm_fp8(m, n, k)))
    for m, n, k in [(1024, 9216, 14336), (2048, 2048, 13312), (4096, 4096, 4096), (8192, 8192, 8192),
                    (8192, 28672, 8192)]:
        add(Case("gemm", f"m={m} n={n} k={k} dtype=fp8 {dev}", make_gemm_fp8(m, n, k)))
    # Attention through PyTorch's FlashAttention-2.
    for b, h, kvh, sq, skv, d, causal, dt in [(1, 32, 32, 16384, 16384, 64, False, "fp16"),
                                              (1, 16, 16, 16384, 16384, 128, False, "fp16"),
                                              (4, 32, 32, 4096, 4096, 128, True, "bf16"),
                                              (1, 32, 32, 8192, 8192, 128, True, "bf16"),
                                              (32, 32, 32, 1, 4096, 128, False, "bf16"),
                                              (16, 32, 8, 2048, 2048, 128, True, "bf16")]:
        flag = " causal=true" if causal else ""
        add(Case("attention", f"batch={b} heads={h} kv_heads={kvh} seq_q={sq} seq_kv={skv} head_dim={d}{flag} "
                              f"dtype={dt} impl=flash_v2 {dev}",
                 make_attention(b, h, kvh, sq, skv, d, causal, dt), need_kernel="flash"))
    # Batched products of attention's shapes.
    for b, m, n, k in [(64, 2048, 2048, 128), (64, 2048, 128, 2048), (32, 4096, 4096, 128), (32, 4096, 128, 4096)]:
        add(Case("bmm", f"batch={b} m={m} n={n} k={k} dtype=bf16 {dev}", make_bmm(b, m, n, k, "bf16")))
    for tokens in (8192, 32768):
        add(Case("embedding", f"tokens={tokens} hidden=4096 vocab=128256 dtype=bf16 {dev}",
                 make_embedding(tokens, 4096, 128256, "bf16")))
    for rows, cols, k, dt in [(8192, 64, 8, "bf16"), (16384, 128, 8, "fp32")]:
        add(Case("topk", f"rows={rows} cols={cols} top_k={k} dtype={dt} {dev}", make_topk(rows, cols, k, dt)))
    # Varlen attention over packed batches, as serving iterations run it (Llama-3 8B's heads on one
    # GPU: 32 query, 8 key/value; Llama-3 70B's per GPU at TP8: 8 and 1). splits= lists the query
    # lengths, then the context lengths, colon-separated.
    spread = [128 + (4096 - 128) * i // 63 for i in range(64)]  # 64 contexts from 128 to 4096
    for q_lens, kv_lens, h, kvh in [([1] * 64, [1024] * 64, 32, 8),
                                    ([1] * 32, [4096] * 32, 32, 8),
                                    ([1] * 8, [16384] * 8, 32, 8),
                                    ([1] * 256, [2048] * 256, 8, 1),
                                    ([1] * 64, spread, 32, 8),
                                    ([512] + [1] * 63, [2048] + spread[:63], 32, 8),
                                    ([2048], [2048], 32, 8),
                                    ([2048], [8192], 32, 8),
                                    ([512, 1024, 2048, 4096], [512, 1024, 2048, 4096], 32, 8),
                                    ([8192] * 2, [8192] * 2, 8, 1)]:
        b = len(q_lens)
        even = len(set(q_lens)) == 1 and len(set(kv_lens)) == 1
        splits = "" if even else " splits=" + ":".join(str(n) for n in q_lens + kv_lens)
        add(Case("paged_attention", f"batch={b} heads={h} kv_heads={kvh} seq_q={sum(q_lens)} seq_kv={sum(kv_lens)} "
                                    f"head_dim=128 page_tokens=0{splits} dtype=bf16 impl=flash_v2 {dev}",
                 make_varlen_attention(q_lens, kv_lens, h, kvh, 128, "bf16"), need_kernel="flash"))
    for i, c in enumerate(out):
        c.id = f"{prefix}{i + 1:03d}"
    return out


# ---------------------------------------------------------------- measurement

def timed(fn, reps, flush):
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    torch.cuda.synchronize()
    if hasattr(torch.cuda, "_sleep"):
        torch.cuda._sleep(40_000_000)  # ~20 ms of GPU time: the host gets ahead of the GPU
    for i in range(reps):
        if flush is not None:
            flush()
        starts[i].record()
        fn()
        ends[i].record()
    torch.cuda.synchronize()
    return [s.elapsed_time(e) * 1e3 for s, e in zip(starts, ends)]  # us


def kernels_of(fn):
    from torch.profiler import ProfilerActivity, profile
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    names = []
    for e in prof.events():
        if getattr(e, "device_type", None) == torch.autograd.DeviceType.CUDA:
            if e.name.startswith("Memcpy") or e.name.startswith("Memset"):
                continue
            names.append(e.name)
    return names


def pct(xs, q):
    s = sorted(xs)
    return s[min(len(s) - 1, max(0, int(round(q * (len(s) - 1)))))]


def smi(fields):
    got = {}
    try:  # one call; a field this driver does not know fails it, then each field alone
        r = subprocess.run(["nvidia-smi", f"--query-gpu={','.join(fields)}", "--format=csv,noheader"],
                           capture_output=True, text=True, timeout=30)
        values = [v.strip() for v in r.stdout.strip().splitlines()[0].split(",")] if r.returncode == 0 else []
        if len(values) == len(fields):
            return dict(zip(fields, values))
    except Exception:  # noqa: BLE001
        pass
    for f in fields:
        try:
            r = subprocess.run(["nvidia-smi", f"--query-gpu={f}", "--format=csv,noheader"], capture_output=True,
                               text=True, timeout=20)
            got[f] = r.stdout.strip() if r.returncode == 0 else f"(not reported: {r.stdout.strip()[:80]})"
        except Exception as e:  # noqa: BLE001
            got[f] = f"(nvidia-smi failed: {e})"
    return got


SMI_FIELDS = ["name", "driver_version", "vbios_version", "memory.total", "pcie.link.gen.current",
              "pcie.link.width.current", "persistence_mode", "compute_mode", "mig.mode.current", "ecc.mode.current",
              "clocks.sm", "clocks.mem", "clocks.max.sm", "clocks.max.mem", "clocks.applications.graphics",
              "clocks.applications.memory", "clocks.default_applications.graphics", "power.draw", "power.limit",
              "power.default_limit", "temperature.gpu", "clocks_event_reasons.active",
              "clocks_throttle_reasons.active", "pstate"]


def environment():
    p = torch.cuda.get_device_properties(0)
    env = {
        "date": DATE,
        "machine_clock_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "torch": torch.__version__,
        "torch_cuda": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version(),
        "device_name": torch.cuda.get_device_name(0),
        "capability": list(torch.cuda.get_device_capability(0)),
        "multi_processor_count": p.multi_processor_count,
        "total_memory_bytes": p.total_memory,
        "l2_cache_size_bytes": getattr(p, "L2_cache_size", None),
        "matmul_allow_fp16_reduced_precision_reduction": torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction,
        "matmul_allow_bf16_reduced_precision_reduction": torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction,
        "matmul_allow_tf32": torch.backends.cuda.matmul.allow_tf32,
    }
    return env


def main():
    global torch, F, HW
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.environ.get("OUT", "."), help="output folder (default $OUT or .)")
    ap.add_argument("--budget", type=float, default=240.0, help="seconds after which remaining cases are skipped")
    ap.add_argument("--list-rows", metavar="FILE", help="write the rows with a placeholder value, without torch")
    ap.add_argument("--only", default="", help="comma-separated ops to run (default: all)")
    ap.add_argument("--gpu", choices=sorted(GPUS), help="the GPU the rows name (default: from the device's name)")
    args = ap.parse_args()
    if args.list_rows and not args.gpu:
        ap.error("--list-rows needs --gpu")
    gpu = args.gpu
    if not args.list_rows:
        import torch as _torch
        import torch.nn.functional as _F
        torch, F = _torch, _F
        if not torch.cuda.is_available():
            print("no CUDA device", file=sys.stderr)
            return 2
        name = torch.cuda.get_device_name(0)
        detected = [g for g, (tag, _, _) in GPUS.items() if tag in name]
        if gpu is None:
            if not detected:
                print(f"device {name} is none of {sorted(GPUS)}: name one with --gpu", file=sys.stderr)
                return 2
            gpu = detected[0]
        elif gpu not in detected:
            print(f"warning: device is {name}, not an {GPUS[gpu][0]}; rows still name {GPUS[gpu][1]}", flush=True)
    HW = GPUS[gpu][1]
    all_cases = cases(GPUS[gpu][2])
    if args.only:
        keep = set(args.only.split(","))
        all_cases = [c for c in all_cases if c.op in keep]

    if args.list_rows:
        with open(args.list_rows, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(FIELDS)
            for c in all_cases:
                impl = None
                if c.impl_by_kernels:
                    impl = sorted(c.impl_by_kernels.values())[0]
                w.writerow([c.id, c.op, HW, c.row_params(impl), "latency", "1.0", "us", "placeholder"])
        print(f"{len(all_cases)} rows written to {args.list_rows}")
        return 0

    t0 = time.time()
    os.makedirs(args.out, exist_ok=True)
    env = environment()
    env["nvidia_smi_before"] = smi(SMI_FIELDS)
    try:
        env["nvidia_smi_table"] = subprocess.run(["nvidia-smi"], capture_output=True, text=True, timeout=20).stdout
    except Exception as e:  # noqa: BLE001
        env["nvidia_smi_table"] = f"(nvidia-smi failed: {e})"
    print(json.dumps({k: v for k, v in env.items() if k != "nvidia_smi_table"}, indent=1), flush=True)
    name = env["device_name"]

    flush_buf = torch.empty(64 * 1024 * 1024, device="cuda", dtype=torch.float32)  # 256 MiB
    flush_buf.normal_()

    def flush():
        flush_buf.sum()

    src_base = (f"measured on {name} by {SCRIPT}, torch {torch.__version__}, CUDA {torch.version.cuda}, {DATE}, "
                f"CUDA-event median of {{n}} reps, L2 flushed before each")
    csv_path = os.path.join(args.out, f"measured_{gpu}.csv")
    det_path = os.path.join(args.out, f"measured_{gpu}_detail.csv")
    fcsv = open(csv_path, "w", newline="")
    wcsv = csv.writer(fcsv)
    wcsv.writerow(FIELDS)
    fdet = open(det_path, "w", newline="")
    wdet = csv.writer(fdet)
    wdet.writerow(["id", "op", "params", "reps", "median_us", "min_us", "p10_us", "p90_us", "warm_median_us",
                   "kernels", "note"])
    skipped = []
    written = 0
    for c in all_cases:
        if time.time() - t0 > args.budget:
            skipped.append((c.id, c.op, c.params, "time budget"))
            continue
        fn = None
        try:
            fn = c.make()
            for _ in range(3):
                fn()
            torch.cuda.synchronize()
            est = statistics.median(timed(fn, 3, None))
            reps = 200 if est < 300 else (100 if est < 2000 else 40)
            cold = timed(fn, reps, flush)
            warm = timed(fn, max(20, reps // 2), None)
            # the profiler after the timing, so its tracing cannot touch the timed loops
            kernels = []
            try:
                kernels = kernels_of(fn)
            except Exception as e:  # noqa: BLE001
                kernels = [f"(profiler failed: {type(e).__name__}: {e})"]
            impl = None
            if c.impl_by_kernels is not None:
                impl = c.impl_by_kernels.get(len(kernels))
                if impl is None:
                    skipped.append((c.id, c.op, c.params, f"{len(kernels)} kernels: {kernels}"))
                    print(f"{c.id} {c.op} {c.params}: skipped, {len(kernels)} kernels", flush=True)
                    continue
            if c.need_kernel and not any(c.need_kernel in k.lower() for k in kernels):
                skipped.append((c.id, c.op, c.params, f"no {c.need_kernel} kernel: {kernels}"))
                print(f"{c.id} {c.op} {c.params}: skipped, kernels {kernels}", flush=True)
                continue
            med = statistics.median(cold)
            params = c.row_params(impl)
            wcsv.writerow([c.id, c.op, HW, params, "latency", f"{med:.3f}", "us", src_base.format(n=reps)])
            wdet.writerow([c.id, c.op, params, reps, f"{med:.3f}", f"{min(cold):.3f}", f"{pct(cold, 0.1):.3f}",
                           f"{pct(cold, 0.9):.3f}", f"{statistics.median(warm):.3f}", ";".join(kernels), c.note])
            fcsv.flush()
            fdet.flush()
            written += 1
            print(f"{c.id} {c.op:9s} {params:75s} {med:10.3f} us (warm {statistics.median(warm):.3f}, "
                  f"{len(kernels)} kernel(s)) t={time.time() - t0:.0f}s", flush=True)
        except Exception as e:  # noqa: BLE001
            skipped.append((c.id, c.op, c.params, f"{type(e).__name__}: {str(e)[:300]}"))
            print(f"{c.id} {c.op} {c.params}: FAILED {type(e).__name__}: {str(e)[:300]}", flush=True)
        finally:
            del fn
    fcsv.close()
    fdet.close()
    torch.cuda.synchronize()
    env["nvidia_smi_after"] = smi(SMI_FIELDS)
    env["rows_written"] = written
    env["skipped"] = [{"id": i, "op": o, "params": p, "why": w} for i, o, p, w in skipped]
    env["seconds"] = round(time.time() - t0, 1)
    with open(os.path.join(args.out, f"{gpu}_environment.json"), "w") as f:
        json.dump(env, f, indent=1)
    with open(os.path.join(args.out, f"{gpu}_environment.txt"), "w") as f:
        for k, v in env.items():
            if k in ("nvidia_smi_table", "skipped") or isinstance(v, dict):
                continue
            f.write(f"{k}: {v}\n")
        for when in ("nvidia_smi_before", "nvidia_smi_after"):
            f.write(f"\n{when}:\n")
            for k, v in env[when].items():
                f.write(f"  {k}: {v}\n")
        f.write("\nskipped cases:\n")
        for i, o, p, w in skipped:
            f.write(f"  {i} {o} {p}: {w}\n")
        f.write("\nnvidia-smi:\n" + env["nvidia_smi_table"])
    print(f"{written} rows written, {len(skipped)} skipped, {env['seconds']} s", flush=True)
    for s in skipped:
        print("skipped:", *s, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
