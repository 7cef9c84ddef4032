"""Which PyTorch names real model and training code uses, and how many of them syntorch has.

    python -m syntorch.api_usage count DIR... [--name REPO]... -o usage.csv [--summary repos.csv]
    PYTHONPATH=python:build/python python3 -m syntorch.api_usage check usage.csv [-o out.csv] [--markdown]

`count` treats each DIR as one repository. It parses every .py file under it with `ast` (a file
that does not parse is counted and skipped), follows the file's torch imports (`import torch as
th`, `import torch.nn.functional as F`, `from torch import nn`, `from torch.utils.data import
DataLoader`, ...) and counts each use of a torch name under its full dotted name, normalised to
the longest attribute chain that resolves in PyTorch's namespace (`F.gelu(x)` and
`torch.nn.functional.gelu(x)` are both `torch.nn.functional.gelu`; `torch.cuda.synchronize()`
is itself; the chain runs on through objects, `torch.backends.cuda.matmul.allow_tf32`, but not
into a private name of one; a name the installed PyTorch lacks, being newer, is kept with the
rest of its chain up to a capitalised part, `torch.nn.attention.SDPBackend`; a bare reference
to a module, such as passing `F` along, counts nothing). It writes
`name,repositories,uses`: in how many of the repositories the name occurs, and how often in all,
sorted by repositories, then uses, then name.

Without a type checker, methods and attributes are counted by name (so this needs the real
PyTorch installed, for dir(torch.Tensor) and dir(torch.nn.Module)):
  - `expr.name`, where `name` is a public attribute of torch.Tensor, counts as `Tensor.name` unless
    `expr` is a chain of import aliases (`np.exp`, `math.sqrt`, `F.relu`), a literal (`"a b".split`),
    or `self` (`self.norm`, `self.softmax` are a module's submodules far more often than tensors).
  - names that are just as often Python's own are not counted: `add` (set), `values`, `indices`
    (namedtuple fields of max/topk/sort results), `name` (everything has one); `split` with no
    argument, a string, or sep=/maxsplit= is str.split; `sort` whose result is discarded is
    list.sort; `type` not called is `device.type` (or a config field), not Tensor.type.
  - a public attribute of torch.nn.Module (or of an instance: `training`) that is not a Tensor's
    counts as `Module.name` on any expression, `self` included (`to`, `cuda`, `half`, `float`,
    `requires_grad_` are both, and count as Tensor's). `zero_grad`, `state_dict` and
    `load_state_dict` on an optimizer are counted as Module's too.
  - `param_groups` and `add_param_group` count as `Optimizer.name`.
  - numpy arrays share many method names with tensors (`reshape`, `sum`, `max`), and a config's
    `.device` or `.dtype` reads like a tensor's: such uses are counted as Tensor's.
Aliases are per file, wherever the import statement is; reassignments (`dt = torch.bfloat16`) and
`from torch import *` are not followed.

`check` reads a usage CSV, resolves each name against syntorch.torch (`torch.a.b` by getattr, or
importing the submodule; `Tensor.x` on syntorch.torch.Tensor; `Module.x` on syntorch.torch.nn.Module
or set as `self.x =` in its source; `Optimizer.x` likewise), writes the rows with a `supported`
column (yes/no) and prints the coverage by names and weighted by uses, for all names and for those
used in at least --min-repos repositories. A name that raises (syntorch's missing names raise
NotImplementedError, which is also an AttributeError) or resolves to an `Unsupported` object is
not supported. --markdown prints the unsupported names used in >= --min-repos repositories.
"""

import argparse
import ast
import csv
import importlib
import inspect
import os
import re
import sys
from collections import Counter

NOT_TENSOR = {"add", "values", "indices", "name"}
OPTIMIZER = {"param_groups", "add_param_group"}
_MISSING = object()


class TorchIndex:
    """What the real PyTorch says: Tensor's and Module's attribute names, what a dotted name is."""

    def __init__(self):
        try:
            import torch
        except ImportError:
            torch = None
            print("warning: PyTorch is not installed: Tensor.*/Module.* are not counted, and dotted names are "
                  "cut after their first capitalised part", file=sys.stderr)
        self.torch = torch
        self.tensor, self.module, self._cache = set(), set(), {}
        if torch is not None:
            public = lambda obj: {n for n in dir(obj) if not n.startswith("_")}  # noqa: E731
            self.tensor = public(torch.Tensor) - NOT_TENSOR
            self.module = (public(torch.nn.Module) | public(torch.nn.Module())) - self.tensor

    def normalise(self, parts):
        """`torch.nn.functional.gelu` for ['torch', 'nn', 'functional', 'gelu']; None for a module."""
        key = tuple(parts)
        if key not in self._cache:
            self._cache[key] = self._normalise(parts)
        return self._cache[key]

    def _normalise(self, parts):
        if self.torch is None:
            out = []
            for p in parts:
                out.append(p)
                if p[:1].isupper():
                    break
            return ".".join(out)
        obj, out = self.torch, [parts[0]]
        for i, part in enumerate(parts[1:], 1):
            if inspect.ismodule(obj):
                nxt = _getattr(obj, part)
                if nxt is _MISSING:
                    try:
                        nxt = importlib.import_module(".".join(out + [part]))
                    except Exception:
                        # Not in this PyTorch (a newer name?): keep the rest, up to a class name.
                        for p in parts[i:]:
                            out.append(p)
                            if p[:1].isupper():
                                break
                        return ".".join(out)
            else:
                nxt = _getattr(obj, part) if not part.startswith("_") else _MISSING
                if nxt is _MISSING:
                    break  # an attribute of what the name gives (torch.finfo(...).eps is no name)
            obj = nxt
            out.append(part)
        return None if inspect.ismodule(obj) else ".".join(out)


def _getattr(obj, name):
    try:
        return getattr(obj, name)
    except Exception:
        return _MISSING


def _chain(node):
    """(root, [attr, ...]) for a.b.c: root is the innermost expression that is no Attribute."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    return node, parts[::-1]


class FileCounter(ast.NodeVisitor):
    def __init__(self, index, tree):
        self.index, self.counts = index, Counter()
        self.torch, self.imported = {}, set()  # local name -> dotted torch path; other imported names
        self.parent = {c: n for n in ast.walk(tree) for c in ast.iter_child_nodes(n)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    local, path = (a.asname, a.name) if a.asname else (a.name.split(".")[0], a.name.split(".")[0])
                    self._bind(local, path)
            elif isinstance(node, ast.ImportFrom):
                torch_module = node.level == 0 and node.module and node.module.split(".")[0] == "torch"
                for a in node.names:
                    if a.name != "*":
                        self._bind(a.asname or a.name, f"{node.module}.{a.name}" if torch_module else None)
        self.visit(tree)

    def _bind(self, local, path):
        if path and path.split(".")[0] == "torch":
            self.torch[local] = path
            self.imported.discard(local)
        elif local not in self.torch:
            self.imported.add(local)

    def _count(self, parts):
        name = self.index.normalise(parts)
        if name:
            self.counts[name] += 1

    def visit_Name(self, node):
        if node.id in self.torch:
            self._count(self.torch[node.id].split("."))

    def visit_Attribute(self, node):
        root, parts = _chain(node)
        if isinstance(root, ast.Name) and root.id in self.torch:
            self._count(self.torch[root.id].split(".") + parts)
            return
        if isinstance(root, ast.Name) and root.id in self.imported:
            return  # np.random.rand, math.exp, os.path.split: no tensor there
        self._member(node)
        self.generic_visit(node)

    def _member(self, node):
        name, value = node.attr, node.value
        if isinstance(value, ast.Constant):
            return
        call = self.parent.get(node)
        called = isinstance(call, ast.Call) and call.func is node
        on_self = isinstance(value, ast.Name) and value.id == "self"
        if name in self.index.tensor:
            if on_self and name not in self.index.module:
                return
            if name == "split" and called and (not call.args and not call.keywords
                                               or call.args and isinstance(call.args[0], ast.Constant)
                                               and isinstance(call.args[0].value, str)
                                               or any(k.arg in ("sep", "maxsplit") for k in call.keywords)):
                return
            if name == "sort" and called and isinstance(self.parent.get(call), ast.Expr):
                return
            if name == "type" and not called:
                return
            self.counts["Tensor." + name] += 1
        elif name in self.index.module:
            self.counts["Module." + name] += 1
        elif name in OPTIMIZER:
            self.counts["Optimizer." + name] += 1


def count_repository(index, directory):
    """(Counter of names, files, parsed) for the .py files under directory."""
    counts, files, parsed = Counter(), 0, 0
    for dirpath, dirnames, filenames in os.walk(directory):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and d != "__pycache__")
        for filename in sorted(filenames):
            if not filename.endswith(".py"):
                continue
            files += 1
            try:
                with open(os.path.join(dirpath, filename), "rb") as f:
                    tree = ast.parse(f.read(), filename)
            except (SyntaxError, ValueError, RecursionError):
                continue
            parsed += 1
            counts.update(FileCounter(index, tree).counts)
    return counts, files, parsed


def count_main(args):
    names = args.name or []
    if names and len(names) != len(args.dirs):
        sys.exit(f"--name given {len(names)} times for {len(args.dirs)} directories")
    names = names or [os.path.basename(os.path.normpath(d)) for d in args.dirs]
    index = TorchIndex()
    repos, uses, summary = Counter(), Counter(), []
    for name, directory in zip(names, args.dirs):
        counts, files, parsed = count_repository(index, directory)
        repos.update(counts.keys())
        uses.update(counts)
        summary.append((name, files, parsed, len(counts)))
        print(f"{name}: {parsed}/{files} files parsed, {len(counts)} names, {sum(counts.values())} uses",
              file=sys.stderr)
    rows = sorted(uses, key=lambda n: (-repos[n], -uses[n], n))
    with _open(args.output) as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["name", "repositories", "uses"])
        w.writerows([n, repos[n], uses[n]] for n in rows)
    if args.summary:
        with _open(args.summary) as f:
            w = csv.writer(f, lineterminator="\n")
            w.writerow(["repository", "files", "parsed", "names"])
            w.writerows(summary)


def _open(path):
    return open(path, "w", newline="") if path and path != "-" else _Stdout()


class _Stdout:
    def __enter__(self):
        return sys.stdout

    def __exit__(self, *exc):
        return False


def _placeholder(obj):
    from syntorch._unsupported import Unsupported
    return isinstance(obj, Unsupported) or (inspect.isclass(obj) and issubclass(obj, Unsupported))


def _has_member(cls, name):
    """cls has `name`, as a class attribute or one its (or a base's) code sets on self."""
    value = _getattr(cls, name)
    if value is not _MISSING:
        return not _placeholder(value)
    for klass in inspect.getmro(cls):
        try:
            if re.search(rf"\bself\.{re.escape(name)}\s*=[^=]|__setattr__\(self, \"{re.escape(name)}\"",
                         inspect.getsource(klass)):
                return True
        except (OSError, TypeError):
            pass
    return False


def supported(name):
    import syntorch.torch as st
    kind, _, rest = name.partition(".")
    if kind in ("Tensor", "Module", "Optimizer"):
        return _has_member({"Tensor": st.Tensor, "Module": st.nn.Module, "Optimizer": st.optim.Optimizer}[kind], rest)
    obj, path = st, "syntorch.torch"
    for part in name.split(".")[1:]:
        nxt = _getattr(obj, part)
        if nxt is _MISSING and inspect.ismodule(obj):
            try:
                nxt = importlib.import_module(f"{path}.{part}")
            except Exception:
                return False
        if nxt is _MISSING or _placeholder(nxt):
            return False
        obj, path = nxt, f"{path}.{part}"
    return True


def check_main(args):
    with open(args.usage, newline="") as f:
        rows = list(csv.DictReader(f))
    fields = [k for k in rows[0].keys() if k != "supported"] + ["supported"] if rows else ["name", "supported"]
    for row in rows:
        row["supported"] = "yes" if supported(row["name"]) else "no"
    with _open(args.output) as f:
        w = csv.DictWriter(f, fields, lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
    out = sys.stdout if args.output and args.output != "-" else sys.stderr

    def line(label, subset):
        yes = [r for r in subset if r["supported"] == "yes"]
        n, u = len(subset), sum(int(r["uses"]) for r in subset)
        uy = sum(int(r["uses"]) for r in yes)
        print(f"{label}: names {len(yes)}/{n} supported ({100 * len(yes) / max(n, 1):.1f}%), "
              f"uses {uy}/{u} ({100 * uy / max(u, 1):.1f}%)", file=out)

    common = [r for r in rows if int(r["repositories"]) >= args.min_repos]
    line("all names", rows)
    line(f"names in >= {args.min_repos} repositories", common)
    if args.markdown:
        print("\n| name | repositories | uses |\n| --- | ---: | ---: |", file=out)
        for r in common:
            if r["supported"] == "no":
                print(f"| `{r['name']}` | {r['repositories']} | {r['uses']} |", file=out)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    p = argparse.ArgumentParser(prog="python -m syntorch.api_usage", description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    c = sub.add_parser("count", help="count the torch names that repositories use")
    c.add_argument("dirs", nargs="+", help="one directory per repository")
    c.add_argument("--name", action="append", help="a name per directory, in their order (default: basenames)")
    c.add_argument("-o", "--output", default="-", help="usage CSV (default: stdout)")
    c.add_argument("--summary", help="also write repository,files,parsed,names here")
    k = sub.add_parser("check", help="mark which counted names syntorch.torch supports")
    k.add_argument("usage", help="a CSV that count wrote")
    k.add_argument("-o", "--output", default="-", help="the CSV with a supported column (may be the input)")
    k.add_argument("--min-repos", type=int, default=2, help="the threshold for the second summary line")
    k.add_argument("--markdown", action="store_true", help="print the unsupported names over the threshold")
    if argv[:1] == ["count"]:  # DIR --name N DIR --name N ...: options between the positionals
        args = c.parse_intermixed_args(argv[1:])
        args.command = "count"
    else:
        args = p.parse_args(argv)
    (count_main if args.command == "count" else check_main)(args)


if __name__ == "__main__":
    main()
