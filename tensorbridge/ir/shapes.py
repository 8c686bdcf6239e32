"""Shapes with static and symbolic dimensions.

A shape is a tuple whose items are `int` (static), `str` (a named symbolic dim such as
`"batch"`, carried end to end), or `None` (unknown). A whole shape of `None` means the rank
is unknown. Symbolic dims are never frozen to a number by the IR itself.
"""

from __future__ import annotations

Dim = int | str | None
Shape = tuple  # tuple[Dim, ...]


def normalize(shape) -> Shape | None:
    """Make a shape tuple from any sequence of ints/strs/None (or None for unknown rank)."""
    if shape is None:
        return None
    out = []
    for d in shape:
        if d is None or isinstance(d, str):
            out.append(d)
        else:
            out.append(int(d))
    return tuple(out)


def is_static(shape: Shape | None) -> bool:
    return shape is not None and all(isinstance(d, int) for d in shape)


def numel(shape: Shape) -> int | None:
    if not is_static(shape):
        return None
    n = 1
    for d in shape:
        n *= d
    return n


def broadcast(*shapes: Shape | None) -> Shape | None:
    """NumPy broadcasting over possibly symbolic shapes (unknown where it cannot tell)."""
    if any(s is None for s in shapes):
        return None
    rank = max((len(s) for s in shapes), default=0)
    out: list[Dim] = []
    for i in range(rank):
        dims = [s[len(s) - rank + i] for s in shapes if len(s) - rank + i >= 0]
        known = {d for d in dims if d != 1}
        if not known:
            out.append(1)
        elif len(known) == 1:
            out.append(known.pop())
        else:
            ints = {d for d in known if isinstance(d, int)}
            out.append(ints.pop() if len(ints) == 1 else None)
    return tuple(out)


def format_shape(shape: Shape | None) -> str:
    if shape is None:
        return "?"
    return "[" + ",".join("?" if d is None else str(d) for d in shape) + "]"
