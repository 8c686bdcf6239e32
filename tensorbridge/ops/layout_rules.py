"""Layout rules of the catalogue: how an op's axes follow a permuted input (see passes/layout.py).

An *attribute* op's rule takes (planner, node, perm, rank): `perm` is the physical form its data
input is held in (physical = transpose(logical, perm)). It rewrites the node's axis attributes
or constant axis inputs for that form and returns the form of its output(s) (a list for several
outputs), or None when the axes cannot follow (the planner then gives the op its logical input).
The planner is read through `ask`, `set_const` and `const_input`. The permutation helpers here
are shared with the planner and verification.
"""

from __future__ import annotations

import numpy as np

from tensorbridge.ops.infer import norm_axis

LAYOUTS = ("NCHW", "NHWC")


def between(src: str, dst: str, rank: int) -> tuple[int, ...]:
    """P with transpose(x in layout `src`, P) == x in layout `dst`."""
    if src == dst or rank < 3:
        return tuple(range(rank))
    if dst == "NCHW":
        return (0, rank - 1, *range(1, rank - 1))
    return (0, *range(2, rank), 1)


def is_identity(perm) -> bool:
    return tuple(perm) == tuple(range(len(perm)))


def inverse(perm) -> tuple[int, ...]:
    inv = [0] * len(perm)
    for i, p in enumerate(perm):
        inv[p] = i
    return tuple(inv)


def drop_axes(perm, removed: set[int]) -> tuple[int, ...]:
    """The permutation left when the logical axes `removed` disappear."""
    kept = [p for p in perm if p not in removed]
    order = sorted(kept)
    return tuple(order.index(p) for p in kept)


def channel_perms(rank: int) -> dict[str, tuple[int, ...]]:
    """The two channel moves at `rank`, by the layout they produce: {"nchw": ..., "nhwc": ...}."""
    return {"nchw": between("NHWC", "NCHW", rank), "nhwc": between("NCHW", "NHWC", rank)}


# -- attribute-op rules ---------------------------------------------------------------------------

# -- attribute-op rules: (planner, node, perm, rank) -> output perm(s), or None when not rewritable --

def _physical_axis(node, perm, rank: int, default: int = 0) -> int:
    """The physical position of the node's logical `axis`."""
    return inverse(perm)[norm_axis(node.attrs.get("axis", default), rank)]


def single_axis(default: int = 0):
    """The op's `axis` attribute (default `default`) follows the permutation."""
    def rule(p, node, perm, rank: int):
        node.attrs["axis"] = _physical_axis(node, perm, rank, default)
        return perm
    return rule


def arg_reduce(p, node, perm, rank: int):
    a = norm_axis(node.attrs.get("axis", 0), rank)
    node.attrs["axis"] = inverse(perm)[a]
    return perm if node.attrs.get("keepdims", 1) else drop_axes(perm, {a})


def quant_axis(p, node, perm, rank: int):
    scale = node.input(1)
    if node.attrs.get("block_size", 0):
        return None
    if scale is not None and scale.shape is not None and len(scale.shape) == 1 and scale.shape[0] != 1:
        node.attrs["axis"] = _physical_axis(node, perm, rank, default=1)
    return perm


def suffix_norm(p, node, perm, rank: int):
    a = norm_axis(node.attrs.get("axis", -1), rank)
    return perm if all(perm[i] == i for i in range(a, rank)) else None


def gather(p, node, perm, rank: int):
    idx = node.input(1)
    if idx is None or idx.shape is None or len(idx.shape) > 1:
        return None
    a = norm_axis(node.attrs.get("axis", 0), rank)
    node.attrs["axis"] = inverse(perm)[a]
    return perm if len(idx.shape) == 1 else drop_axes(perm, {a})


def elements(p, node, perm, rank: int):
    node.attrs["axis"] = _physical_axis(node, perm, rank)
    for i in range(1, len(node.inputs)):
        if node.input(i) is not None and node.input(i).shape is not None and len(node.input(i).shape) == rank:
            node.set_input(i, p.ask(node.input(i), perm, f"{node.op} indices follow the data"))
    return perm


def axes_input(index: int, *, keepdims_attr: bool = False, drop: bool = False, absent: str = "all"):
    """Rules for ops whose axes are a constant input (reductions, Squeeze, Slice). `absent` says what no axes
    input means: "all" axes (reductions, with noop_with_empty_axes), the size-"ones" dims (Squeeze), or
    the first axes, one per entry of input 1 ("starts", Slice)."""
    def rule(p, node, perm, rank: int):
        v = node.input(index)
        if v is not None and v.const is None:
            return None
        axes = [norm_axis(int(a), rank) for a in (v.const.reshape(-1) if v is not None else [])]
        if not axes:
            if absent == "ones":
                axes = [i for i, d in enumerate(node.inputs[0].shape) if d == 1]
            elif absent == "starts" and p.const_input(node, 1) is not None:
                axes = list(range(p.const_input(node, 1).size))
                while len(node.inputs) <= index:
                    node.set_inputs([*node.inputs, None])
            elif node.attrs.get("noop_with_empty_axes", 0):
                return perm
            else:
                return perm if node.attrs.get("keepdims", 1) else ()
        inv = inverse(perm)
        new = [inv[a] for a in axes]
        p.set_const(node, index, np.array(new, np.int64), "axes")
        if drop or (keepdims_attr and not node.attrs.get("keepdims", 1)):
            return drop_axes(perm, set(axes))
        return perm
    return rule


def unsqueeze(p, node, perm, rank: int):
    v = node.input(1)
    if v is None or v.const is None:
        return None
    out_rank = rank + v.const.size
    inserted = sorted(norm_axis(int(a), out_rank) for a in v.const.reshape(-1))
    kept = [i for i in range(out_rank) if i not in inserted]
    p.set_const(node, 1, np.arange(rank, out_rank, dtype=np.int64), "axes")
    return tuple(kept[a] for a in perm) + tuple(inserted)


def pad(p, node, perm, rank: int):
    pads, axes = p.const_input(node, 1), node.input(3)
    if pads is None or (axes is not None and axes.const is None):
        return None
    if axes is not None:
        inv = inverse(perm)
        p.set_const(node, 3, np.array([inv[norm_axis(int(a), rank)] for a in axes.const.reshape(-1)], np.int64),
                    "axes")
        return perm
    pads = pads.reshape(-1)
    p.set_const(node, 1, np.concatenate([pads[:rank][list(perm)], pads[rank:][list(perm)]]), "pads")
    return perm


def tile(p, node, perm, rank: int):
    reps = p.const_input(node, 1)
    if reps is None:
        return None
    p.set_const(node, 1, reps.reshape(-1)[list(perm)], "repeats")
    return perm


def cumsum(p, node, perm, rank: int):
    axis = p.const_input(node, 1)
    if axis is None:
        return None
    a = norm_axis(int(axis.reshape(-1)[0]), rank)
    p.set_const(node, 1, np.array(inverse(perm)[a], axis.dtype), "axis")
    return perm


def mvn_axes(p, node, perm, rank: int):
    inv = inverse(perm)
    node.attrs["axes"] = [inv[norm_axis(a, rank)] for a in node.attrs.get("axes", [0, 2, 3])]
    return perm


def split(p, node, perm, rank: int):
    node.attrs["axis"] = _physical_axis(node, perm, rank)
    return [perm] * len(node.outputs)


def top_k(p, node, perm, rank: int):
    node.attrs["axis"] = _physical_axis(node, perm, rank, default=-1)
    return [perm] * len(node.outputs)


def per_axis_operands(*indices: int):
    """An implicit op's constant operands with one entry per axis (or starts then ends, as Resize's roi)
    follow the permutation its data input is held under; when the node lists its `axes`, those follow it."""
    def permute(p, node, perm) -> None:
        rank = len(perm)
        if node.attrs.get("axes"):  # the operands hold entries for the listed axes, which move instead
            node.attrs["axes"] = [list(perm).index(a % rank) for a in node.attrs["axes"]]
            return
        for index in indices:
            v = node.input(index)
            if v is None or v.const is None or v.const.size == 0:
                continue
            arr = np.asarray(v.const)
            if arr.size == 2 * rank:  # starts, then ends
                new = np.concatenate([arr[:rank][list(perm)], arr[rank:][list(perm)]])
            elif arr.size == rank:
                new = arr[list(perm)]
            else:
                continue
            p.set_const(node, index, new, f"input{index}")
    return permute
