"""Rows of a measurements file that run real PyTorch models through the bridge: op pytorch_train
(one training step of a torchvision model, forward, backward and optimizer) and pytorch_infer,
metric throughput in img/s (or latency in ms), in the CSV format `syntorch validate` reads.

    python -m syntorch.pytorch validate calibration/published.csv [--hw-dir hw_configs]

Params: model= (a torchvision.models name), batch=, dtype= (fp32: TF32 convolutions as
PyTorch's default; fp16, bf16: the model in that dtype), memory_format= (nchw,
channels_last), optimizer= (sgd, adamw; training), image= (side, default 224). Other rows are left
to `syntorch validate`."""

import csv
import os
import statistics
import sys

_DTYPES = {"fp32": "float32", "fp16": "float16", "bf16": "bfloat16"}


def _params(text, where):
    out = {}
    for item in text.split():
        if "=" not in item:
            raise ValueError(f"{where}: params: expected key=value, found '{item}'")
        k, v = item.split("=", 1)
        out[k] = v
    return out


def run_row(row, hw_dir):
    """The row's prediction (in its unit) by simulating its model through the bridge."""
    import torch
    import torchvision

    from . import simulate

    where = f"row {row['id']}"
    p = _params(row["params"], where)
    known = {"model", "batch", "dtype", "memory_format", "optimizer", "image"}
    unknown = sorted(set(p) - known)
    if unknown:
        raise ValueError(f"{where}: params: unknown keys {unknown} (expected {sorted(known)})")
    name = p.get("model", "")
    builder = getattr(torchvision.models, name, None)
    if builder is None or not callable(builder):
        raise ValueError(f"{where}: params: model={name!r} is not a torchvision.models model")
    batch = int(p.get("batch", 1))
    dtype = p.get("dtype", "fp32")
    if dtype not in _DTYPES:
        raise ValueError(f"{where}: params: dtype={dtype!r}, expected one of {sorted(_DTYPES)}")
    fmt = p.get("memory_format", "nchw")
    if fmt not in ("nchw", "channels_last"):
        raise ValueError(f"{where}: params: memory_format={fmt!r}, expected nchw or channels_last")
    side = int(p.get("image", 224))
    model = builder().to(getattr(torch, _DTYPES[dtype]))
    x = torch.randn(batch, 3, side, side, dtype=getattr(torch, _DTYPES[dtype]))
    if fmt == "channels_last":
        model = model.to(memory_format=torch.channels_last)
        x = x.to(memory_format=torch.channels_last)
    hw = os.path.join(hw_dir, row["hw"] + ".json")
    if not os.path.isfile(hw):
        raise ValueError(f"{where}: hw: no hardware config {hw}")
    if row["op"] == "pytorch_train":
        opt = p.get("optimizer", "sgd")
        optimizers = {"sgd": lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.9), "adamw": "adamw"}
        if opt not in optimizers:
            raise ValueError(f"{where}: params: optimizer={opt!r}, expected sgd or adamw")
        report = simulate(model, (x,), hw=hw, train=True, loss_fn=lambda out: out.float().sum(),
                          optimizer=optimizers[opt])
    elif row["op"] == "pytorch_infer":
        report = simulate(model, (x,), hw=hw)
    else:
        raise ValueError(f"{where}: op {row['op']!r} is not a PyTorch row")
    seconds = report["simulated_time_s"]
    if row["metric"] == "throughput" and row["unit"] == "img/s":
        return batch / seconds
    if row["metric"] == "latency" and row["unit"] == "ms":
        return seconds * 1e3
    raise ValueError(f"{where}: metric {row['metric']} in {row['unit']}: expected throughput in img/s or latency in ms")


def validate(path, hw_dir="hw_configs", out=sys.stdout):
    """Predicts the file's PyTorch rows and prints each with its error; returns the rows' results
    as (id, measured, predicted, relative error) tuples."""
    results = []
    with open(path, newline="") as f:
        rows = [r for r in csv.DictReader(f) if r.get("op", "").startswith("pytorch_")]
    for row in rows:
        measured = float(row["value"])
        predicted = run_row(row, hw_dir)
        err = predicted / measured - 1
        results.append((row["id"], measured, predicted, err))
        print(f"{row['id']}  {row['op']:<14} {row['hw']:<16} {row['params']:<70} measured {measured:>10.4g} "
              f"predicted {predicted:>10.4g} {row['unit']}  {err * 100:+.1f}%", file=out)
    if results:
        errors = [abs(e) for *_, e in results]
        print(f"{len(results)} rows: median |error| {statistics.median(errors) * 100:.1f}%, worst "
              f"{max(errors) * 100:.1f}%", file=out)
    else:
        print(f"{path}: no pytorch_train or pytorch_infer rows", file=out)
    return results


def main(argv=None):
    import argparse
    parser = argparse.ArgumentParser(prog="python -m syntorch.pytorch validate",
                                     description="Predict a measurements file's real-PyTorch rows through the bridge")
    parser.add_argument("file")
    parser.add_argument("--hw-dir", default="hw_configs")
    args = parser.parse_args(argv)
    try:
        validate(args.file, args.hw_dir)
    except (ValueError, FileNotFoundError) as e:
        print(f"error: {args.file}: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
