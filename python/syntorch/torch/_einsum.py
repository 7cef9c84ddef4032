"""torch.einsum as PyTorch computes it: operands contracted left to right, two at a time, each pair
as one batched matrix product (batch, free and contracted letters permuted and folded into
bmm's three dims, which copies an operand whose layout does not fold), letters only one operand
has and the output lacks summed out first, and the result permuted to the output's order."""

import math
import string

import _syntorch


def _parse(equation, operands):
    eq = equation.replace(" ", "")
    if "->" in eq:
        lhs, out = eq.split("->")
    else:
        lhs, out = eq, None
    terms = lhs.split(",")
    if len(terms) != len(operands):
        raise RuntimeError(f"einsum(): more operands were provided than specified in the equation"
                           if len(operands) > len(terms) else
                           "einsum(): fewer operands were provided than specified in the equation")
    used = set(c for c in eq if c.isalpha())
    spare = [c for c in string.ascii_letters if c not in used]
    ellipsis_dims = 0
    for term, op in zip(terms, operands):
        if "..." in term:
            ellipsis_dims = max(ellipsis_dims, op.dim() - (len(term) - 3))
    fill = "".join(spare[:ellipsis_dims])
    expanded = []
    for term, op in zip(terms, operands):
        if "..." in term:
            n = op.dim() - (len(term) - 3)
            term = term.replace("...", fill[ellipsis_dims - n:] if n else "")
        for c in term:
            if not c.isalpha():
                raise RuntimeError(f"einsum(): invalid subscript given in the equation string: {c!r}")
        if len(term) != op.dim():
            raise RuntimeError(f"einsum(): the number of subscripts in the equation ({len(term)}) does not match the "
                               f"number of dimensions ({op.dim()}) for operand {len(expanded)}")
        if len(set(term)) != len(term):
            raise NotImplementedError(f"torch.einsum: a letter repeated within one operand ({term!r}, a diagonal) is "
                                      "not supported")
        expanded.append(term)
    if out is None:
        counts = {}
        for term in expanded:
            for c in term:
                counts[c] = counts.get(c, 0) + 1
        out = fill + "".join(sorted(c for c, n in counts.items() if n == 1 and c not in fill))
    else:
        out = out.replace("...", fill)
    return expanded, out


def _sizes(terms, operands):
    sizes = {}
    for term, op in zip(terms, operands):
        for c, n in zip(term, op.shape):
            if sizes.get(c, 1) != n and n != 1 and sizes.get(c, 1) != 1:
                raise RuntimeError(f"einsum(): operands do not broadcast with remapped shapes (original->remapped): "
                                   f"subscript {c!r} has sizes {sizes[c]} and {n}")
            sizes[c] = max(sizes.get(c, 1), n)
    return sizes


def _sum_out(x, term, keep):
    """x with the letters of `term` not in `keep` summed away."""
    drop = [i for i, c in enumerate(term) if c not in keep]
    if drop:
        x = x.sum(dim=drop)
        term = "".join(c for c in term if c in keep)
    return x, term


def _pair(a, ta, b, tb, keep, sizes):
    """a (letters ta) times b (letters tb) over their shared letters not in `keep`."""
    a, ta = _sum_out(a, ta, set(tb) | keep)
    b, tb = _sum_out(b, tb, set(ta) | keep)
    batch = [c for c in ta if c in tb and c in keep]
    contract = [c for c in ta if c in tb and c not in keep]
    free_a = [c for c in ta if c not in tb]
    free_b = [c for c in tb if c not in ta]

    def fold(x, term, groups):
        order = [term.index(c) for g in groups for c in g]
        x = x.permute(*order) if order != list(range(len(order))) else x
        shape = [sizes[c] for g in groups for c in g]
        if list(x.shape) != shape:
            x = x.expand(*shape)
        return x.reshape(*[math.prod(sizes[c] for c in g) for g in groups])

    nb = math.prod(sizes[c] for c in batch)
    a3 = fold(a, ta, [batch, free_a, contract])
    b3 = fold(b, tb, [batch, contract, free_b])
    out = _syntorch.bmm(a3, b3) if nb > 1 else _syntorch.mm(a3[0], b3[0]).unsqueeze(0)
    letters = batch + free_a + free_b
    return out.reshape(*[sizes[c] for c in letters]) if letters else out.reshape(()), "".join(letters)


def einsum(equation, *operands):
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    if not operands:
        raise RuntimeError("einsum(): must provide at least one operand")
    terms, out = _parse(equation, operands)
    sizes = _sizes(terms, operands)
    x, tx = operands[0], terms[0]
    for i in range(1, len(operands)):
        later = set(out).union(*terms[i + 1:])
        x, tx = _pair(x, tx, operands[i], terms[i], later, sizes)
    x, tx = _sum_out(x, tx, set(out))
    order = [tx.index(c) for c in out]
    return x.permute(*order) if order != list(range(len(order))) else x
