"""python -m syntorch.ir report IR.json [--out report.md] [--mermaid dag.mmd]: an IR's statistics
and DAG as markdown (to stdout without --out); python -m syntorch.ir simulate IR.json [--hw CONFIG];
python -m syntorch.ir convert model.onnx -o model_ir.json: an ONNX model as an IR file (what
`syntorch simulate --graph` runs). An ONNX model (.onnx) is read as its IR everywhere."""

import argparse
import json
import sys

from . import IR, from_onnx, mermaid, report_markdown, simulate


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m syntorch.ir", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    rep = sub.add_parser("report", help="statistics, the op table and a Mermaid DAG, as markdown")
    rep.add_argument("ir")
    rep.add_argument("--out", help="markdown file to write (default: stdout)")
    rep.add_argument("--mermaid", help="also write the DAG alone to this file")
    conv = sub.add_parser("convert", help="write an ONNX model (or an IR) as an IR JSON file")
    conv.add_argument("ir")
    conv.add_argument("-o", "--out", required=True, help="the IR JSON file to write")
    sim = sub.add_parser("simulate", help="simulate the IR on a machine; prints the report as JSON")
    sim.add_argument("ir")
    sim.add_argument("--hw", help="hardware config (default: the bundled H100)")
    sim.add_argument("--trace", help="trace file to write")
    for sp in (rep, sim, conv):
        sp.add_argument("--input-shapes", default="",
                        help="an ONNX model's symbolic input sizes: name=8x1024[,name=...]")
    args = parser.parse_args(argv)
    try:
        shapes = {}
        for item in filter(None, args.input_shapes.split(",")):
            name, _, dims = item.partition("=")
            try:
                shapes[name] = [int(d) for d in dims.split("x")]
            except ValueError:
                raise ValueError(f"--input-shapes: expected name=8x1024, found '{item}'") from None
        ir = from_onnx(args.ir, shapes or None)[0] if args.ir.endswith(".onnx") else IR.load(args.ir)
    except FileNotFoundError:
        print(f"error: {args.ir}: no such file", file=sys.stderr)
        return 2
    except (ValueError, NotImplementedError, ImportError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if args.command == "convert":
        try:
            ir.save(args.out)
        except OSError as e:
            print(f"error: {args.out}: {e.strerror}", file=sys.stderr)
            return 2
        print(f"{args.out}: {ir.model or 'graph'}: {len(ir.nodes)} nodes, {len(ir.weights)} weights")
        return 0
    if args.command == "report":
        text = report_markdown(ir)
        if args.out:
            with open(args.out, "w") as f:
                f.write(text)
        else:
            sys.stdout.write(text)
        if args.mermaid:
            with open(args.mermaid, "w") as f:
                f.write(mermaid(ir))
        return 0
    try:
        report = simulate(ir, hw=args.hw, trace=args.trace)
    except (ValueError, NotImplementedError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(json.dumps(report, indent=1, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
