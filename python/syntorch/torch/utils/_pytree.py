"""torch.utils._pytree: nested containers (lists, tuples, dicts, namedtuples) flattened into their
leaves and rebuilt, as PyTorch's."""

import collections


class TreeSpec:
    def __init__(self, kind, context, children):
        self.type, self.context, self.children_specs = kind, context, children
        self.num_leaves = 1 if kind is None else sum(c.num_leaves for c in children)

    def __repr__(self):
        return f"TreeSpec({getattr(self.type, '__name__', 'leaf')}, {self.context!r}, {self.children_specs})"


LeafSpec = lambda: TreeSpec(None, None, [])  # noqa: E731


def _children(tree):
    if isinstance(tree, dict):
        keys = list(tree)
        return type(tree), keys, [tree[k] for k in keys]
    if isinstance(tree, tuple) and hasattr(tree, "_fields"):
        return type(tree), None, list(tree)
    if isinstance(tree, (list, tuple)):
        return type(tree), None, list(tree)
    return None


def tree_flatten(tree):
    """(leaves, spec): the leaves in order, and what rebuilds the tree from them."""
    found = _children(tree)
    if found is None:
        return [tree], LeafSpec()
    kind, context, children = found
    leaves, specs = [], []
    for child in children:
        sub_leaves, spec = tree_flatten(child)
        leaves += sub_leaves
        specs.append(spec)
    return leaves, TreeSpec(kind, context, specs)


def tree_unflatten(leaves, spec):
    leaves = list(leaves)
    if len(leaves) != spec.num_leaves:
        raise ValueError(f"tree_unflatten(leaves, treespec): `leaves` has length {len(leaves)} but the spec refers "
                         f"to a pytree that holds {spec.num_leaves} items")
    return _build(iter(leaves), spec)


def _build(leaves, spec):
    if spec.type is None:
        return next(leaves)
    children = [_build(leaves, s) for s in spec.children_specs]
    if issubclass(spec.type, dict):
        out = spec.type() if spec.type is not collections.defaultdict else collections.defaultdict()
        for k, v in zip(spec.context, children):
            out[k] = v
        return out
    if issubclass(spec.type, tuple) and hasattr(spec.type, "_fields"):
        return spec.type(*children)
    return spec.type(children)


def tree_leaves(tree):
    return tree_flatten(tree)[0]


def tree_map(fn, tree):
    leaves, spec = tree_flatten(tree)
    return tree_unflatten([fn(x) for x in leaves], spec)
