"""PyTorch <-> IR: Reshapes, joins and splits, slicing, gathers, padding, filled tensors, ranges, shape arithmetic.

Each IR op's import converters (ATen -> IR) and export writer (IR -> torch code) sit together.
"""
from __future__ import annotations

import ast

import numpy as np

from tensorbridge.codegen import pyast as P
from tensorbridge.codegen.rule_helpers import Unsupported, const_operand, split_sized_at_run_time
from tensorbridge.errors import ModelError
from tensorbridge.ir import dtypes
from tensorbridge.ir.value import Value
from tensorbridge.ops.infer import norm_axis
from tensorbridge.ops.shape import vector_condition_blocker
from tensorbridge.rules import shape_values
from tensorbridge.rules.ir_spellings import as_int64, diagonal, reduction_identity, reverse
from tensorbridge.rules.torch.base import (
    TORCH_DTYPES,
    R,
    aten,
    dtype_name,
    ints,
)


@aten("view", "reshape", "_unsafe_view", "flatten", "unflatten", produces="Reshape")
def read_reshape(imp, node, x, *args):
    return imp.emit("Reshape", [imp.value(x), imp.out_shape()])


def _shape_arg(em, v, x):
    """A Reshape/Expand target: Python list, with ONNX's 0 ("copy this dim") resolved."""
    if v.const is not None:
        dims = [int(d) for d in np.asarray(v.const).ravel()]
        xe = em.tensor(x)
        return P.lit([P.subscript(ast.Attribute(xe, "shape", ast.Load()), i) if d == 0 else d
                      for i, d in enumerate(dims)])
    target, known = em.pylist(v), v.meta.get("elements")
    if not known or 0 not in known:
        return target
    size = ast.Attribute(em.tensor(x), "shape", ast.Load())  # a computed target with a literal 0 in it
    return P.lit([P.subscript(size, i) if d == 0 else d if isinstance(d, int) else P.subscript(target, i)
                  for i, d in enumerate(known)])


@R.exports("Reshape", shape_write=shape_values.reshape,
           check=lambda node: "Reshape allowzero=1" if node.attrs.get("allowzero") else None)
def write_reshape(em, node):
    x, shape = node.inputs
    em.out(node, P.method(em.tensor(x), "reshape", _shape_arg(em, shape, x)))


@R.exports("Flatten")
def write_flatten(em, node):
    x = node.inputs[0]
    axis = node.attrs.get("axis", 1)
    xe = em.tensor(x)
    if axis < 0:
        if x.shape is None:
            raise Unsupported("Flatten needs the input rank")
        axis = norm_axis(axis, len(x.shape))
    if axis == 0:
        return em.out(node, P.method(xe, "reshape", 1, -1))
    if axis == 1:
        return em.out(node, P.method(xe, "flatten", 1))
    if x.shape is None:
        raise Unsupported("Flatten needs the input rank")
    if axis == len(x.shape):
        return em.out(node, P.method(xe, "reshape", -1, 1))
    em.out(node, P.method(P.method(xe, "flatten", 0, axis - 1), "flatten", 1))


@aten("expand", produces="Expand")
def read_expand(imp, node, x, *args, **kw):
    return imp.emit("Expand", [imp.value(x), imp.out_shape()])


@R.exports("Expand")
def write_expand(em, node):
    x, shape = node.inputs
    xe = em.tensor(x)
    em.out(node, P.method(xe, "expand", P.call("torch.broadcast_shapes", P.method(xe, "size"),
                                               _shape_arg(em, shape, x))))


@aten("squeeze", produces="Squeeze")
def read_squeeze(imp, node, x, dim=None):
    if dim is None:
        return imp.emit("Squeeze", [imp.value(x)])
    dims = ints(dim)
    shape = imp.meta(x).shape
    dims = [d for d in dims if shape[d] == 1]  # torch ignores non-1 dims
    if not dims:
        return imp.value(x)
    return imp.emit("Squeeze", [imp.value(x), imp.const(dims, dtype=np.int64)])


@R.exports("Squeeze", shape_write=shape_values.reshape)
def write_squeeze(em, node):
    x = node.inputs[0]
    axes = node.input(1)
    xe = em.tensor(x)
    if axes is None:
        return em.out(node, P.method(xe, "squeeze"))
    dims = [int(a) for a in const_operand(axes).ravel()]
    if em.exported:  # torch.export squeezes a dim of run-time size only once it is known to be 1 (ONNX's promise)
        unknown = [d for d in dims if x.shape is None or not isinstance(x.shape[d], int)]
        shape = ast.Attribute(xe, "shape", ast.Load())
        em.body += [P.expr_stmt(P.call("torch._check", P.binop(P.subscript(shape, d), "==", 1))) for d in unknown]
    em.out(node, P.method(xe, "squeeze", tuple(dims)))


@aten("unsqueeze", produces="Unsqueeze")
def read_unsqueeze(imp, node, x, dim):
    return imp.emit("Unsqueeze", [imp.value(x), imp.const([dim], dtype=np.int64)])


@R.exports("Unsqueeze", shape_write=shape_values.reshape)
def write_unsqueeze(em, node):
    x, axes = node.inputs
    dims = [int(a) for a in const_operand(axes).ravel()]
    rank = (len(x.shape) if x.shape is not None else None)
    expr = em.tensor(x)
    if rank is None and all(d < 0 for d in dims):  # each counted from the end: the last first, rank unneeded
        for d in sorted(dims, reverse=True):
            expr = P.method(expr, "unsqueeze", d)
        return em.out(node, expr)
    if rank is None and any(d < 0 for d in dims):
        raise Unsupported("Unsqueeze with both negative and other axes needs the input rank")
    out_rank = (rank or 0) + len(dims)
    for d in sorted(norm_axis(d, out_rank) for d in dims):
        expr = P.method(expr, "unsqueeze", d)
    em.out(node, expr)


@aten("permute", produces="Transpose")
def read_permute(imp, node, x, dims):
    r = imp.rank(x)
    return imp.emit("Transpose", [imp.value(x)], {"perm": [norm_axis(d, r) for d in dims]})


@aten("transpose", "t", produces="Transpose")
def read_transpose(imp, node, x, dim0=0, dim1=1):
    r = imp.rank(x)
    if r < 2:
        return imp.value(x)
    perm = list(range(r))
    a, b = norm_axis(dim0, r), norm_axis(dim1, r)
    perm[a], perm[b] = perm[b], perm[a]
    return imp.emit("Transpose", [imp.value(x)], {"perm": perm})


@R.exports("Transpose")
def write_transpose(em, node):
    perm = node.attrs.get("perm")
    xe = em.tensor(node.inputs[0])
    if perm is None:
        x = node.inputs[0]
        if x.shape is None:
            raise Unsupported("Transpose without perm needs the rank")
        perm = list(range(len(x.shape)))[::-1]
    em.out(node, P.method(xe, "permute", *perm))


@aten("cat", "concat", produces="Concat")
def read_cat(imp, node, tensors, dim=0):
    vals = [imp.value(t) for t in tensors if 0 not in map(imp.dim, imp.meta(t).shape) or len(tensors) == 1]
    if len(vals) == 1 and len(tensors) > 1:  # the rest were empty (a cache's first update): the one tensor
        return vals[0]
    return imp.emit("Concat", vals, {"axis": int(dim)})


@aten("stack", produces="Concat")
def read_stack(imp, node, tensors, dim=0):
    r = imp.rank(tensors[0]) + 1
    axis = norm_axis(dim, r)
    parts = [imp.emit("Unsqueeze", [imp.value(t), imp.const([axis], dtype=np.int64)], suffix=f"unsqueeze{i}")
             for i, t in enumerate(tensors)]
    return imp.emit("Concat", parts, {"axis": axis})


@R.exports("Concat", shape_write=shape_values.concat)
def write_concat(em, node):
    em.out(node, P.call("torch.cat", P.lit([em.tensor(v) for v in node.inputs]), node.attrs["axis"]))


@aten("split", "split_with_sizes", "chunk", produces="Split")
def read_split(imp, node, x, split_size_or_sections, dim=0, *rest):
    outs = imp.meta()
    sizes = imp.shape_tensor([o.shape[dim] for o in outs])  # a size may come from the data (JetMoE's counts)
    vals = imp.emit("Split", [imp.value(x), sizes], {"axis": int(dim)}, outputs=len(outs))
    return tuple(vals) if isinstance(vals, list) else (vals,)


@aten("unbind", produces="Split")
def read_unbind(imp, node, x, dim=0):
    n = int(imp.meta(x).shape[dim])
    parts = imp.emit("Split", [imp.value(x), imp.const([1] * n, dtype=np.int64)], {"axis": int(dim)}, outputs=n)
    parts = parts if isinstance(parts, list) else [parts]
    return tuple(imp.emit("Squeeze", [p, imp.const([dim], dtype=np.int64)], suffix=f"item{i}")
                 for i, p in enumerate(parts))


@R.exports("Split", check=split_sized_at_run_time)
def write_split(em, node):
    x = node.inputs[0]
    sizes = node.input(1)
    axis = node.attrs.get("axis", 0)
    if sizes is not None:
        arg = P.lit([int(s) for s in const_operand(sizes).ravel()])
    elif x.shape is not None and isinstance(x.shape[axis], int):
        from tensorbridge.ops.shape import split_sizes

        arg = P.lit(split_sizes(x.shape[axis], node.attrs.get("num_outputs") or len(node.outputs)))
    else:
        raise Unsupported("Split of a dynamic dim without sizes")
    em.outs(node, P.call("torch.split", em.tensor(x), arg, axis), len(node.outputs))


def index_vector(imp, v):
    """An int or a size as an IR int64[1] value (a slice bound)."""
    if isinstance(v, int):
        return imp.const([v], dtype=np.int64)
    out = imp.value(v)
    return out if out.shape == (1,) else imp.emit("Reshape", [out, imp.const([1], dtype=np.int64)], suffix="idx")


@aten("slice", produces="Slice")
def read_slice(imp, node, x, dim=0, start=None, end=None, step=1):
    start = 0 if start is None else start
    end = 2**63 - 1 if end is None else end
    if isinstance(start, int) and isinstance(end, int) and start == 0 and end >= 2**62 and step == 1:
        return imp.value(x)
    return imp.emit("Slice", [imp.value(x), index_vector(imp, start), index_vector(imp, end),
                              imp.const([dim], dtype=np.int64), imp.const([step], dtype=np.int64)])


@R.exports("Slice", shape_write=shape_values.slice_)
def write_slice(em, node):
    x = node.inputs[0]
    starts, ends = node.inputs[1], node.inputs[2]
    axes, steps = node.input(3), node.input(4)
    if x.shape is None:
        raise Unsupported("Slice needs the input rank")
    rank = len(x.shape)
    n = len(x.shape)
    # bounds computed from data (a loop's index) stay tensors: eager PyTorch slices with 0-d tensors
    sv, ev = (em.pylist(v) if v.const is not None or id(v) in em.shape_values else em.tensor(v)
              for v in (starts, ends))
    ax = [int(a) for a in const_operand(axes).ravel()] if axes is not None else list(range(n))
    st = [int(s) for s in const_operand(steps).ravel()] if steps is not None else [1] * len(ax)
    items = [P.slice_()] * rank
    flips = []
    for j, (a, s) in enumerate(zip(ax, st)):
        a = norm_axis(a, rank)
        if s < 0:
            if not _full_reversal(x.shape[a], s, sv, ev, j):
                raise Unsupported("negative Slice steps other than a whole reversal")
            flips.append(a)
            continue
        start = P.subscript(sv, j) if not isinstance(sv, ast.List) else sv.elts[j]
        stop = P.subscript(ev, j) if not isinstance(ev, ast.List) else ev.elts[j]
        if isinstance(stop, ast.Constant) and stop.value >= 2**62:
            stop = None
        items[a] = P.slice_(start, stop, s if s != 1 else None)
    def is_full(it):
        return isinstance(it, ast.Slice) and it.lower is None and it.upper is None and it.step is None

    base = P.call("torch.flip", em.tensor(x), flips) if flips else em.tensor(x)
    if all(is_full(it) for it in items):
        return em.out(node, base)
    last = max((i for i, it in enumerate(items) if not is_full(it)), default=0)
    index = items[0] if last == 0 else ast.Tuple(items[:last + 1], ast.Load())
    em.out(node, P.subscript(base, index))


def _full_reversal(dim, step, starts, ends, j) -> bool:
    """Step -1 from the last element past the first: what torch.flip does."""
    if step != -1 or not isinstance(dim, int) or not isinstance(starts, ast.List) or not isinstance(ends, ast.List):
        return False
    start, stop = starts.elts[j], ends.elts[j]
    return isinstance(start, ast.Constant) and isinstance(stop, ast.Constant) and\
        (start.value == -1 or start.value >= dim - 1) and stop.value <= -dim - 1


@aten("select", produces="Gather")
def read_select(imp, node, x, dim, index):
    return imp.emit("Gather", [imp.value(x), imp.const(index, dtype=np.int64)], {"axis": int(dim)})


@aten("index_select", produces="Gather")
def read_index_select(imp, node, x, dim, index):
    return imp.emit("Gather", [imp.value(x), imp.value(index)], {"axis": int(dim)})


@aten("embedding", produces="Gather")
def read_embedding(imp, node, weight, indices, *rest):
    return imp.emit("Gather", [imp.value(weight), imp.value(indices)], {"axis": 0})


@R.exports("Gather", shape_write=shape_values.gather)
def write_gather(em, node):
    data, idx = node.inputs
    axis = node.attrs.get("axis", 0)
    if data.const is not None and axis == 0 and np.asarray(data.const).ndim == 2 and dtypes.is_float(data.const.dtype):
        table = np.asarray(data.const)
        layer = em.layer(node, "nn.Embedding", [table.shape[0], table.shape[1]], {}, {"weight": table})
        return em.out(node, P.call(layer, em.tensor(idx)))
    if data.shape is None:
        raise Unsupported("Gather needs the data rank")
    axis = norm_axis(axis, len(data.shape))
    s = em.scalar(idx)
    item = P.lit(s) if s is not None and idx.const.ndim == 0 else em.tensor(idx)
    em.out(node, P.subscript(em.tensor(data), ast.Tuple([P.slice_()] * axis + [item], ast.Load()) if axis else item))


@aten("gather", produces="GatherElements")
def read_gather(imp, node, x, dim, index, sparse_grad=False):
    return imp.emit("GatherElements", [imp.value(x), imp.value(index)], {"axis": int(dim)})


@R.exports("GatherElements")
def write_gather_elements(em, node):
    data, idx = node.inputs
    axis = node.attrs.get("axis", 0)
    em.out(node, P.call("torch.gather", em.tensor(data), axis, _index_from_start(em, data, idx, axis)))


def _index_from_start(em, data, idx, axis: int):
    """The indices, those that may be negative (counted from the end, as ONNX allows) taken modulo the axis size:
    torch.gather and .scatter take none."""
    if idx.const is not None and np.asarray(idx.const).min(initial=0) >= 0:
        return em.tensor(idx)
    size = data.shape[axis] if data.shape is not None and isinstance(data.shape[axis], int) else \
        P.subscript(ast.Attribute(em.tensor(data), "shape", ast.Load()), P.lit(axis))
    return P.binop(em.tensor(idx), "%", size)


#: ScatterElements' reductions -> torch.scatter_reduce's
_SCATTER_REDUCE = {"add": "sum", "mul": "prod", "max": "amax", "min": "amin"}


@R.exports("ScatterElements")
def write_scatter_elements(em, node):
    """data.scatter (or .scatter_reduce, the data's own values included)."""
    data, idx, updates = node.inputs
    axis, reduction = node.attrs.get("axis", 0), node.attrs.get("reduction", "none")
    index = _index_from_start(em, data, idx, axis)
    if reduction == "none":
        return em.out(node, P.method(em.tensor(data), "scatter", axis, index, em.tensor(updates)))
    em.out(node, P.method(em.tensor(data), "scatter_reduce", axis, index, em.tensor(updates),
                          _SCATTER_REDUCE[reduction], include_self=True))


#: ScatterND's reductions beyond "none" and "add" -> Tensor.index_reduce's
_INDEX_REDUCE = {"mul": "prod", "max": "amax", "min": "amin"}


def _check_scatter_nd(node) -> str | None:
    """A reduction other than add flattens the data's index dims: their sizes must be known."""
    if node.attrs.get("reduction", "none") in ("none", "add"):
        return None
    data, idx = node.inputs[:2]
    k = idx.shape[-1] if idx.shape else None
    if not isinstance(k, int) or k < 1 or data.shape is None or not all(isinstance(d, int) for d in data.shape[:k]):
        return "ScatterND with a reduction over dynamic index dims"
    return None


@R.exports("ScatterND", check=_check_scatter_nd)
def write_scatter_nd(em, node):
    """data.index_put at the index tuples (the indices' last axis), accumulating for reduction="add"; the other
    reductions are index_reduce of the data with its leading index dims flattened, at the tuples' positions."""
    data, idx, updates = node.inputs
    reduction = node.attrs.get("reduction", "none")
    if reduction in ("none", "add"):
        where = P.call("tuple", P.method(em.tensor(idx), "unbind", -1))
        accumulate = {"accumulate": True} if reduction == "add" else {}
        return em.out(node, P.method(em.tensor(data), "index_put", where, em.tensor(updates), **accumulate))
    k = idx.shape[-1]
    lead = data.shape[:k]
    strides = [int(np.prod(lead[j + 1:])) for j in range(k)]
    index = P.binop(em.tensor(idx), "%", P.call("torch.tensor", list(lead)))
    position = P.method(P.method(P.binop(index, "*", P.call("torch.tensor", strides)), "sum", -1), "flatten")
    batch = len(idx.shape) - 1
    values = (P.method(em.tensor(updates), "flatten", 0, batch - 1) if batch
              else P.method(em.tensor(updates), "unsqueeze", 0))
    flat = P.method(em.tensor(data), "flatten", 0, k - 1)
    reduced = P.method(flat, "index_reduce", 0, position, values, _INDEX_REDUCE[reduction])
    em.out(node, P.method(reduced, "reshape", ast.Attribute(em.tensor(data), "shape", ast.Load())))


@aten("index", produces=("Gather", "GatherND"))
def read_index(imp, node, x, indices):
    """x[i0, i1, ...] advanced indexing: one tensor index -> Gather; leading adjacent ones -> GatherND."""
    present = [i for i, t in enumerate(indices) if t is not None]
    if present == [0] and str(imp.meta(indices[0]).dtype) == "torch.bool":  # x[mask]
        return _sized_by(imp, _select(imp, imp.value(x), imp.value(indices[0]), imp.meta(x).shape,
                                      imp.meta(indices[0]).shape))
    if any(imp.meta(indices[i]).dtype.is_floating_point or str(imp.meta(indices[i]).dtype) == "torch.bool"
           for i in present):
        raise ModelError(f"{node.name}: boolean-mask indexing past the first dim is not supported")
    if len(present) == 1:
        return imp.emit("Gather", [imp.value(x), imp.value(indices[present[0]])], {"axis": present[0]})
    rank, out_shape = imp.rank(x), list(imp.meta().shape)
    rest = [d for d in range(rank) if d not in present]
    n_batch = len(out_shape) - len(rest)
    # PyTorch puts the indexed dims' result where the indices stand when they are adjacent, else first
    at = present[0] if present == list(range(present[0], present[0] + len(present))) else 0
    xv = imp.value(x)
    if present != list(range(len(present))):  # the indexed dims first: GatherND indexes the leading ones
        xv = imp.emit("Transpose", [xv], {"perm": present + rest}, suffix="indexed_first")
    gathered = imp.emit("GatherND", [xv, _index_tuples(imp, indices, present, out_shape[at:at + n_batch])],
                        suffix="gathered" if at else "")
    if not at:
        return gathered
    return imp.emit("Transpose", [gathered], {"perm": [*range(n_batch, n_batch + at), *range(n_batch),
                                                        *range(n_batch + at, len(out_shape))]})


def _index_tuples(imp, indices, present, batch):
    """The index tensors at `present`, broadcast to `batch` and stacked on a last axis: GatherND's and ScatterND's
    index tuples."""
    target = imp.shape_tensor(batch)
    parts = [imp.emit("Unsqueeze", [as_int64(imp, imp.emit("Expand", [imp.value(indices[i]), target], suffix=f"idx{i}"),
                                             f"idx{i}_i64"), imp.const([len(batch)], dtype=np.int64)],
                      suffix=f"idx{i}_last") for i in present]
    return imp.emit("Concat", parts, {"axis": -1}, suffix="indices")


@R.exports("GatherND", check=lambda node: "GatherND with batch_dims" if node.attrs.get("batch_dims") else None)
def write_gather_nd(em, node):
    idx = P.call("tuple", P.method(em.tensor(node.inputs[1]), "unbind", -1))
    em.out(node, P.subscript(em.tensor(node.inputs[0]), idx))


@aten("repeat", produces="Tile")
def read_repeat(imp, node, x, repeats):
    xv = imp.value(x)
    extra = len(repeats) - imp.rank(x)
    if extra > 0:
        xv = imp.emit("Unsqueeze", [xv, imp.const(list(range(extra)), dtype=np.int64)], suffix="align")
    return imp.emit("Tile", [xv, imp.shape_tensor(list(repeats))])


@R.exports("Tile")
def write_tile(em, node):
    em.out(node, P.method(em.tensor(node.inputs[0]), "repeat", em.pylist(node.inputs[1])))


@aten("constant_pad_nd", "pad", produces="Pad")
def read_pad(imp, node, x, pad, *rest, **named):
    """constant_pad_nd(x, pad, value=0) and pad(x, pad, mode="constant", value=None)."""
    names = ("mode", "value") if node.target.__name__.startswith("pad") else ("value",)
    given = {**dict(zip(names, rest)), **named}
    mode = {"constant": "constant", "reflect": "reflect", "replicate": "edge", "circular": "wrap"}[
        given.get("mode", "constant")]
    value = given.get("value") or 0.0
    r = imp.rank(x)
    pairs = [(0, 0)] * r
    for i in range(len(pad) // 2):
        pairs[r - 1 - i] = (pad[2 * i], pad[2 * i + 1])
    pads = [b for b, _ in pairs] + [e for _, e in pairs]
    xv = imp.value(x)
    return imp.emit("Pad", [xv, imp.const(pads, dtype=np.int64), imp.const(value or 0, like=xv)], {"mode": mode})


@R.exports("Pad", check=lambda node: "Pad with axes" if node.input(3) is not None else None)
def write_pad(em, node):
    x, pads = node.inputs[0], node.inputs[1]
    if pads.const is None and node.attrs.get("mode", "constant") == "constant" and pads.shape and \
            isinstance(pads.shape[0], int):  # computed widths: F.pad's (last axis first) list made at run time
        n = pads.shape[0] // 2
        if em.is_shape(pads):  # a Python list
            listed = em.pylist(pads)
            widths = ast.List([P.subscript(listed, k) for i in reversed(range(n)) for k in (i, i + n)], ast.Load())
        else:
            widths = P.method(P.method(P.method(P.method(P.method(em.tensor(pads), "reshape", 2, n), "flip", 1),
                                                "t"), "flatten"), "tolist")
        value = em.scalar(node.input(2)) if node.input(2) is not None else None
        em.out(node, P.call("F.pad", em.tensor(x), widths, value=value or 0.0))
        return
    p = [int(v) for v in const_operand(pads).ravel()]
    n = len(p) // 2
    flat = []
    for i in reversed(range(n)):
        flat += [p[i], p[i + n]]
    mode = {"constant": "constant", "reflect": "reflect", "edge": "replicate", "wrap": "circular"}[
        node.attrs.get("mode", "constant")]
    if mode == "constant":
        value = em.scalar(node.input(2)) if node.input(2) is not None else None
        em.out(node, P.call("F.pad", em.tensor(x), flat, mode=mode, value=value or 0.0))
        return
    # the other modes pad the last 1-3 axes of a tensor with one or two axes before them
    k = n
    while k > 1 and flat[2 * k - 2:2 * k] == [0, 0]:
        k -= 1
    k = max(k, n - 2)
    if k > 3:
        raise Unsupported(f"{mode} padding of {k} axes (PyTorch pads at most the last 3)")
    lifted = max(0, k + 1 - n)
    tensor = em.tensor(x)
    if em.exported and mode == "reflect":  # torch.export reflects across a dim of run-time size once it is wider
        shape = ast.Attribute(tensor, "shape", ast.Load())
        em.body += [P.expr_stmt(P.call("torch._check", P.binop(P.subscript(shape, i), ">", max(p[i], p[i + n]))))
                    for i in range(n) if max(p[i], p[i + n]) and (x.shape is None or not isinstance(x.shape[i], int))]
    for _ in range(lifted):
        tensor = P.method(tensor, "unsqueeze", 0)
    padded = P.call("F.pad", tensor, flat[:2 * k], mode=mode)
    for _ in range(lifted):
        padded = P.method(padded, "squeeze", 0)
    em.out(node, padded)


def _fill_value(node, args):
    name = node.target.__name__.split(".")[0]
    if name in ("zeros", "new_zeros", "zeros_like") or name.startswith(("empty", "new_empty")):
        return 0  # an empty tensor's values are any: zeros
    if name in ("ones", "new_ones", "ones_like"):
        return 1
    return args[-1]


@aten("zeros", "ones", "full", "new_zeros", "new_ones", "new_full", produces="ConstantOfShape")
def read_fill(imp, node, *args, **kw):
    val = imp.meta()
    dt = np.dtype(dtype_name(val.dtype)) if dtype_name(val.dtype) != "bfloat16" else None
    value = _fill_value(node, args)
    shape = [imp.dim(d) for d in val.shape]
    if _is_tensor(value):  # full_like(x, t) with a 0-d tensor t
        filled = imp.value(value)
        if dt is not None and filled.dtype != dt:
            filled = imp.emit("Cast", [filled], {"to": dtype_name(val.dtype)}, suffix="fill")
        return imp.emit("Expand", [filled, imp.out_shape()])
    if all(isinstance(d, int) for d in shape):
        return imp.const(np.full(shape, value), dtype=dt)
    return imp.emit("ConstantOfShape", [imp.out_shape()], {"value": np.array([value], dtype=dt)})


@aten("empty", "empty_like", "empty_permuted", "empty_strided", "new_empty", "new_empty_strided",
      produces="ConstantOfShape")
def read_empty(imp, node, *args, **kw):
    return read_fill(imp, node)


@aten("zeros_like", "ones_like", "full_like", produces="ConstantOfShape")
def read_fill_like(imp, node, x, *args, **kw):
    return read_fill(imp, node, *args, **kw) if node.target.__name__.startswith("full") else read_fill(imp, node)


@aten("scalar_tensor", produces=())
def read_scalar_tensor(imp, node, s, **kw):
    return imp.const(s, dtype=np.dtype(dtype_name(imp.meta().dtype)))


@R.exports("ConstantOfShape", shape_write=shape_values.fill)
def write_constant_of_shape(em, node):
    value = node.attrs.get("value")
    arr = np.zeros(1, np.float32) if value is None else np.asarray(value)
    dt = dtypes.name(arr.dtype)
    em.out(node, P.call("torch.full", _python_value(em, node.inputs[0], "tolist"), arr.ravel()[0].item(),
                        dtype=P.name(TORCH_DTYPES[dt])))


def _python_value(em, v, method: str):
    """A shape-like operand as Python numbers: a literal, the shape expression it was computed from, or, for one
    computed from data, the tensor's `.tolist()` / `.item()` (eager code; torch.export needs the value bounded)."""
    try:
        return em.pylist(v)
    except Unsupported:
        return P.method(em.tensor(v), method)


@aten("arange", produces="Range")
def read_arange(imp, node, *args, **kw):
    val = imp.meta()
    dt = np.dtype(dtype_name(val.dtype))
    nums = [a for a in args if not hasattr(a, "name")]
    if len(nums) == len(args):
        if len(args) == 1:
            return imp.const(np.arange(args[0]), dtype=dt)
        return imp.const(np.arange(*args), dtype=dt)
    vals = [imp.value(a) if hasattr(a, "name") else imp.const([a], dtype=np.int64) for a in args]
    start, limit, delta = (imp.const(0, dtype=dt), vals[0], imp.const(1, dtype=dt)) if len(vals) == 1 else\
        (vals[0], vals[1], vals[2] if len(vals) > 2 else imp.const(1, dtype=dt))
    scal = [imp.emit("Reshape", [v, imp.const([], dtype=np.int64)], suffix=f"scalar{i}") if v.shape != () else v
            for i, v in enumerate((start, limit, delta))]
    scal = [imp.emit("Cast", [v], {"to": str(dt)}, suffix=f"cast{i}") for i, v in enumerate(scal)]
    return imp.emit("Range", scal)


@R.exports("Range")
def write_range(em, node):
    start, limit, delta = node.inputs
    vals = [em.scalar(v) if v.const is not None else _python_value(em, v, "item") for v in (start, limit, delta)]
    dt = dtypes.name(start.dtype) if start.dtype is not None else "int64"
    em.out(node, P.call("torch.arange", *vals, dtype=P.name(TORCH_DTYPES[dt])))


#: ONNX windows -> torch's, with the coefficients that make them the same (ONNX's Hamming is 25/46, 21/46)
_WINDOWS = {"HannWindow": ("torch.hann_window", {}), "BlackmanWindow": ("torch.blackman_window", {}),
            "HammingWindow": ("torch.hamming_window", {"alpha": 25 / 46, "beta": 21 / 46})}


@R.exports(*_WINDOWS)
def write_window(em, node):
    fn, coefficients = _WINDOWS[node.op]
    size = node.inputs[0]
    n = em.scalar(size) if size.const is not None else _python_value(em, size, "item")
    dt = dtypes.name(dtypes.dtype(node.attrs.get("output_datatype", "float32")))
    em.out(node, P.call(fn, n, periodic=bool(node.attrs.get("periodic", 1)), **coefficients,
                        dtype=P.name(TORCH_DTYPES[dt])))


@R.exports("NonZero")
def write_non_zero(em, node):
    """The indices as rows, one per axis (torch.nonzero gives them as columns)."""
    em.out(node, ast.Attribute(P.call("torch.nonzero", em.tensor(node.inputs[0])), "T", ast.Load()))


@R.exports("Compress", check=vector_condition_blocker)
def write_compress(em, node):
    """The slices along `axis` (of the flattened input without one) where the condition holds."""
    x, axis = em.tensor(node.inputs[0]), node.attrs.get("axis")
    chosen = P.method(P.call("torch.nonzero", em.tensor(node.inputs[1])), "flatten")
    if axis is None:
        em.out(node, P.subscript(P.method(x, "flatten"), chosen))
    else:
        em.out(node, P.call("torch.index_select", x, axis, chosen))


@R.exports("Unique")
def write_unique(em, node):
    """torch.unique (sorted) with inverse and counts; each value's first occurrence is the least position mapped
    to it (scatter_reduce "amin"). Unsorted, as ONNX orders them: by first occurrence, the inverse remapped."""
    axis = node.attrs.get("axis")
    values, inverse, counts, first, order = (em.namer.name(f"{node.name}_{tag}", tag)
                                             for tag in ("values", "inverse", "counts", "first", "order"))
    em.body.append(P.assign([values, inverse, counts], P.call(
        "torch.unique", em.tensor(node.inputs[0]), sorted=True, return_inverse=True, return_counts=True, dim=axis)))
    em.body.append(P.assign([inverse], P.method(P.name(inverse), "flatten")))
    positions = P.call("torch.arange", P.method(P.name(inverse), "numel"))
    em.body.append(P.assign([first], P.method(
        P.call("torch.full_like", P.name(counts), P.method(P.name(inverse), "numel")), "scatter_reduce",
        0, P.name(inverse), positions, "amin")))
    if not node.attrs.get("sorted", 1):
        em.body.append(P.assign([order], P.call("torch.argsort", P.name(first))))
        picked = P.call("torch.index_select", P.name(values), 0 if axis is None else axis, P.name(order))
        em.body.append(P.assign([values, counts, first, inverse], ast.Tuple([
            picked, P.subscript(P.name(counts), P.name(order)), P.subscript(P.name(first), P.name(order)),
            P.subscript(P.call("torch.argsort", P.name(order)), P.name(inverse))], ast.Load())))
    for index, part in enumerate((values, first, inverse, counts)[:len(node.outputs)]):
        em.alias(node, P.name(part), index)


@aten("cumsum", produces="CumSum")
def read_cumsum(imp, node, x, dim, dtype=None):
    """torch sums in the result's dtype: int64 for bool and integer inputs, `dtype` when given."""
    x = imp.value(x)
    target = dtype_name(imp.meta().dtype)
    if x.dtype is not None and x.dtype != dtypes.dtype(target):
        x = imp.emit("Cast", [x], {"to": target}, suffix="cast")
    return imp.emit("CumSum", [x, imp.const(dim, dtype=np.int64)])


@R.exports("CumSum", check=lambda node: "exclusive/reverse CumSum" if node.attrs.get("exclusive") or
           node.attrs.get("reverse") else None)
def write_cumsum(em, node):
    em.out(node, P.call("torch.cumsum", em.tensor(node.inputs[0]), em.scalar(node.inputs[1])))


@aten("tril", "triu", produces="Trilu")
def read_trilu(imp, node, x, diagonal=0):
    upper = int(node.target.__name__.startswith("triu"))
    return imp.emit("Trilu", [imp.value(x), imp.const(diagonal, dtype=np.int64)], {"upper": upper})


@R.exports("Trilu")
def write_trilu(em, node):
    fn = "torch.triu" if node.attrs.get("upper", 1) else "torch.tril"
    k = em.scalar(node.input(1)) if node.input(1) is not None else 0
    em.out(node, P.call(fn, em.tensor(node.inputs[0]), k))


# -- shape vectors as Python lists (what `x.shape` gives), so dynamic dims stay dynamic ------------------
R.add_export(("Shape",), shape_values.shape, shape_values.shape)


def _numel(em, x) -> ast.expr:
    """x.numel(), or the length of a shape the code holds as a Python list."""
    if em.is_shape(x) and x.shape is not None and len(x.shape) <= 1:
        return P.call("len", em.pylist(x)) if x.shape else P.lit(1)
    return P.method(em.tensor(x), "numel")


@R.exports("Size", shape_write=lambda em, node: em.out(node, _numel(em, node.inputs[0])))
def write_size(em, node):
    em.out(node, P.call("torch.tensor", _numel(em, node.inputs[0])))


# -- symbolic sizes: torch.export's SymInts and the Python arithmetic on them ------------------------------
@aten("sym_size", produces="Shape")
def read_sym_size(imp, node, x, dim):
    v = imp.emit("Shape", [imp.value(x)], {"start": dim, "end": dim + 1 if dim != -1 else None}, suffix=f"dim{dim}")
    expr = imp.meta().node.expr if hasattr(imp.meta(), "node") else None
    if expr is not None and expr not in imp.sym_values:
        imp.sym_values[expr] = v
    return ("sym", v)


def size_value(imp, expr) -> Value:
    """IR int64[1] value computing a sympy expression over the input dims."""
    import sympy

    if getattr(expr, "is_Integer", False):
        return imp.const([int(expr)], dtype=np.int64)
    cached = imp.sym_values.get(expr)
    if isinstance(cached, tuple):
        _, inp, axis = cached
        return imp.emit("Shape", [inp], {"start": axis, "end": axis + 1}, suffix=f"dim{axis}")
    if isinstance(expr, (sympy.Add, sympy.Mul)):
        op = "Add" if isinstance(expr, sympy.Add) else "Mul"
        parts = [imp.sym_value(a) for a in expr.args]
        v = parts[0]
        for p in parts[1:]:
            v = imp.emit(op, [v, p], suffix=f"dim_{op.lower()}")
        return v
    if type(expr).__name__ in ("FloorDiv", "CleanDiv"):
        return imp.emit("Div", [imp.sym_value(expr.args[0]), imp.sym_value(expr.args[1])], suffix="dim_div")
    if type(expr).__name__ in ("Mod", "PythonMod"):
        return imp.emit("Mod", [imp.sym_value(expr.args[0]), imp.sym_value(expr.args[1])], suffix="dim_mod")
    raise ModelError(f"{imp.node.name}: symbolic size {expr} is not supported")


def shape_vector(imp, dims) -> Value:
    """A list of ints / SymInts / size nodes as one IR int64 vector (a constant when all are known)."""
    import torch

    static = []
    for d in dims:
        if isinstance(d, int):
            static.append(d)
        elif isinstance(d, torch.SymInt) and getattr(d.node.expr, "is_Integer", False):
            static.append(int(d.node.expr))
        else:
            static = None
            break
    if static is not None:
        return imp.const(static, dtype=np.int64)
    parts = []
    for d in dims:
        if isinstance(d, int):
            parts.append(imp.const([d], dtype=np.int64))
        elif isinstance(d, torch.SymInt):
            parts.append(imp.sym_value(d.node.expr))
        else:
            v = imp.env[d.name]
            parts.append(v[1] if isinstance(v, tuple) else v)
    return imp.emit("Concat", parts, {"axis": 0}, suffix="shape")


# -- core ATen ops that write into a tensor or read it backwards or along a diagonal ---------------------
@aten("flip", produces="Slice")
def read_flip(imp, node, x, dims):
    return reverse(imp, imp.value(x), dims)


def _is_tensor(arg) -> bool:
    return hasattr(arg, "op") and hasattr(arg, "name")


def _scatter_source(imp, src, index, like):
    """What a scatter writes: the source tensor, or a scalar spread over the index's shape."""
    if _is_tensor(src):
        return imp.value(src)
    return imp.emit("Expand", [imp.const(src, like=like), imp.emit("Shape", [imp.value(index)], suffix="index_shape")],
                    suffix="source")


#: scatter_reduce's reductions -> ScatterElements'
_SCATTER_REDUCTIONS = {"sum": "add", "prod": "mul", "amax": "max", "amin": "min"}


@aten("scatter", "scatter_add", produces="ScatterElements")
def read_scatter(imp, node, x, dim, index, src, reduce=None):
    """x.scatter(dim, index, src or value[, reduce="add"/"multiply"]) and scatter_add."""
    xv = imp.value(x)
    if node.target.__name__.startswith("scatter_add"):
        reduction = "add"
    else:
        reduction = {None: "none", "add": "add", "multiply": "mul"}[reduce]
    return imp.emit("ScatterElements", [xv, imp.value(index), _scatter_source(imp, src, index, xv)],
                    {"axis": int(dim), "reduction": reduction})


@aten("scatter_reduce", produces="ScatterElements")
def read_scatter_reduce(imp, node, x, dim, index, src, reduce, include_self=True):
    """x.scatter_reduce: without include_self, the written slots first take the reduction's identity."""
    if reduce not in _SCATTER_REDUCTIONS:
        raise ModelError(f"{node.name}: scatter_reduce with reduce={reduce!r} is not supported")
    reduction = _SCATTER_REDUCTIONS[reduce]
    xv, idx, updates = imp.value(x), imp.value(index), imp.value(src)
    if not include_self:
        identity = imp.const(reduction_identity(reduction, xv.dtype), like=xv)
        fill = imp.emit("Expand", [identity, imp.emit("Shape", [idx], suffix="index_shape")], suffix="identity")
        xv = imp.emit("ScatterElements", [xv, idx, fill], {"axis": int(dim)}, suffix="cleared")
    return imp.emit("ScatterElements", [xv, idx, updates], {"axis": int(dim), "reduction": reduction})


@aten("index_put", produces=("ScatterND", "Where", "NonZero"))
def read_index_put(imp, node, x, indices, values, accumulate=False):
    """x[..., i0, i1, ...] = values (accumulate: +=) for index tensors on adjacent dims (a KV cache's
    `cache[:, :, positions] = k`): ScatterND at their broadcast index tuples, the indexed dims moved first."""
    import torch

    present = [i for i, t in enumerate(indices) if t is not None]
    masks = [i for i in present if imp.meta(indices[i]).dtype == torch.bool]
    if masks and len(present) == 1:
        return _masked_put(imp, node, x, present[0], indices[present[0]], values, accumulate)
    if present != list(range(present[0], present[-1] + 1)) or masks:
        raise ModelError(f"{node.name}: index_put with a boolean mask beside other indices, or indices on dims "
                         "apart, is not supported")
    shape = list(imp.meta(x).shape)
    lead, rest = shape[:present[0]], shape[present[-1] + 1:]
    batch = list(torch.broadcast_shapes(*(imp.meta(indices[i]).shape for i in present)))
    where = _index_tuples(imp, indices, present, batch)
    spread = imp.emit("Expand", [imp.value(values, like=x), imp.shape_tensor(lead + batch + rest)], suffix="values")
    xv = imp.value(x)
    reduction = {"reduction": "add" if accumulate else "none"}
    if not lead:
        return imp.emit("ScatterND", [xv, where, spread], reduction)
    p, b = len(lead), len(batch)
    first = present + [d for d in range(len(shape)) if d not in present]
    moved = imp.emit("Transpose", [xv], {"perm": first}, suffix="indexed_first")
    spread = imp.emit("Transpose", [spread], {"perm": list(range(p, p + b)) + list(range(p)) +
                                              list(range(p + b, p + b + len(rest)))}, suffix="batch_first")
    written = imp.emit("ScatterND", [moved, where, spread], reduction, suffix="written")
    return imp.emit("Transpose", [written], {"perm": [first.index(d) for d in range(len(shape))]})


def _masked_put(imp, node, x, dim: int, mask, values, accumulate: bool):
    """x[..., mask] = values (X-MOD's `h[lang_ids == i] = adapter(h[lang_ids == i])`): one value for every
    masked position is a Where; values in the order of the masked positions (from the leading dim) are
    scattered at the mask's nonzero coordinates."""
    shape, mask_rank = list(imp.meta(x).shape), len(imp.meta(mask).shape)
    rest = shape[dim + mask_rank:]
    xv, mv, vv = imp.value(x), imp.value(mask), imp.value(values, like=x)
    if all(imp.dim(d) == 1 for d in imp.meta(values).shape):
        spread = imp.emit("Reshape", [mv, imp.shape_tensor(list(imp.meta(mask).shape) + [1] * len(rest))],
                          suffix="mask_spread")
        value = imp.emit("Reshape", [vv, imp.const([], dtype=np.int64)], suffix="value")
        if accumulate:
            value = imp.emit("Where", [spread, value, imp.const(np.zeros((), xv.dtype))], suffix="added")
            return imp.emit("Add", [xv, value])
        return imp.emit("Where", [spread, value, xv])
    if dim:
        raise ModelError(f"{node.name}: x[..., mask] = values after leading dims is not supported")
    where = imp.emit("Transpose", [imp.emit("NonZero", [mv], suffix="coords")], {"perm": [1, 0]}, suffix="where")
    given = [imp.dim(d) for d in imp.meta(values).shape]
    if len(given) != 1 + len(rest) or given[0] == 1 or given[1:] != [imp.dim(d) for d in rest]:
        # values to broadcast (a row for every masked position)
        count = imp.emit("Shape", [where], {"start": 0, "end": 1}, suffix="count")
        vv = imp.emit("Expand", [vv, imp.emit("Concat", [count, imp.shape_tensor(rest)], {"axis": 0},
                                              suffix="values_shape")], suffix="values")
    return imp.emit("ScatterND", [xv, where, vv], {"reduction": "add" if accumulate else "none"})


@aten("slice_scatter", produces=("Concat", "ScatterElements"))
def read_slice_scatter(imp, node, x, src, dim=0, start=None, end=None, step=1):
    """x with x[start:end:step] along dim replaced by src: the parts before and after around it; a strided
    slice (a rotary embedding's `out[..., 0::2] = ...`) as a scatter to its positions."""
    size, start = imp.meta(x).shape[dim], start or 0
    to_end = end is None or end is size or (isinstance(end, int) and isinstance(size, int) and end >= size) or \
        (isinstance(end, int) and end >= 2 ** 62)  # `x[1:] = y` of a dim whose size is symbolic (TorchScript)
    if step != 1:
        return _strided_scatter(imp, node, x, src, dim, start, size if to_end else end, step)
    if not isinstance(start, int) or not (to_end or isinstance(end, int)):
        raise ModelError(f"{node.name}: slice_scatter with a dynamic bound is not supported")
    xv = imp.value(x)
    axis = imp.const([dim], dtype=np.int64)
    parts = [imp.emit("Slice", [xv, imp.const([0], dtype=np.int64), imp.const([start], dtype=np.int64), axis],
                      suffix="before")] if start > 0 else []
    parts.append(imp.value(src))
    if not to_end:
        parts.append(imp.emit("Slice", [xv, imp.const([end], dtype=np.int64),
                                        imp.const([np.iinfo(np.int64).max], dtype=np.int64), axis], suffix="after"))
    return imp.emit("Concat", parts, {"axis": int(dim)}) if len(parts) > 1 else parts[0]


def _strided_scatter(imp, node, x, src, dim: int, start, end, step):
    """x[start:end:step] = src along dim, of a dim of known size: ScatterElements at the slice's positions (an
    index per position along dim, spread over src's other dims when the model runs)."""
    size = imp.meta(x).shape[dim]
    if not all(isinstance(v, int) for v in (size, start, end, step)):
        raise ModelError(f"{node.name}: slice_scatter with a step over a dim of run-time size is not supported")
    positions = imp.const(np.arange(size)[slice(start, end, step)], dtype=np.int64)
    return _scatter_rows(imp, imp.value(x), dim, positions, imp.value(src))


def _scatter_rows(imp, xv, dim: int, positions, sv):
    """x with its slices along dim at `positions` (a vector) replaced by src's, in order: ScatterElements with each
    position spread over src's other dims when the model runs."""
    rank = len(xv.shape)
    dim = dim % rank
    column = imp.emit("Reshape", [positions, imp.const([-1 if a == dim else 1 for a in range(rank)], dtype=np.int64)],
                      suffix="positions")
    index = imp.emit("Expand", [column, imp.emit("Shape", [sv], suffix="src_shape")], suffix="index")
    return imp.emit("ScatterElements", [xv, index, sv], {"axis": dim})


@aten("index_copy", produces="ScatterElements")
def read_index_copy(imp, node, x, dim, index, source):
    """x.index_copy(dim, index, source): x's slices along dim at `index` replaced by source's."""
    return _scatter_rows(imp, imp.value(x), dim, imp.value(index), imp.value(source))


@aten("sym_storage_offset", produces=())
def read_storage_offset(imp, node, x):
    """A view's storage offset, which torch.export reads only to assert it is not negative: the IR's tensors
    have no storage, so 0."""
    return ("sym", imp.const([0], dtype=np.int64))


@aten("diagonal", produces="Gather")
def read_diagonal(imp, node, x, offset=0, dim1=0, dim2=1):
    """x.diagonal (the diagonal last)."""
    shape = [imp.dim(d) for d in imp.meta(x).shape]
    return diagonal(imp, imp.value(x), shape, offset, dim1, dim2, node.name)


# -- ops whose output size depends on the data (torch.export's unbacked sizes u0, u1, ...) ------------------------
def _sized_by(imp, value, axis: int = 0, meta=None):
    """Record that the unbacked size of the node's output along `axis` is `value`'s there (sizes read later)."""
    dim = (meta if meta is not None else imp.meta()).shape[axis]
    expr = dim.node.expr if hasattr(dim, "node") else None
    if expr is not None and getattr(expr, "is_Symbol", False) and expr not in imp.sym_values:
        imp.sym_values[expr] = ("data", value, axis)
    return value


@aten("_local_scalar_dense", produces=("Reshape", "Cast"))
def read_item(imp, node, x):
    """An integer read into Python (.item(), .tolist(), int(tensor)) that the program goes on to use as a size
    (JetMoE splits its tokens by each expert's count): the value itself, a size computed from the data."""
    val = imp.meta()
    expr = getattr(getattr(val, "node", None), "expr", None)
    if expr is None or not getattr(expr, "is_Symbol", False):
        raise ModelError(f"{node.name}: the model reads a tensor's value into Python as a "
                         f"{type(val).__name__} (.item()): only an integer used as a size is read; compute with "
                         "tensor ops instead")
    v = imp.emit("Reshape", [imp.value(x), imp.const([1], dtype=np.int64)], suffix="item")
    if v.dtype is not None and v.dtype != np.int64:
        v = imp.emit("Cast", [v], {"to": "int64"}, suffix="item_int")
    imp.sym_values[expr] = v
    return ("sym", v)


@aten("nonzero", produces="NonZero")
def read_nonzero(imp, node, x):
    """torch.nonzero: the [count, rank] coordinates of the non-zero entries (the IR's NonZero is [rank, count])."""
    coords = imp.emit("NonZero", [imp.value(x)], suffix="coords")
    return _sized_by(imp, imp.emit("Transpose", [coords], {"perm": [1, 0]}))


@aten("masked_select", produces="Compress")
def read_masked_select(imp, node, x, mask):
    return _sized_by(imp, _select(imp, imp.value(x), imp.value(mask), imp.meta(x).shape, imp.meta(mask).shape))


def _select(imp, xv, mask, x_shape, mask_shape):
    """The entries of `xv` where `mask` (over its leading dims, or broadcast to it) holds, flattened: a Compress of
    the rows, as x[mask] reads."""
    if list(mask_shape) != list(x_shape[:len(mask_shape)]):
        mask = imp.emit("Expand", [mask, imp.shape_tensor(list(x_shape))], suffix="mask_spread")
        mask_shape = x_shape
    rest = list(x_shape[len(mask_shape):])
    rows = imp.emit("Reshape", [xv, imp.shape_tensor([-1] + rest)], suffix="rows")
    flat = imp.emit("Reshape", [mask, imp.const([-1], dtype=np.int64)], suffix="flat_mask")
    return imp.emit("Compress", [rows, flat], {"axis": 0})


@aten("unique_dim", produces="Unique")
def read_unique_dim(imp, node, x, dim, sorted=True, return_inverse=False, return_counts=False):
    """torch.unique(x, dim=d): the distinct slices along `dim` in lexicographic order, each slice's index into
    them, and how often each appears."""
    xv = imp.value(x)
    values, _, inverse, counts = imp.emit("Unique", [xv], {"sorted": 1, "axis": int(dim)}, outputs=4,
                                          suffix="unique")
    return (_sized_by(imp, values, int(dim) % len(imp.meta(x).shape), imp.meta()[0]), inverse, counts)


@aten("_unique2", produces="Unique")
def read_unique(imp, node, x, sorted=True, return_inverse=False, return_counts=False):
    """torch.unique of the flattened tensor: (values, inverse indices in the input's shape, counts)."""
    xv = imp.value(x)
    values, _, inverse, counts = imp.emit("Unique", [xv], {"sorted": 1}, outputs=4, suffix="unique")
    inverse = imp.emit("Reshape", [inverse, imp.emit("Shape", [xv], suffix="shape")], suffix="inverse")
    meta = imp.meta()[0]
    return (_sized_by(imp, values, 0, meta), inverse, counts)


@aten("unfold", produces="Gather")
def read_unfold(imp, node, x, dim, size, step):
    """x.unfold(dim, size, step): the windows along `dim` (HaloNet's blocks) gathered by their indices, each
    window's elements on a new last axis."""
    xv = imp.value(x)
    r = imp.rank(x)
    d = norm_axis(dim, r) if r else 0
    length = xv.shape[d] if xv.shape is not None and r else 1
    if not isinstance(length, int):
        raise ModelError(f"{node.name}: unfold of a dim known only at run time is not supported")
    starts = np.arange(0, length - size + 1, step, dtype=np.int64)
    windows = imp.emit("Gather", [xv, imp.const(starts[:, None] + np.arange(size, dtype=np.int64))], {"axis": d},
                       suffix="windows")
    if not r:
        return imp.emit("Reshape", [windows, imp.const([size], dtype=np.int64)])
    perm = [*range(d + 1), *range(d + 2, r + 1), d + 1]
    return imp.emit("Transpose", [windows], {"perm": perm})
