"""PyTorch <-> IR: Reductions, arg-reductions, einsum, top-k.

Each IR op's import converters (ATen -> IR) and export writer (IR -> torch code) sit together.
"""
from __future__ import annotations

import numpy as np

from tensorbridge.codegen import pyast as P
from tensorbridge.codegen.rule_helpers import Unsupported, const_operand
from tensorbridge.errors import ModelError
from tensorbridge.ir import dtypes
from tensorbridge.ops.reduce import ACCUMULATING
from tensorbridge.rules.torch.base import (
    R,
    aten,
    dtype_name,
    ints,
)

_ATEN_REDUCTIONS = {"mean": "ReduceMean", "sum": "ReduceSum", "amax": "ReduceMax", "amin": "ReduceMin",
                    "prod": "ReduceProd"}


@aten("mean", "sum", "amax", "amin", "prod",
      produces=("ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd"))
def read_reduce(imp, node, x, dim=None, keepdim=False, *rest, **kw):
    """A sum or product is taken in its result's type: PyTorch counts a bool mask's trues (`mask.sum(1)`) and sums
    narrow ints in int64, where the IR's reduction keeps its operand's type; `dtype=` asks for a type too."""
    op = _ATEN_REDUCTIONS[node.target.__name__.split(".")[0]]
    if isinstance(dim, int):
        dim = [dim]
    value = imp.value(x)
    result = dtype_name(imp.meta().dtype)
    if op in ACCUMULATING and dtypes.name(value.dtype) != result:
        value = imp.emit("Cast", [value], {"to": result}, suffix="operand")
    axes = [value] + ([imp.const(list(dim), dtype=np.int64)] if dim else [])
    return imp.emit(op, axes, {"keepdims": int(bool(keepdim))})


@aten("var", "std", produces=("ReduceMean", "Sub", "Mul", "Sqrt"))
def read_variance(imp, node, x, *args, **kw):
    """var / std over `dim` (all dims when None) with Bessel's `correction` (or `unbiased`, its older spelling): the
    mean of the squared deviations, times n / (n - correction)."""
    dim = args[0] if args and not isinstance(args[0], bool) else kw.get("dim")
    unbiased = args[0] if args and isinstance(args[0], bool) else args[1] if len(args) > 1 and \
        isinstance(args[1], bool) else kw.get("unbiased", True)
    correction = kw.get("correction", 1 if unbiased else 0)
    correction = 1 if correction is None else correction
    keep = bool(kw.get("keepdim", args[2] if len(args) > 2 else False))
    shape = [imp.dim(d) for d in imp.meta(x).shape]
    dims = list(range(len(shape))) if dim is None or dim == [] else [dim] if isinstance(dim, int) else list(dim)
    n = int(np.prod([shape[d] for d in dims])) if all(isinstance(shape[d], int) for d in dims) else None
    if n is None or n <= correction:
        raise ModelError(f"{node.name}: {node.target.__name__.split('.')[0]} over dims of run-time size or of no "
                         "more elements than the correction")
    xv = imp.value(x)
    axes = imp.const(dims, dtype=np.int64)
    deviation = imp.emit("Sub", [xv, imp.emit("ReduceMean", [xv, axes], {"keepdims": 1}, suffix="mean")],
                         suffix="deviation")
    squares = imp.emit("Mul", [deviation, deviation], suffix="squares")
    variance = imp.emit("ReduceMean", [squares, axes], {"keepdims": int(keep)}, suffix="biased" if correction else "")
    if correction:
        variance = imp.emit("Mul", [variance, imp.const(n / (n - correction), like=xv)],
                            suffix="" if node.target.__name__.startswith("var") else "corrected")
    return imp.emit("Sqrt", [variance]) if node.target.__name__.startswith("std") else variance


def _axes(node):
    """The reduced dims; None when the node passes its input through (no axes, noop_with_empty_axes)."""
    axes = node.input(1)
    given = () if axes is None else tuple(int(a) for a in const_operand(axes).ravel())
    if given:
        return given
    if node.attrs.get("noop_with_empty_axes"):
        return None
    x = node.inputs[0]
    if x.shape is None:
        raise Unsupported("reduction over all axes needs the input rank")
    return tuple(range(len(x.shape)))


_TORCH_REDUCTIONS = {"ReduceMean": "mean", "ReduceSum": "sum", "ReduceMax": "amax", "ReduceMin": "amin"}


@R.exports("ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL2")
def write_reduce(em, node):
    dims = _axes(node)
    xe = em.tensor(node.inputs[0])
    if dims is None:
        return em.out(node, xe)
    keep = bool(node.attrs.get("keepdims", 1))
    if node.op in _TORCH_REDUCTIONS:
        return em.out(node, P.method(xe, _TORCH_REDUCTIONS[node.op], dim=dims, keepdim=keep))
    if node.op == "ReduceProd":
        expr = xe
        for d in sorted(dims, reverse=True):
            expr = P.method(expr, "prod", dim=d, keepdim=keep)
        return em.out(node, expr)
    if node.op == "ReduceL2":
        return em.out(node, P.call("torch.linalg.vector_norm", xe, dim=dims, keepdim=keep))
    raise Unsupported(node.op)


@aten("linalg_vector_norm", produces=("ReduceL2", "ReduceL1", "ReduceMax", "ReduceMin", "ReduceSum", "Pow"))
def read_vector_norm(imp, node, x, ord=2, dim=None, keepdim=False, **kw):
    """ord 2 and 1 as ReduceL2/L1, +-inf as the max/min of |x|, another p as (sum |x|^p)^(1/p)."""
    xv = imp.value(x)
    if kw.get("dtype") is not None:
        xv = imp.emit("Cast", [xv], {"to": dtype_name(kw["dtype"])}, suffix="cast")
    axes = [imp.const([dim] if isinstance(dim, int) else list(dim), dtype=np.int64)] if dim is not None else []
    attrs = {"keepdims": int(bool(keepdim))}
    p = float(ord)
    if p in (1.0, 2.0):
        return imp.emit("ReduceL2" if p == 2 else "ReduceL1", [xv, *axes], attrs)
    magnitude = imp.emit("Abs", [xv], suffix="abs")
    if p in (float("inf"), float("-inf")):
        return imp.emit("ReduceMax" if p > 0 else "ReduceMin", [magnitude, *axes], attrs)
    if p == 0:
        raise ModelError(f"{node.name}: the 0-norm (a count of nonzeros) is not supported")
    powered = imp.emit("Pow", [magnitude, imp.const(p, like=xv)], suffix="pow")
    total = imp.emit("ReduceSum", [powered, *axes], attrs, suffix="sum")
    return imp.emit("Pow", [total, imp.const(1.0 / p, like=xv)])


@aten("max", "min", produces=("Max", "Min", "ReduceMax", "ReduceMin", "ArgMax", "ArgMin"))
def read_max_min(imp, node, x, dim=None, keepdim=False):
    kind = node.target.__name__.split(".")[0]
    if hasattr(dim, "name"):  # max.other / min.other: elementwise with a tensor
        return imp.emit("Max" if kind == "max" else "Min", [imp.value(x), imp.value(dim)])
    if dim is None:
        return imp.emit("ReduceMax" if kind == "max" else "ReduceMin", [imp.value(x)], {"keepdims": 0})
    xv = imp.value(x)
    values = imp.emit("ReduceMax" if kind == "max" else "ReduceMin", [xv, imp.const([dim], dtype=np.int64)],
                      {"keepdims": int(keepdim)}, suffix="values")
    idx = imp.emit("ArgMax" if kind == "max" else "ArgMin", [xv], {"axis": int(dim), "keepdims": int(keepdim)},
                   suffix="indices")
    return (values, idx)


@aten("argmax", "argmin", produces=("ArgMax", "ArgMin"))
def read_arg(imp, node, x, dim=None, keepdim=False):
    op = "ArgMax" if node.target.__name__.startswith("argmax") else "ArgMin"
    xv = imp.value(x)
    if dim is None:
        xv = imp.emit("Reshape", [xv, imp.const([-1], dtype=np.int64)], suffix="flat")
        dim = 0
    return imp.emit(op, [xv], {"axis": int(dim), "keepdims": int(keepdim)})


@R.exports("ArgMax", "ArgMin", check=lambda node: "select_last_index" if node.attrs.get("select_last_index") else None)
def write_arg_reduce(em, node):
    fn = "torch.argmax" if node.op == "ArgMax" else "torch.argmin"
    em.out(node, P.call(fn, em.tensor(node.inputs[0]), dim=node.attrs.get("axis", 0),
                        keepdim=bool(node.attrs.get("keepdims", 1))))


@aten("any", "all", produces=("ReduceMax", "ReduceMin"))
def read_any_all(imp, node, x, dim=None, keepdim=False):
    as_int = imp.emit("Cast", [imp.value(x)], {"to": "int32"}, suffix="int")
    op = "ReduceMax" if node.target.__name__.startswith("any") else "ReduceMin"
    args = [as_int] + ([imp.const(ints(dim), dtype=np.int64)] if dim is not None else [])
    red = imp.emit(op, args, {"keepdims": int(keepdim)}, suffix="reduce")
    return imp.emit("Cast", [red], {"to": "bool"})


@aten("einsum", produces="Einsum")
def read_einsum(imp, node, equation, tensors, path=None):
    return imp.emit("Einsum", [imp.value(t) for t in tensors], {"equation": equation})


@R.exports("Det")
def write_det(em, node):
    em.out(node, P.call("torch.linalg.det", em.tensor(node.inputs[0])))


@R.exports("Einsum")
def write_einsum(em, node):
    em.out(node, P.call("torch.einsum", node.attrs["equation"], *[em.tensor(v) for v in node.inputs]))


@aten("topk", produces="TopK")
def read_top_k(imp, node, x, k, dim=-1, largest=True, sorted=True):
    """torch.topk as TopK, sorted: the order an unsorted topk gives is unspecified, so a sorted one is one."""
    xv = imp.value(x)
    kv = imp.value(k) if hasattr(k, "name") else imp.const([int(k)], dtype=np.int64)
    return tuple(imp.emit("TopK", [xv, kv], {"axis": int(dim), "largest": int(bool(largest)), "sorted": 1},
                          outputs=2))


@aten("sort", produces="TopK")
def read_sort(imp, node, x, *args, **kwargs):
    """torch.sort(x, dim, descending[, stable]) as TopK of every element; equal values keep their order (a stable
    sort, as TopK breaks ties by index; an unstable sort leaves that order unspecified)."""
    if node.target.__name__.startswith("sort.stable"):
        dim, descending = kwargs.get("dim", -1), kwargs.get("descending", False)
    else:
        dim, descending = (list(args) + [-1, False][len(args):])[:2]
    xv, dim = imp.value(x), int(dim)
    if xv.shape is not None and isinstance(xv.shape[dim], int):
        k = imp.const([xv.shape[dim]], dtype=np.int64)
    else:  # the size along dim, computed
        k = imp.emit("Shape", [xv], {"start": dim, **({"end": dim + 1} if dim != -1 else {})}, suffix="size")
    return tuple(imp.emit("TopK", [xv, k], {"axis": int(dim), "largest": int(bool(descending)), "sorted": 1},
                          outputs=2))


@R.exports("TopK")
def write_top_k(em, node):
    """torch.topk; where the indices are read, a stable sort cut to k: ONNX puts the lower index first among equal
    values, which torch.topk does not promise."""
    k = em.scalar(node.inputs[1])
    k = k if k is not None else em.tensor(node.inputs[1])
    x, dim, largest = em.tensor(node.inputs[0]), node.attrs.get("axis", -1), bool(node.attrs.get("largest", 1))
    indices = node.outputs[1]
    if not indices.uses() and indices not in em.g.outputs:
        em.outs(node, P.call("torch.topk", x, k, dim=dim, largest=largest, sorted=bool(node.attrs.get("sorted", 1))),
                2)
        return
    em.outs(node, P.call("torch.sort", x, dim=dim, descending=largest, stable=True), 2)
    for v in node.outputs[:2]:
        if id(v) in em.var:  # an output nothing reads has no variable
            em.body.append(P.assign([em.var[id(v)].id], P.method(em.var[id(v)], "narrow", dim, 0, k)))


@aten("linalg_det", "_linalg_det", "det", produces="Det")
def read_det(imp, node, x):
    """The determinant (_linalg_det also gives the LU factors and pivots, which nothing reads)."""
    det = imp.emit("Det", [imp.value(x)])
    return (det, None, None) if node.target.__name__.startswith("_linalg_det") else det
