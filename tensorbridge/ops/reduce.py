"""Reductions and index-producing ops: Reduce*, ArgMax/ArgMin, TopK, Einsum, Det.

Reduction axes are an optional input (current ONNX form); with no axes every axis is
reduced unless `noop_with_empty_axes` is set.
"""

from __future__ import annotations

import numpy as np

from tensorbridge.ir import dtypes
from tensorbridge.ir.builder import Builder
from tensorbridge.ops import layout_rules as L
from tensorbridge.ops.infer import const_ints, norm_axis
from tensorbridge.ops.layout_classes import TERMINATE, attribute
from tensorbridge.ops.schema import Attr, op, set_decomposition

F = "reduce"


def _axes(data, axes, noop):
    if axes is None or np.asarray(axes).size == 0:
        return None if not noop else ()
    return tuple(norm_axis(int(a), data.ndim) for a in np.asarray(axes).ravel())


def _reduce_infer(inputs, attrs):
    x = inputs[0]
    if x.shape is None:
        return [(x.dtype, None)]
    has_axes = len(inputs) > 1 and inputs[1] is not None
    axes = const_ints(inputs[1]) if has_axes else []
    if axes is None:
        return [(x.dtype, None)]
    r = len(x.shape)
    if not axes:
        axes = [] if attrs["noop_with_empty_axes"] else list(range(r))
    axes = [norm_axis(a, r) for a in axes]
    if attrs["keepdims"]:
        return [(x.dtype, tuple(1 if i in axes else d for i, d in enumerate(x.shape)))]
    return [(x.dtype, tuple(d for i, d in enumerate(x.shape) if i not in axes))]


def _work(x):
    n = dtypes.name(x.dtype)
    return x.astype(np.float32) if n in dtypes.LOW_PRECISION_NAMES or n == "float16" else x


def _reducer(fn):
    def ref(data, axes=None, *, keepdims, noop_with_empty_axes):
        ax = _axes(data, axes, noop_with_empty_axes)
        if ax == ():
            return data.copy() if fn is not _sum_square else (data * data).astype(data.dtype)
        return np.asarray(fn(_work(data), ax, bool(keepdims))).astype(data.dtype)
    return ref


def _sum_square(x, ax, k):
    return np.sum(x * x, axis=ax, keepdims=k)


def _extreme(npfn, empty_fill):
    def fn(x, ax, k):
        if x.size == 0:
            shape = [1 if (ax is None or i in ax) else d for i, d in enumerate(x.shape)] if k else \
                [d for i, d in enumerate(x.shape) if not (ax is None or i in ax)]
            return np.full(shape, empty_fill(x.dtype), dtype=x.dtype)
        return npfn(x, axis=ax, keepdims=k)
    return fn


def _neg_inf(dt):
    if dt == np.bool_:
        return False
    return -np.inf if np.issubdtype(dt, np.floating) else np.iinfo(dt).min


def _pos_inf(dt):
    if dt == np.bool_:
        return True
    return np.inf if np.issubdtype(dt, np.floating) else np.iinfo(dt).max


_REDUCE = {
    "ReduceSum": (lambda x, a, k: np.sum(x, axis=a, keepdims=k), "torch.sum, tf.reduce_sum, SUM"),
    "ReduceMean": (lambda x, a, k: np.mean(x, axis=a, keepdims=k), "torch.mean, tf.reduce_mean, MEAN"),
    "ReduceMax": (_extreme(np.max, _neg_inf), "torch.amax, tf.reduce_max, REDUCE_MAX"),
    "ReduceMin": (_extreme(np.min, _pos_inf), "torch.amin, tf.reduce_min, REDUCE_MIN"),
    "ReduceProd": (lambda x, a, k: np.prod(x, axis=a, keepdims=k), "torch.prod, tf.reduce_prod, REDUCE_PROD"),
    "ReduceL1": (lambda x, a, k: np.sum(np.abs(x), axis=a, keepdims=k), "torch.norm(p=1)"),
    "ReduceL2": (lambda x, a, k: np.sqrt(np.sum(x * x, axis=a, keepdims=k)), "torch.norm, tf.norm"),
    "ReduceLogSum": (lambda x, a, k: np.log(np.sum(x, axis=a, keepdims=k)), "log(sum(x))"),
    "ReduceLogSumExp": (lambda x, a, k: _logsumexp(x, a, k), "torch.logsumexp, tf.reduce_logsumexp"),
    "ReduceSumSquare": (_sum_square, "sum(x*x)"),
}


ACCUMULATING = frozenset({"ReduceSum", "ReduceProd", "ReduceMean"})
"""Reductions that frameworks take in their result's type (a bool mask's sum counts; an int mean averages): a reader
casts the operand to that type first."""


def _logsumexp(x, a, k):
    if x.size == 0:
        return np.log(np.sum(np.exp(x), axis=a, keepdims=k))
    m = np.max(x, axis=a, keepdims=True)
    m = np.where(np.isfinite(m), m, 0)
    out = np.log(np.sum(np.exp(x - m), axis=a, keepdims=True)) + m
    return out if k else np.squeeze(out, axis=a)


def _product_elements(node, known):
    """The product of a shape vector's entries (TensorFlow's tensordot flattens leading dims so): known when every
    entry is; one entry, known only at run time, otherwise."""
    entries = known[0]
    if entries is None or (node.input(1) is not None and known[1] not in ([0], [-1])):
        return None
    if all(isinstance(e, int) for e in entries):
        return [int(np.prod(entries, dtype=np.int64))]
    return [None]


for _name, (_fn, _eq) in _REDUCE.items():
    op(_name, inputs="data axes?", outputs="reduced", family=F, layout=attribute("axes", rule=L.axes_input(1, keepdims_attr=True)),
       attrs={"keepdims": Attr("int", 1), "noop_with_empty_axes": Attr("int", 0)}, infer=_reduce_infer,
       elements=_product_elements if _name == "ReduceProd" else None,
       doc=f"{_name[6:]} reduction over axes. Equivalents: {_eq}.")(_reducer(_fn))


def _decompose_reduction(graph, node):
    """ReduceL1/L2/SumSquare/LogSum/LogSumExp over ReduceSum/ReduceMax and elementwise ops."""
    x = node.inputs[0]
    if node.attrs.get("noop_with_empty_axes") and node.input(1) is None:
        return False
    b = Builder.replacing(node)
    axes = [node.input(1)] if node.input(1) is not None else []
    keep = node.attrs.get("keepdims", 1)

    def total(v, keepdims=keep):
        return b.op("ReduceSum", v, *axes, keepdims=keepdims)

    if node.op == "ReduceL1":
        y = total(b.op("Abs", x))
    elif node.op in ("ReduceL2", "ReduceSumSquare"):
        y = total(b.op("Mul", x, x))
        y = b.op("Sqrt", y) if node.op == "ReduceL2" else y
    elif node.op == "ReduceLogSum":
        y = b.op("Log", total(x))
    else:  # ReduceLogSumExp: the max taken out, so large values do not overflow
        if x.dtype is None or x.dtype.kind != "f":
            return False
        top = b.op("ReduceMax", x, *axes, keepdims=1)
        y = b.op("Add", b.op("Log", total(b.op("Exp", b.op("Sub", x, top)), keepdims=1)), top)
        if not keep:
            y = b.op("Squeeze", y, *axes) if axes else b.op("Reshape", y, b.const(np.array([], np.int64)))
    graph.replace_node(node, [y])
    return True


for _name in ("ReduceL1", "ReduceL2", "ReduceSumSquare", "ReduceLogSum", "ReduceLogSumExp"):
    set_decomposition(_name, _decompose_reduction)


def _arg_infer(inputs, attrs):
    x = inputs[0]
    if x.shape is None:
        return [(np.dtype(np.int64), None)]
    ax = norm_axis(attrs["axis"], len(x.shape))
    shape = tuple(1 if i == ax else d for i, d in enumerate(x.shape)) if attrs["keepdims"] else \
        tuple(d for i, d in enumerate(x.shape) if i != ax)
    return [(np.dtype(np.int64), shape)]


def _arg(fn):
    def ref(data, axis, keepdims, select_last_index):
        x = _work(data)
        if select_last_index:
            flipped = np.flip(x, axis)
            idx = x.shape[axis] - 1 - fn(flipped, axis=axis)
        else:
            idx = fn(x, axis=axis)
        if keepdims:
            idx = np.expand_dims(idx, axis)
        return idx.astype(np.int64)
    return ref


for _name, _fn, _eq in (("ArgMax", np.argmax, "torch.argmax, tf.argmax, ARG_MAX"),
                        ("ArgMin", np.argmin, "torch.argmin, tf.argmin, ARG_MIN")):
    op(_name, inputs="data", outputs="reduced", family=F, layout=attribute("axis", rule=L.arg_reduce), infer=_arg_infer,
       attrs={"axis": Attr("int", 0), "keepdims": Attr("int", 1), "select_last_index": Attr("int", 0)},
       doc=f"Index of the {_name[3:].lower()} along an axis. Equivalents: {_eq}.")(_arg(_fn))


def _decompose_arg(graph, node):
    """ArgMax/ArgMin as TopK with k=1 (ties: the lower index, as theirs); with select_last_index, the largest
    position holding the extreme (ReduceMax of the positions where x equals it). The kept axis squeezed
    unless keepdims."""
    x = node.inputs[0]
    if x.shape is None or (x.dtype is not None and x.dtype.kind == "u" and node.op == "ArgMin"):
        return False
    axis = norm_axis(node.attrs.get("axis", 0), len(x.shape))
    b = Builder.replacing(node)
    if node.attrs.get("select_last_index", 0):
        n = x.shape[axis]
        if not isinstance(n, int):
            return False
        axes = b.const(np.array([axis], np.int64))
        extreme = b.op("ReduceMax" if node.op == "ArgMax" else "ReduceMin", x, axes, keepdims=1)
        positions = np.arange(n, dtype=np.int64).reshape([n if i == axis else 1 for i in range(len(x.shape))])
        at = b.op("Where", b.op("Equal", x, extreme), b.const(positions), b.const(np.array(-1, np.int64)))
        idx = b.op("ReduceMax", at, axes, keepdims=1)
    else:
        _, idx = b.node("TopK", [x, b.const(np.array([1], np.int64))],
                        {"axis": axis, "largest": int(node.op == "ArgMax"), "sorted": 1}, outputs=2).outputs
    if not node.attrs.get("keepdims", 1):
        idx = b.op("Squeeze", idx, b.const(np.array([axis], np.int64)), suffix="squeeze")
    graph.replace_node(node, [idx])
    return True


set_decomposition("ArgMax", _decompose_arg)
set_decomposition("ArgMin", _decompose_arg)


def _topk_infer(inputs, attrs):
    x, k = inputs[0], inputs[1]
    if x.shape is None:
        return [(x.dtype, None), (np.dtype(np.int64), None)]
    axis = attrs["axis"] % len(x.shape)
    size = int(np.asarray(k.const).ravel()[0]) if k is not None and k.const is not None else None
    shape = tuple(size if i == axis else d for i, d in enumerate(x.shape))
    return [(x.dtype, shape), (np.dtype(np.int64), shape)]


@op("TopK", inputs="X K", outputs="Values Indices", family=F, layout=attribute("axis", rule=L.top_k), infer=_topk_infer,
    attrs={"axis": Attr("int", -1), "largest": Attr("int", 1), "sorted": Attr("int", 1)},
    doc="K largest/smallest along an axis (ties: lower index first). Equivalents: torch.topk, tf.math.top_k, TOPK_V2.")
def top_k(X, K, axis, largest, sorted):
    k = int(np.asarray(K).ravel()[0])
    x = _work(X)
    key = -x if largest else x
    if np.issubdtype(key.dtype, np.unsignedinteger) and largest:
        key = -x.astype(np.int64)
    idx = np.argsort(key, axis=axis, kind="stable")
    idx = np.take(idx, np.arange(k), axis=axis)
    return np.take_along_axis(X, idx, axis=axis), idx.astype(np.int64)


def _einsum_infer(inputs, attrs):
    """Each output label's size from an operand that has it (a broadcast 1 gives way to another size)."""
    dtype = inputs[0].dtype
    if any(v.shape is None for v in inputs):
        return [(dtype, None)]
    labels = _einsum_labels(attrs["equation"], [len(v.shape) for v in inputs])
    if labels is None:
        return [(dtype, None)]
    sizes: dict = {}
    for term, v in zip(labels[0], inputs):
        for label, d in zip(term, v.shape):
            if sizes.get(label) in (None, 1):
                sizes[label] = d
    return [(dtype, tuple(sizes.get(label) for label in labels[1]))]


@op("Einsum", inputs="Inputs*", outputs="Output", family=F, layout=TERMINATE, infer=_einsum_infer,
    attrs={"equation": Attr("str")}, doc="Einstein summation. Equivalents: torch.einsum, tf.einsum.")
def einsum(*Inputs, equation):
    return np.einsum(equation.replace(" ", ""), *[_work(x) for x in Inputs]).astype(Inputs[0].dtype)


def _einsum_labels(equation: str, ranks: list[int]) -> tuple[list[str], str] | None:
    """Each operand's labels and the output's, "..." spelled out as upper-case labels; None when malformed."""
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(ranks):
        return None
    fill = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
    width = max([r - len(t.replace("...", "")) for t, r in zip(terms, ranks) if "..." in t] or [0])
    if width < 0:
        return None
    spelled = [t.replace("...", fill[width - (r - len(t.replace("...", ""))):width]) for t, r in zip(terms, ranks)]
    if not arrow:
        letters = sorted(c for c in set("".join(spelled)) if "".join(spelled).count(c) == 1 and c.islower())
        rhs = fill[:width] + "".join(letters)
    else:
        rhs = rhs.replace("...", fill[:width])
    if any(len(t) != r for t, r in zip(spelled, ranks)):
        return None
    return spelled, rhs


def _decompose_einsum(graph, node):
    """Einsum as pairwise contractions: each pair transposed to [batch, free, summed] and [batch, summed,
    free], reshaped, multiplied by MatMul, and reshaped back; labels only one operand has are summed first, a label
    repeated within one operand takes its diagonal. Needs static shapes."""
    values = list(node.inputs)
    if any(v.shape is None or not all(isinstance(d, int) for d in v.shape) for v in values):
        return False
    parsed = _einsum_labels(node.attrs["equation"], [len(v.shape) for v in values])
    if parsed is None:
        return False
    terms, out = parsed
    sizes = {c: d for t, v in zip(terms, values) for c, d in zip(t, v.shape)}
    b = Builder.replacing(node)

    def diagonal(v, labels):
        """A label repeated within one operand takes the diagonal: the entries off it zeroed (an identity
        matrix broadcast over the two axes), then the second axis summed away."""
        while len(set(labels)) != len(labels):
            c = next(c for c in labels if labels.count(c) > 1)
            first, second = labels.index(c), labels.index(c, labels.index(c) + 1)
            eye_shape = [sizes[c] if k in (first, second) else 1 for k in range(len(labels))]
            eye = b.named(np.eye(sizes[c], dtype=v.dtype).reshape(eye_shape), "diagonal")
            v = b.op("ReduceSum", b.op("Mul", v, eye), b.const(np.array([second], np.int64)), keepdims=0)
            labels = labels[:second] + labels[second + 1:]
        return v, labels

    values, terms = map(list, zip(*(diagonal(v, t) for v, t in zip(values, terms))))

    def sum_over(v, labels, keep):
        drop = [i for i, c in enumerate(labels) if c not in keep]
        if not drop:
            return v, labels
        v = b.op("ReduceSum", v, b.const(np.array(drop, np.int64)), keepdims=0)
        return v, "".join(c for c in labels if c in keep)

    def arrange(v, labels, order):
        if labels == order:
            return v
        return b.op("Transpose", v, perm=[labels.index(c) for c in order])

    def reshape(v, dims):
        return b.op("Reshape", v, b.const(np.array(dims, np.int64)))

    acc, acc_labels = None, ""
    for i, (v, labels) in enumerate(zip(values, terms)):
        later = set(out) | set("".join(terms[i + 1:]))
        v, labels = sum_over(v, labels, later | set(acc_labels))
        if acc is None:
            acc, acc_labels = v, labels
            continue
        acc, acc_labels = sum_over(acc, acc_labels, later | set(labels))
        batch = [c for c in acc_labels if c in labels and c in later]
        summed = [c for c in acc_labels if c in labels and c not in later]
        left = [c for c in acc_labels if c not in labels]
        right = [c for c in labels if c not in acc_labels]
        size = lambda cs: int(np.prod([sizes[c] for c in cs])) if cs else 1  # noqa: E731
        a = reshape(arrange(acc, acc_labels, "".join(batch + left + summed)), [size(batch), size(left), size(summed)])
        c = reshape(arrange(v, labels, "".join(batch + summed + right)), [size(batch), size(summed), size(right)])
        acc_labels = "".join(batch + left + right)
        acc = reshape(b.op("MatMul", a, c), [sizes[ch] for ch in acc_labels] or [1])
        if not acc_labels:
            acc = reshape(acc, [])
    acc, acc_labels = sum_over(acc, acc_labels, set(out))
    result = arrange(acc, acc_labels, out)
    graph.replace_node(node, [b.op("Identity", result) if result is values[0] else result])  # '->' on one input
    return True


set_decomposition("Einsum", _decompose_einsum)


@op("Det", family=F, layout=TERMINATE, doc="Determinant of square matrices. Equivalents: torch.linalg.det.")
def det(X):
    return np.linalg.det(X).astype(X.dtype)
