"""Shape and data-movement ops: Reshape, Transpose, Concat, Split, Slice, Gather, Pad, ...

Axis-like operands follow ONNX: they are inputs (not attributes) where current ONNX has
them as inputs, so dynamic values can flow; frontends normalise older forms.
"""

from __future__ import annotations

import numpy as np

from tensorbridge.ir import dtypes, shapes
from tensorbridge.ir.builder import Builder
from tensorbridge.ops import layout_rules as L
from tensorbridge.ops.infer import const_ints, elements, norm_axis, same_as
from tensorbridge.ops.layout_classes import PERMUTE, SHAPE, TERMINATE, attribute, terminate
from tensorbridge.ops.schema import Attr, op, set_decomposition, set_recovery

F = "shape"


def _ints(a) -> list[int]:
    return [int(x) for x in np.asarray(a).ravel()]


# -- reshaping -----------------------------------------------------------------------------------
def reshape_target(in_shape, target: list[int], allowzero: int):
    """Resolve 0 and -1 entries of a Reshape target against a (possibly symbolic) shape."""
    out = []
    for i, d in enumerate(target):
        out.append(in_shape[i] if d == 0 and not allowzero and in_shape is not None and i < len(in_shape)
                   else (None if d == 0 and not allowzero else d))
    if -1 in out:
        known_out = [d for d in out if d != -1]
        n_in = shapes.numel(in_shape) if in_shape is not None else None
        if n_in is not None and all(isinstance(d, int) for d in known_out):
            prod = int(np.prod(known_out)) if known_out else 1
            out[out.index(-1)] = n_in // prod if prod else 0
        elif in_shape is not None:
            sym_in = [d for d in in_shape if not isinstance(d, int)]
            static_in = int(np.prod([d for d in in_shape if isinstance(d, int)] or [1]))
            sym_out = [d for d in known_out if not isinstance(d, int)]
            static_out = int(np.prod([d for d in known_out if isinstance(d, int)] or [1]))
            rest = [d for d in sym_in if d not in sym_out or sym_out.remove(d)]
            if len(rest) == 1 and static_out and static_in % static_out == 0 and rest[0] is not None:
                out[out.index(-1)] = rest[0] if static_in == static_out else None
            elif not rest and static_out and static_in % static_out == 0:
                out[out.index(-1)] = static_in // static_out
            else:
                out[out.index(-1)] = None
        else:
            out[out.index(-1)] = None
    return tuple(out)


def _reshape_infer(inputs, attrs):
    target = _known_ints(inputs[1])  # a constant, or computed from static dims (-1 and 0 included)
    if target is None and inputs[1].meta.get("elements") is not None:
        known = inputs[1].meta["elements"]  # computed from shapes (see passes/infer_shapes)
        x = inputs[0].shape
        if not attrs["allowzero"] and x is not None:  # 0 copies the input's dim (paddle2onnx writes it)
            known = [x[i] if d == 0 and i < len(x) else d for i, d in enumerate(known)]
        if known.count(-1) == 1:  # -1: the one size the others leave, where every other is known
            rest = [d for d in known if d != -1]
            if x is not None and shapes.is_static(x) and all(isinstance(d, int) and d > 0 for d in rest):
                known = [int(np.prod(x)) // max(int(np.prod(rest)), 1) if d == -1 else d for d in known]
            else:
                known = [None if d == -1 else d for d in known]
        if all(d is None or isinstance(d, str) or (isinstance(d, int) and d > 0) for d in known):
            return [(inputs[0].dtype, tuple(known))]  # an entry known only at run time is an open dim
    if target is None:
        n = inputs[1].shape[0] if inputs[1].shape and isinstance(inputs[1].shape[0], int) else None
        return [(inputs[0].dtype, None if n is None else (None,) * n)]
    return [(inputs[0].dtype, reshape_target(inputs[0].shape, target, attrs["allowzero"]))]


# -- elements rules: entries of small shape vectors (see ops/infer.py) -------------------------------
def _first_elements(node, known):
    return known[0]


def _scalar_elements(node, known):
    """Reshape of a vector of at most one entry, or of a vector to one of the same length, keeps its entries."""
    data, target = known[0], known[1] if len(known) > 1 else None
    if data is None:
        return None
    return data if len(data) <= 1 or (target is not None and len(target) == 1 and target[0] in (-1, len(data))) \
        else None


def _concat_elements(node, known):
    return [e for part in known for e in part] if all(k is not None for k in known) else None


def _slice_elements(node, known):
    data, starts, ends = known[0], known[1], known[2]
    axes, steps = (known[3:] + [None, None])[:2]
    if data is None or starts is None or ends is None or (axes is not None and axes != [0]):
        return None
    step = steps[0] if steps else 1
    return data[starts[0]:None if ends[0] >= 2**62 else ends[0]:step]


def _gather_elements(node, known):
    data, idx = known
    return [data[i] for i in idx] if data is not None and idx is not None else None


def _shape_elements(node, known):
    x = node.inputs[0]
    if x.shape is None:
        return None
    start, end = node.attrs.get("start", 0) or 0, node.attrs.get("end")
    return list(x.shape[start:end])



@op("Reshape", inputs="data shape", outputs="reshaped", attrs={"allowzero": Attr("int", 0)},
    layout=terminate(reshapes=True), infer=_reshape_infer, elements=_scalar_elements, family=F,
    doc="Reshape (0 copies a dim, -1 infers one). Equivalents: torch.reshape, keras Reshape, RESHAPE.")
def reshape(data, shape, allowzero):
    target = reshape_target(data.shape, _ints(shape), allowzero)
    return data.reshape(target)


def _flatten_infer(inputs, attrs):
    s = inputs[0].shape
    if s is None:
        return [(inputs[0].dtype, (None, None))]
    ax = norm_axis(attrs["axis"], len(s))
    a, b = s[:ax], s[ax:]
    prod = lambda ds: shapes.numel(ds) if shapes.is_static(ds) else (ds[0] if len(ds) == 1 else None)  # noqa: E731
    return [(inputs[0].dtype, (prod(a) if a else 1, prod(b) if b else 1))]


@op("Flatten", inputs="input", outputs="output", attrs={"axis": Attr("int", 1)}, layout=terminate(reshapes=True),
    infer=_flatten_infer, family=F, doc="Flatten to 2-D at axis. Equivalents: nn.Flatten, keras Flatten.")
def flatten(input, axis):
    ax = norm_axis(axis, input.ndim)
    lead = int(np.prod(input.shape[:ax])) if ax else 1
    return input.reshape(lead, -1) if input.size else input.reshape(lead, int(np.prod(input.shape[ax:])))


def _decompose_reshape_allowzero(graph, node):
    """allowzero=1 means nothing when the shape holds no 0: the same Reshape without it. A shape with one 0 (an
    empty result) and no -1 is the same Reshape with -1 there: the one size that fits no elements is 0."""
    target = const_ints(node.inputs[1])
    if not node.attrs.get("allowzero") or target is None or (0 in target and (target.count(0) > 1 or -1 in target)):
        return False
    b = Builder.replacing(node)
    shape = node.inputs[1] if 0 not in target else \
        b.named([-1 if d == 0 else d for d in target], "shape", np.int64)
    graph.replace_node(node, [b.op("Reshape", node.inputs[0], shape)])
    return True




def slice_spans(b: Builder, x, spans, suffix: str = ""):
    """x[start:end] along each (axis, start, end) of `spans`, as one Slice (for decompositions)."""
    starts, ends, axes = ([int(span[i]) for span in spans] for i in (1, 2, 0))
    return b.op("Slice", x, *(b.const(v, b.name(k), np.int64) for k, v in
                              (("starts", starts), ("ends", ends), ("axes", axes))), suffix=suffix)


def _decompose_flatten(graph, node):
    """Flatten as a Reshape to [the dims before axis, -1] (the dims before it static, or only the batch open)."""
    x = node.inputs[0]
    if x.shape is None:
        return False
    axis = norm_axis(node.attrs.get("axis", 1), len(x.shape))
    lead, rest = x.shape[:axis], x.shape[axis:]
    if shapes.is_static(lead):
        target = [int(np.prod(lead)), -1]
    elif shapes.is_static(rest):
        target = [-1, int(np.prod(rest))]
    else:
        return False
    b = Builder.replacing(node)
    graph.replace_node(node, [b.op("Reshape", x, b.const(np.array(target, np.int64), b.name("shape")))])
    return True


set_decomposition("Flatten", _decompose_flatten)


def _transpose_infer(inputs, attrs):
    s = inputs[0].shape
    if s is None:
        return [(inputs[0].dtype, None)]
    perm = attrs["perm"] or list(range(len(s)))[::-1]
    return [(inputs[0].dtype, tuple(s[p] for p in perm))]


@op("Transpose", inputs="data", outputs="transposed", attrs={"perm": Attr("ints", None)},
    layout=PERMUTE, infer=_transpose_infer, family=F,
    doc="Permute axes (default: reverse). Equivalents: torch.permute, keras Permute, TRANSPOSE.")
def transpose(data, perm):
    return np.transpose(data, perm)


#: the most dims the targets' transpose kernels take (LiteRT's TRANSPOSE: 6)
MOST_DIMS = 6


def _decompose_transpose(graph, node) -> bool | str:
    """A transpose of more than a target's dims (LiteRT takes 6; CogVideoX and Wan unpatchify with 7 and 8): axes
    of size 1 dropped, the input's axes that stay side by side, in order, move as one axis. Where a Reshape makes
    the input, the merged one reads that Reshape's input; where Reshapes read the output, they read the merged
    transpose's: the tensors of full rank are never made."""
    shape = node.inputs[0].shape
    if shape is None or len(shape) <= MOST_DIMS:
        return False
    if not shapes.is_static(shape):
        return "a transpose of run-time dims"
    perm = node.attrs.get("perm") or list(reversed(range(len(shape))))
    kept = [a for a in range(len(shape)) if shape[a] != 1]  # a unit axis moves no element
    runs: list[list[int]] = []  # the kept axes, in output order, as runs of neighbours
    for axis in (kept.index(a) for a in perm if shape[a] != 1):
        if runs and runs[-1][-1] + 1 == axis:
            runs[-1].append(axis)
        else:
            runs.append([axis])
    if len(runs) == len(shape):
        return "no two neighbouring axes stay together, and none has size 1"
    merged = sorted(runs)
    b = Builder.replacing(node)
    source, maker = node.inputs[0], node.inputs[0].producer
    unmade = maker is not None and maker.op == "Reshape" and len(source.uses()) == 1
    x = b.op("Reshape", maker.inputs[0] if unmade else source,
             b.named([int(np.prod([shape[kept[a]] for a in run])) for run in merged], "merged_shape", np.int64),
             suffix="merged")
    moved = b.op("Transpose", x, perm=[merged.index(run) for run in runs], suffix="moved")
    readers = node.outputs[0].uses()
    if readers and node.outputs[0] not in graph.outputs and all(_plain_reshape(r, i) for r, i in readers):
        for reader, i in readers:
            reader.set_input(i, moved)
        graph.remove_node(node)
    else:
        graph.replace_node(node, [b.op("Reshape", moved, b.named([shape[a] for a in perm], "shape", np.int64))])
    if unmade and not source.uses():
        graph.remove_node(maker)
    return True


def _plain_reshape(node, index: int) -> bool:
    """A Reshape to a constant shape whose entries do not copy the input's dims (0), whatever the input's rank."""
    target = const_ints(node.inputs[1]) if node.op == "Reshape" and index == 0 and len(node.inputs) > 1 else None
    return target is not None and (0 not in target or node.attrs.get("allowzero"))


set_decomposition("Transpose", _decompose_transpose)


def _decompose_reshape(graph, node) -> bool | str:
    """allowzero (see _decompose_reshape_allowzero); a Reshape to more than a target's dims that only Reshapes read
    (a flatten of a wide tensor): they read its input instead, and the wide tensor is never made."""
    out = node.outputs[0]
    if out.shape is None or len(out.shape) <= MOST_DIMS:
        return _decompose_reshape_allowzero(graph, node)
    readers = out.uses()
    if not readers or out in graph.outputs or not all(_plain_reshape(r, i) for r, i in readers):
        return "a wide tensor that more than Reshapes read"
    for reader, i in readers:
        reader.set_input(i, node.inputs[0])
    graph.remove_node(node)
    return True


set_decomposition("Reshape", _decompose_reshape)


def _squeeze_infer(inputs, attrs):
    s = inputs[0].shape
    axes = const_ints(inputs[1]) if len(inputs) > 1 and inputs[1] is not None else []
    if s is None or axes is None:
        return [(inputs[0].dtype, None)]
    axes = [norm_axis(a, len(s)) for a in axes] or [i for i, d in enumerate(s) if d == 1]
    return [(inputs[0].dtype, tuple(d for i, d in enumerate(s) if i not in axes))]


@op("Squeeze", inputs="data axes?", outputs="squeezed", layout=attribute("axes", rule=L.axes_input(1, drop=True, absent="ones")),
    infer=_squeeze_infer, elements=_first_elements, family=F, doc="Remove size-1 dims. Equivalents: torch.squeeze, SQUEEZE.")
def squeeze(data, axes=None):
    if axes is None:
        return np.squeeze(data)
    return np.squeeze(data, axis=tuple(_ints(axes)))


def _unsqueeze_infer(inputs, attrs):
    s = inputs[0].shape
    axes = const_ints(inputs[1])
    if s is None or axes is None:
        return [(inputs[0].dtype, None)]
    rank = len(s) + len(axes)
    axes = sorted(norm_axis(a, rank) for a in axes)
    out, it = [], iter(s)
    for i in range(rank):
        out.append(1 if i in axes else next(it))
    return [(inputs[0].dtype, tuple(out))]


@op("Unsqueeze", inputs="data axes", outputs="expanded", layout=attribute("axes", rule=L.unsqueeze),
    infer=_unsqueeze_infer, elements=_first_elements, family=F, doc="Insert size-1 dims. Equivalents: torch.unsqueeze, EXPAND_DIMS.")
def unsqueeze(data, axes):
    rank = data.ndim + np.asarray(axes).size
    out = data
    for a in sorted(norm_axis(int(a), rank) for a in _ints(axes)):
        out = np.expand_dims(out, a)
    return out


def _concat_infer(inputs, attrs):
    vs = [v for v in inputs if v is not None]
    if any(v.shape is None for v in vs):
        return [(vs[0].dtype, None)]
    rank = len(vs[0].shape)
    ax = norm_axis(attrs["axis"], rank)
    out = list(vs[0].shape)
    dims = [v.shape[ax] for v in vs]
    out[ax] = sum(dims) if all(isinstance(d, int) for d in dims) else None
    for i in range(rank):
        if i != ax and not isinstance(out[i], int):
            for v in vs:
                if isinstance(v.shape[i], int):
                    out[i] = v.shape[i]
    return [(vs[0].dtype, tuple(out))]


@op("Concat", inputs="inputs*", outputs="concat_result", attrs={"axis": Attr("int")},
    layout=attribute("axis", rule=L.single_axis(), aligned=True), infer=_concat_infer, elements=_concat_elements, family=F,
    doc="Join along an axis. Equivalents: torch.cat, keras Concatenate, CONCATENATION.")
def concat(*inputs, axis):
    return np.concatenate(inputs, axis=axis)


def _decompose_concat(graph, node) -> bool | str:
    """Parts of no elements along the axis (Qwen3.5's chunked delta rule joins an empty slice) add nothing: the
    Concat of the others, and what made only the empty parts goes (LiteRT allocates no empty tensor)."""
    axis = node.attrs["axis"]
    empty = [v for v in node.inputs if v.shape is not None and isinstance(v.shape[axis], int) and v.shape[axis] == 0]
    kept = [v for v in node.inputs if v not in empty]
    if not empty or not kept:
        return False
    b = Builder.replacing(node)
    graph.replace_node(node, [b.op("Concat", *kept, axis=axis) if len(kept) > 1 else b.op("Identity", kept[0])])
    for v in empty:
        if v.producer is not None and not any(o.uses() or o in graph.outputs for o in v.producer.outputs):
            graph.remove_node(v.producer)
    return True


set_decomposition("Concat", _decompose_concat)


def split_sizes(dim: int, n: int) -> list[int]:
    chunk = -(-dim // n)
    sizes = [chunk] * (dim // chunk) + ([dim % chunk] if dim % chunk else [])
    return sizes + [0] * (n - len(sizes))


def _split_infer(inputs, attrs):
    x, split = inputs[0], inputs[1] if len(inputs) > 1 else None
    if x.shape is None:
        return []
    axis = attrs["axis"] % len(x.shape)
    if split is not None and split.const is not None:
        sizes = _ints(split.const)
    elif attrs["num_outputs"] and isinstance(x.shape[axis], int):
        sizes = split_sizes(x.shape[axis], attrs["num_outputs"])
    else:
        return []
    return [(x.dtype, tuple(s if i == axis else d for i, d in enumerate(x.shape))) for s in sizes]


@op("Split", inputs="input split?", outputs="outputs*", layout=attribute("axis", rule=L.split), infer=_split_infer,
    attrs={"axis": Attr("int", 0), "num_outputs": Attr("int", None)}, family=F,
    doc="Split along an axis into parts. Equivalents: torch.split/chunk, tf.split, SPLIT/SPLIT_V.")
def split(input, split=None, *, axis, num_outputs, _num_outputs):
    dim = input.shape[axis]
    if split is not None:
        sizes = _ints(split)
    else:
        sizes = split_sizes(dim, num_outputs or _num_outputs)
    return tuple(np.split(input, np.cumsum(sizes)[:-1], axis=axis))


def _decompose_split(graph, node) -> bool | str:
    """Parts whose sizes are known only at run time (JetMoE's tokens per expert): one Slice each, from the sum of
    the sizes before it to the sum up to it."""
    sizes = node.input(1)
    if sizes is None or sizes.const is not None:
        return False
    b = Builder.replacing(node)
    sizes = b.op("Cast", sizes, to="int64", suffix="sizes")
    ends = b.op("CumSum", sizes, b.named(0, "sum_axis", np.int64), suffix="ends")
    starts = b.op("Sub", ends, sizes, suffix="starts")
    axis = b.named([node.attrs.get("axis", 0)], "axis", np.int64)
    parts = []
    for i in range(len(node.outputs)):
        at = b.named([i], f"index{i}", np.int64)
        bounds = [b.op("Gather", v, at, axis=0, suffix=f"{tag}{i}") for v, tag in ((starts, "start"), (ends, "end"))]
        parts.append(b.op("Slice", node.inputs[0], *bounds, axis, suffix=f"part{i}"))
    graph.replace_node(node, parts)
    return True


set_decomposition("Split", _decompose_split)


def slice_index(dim: int, start: int, end: int, step: int) -> slice:
    """ONNX Slice clamping rules for one axis, as a Python slice."""
    if start < 0:
        start += dim
    if end < 0:
        end += dim
    if step > 0:
        start, end = min(max(start, 0), dim), min(max(end, 0), dim)
    else:
        start, end = min(max(start, 0), dim - 1), min(max(end, -1), dim - 1)
    return slice(start, None if end < 0 else end, step)


def _known_ints(v) -> list[int] | None:
    """The entries of an integer operand known when the model is read: a constant's, or a shape computed from
    static dims."""
    if v is None:
        return None
    known = const_ints(v)
    if known is None:
        known = elements(v)
    return known if known is not None and all(isinstance(k, int) for k in known) else None


def _slice_infer(inputs, attrs):
    s = inputs[0].shape
    vals = [_known_ints(inputs[i]) if len(inputs) > i else None for i in range(1, 5)]
    starts, ends, axes, steps = vals
    if s is None or starts is None or ends is None or (len(inputs) > 3 and inputs[3] is not None
                                                       and axes is None) or \
            (len(inputs) > 4 and inputs[4] is not None and steps is None):
        return [(inputs[0].dtype, None if s is None else (None,) * len(s))]
    axes = axes or list(range(len(starts)))
    steps = steps or [1] * len(starts)
    out = list(s)
    for st, en, ax, sp in zip(starts, ends, axes, steps):
        ax = norm_axis(ax, len(s))
        d = s[ax]
        out[ax] = len(range(d)[slice_index(d, st, en, sp)]) if isinstance(d, int) else None
    return [(inputs[0].dtype, tuple(out))]


@op("Slice", inputs="data starts ends axes? steps?", outputs="output",
    layout=attribute("axes", rule=L.axes_input(3, absent="starts")), infer=_slice_infer, elements=_slice_elements, family=F,
    doc="Strided slice. Equivalents: tensor[a:b:c], tf.strided_slice, SLICE/STRIDED_SLICE.")
def slice_(data, starts, ends, axes=None, steps=None):
    starts, ends = _ints(starts), _ints(ends)
    axes = _ints(axes) if axes is not None else list(range(len(starts)))
    steps = _ints(steps) if steps is not None else [1] * len(starts)
    index = [slice(None)] * data.ndim
    for st, en, ax, sp in zip(starts, ends, axes, steps):
        ax = norm_axis(ax, data.ndim)
        index[ax] = slice_index(data.shape[ax], st, en, sp)
    return data[tuple(index)]


# -- gather / scatter ----------------------------------------------------------------------------
def _gather_infer(inputs, attrs):
    d, i = inputs[0].shape, inputs[1].shape
    if d is None or i is None:
        return [(inputs[0].dtype, None)]
    ax = norm_axis(attrs["axis"], len(d))
    return [(inputs[0].dtype, tuple(d[:ax]) + tuple(i) + tuple(d[ax + 1:]))]


@op("Gather", inputs="data indices", outputs="output", attrs={"axis": Attr("int", 0)},
    layout=attribute("axis", rule=L.gather), infer=_gather_infer, elements=_gather_elements, family=F,
    doc="Take slices along an axis. Equivalents: torch.index_select, nn.Embedding, tf.gather, GATHER.")
def gather(data, indices, axis):
    return np.take(data, indices.astype(np.int64), axis=axis)


@op("GatherElements", inputs="data indices", outputs="output", attrs={"axis": Attr("int", 0)},
    layout=attribute("axis", rule=L.elements, places_inputs=True), infer=lambda i, a: [(i[0].dtype, i[1].shape)], family=F,
    doc="Gather elementwise along an axis. Equivalents: torch.gather.")
def gather_elements(data, indices, axis):
    idx = np.where(indices < 0, indices + data.shape[axis], indices)
    return np.take_along_axis(data, idx.astype(np.int64), axis=axis)


def _gather_nd_infer(inputs, attrs):
    """indices' leading dims, then the data dims after the batch axes and the indexed ones."""
    data, indices = inputs[0].shape, inputs[1].shape
    if data is None or indices is None or not indices or not isinstance(indices[-1], int):
        return [(inputs[0].dtype, None)]
    b = attrs.get("batch_dims", 0) or 0
    return [(inputs[0].dtype, tuple(indices[:-1]) + tuple(data[b + indices[-1]:]))]


@op("GatherND", inputs="data indices", outputs="output", attrs={"batch_dims": Attr("int", 0)},
    family=F, layout=TERMINATE, infer=_gather_nd_infer, doc="Gather slices by index tuples. Equivalents: tf.gather_nd, GATHER_ND.")
def gather_nd(data, indices, batch_dims):
    b = batch_dims
    batch_shape = data.shape[:b]
    k = indices.shape[-1]
    nb = int(np.prod(batch_shape)) if b else 1
    d = data.reshape((nb,) + data.shape[b:])
    ind = indices.reshape((nb, -1, k))
    out = [d[j][tuple(ind[j].T)] for j in range(nb)]
    return np.stack(out).reshape(indices.shape[:-1] + data.shape[b + k:])


def _decompose_batched_gather_nd(graph, node) -> bool:
    """GatherND over batch dims: the batch axes flattened into one, whose index leads every index tuple, gathered
    without batch dims, and the batch axes restored (static shapes)."""
    data, indices = node.inputs
    nb = node.attrs.get("batch_dims") or 0
    if not nb or not shapes.is_static(data.shape) or not shapes.is_static(indices.shape):
        return False
    k = indices.shape[-1]
    batches, tuples = int(np.prod(data.shape[:nb])), int(np.prod(indices.shape[nb:-1]))
    b = Builder.replacing(node)

    def shaped(v, dims, name):
        return b.op("Reshape", v, b.named(dims, name, np.int64))

    flat = shaped(data, [batches, *data.shape[nb:]], "batches")
    lead = np.broadcast_to(np.arange(batches)[:, None, None], (batches, tuples, 1)).astype(indices.dtype)
    full = b.op("Concat", b.named(lead, "batch_index"), shaped(indices, [batches, tuples, k], "tuples"),
                axis=-1)
    gathered = b.op("GatherND", flat, full)
    graph.replace_node(node, [shaped(gathered, [*indices.shape[:-1], *data.shape[nb + k:]], "gathered")])
    return True


set_decomposition("GatherND", _decompose_batched_gather_nd)


def _reduce_into(reduction: str):
    return {"none": None, "add": np.add, "mul": np.multiply, "max": np.maximum,
            "min": np.minimum}[reduction]


@op("ScatterElements", inputs="data indices updates", outputs="output", family=F,
    attrs={"axis": Attr("int", 0), "reduction": Attr("str", "none")}, layout=attribute("axis", rule=L.elements, places_inputs=True),
    infer=same_as(0), doc="Scatter updates elementwise along an axis. Equivalents: torch.scatter/scatter_reduce.")
def scatter_elements(data, indices, updates, axis, reduction):
    out = data.copy()
    axis = norm_axis(axis, data.ndim)
    idx = np.where(indices < 0, indices + data.shape[axis], indices)
    fn = _reduce_into(reduction)
    for pos in np.ndindex(*idx.shape):
        target = list(pos)
        target[axis] = idx[pos]
        target = tuple(target)
        out[target] = updates[pos] if fn is None else fn(out[target], updates[pos])
    return out


def _decompose_scatter_elements(graph, node):
    """ScatterND at full index tuples: the indices' own position on every axis but `axis`, where the index is
    (negative ones counted from the end). Needs the indices' shape and the data's size along the axis."""
    data, idx, updates = node.inputs
    if data.shape is None or idx.shape is None or not shapes.is_static(idx.shape):
        return False
    rank = len(data.shape)
    axis = norm_axis(node.attrs.get("axis", 0), rank)
    b = Builder.replacing(node)
    index = b.op("Cast", idx, to="int64", suffix="index")
    if idx.const is None or np.asarray(idx.const).min(initial=0) < 0:
        if not isinstance(data.shape[axis], int):
            return False
        size = b.const(np.array(data.shape[axis], np.int64), b.name("size"))
        zero = b.const(np.array(0, np.int64), b.name("zero"))
        index = b.op("Where", b.op("Less", index, zero), b.op("Add", index, size), index, suffix="wrapped")
    last = b.const(np.array([rank], np.int64), b.name("last"))
    coords = []
    for d in range(rank):
        if d == axis:
            coords.append(b.op("Unsqueeze", index, last, suffix=f"coord{d}"))
            continue
        grid = np.broadcast_to(np.arange(idx.shape[d], dtype=np.int64).reshape(
            [-1 if i == d else 1 for i in range(rank)]), idx.shape)[..., None]
        coords.append(b.const(np.ascontiguousarray(grid), b.name(f"coord{d}")))
    tuples = b.op("Concat", *coords, axis=rank, suffix="tuples")
    graph.replace_node(node, [b.op("ScatterND", data, tuples, updates,
                                   reduction=node.attrs.get("reduction", "none"))])
    return True


set_decomposition("ScatterElements", _decompose_scatter_elements)


@op("ScatterND", inputs="data indices updates", outputs="output", family=F,
    attrs={"reduction": Attr("str", "none")}, layout=TERMINATE, infer=same_as(0),
    doc="Scatter slices by index tuples. Equivalents: tf.tensor_scatter_nd_update, SCATTER_ND.")
def scatter_nd(data, indices, updates, reduction):
    out = data.copy()
    fn = _reduce_into(reduction)
    for pos in np.ndindex(*indices.shape[:-1]):
        target = tuple(indices[pos])
        out[target] = updates[pos] if fn is None else fn(out[target], updates[pos])
    return out


# -- padding, tiling, broadcasting ----------------------------------------------------------------
def _pad_infer(inputs, attrs):
    s = inputs[0].shape
    pads = const_ints(inputs[1])
    axes = const_ints(inputs[3]) if len(inputs) > 3 and inputs[3] is not None else None
    if s is None or pads is None or (len(inputs) > 3 and inputs[3] is not None and axes is None):
        return [(inputs[0].dtype, None if s is None else (None,) * len(s))]
    axes = [norm_axis(a, len(s)) for a in axes] if axes else list(range(len(s)))
    out = list(s)
    n = len(axes)
    for j, ax in enumerate(axes):
        if pads[j] or pads[j + n]:  # an unpadded axis keeps its dim, a named one too
            out[ax] = s[ax] + pads[j] + pads[j + n] if isinstance(s[ax], int) else None
    return [(inputs[0].dtype, tuple(out))]


@op("Pad", inputs="data pads constant_value? axes?", outputs="output", family=F,
    attrs={"mode": Attr("str", "constant")}, layout=attribute("pads", "axes", rule=L.pad), infer=_pad_infer,
    doc="Pad (constant/reflect/edge/wrap; negative pads crop). Equivalents: F.pad, keras ZeroPadding2D, PAD/MIRROR_PAD.")
def pad(data, pads, constant_value=None, axes=None, *, mode):
    rank = data.ndim
    axes = [norm_axis(a, rank) for a in _ints(axes)] if axes is not None else list(range(rank))
    p = _ints(pads)
    n = len(axes)
    width = [[0, 0] for _ in range(rank)]
    for j, ax in enumerate(axes):
        width[ax] = [p[j], p[j + n]]
    # negative pads crop first
    crop = tuple(slice(max(-b, 0), d - max(-e, 0)) for (b, e), d in zip(width, data.shape))
    data = data[crop]
    width = [(max(b, 0), max(e, 0)) for b, e in width]
    if mode == "constant":
        cv = np.asarray(constant_value).ravel()[0] if constant_value is not None and np.asarray(constant_value).size else 0
        return np.pad(data, width, mode="constant", constant_values=cv)
    return np.pad(data, width, mode={"reflect": "reflect", "edge": "edge", "wrap": "wrap"}[mode])


def _decompose_edge_or_wrap_pad(graph, node) -> bool:
    """An edge or wrap Pad as slices joined along each padded axis: the first and last entry repeated (edge), or
    the other end's entries (wrap, pads no wider than the axis)."""
    x, mode = node.inputs[0], node.attrs.get("mode", "constant")
    pads = const_ints(node.input(1))
    if mode not in ("edge", "wrap") or pads is None or (len(node.inputs) > 3 and node.input(3) is not None) \
            or x.shape is None or not shapes.is_static(x.shape) or min(pads, default=0) < 0:
        return False
    rank = len(x.shape)
    if mode == "wrap" and any(p > x.shape[i % rank] for i, p in enumerate(pads)):
        return False
    b = Builder.replacing(node)

    def part(value, start, end, axis, tag):
        ends = [b.const(np.array([v], np.int64), b.name(f"{tag}_{k}")) for k, v in
                (("start", start), ("end", end), ("axis", axis))]
        return b.op("Slice", value, *ends, suffix=tag)

    y = x
    for axis in range(rank):
        before, after = pads[axis], pads[axis + rank]
        if not before and not after:
            continue
        size = x.shape[axis]
        pieces = []
        for count, at_start, tag in ((before, True, f"before{axis}"), (after, False, f"after{axis}")):
            if not count:
                pieces.append(None)
                continue
            if mode == "wrap":
                pieces.append(part(y, size - count, size, axis, tag) if at_start else part(y, 0, count, axis, tag))
                continue
            edge = part(y, 0, 1, axis, tag) if at_start else part(y, size - 1, size, axis, tag)
            repeats = np.ones(rank, np.int64)
            repeats[axis] = count
            pieces.append(b.op("Tile", edge, b.const(repeats, b.name(f"{tag}_repeats")), suffix=f"{tag}_repeated"))
        y = b.op("Concat", *[p for p in (pieces[0], y, pieces[1]) if p is not None], axis=axis, suffix=f"axis{axis}")
    graph.replace_node(node, [y])
    return True


def _pads_over_every_axis(graph, node) -> bool:
    """A Pad that names its axes as one padding every axis (0 on the others)."""
    x, axes, pads = node.inputs[0], const_ints(node.input(3)), const_ints(node.input(1))
    if axes is None or pads is None or x.shape is None:
        return False
    rank, n = len(x.shape), len(axes)
    full = [0] * (2 * rank)
    for j, axis in enumerate(axes):
        full[norm_axis(axis, rank)], full[norm_axis(axis, rank) + rank] = pads[j], pads[j + n]
    b = Builder.replacing(node)
    graph.replace_node(node, [b.op("Pad", x, b.const(np.array(full, np.int64), b.name("pads")), node.input(2),
                                   **node.attrs)])
    return True


def _crop_negative_pads(graph, node) -> bool:
    """A Pad with negative widths (a crop: VOLO's folds) as the Pad of its positive widths, then a Slice."""
    x, pads = node.inputs[0], const_ints(node.input(1))
    if pads is None or x.shape is None or all(p >= 0 for p in pads):
        return False
    rank = len(pads) // 2
    b = Builder.replacing(node)
    y = x
    if any(p > 0 for p in pads):
        y = b.op("Pad", x, b.const(np.array([max(p, 0) for p in pads], np.int64), b.name("grown_pads")),
                 node.input(2), **node.attrs, suffix="grown")
    axes = [a for a in range(rank) if min(pads[a], pads[a + rank]) < 0]
    starts = [max(-pads[a], 0) for a in axes]
    ends = [pads[a + rank] if pads[a + rank] < 0 else np.iinfo(np.int64).max for a in axes]
    graph.replace_node(node, [b.op("Slice", y, b.named(starts, "crop_start", np.int64),
                                   b.named(ends, "crop_end", np.int64), b.named(axes, "crop_axes", np.int64))])
    return True


set_decomposition("Pad", lambda graph, node: _pads_over_every_axis(graph, node) if node.input(3) is not None
                  else _crop_negative_pads(graph, node) or _decompose_edge_or_wrap_pad(graph, node))


def negative_pads(node) -> str | None:
    """Why a target whose pad takes only widths of zero or more cannot write `node` as it is (a crop)."""
    pads = const_ints(node.input(1))
    return "negative pads (a crop)" if pads is not None and any(p < 0 for p in pads) else None


@op("Tile", inputs="input repeats", outputs="output", family=F, layout=attribute("repeats", rule=L.tile),
    infer=lambda i, a: [(i[0].dtype, None if const_ints(i[1]) is None or not shapes.is_static(i[0].shape)
                         else tuple(d * r for d, r in zip(i[0].shape, const_ints(i[1]))))],
    doc="Repeat the tensor along each axis. Equivalents: torch.tile, tf.tile, TILE.")
def tile(input, repeats):
    return np.tile(input, _ints(repeats))


def _expand_infer(inputs, attrs):
    target = const_ints(inputs[1])
    if target is None:  # a shape computed from others: its entries as far as they are known
        target = elements(inputs[1])
    if target is None:
        return [(inputs[0].dtype, None)]
    return [(inputs[0].dtype, shapes.broadcast(inputs[0].shape, tuple(target)))]


@op("Expand", inputs="input shape", outputs="output", family=F, layout=TERMINATE,
    infer=_expand_infer, doc="Broadcast to a shape. Equivalents: torch.expand, tf.broadcast_to, BROADCAST_TO.")
def expand(input, shape):
    return np.array(np.broadcast_to(input, np.broadcast_shapes(input.shape, tuple(_ints(shape)))))


# -- shape queries and generators ------------------------------------------------------------
def _shape_infer(inputs, attrs):
    s = inputs[0].shape
    if s is None:
        return [(np.dtype(np.int64), (None,))]
    r = len(s)
    start = max(0, min(r, norm_axis(attrs["start"], r)))
    end = r if attrs["end"] is None else max(0, min(r, norm_axis(attrs["end"], r)))
    return [(np.dtype(np.int64), (max(end - start, 0),))]


@op("Shape", inputs="data", outputs="shape", attrs={"start": Attr("int", 0), "end": Attr("int", None)},
    layout=SHAPE, infer=_shape_infer, elements=_shape_elements, family=F, doc="The shape as int64. Equivalents: tensor.shape, tf.shape, SHAPE.")
def shape(data, start, end):
    r = data.ndim
    s = max(0, min(r, norm_axis(start, r)))
    e = r if end is None else max(0, min(r, norm_axis(end, r)))
    return np.array(data.shape[s:e], dtype=np.int64)


@op("Size", inputs="data", outputs="size", infer=lambda i, a: [(np.dtype(np.int64), ())], layout=SHAPE, family=F,
    doc="Number of elements. Equivalents: tensor.numel, tf.size.")
def size(data):
    return np.array(data.size, dtype=np.int64)


def _decompose_size(graph, node):
    """The product of the shape (a Size of run-time dims, which no folding removes)."""
    b = Builder.replacing(node)
    graph.replace_node(node, [b.op("ReduceProd", b.op("Shape", node.inputs[0]), keepdims=0)])
    return True


set_decomposition("Size", _decompose_size)


def _const_of_shape_infer(inputs, attrs):
    v = attrs["value"]
    dt = np.dtype(np.float32) if v is None else v.dtype
    target = elements(inputs[0])  # constant, or a shape computed from others (a batch read from the input)
    n = inputs[0].shape[0] if inputs[0].shape else None
    return [(dt, tuple(target) if target is not None else (None,) * n if isinstance(n, int) else None)]


def _fill_elements(node, known):
    """A small integer vector of one value (an exported `expand` fills ones): that value, as many times."""
    value = node.attrs.get("value")
    n = known[0]
    if n is None or len(n) != 1 or not isinstance(n[0], int) or n[0] > 16 or value is None or \
            np.asarray(value).dtype.kind not in "iu":
        return None
    return [int(np.asarray(value).ravel()[0])] * n[0]


@op("ConstantOfShape", inputs="input", outputs="output", attrs={"value": Attr("tensor", None)},
    infer=_const_of_shape_infer, family=F, layout=TERMINATE, elements=_fill_elements,
    doc="Tensor of a given shape filled with a value. Equivalents: torch.full, tf.fill, FILL.")
def constant_of_shape(input, value):
    v = np.zeros(1, np.float32) if value is None else np.asarray(value)
    return np.full(tuple(_ints(input)), v.ravel()[0], dtype=v.dtype)


def _range_infer(inputs, attrs):
    """The length when start, limit and delta are constants."""
    if all(v is not None and v.const is not None for v in inputs):
        start, limit, delta = (np.asarray(v.const).item() for v in inputs)
        return [(inputs[0].dtype, (max(int(np.ceil((limit - start) / delta)), 0),))]
    return [(inputs[0].dtype, (None,))]


@op("Range", inputs="start limit delta", outputs="output", family=F, layout=TERMINATE, infer=_range_infer,
    doc="Arithmetic sequence. Equivalents: torch.arange, tf.range, RANGE.")
def range_(start, limit, delta):
    s, lim, d = start.item(), limit.item(), delta.item()
    n = max(int(np.ceil((lim - s) / d)), 0)
    return (s + np.arange(n) * d).astype(start.dtype)


def _one_hot_infer(inputs, attrs):
    """The indices' shape with the depth inserted at `axis` (a run-time depth: an open dim); the values' type."""
    indices, depth, values = inputs
    if indices.shape is None:
        return [(values.dtype, None)]
    known = const_ints(depth)
    out = list(indices.shape)
    out.insert(norm_axis(attrs.get("axis", -1), len(out) + 1), known[0] if known else None)
    return [(values.dtype, tuple(out))]


@op("OneHot", inputs="indices depth values", outputs="output", attrs={"axis": Attr("int", -1)}, infer=_one_hot_infer,
    family=F, layout=TERMINATE, doc="One-hot encoding. Equivalents: F.one_hot, tf.one_hot, ONE_HOT.")
def one_hot(indices, depth, values, axis):
    d = int(np.asarray(depth).ravel()[0])
    idx = np.where(indices < 0, indices + d, indices).astype(np.int64)
    hot = np.arange(d) == idx[..., None]
    out = np.where(hot, values[1], values[0]).astype(values.dtype)
    return np.moveaxis(out, -1, norm_axis(axis, indices.ndim + 1))


@op("EyeLike", inputs="input", outputs="output", attrs={"dtype": Attr("dtype", None), "k": Attr("int", 0)},
    family=F, layout=TERMINATE,
    infer=lambda i, a: [(dtypes.dtype(a["dtype"]) if a["dtype"] else i[0].dtype, i[0].shape)],
    doc="Identity-like matrix with a diagonal offset. Equivalents: torch.eye.")
def eye_like(input, dtype, k):
    return np.eye(*input.shape, k=k, dtype=dtypes.dtype(dtype) if dtype else input.dtype)


def _decompose_one_hot(graph, node):
    """Where(index == arange(depth), on, off), the arange placed at the new axis; negative indices count back."""
    indices, depth, values = node.inputs
    if depth.const is None or indices.shape is None:
        return False
    d, rank = int(np.asarray(depth.const).ravel()[0]), len(indices.shape)
    axis = norm_axis(node.attrs.get("axis", -1), rank + 1)
    b = Builder.replacing(node)
    size = b.const(np.array(d, indices.dtype), b.name("depth"))
    zero = b.const(np.array(0, indices.dtype), b.name("zero"))
    wrapped = b.op("Where", b.op("Less", indices, zero), b.op("Add", indices, size), indices)
    index = b.op("Unsqueeze", b.op("Cast", wrapped, to="int64"), b.const(np.array([axis], np.int64), b.name("axis")))
    positions = b.const(np.arange(d, dtype=np.int64).reshape([d] + [1] * (rank - axis)), b.name("positions"))
    off, on = (b.op("Gather", values, b.const(np.array(i, np.int64), b.name(f"which{i}")), axis=0) for i in (0, 1))
    graph.replace_node(node, [b.op("Where", b.op("Equal", index, positions), on, off)])
    return True


def _decompose_eye_like(graph, node):
    """The matrix itself, for an input of static shape."""
    x = node.inputs[0]
    if x.shape is None or not shapes.is_static(x.shape):
        return False
    a = node.attrs
    eye = np.eye(*x.shape, k=a.get("k", 0), dtype=dtypes.dtype(a["dtype"]) if a.get("dtype") else x.dtype)
    graph.replace_node(node, [Builder.replacing(node).const(eye)])
    return True


set_decomposition("OneHot", _decompose_one_hot)
set_decomposition("EyeLike", _decompose_eye_like)


@op("Trilu", inputs="input k?", outputs="output", attrs={"upper": Attr("int", 1)}, family=F,
    layout=TERMINATE, infer=same_as(0), doc="Upper/lower triangle. Equivalents: torch.triu/tril.")
def trilu(input, k=None, *, upper):
    kk = int(np.asarray(k).ravel()[0]) if k is not None else 0
    return np.triu(input, kk) if upper else np.tril(input, kk)


def _decompose_trilu(graph, node):
    """Where(the triangle's constant mask over the last two dims, x, 0)."""
    x, k = node.input(0), node.input(1) if len(node.inputs) > 1 else None
    if x.shape is None or len(x.shape) < 2 or not all(isinstance(d, int) for d in x.shape[-2:]):
        return False
    if k is not None and k.const is None:
        return "a diagonal offset computed when the model runs"
    offset = 0 if k is None else int(np.asarray(k.const).reshape(-1)[0])
    ones = np.ones(x.shape[-2:], bool)
    b = Builder.replacing(node)
    mask = b.named(np.triu(ones, offset) if node.attrs.get("upper", 1) else np.tril(ones, offset), "triangle")
    graph.replace_node(node, [b.op("Where", mask, x, b.named(np.zeros((), x.dtype), "zero"))])
    return True


set_decomposition("Trilu", _decompose_trilu)


@op("NonZero", inputs="X", family=F, layout=TERMINATE,
    infer=lambda i, a: [(np.dtype(np.int64), (len(i[0].shape) if i[0].shape is not None else None, None))],
    doc="Indices of non-zero elements. Equivalents: torch.nonzero (transposed), tf.where(x).")
def non_zero(X):
    return np.array(np.nonzero(X), dtype=np.int64).reshape(max(X.ndim, 1) if X.ndim else 0, -1)


def _decompose_non_zero(graph, node):
    """The flat positions of the non-zero elements, first by a sort of the positions with the zeros' moved past
    the end (TopK, smallest first), cut to their count, each split into its coordinates by division: ops runtimes
    without a WHERE of a computed size run (LiteRT). Needs the input's static shape; computed in int32."""
    x = node.inputs[0]
    if x.shape is None or not x.shape or not all(isinstance(d, int) for d in x.shape):
        return "a NonZero of an input whose shape is not static"
    size = int(np.prod(x.shape))
    if not 0 < size < 2**30:
        return False
    b = Builder.replacing(node)
    flat = b.op("Reshape", x, b.named([-1], "flat_shape", np.int64))
    held = flat if x.dtype == np.bool_ else b.op("Not", b.op("Equal", flat, b.named(np.zeros((), x.dtype), "zero")))
    positions = np.arange(size, dtype=np.int32)
    keys = b.op("Where", held, b.named(positions, "positions"), b.named(positions + size, "past_end"))
    first = b.node("TopK", [keys, b.named([size], "size", np.int64)], {"largest": 0, "sorted": 1}, 2, "sorted")
    count = b.op("ReduceSum", b.op("Cast", held, to="int64"), b.named([0], "axis", np.int64), keepdims=1)
    rest = b.op("Slice", first.outputs[0], b.named([0], "start", np.int64), count, suffix="kept")
    coordinates = []
    for axis, stride in enumerate(int(np.prod(x.shape[a + 1:])) for a in range(len(x.shape))):
        coordinate = rest if stride == 1 else b.op("Div", rest, b.named(np.int32(stride), f"stride{axis}"))
        if stride != 1:
            rest = b.op("Sub", rest, b.op("Mul", coordinate, b.named(np.int32(stride), f"stride{axis}_")))
        coordinates.append(b.op("Unsqueeze", coordinate, b.named([0], f"axis{axis}", np.int64)))
    stacked = b.op("Concat", *coordinates, axis=0) if len(coordinates) > 1 else coordinates[0]
    graph.replace_node(node, [b.op("Cast", stacked, to="int64")])
    return True


set_decomposition("NonZero", _decompose_non_zero)


def _unique_infer(inputs, attrs):
    """Sizes known only at run time; the types: the input's, then int64 indices and counts."""
    x = inputs[0]
    rank = None if x.shape is None else (1 if attrs["axis"] is None else len(x.shape))
    values = None if rank is None else (None,) * rank
    return [(x.dtype, values)] + [(np.dtype(np.int64), (None,))] * 3


@op("Unique", inputs="X", outputs="Y indices? inverse_indices? counts?", family=F, layout=TERMINATE,
    attrs={"axis": Attr("int", None), "sorted": Attr("int", 1)}, infer=_unique_infer,
    doc="Unique elements or slices. Equivalents: torch.unique, tf.unique, UNIQUE.")
def unique(X, axis, sorted):
    y, idx, inv, cnt = np.unique(X, return_index=True, return_inverse=True, return_counts=True,
                                 axis=axis, equal_nan=False) if axis is not None else \
        np.unique(X.ravel(), return_index=True, return_inverse=True, return_counts=True)
    if not sorted:
        order = np.argsort(idx, kind="stable")
        remap = np.empty_like(order)
        remap[order] = np.arange(len(order))
        y = np.take(y, order, axis=0 if axis is None else axis)
        idx, cnt, inv = idx[order], cnt[order], remap[inv.ravel()]
    i64 = lambda a: np.asarray(a, np.int64).ravel()  # noqa: E731
    return y, i64(idx), i64(inv), i64(cnt)


@op("Compress", inputs="input condition", outputs="output", attrs={"axis": Attr("int", None)},
    family=F, layout=TERMINATE, doc="Select slices where condition is true. Equivalents: torch.masked_select, tf.boolean_mask.")
def compress(input, condition, axis):
    return np.compress(condition.astype(bool), input, axis=axis)


def vector_condition_blocker(node) -> str | None:
    """Why a Compress cannot select with the indices of its condition's true entries: a condition that is not
    a vector (what code targets write it with)."""
    shape = node.inputs[1].shape
    return None if shape is None or len(shape) == 1 else "Compress with a condition that is not a vector"


def _decompose_compress(graph, node):
    """A Gather of the positions of the condition's true entries (a NonZero), along the axis or of the flattened
    input: for runtimes whose selection splits indices of a computed count (LiteRT)."""
    x, condition = node.inputs
    if why := vector_condition_blocker(node):
        return why
    b = Builder.replacing(node)
    axis = node.attrs.get("axis")
    if axis is None:
        x = b.op("Reshape", x, b.named([-1], "flat_shape", np.int64), suffix="flat")
    positions = b.op("Squeeze", b.op("NonZero", condition, suffix="positions"), b.named([0], "axes", np.int64),
                     suffix="indices")
    graph.replace_node(node, [b.op("Gather", x, positions, axis=axis or 0)])
    return True


set_decomposition("Compress", _decompose_compress)


@op("ReverseSequence", inputs="input sequence_lens", family=F, layout=TERMINATE,
    attrs={"batch_axis": Attr("int", 1), "time_axis": Attr("int", 0)}, infer=same_as(0),
    doc="Reverse variable-length prefixes per batch. Equivalents: tf.reverse_sequence, REVERSE_SEQUENCE.")
def reverse_sequence(input, sequence_lens, batch_axis, time_axis):
    out = input.copy()
    for b, n in enumerate(sequence_lens):
        src = [slice(None)] * input.ndim
        src[batch_axis], src[time_axis] = b, slice(0, int(n))
        part = input[tuple(src)]
        t_ax = time_axis - (1 if batch_axis < time_axis else 0)
        out[tuple(src)] = np.flip(part, axis=t_ax)
    return out


def _decompose_reverse_sequence(graph, node):
    """GatherElements along the time axis at index len - 1 - t for t < len (the batch entry's length), else t."""
    x, lens = node.inputs
    if x.shape is None or not isinstance(x.shape[node.attrs.get("time_axis", 0)], int):
        return False
    rank = len(x.shape)
    time_axis, batch_axis = node.attrs.get("time_axis", 0), node.attrs.get("batch_axis", 1)
    b = Builder.replacing(node)

    def along(axis, size):
        return [size if i == axis else 1 for i in range(rank)]

    steps = b.const(np.arange(x.shape[time_axis], dtype=np.int64).reshape(along(time_axis, -1)), b.name("steps"))
    length = b.op("Reshape", b.op("Cast", lens, to="int64"), b.const(np.array(along(batch_axis, -1), np.int64),
                                                                        b.name("length_shape")), suffix="length")
    last = b.op("Sub", length, b.const(np.array(1, np.int64), b.name("one")))
    index = b.op("Where", b.op("Less", steps, length), b.op("Sub", last, steps), steps, suffix="index")
    full = b.const(np.array(x.shape, np.int64), b.name("full")) if shapes.is_static(x.shape) else b.op("Shape", x)
    index = b.op("Expand", index, full, suffix="index_full")
    graph.replace_node(node, [b.op("GatherElements", x, index, axis=time_axis)])
    return True


set_decomposition("ReverseSequence", _decompose_reverse_sequence)


def _cum(fn):
    def ref(x, axis, exclusive, reverse):
        ax = int(np.asarray(axis).ravel()[0])
        y = np.flip(x, ax) if reverse else x
        out = fn(y, axis=ax, dtype=x.dtype)
        if exclusive:
            ident = 0 if fn is np.cumsum else 1
            out = np.concatenate([np.full_like(np.take(out, [0], axis=ax), ident),
                                  np.delete(out, -1, axis=ax)], axis=ax)
        return np.flip(out, ax) if reverse else out
    return ref


for _name, _fn, _eq in (("CumSum", np.cumsum, "torch.cumsum, tf.cumsum, CUMSUM"),
                        ("CumProd", np.cumprod, "torch.cumprod, tf.math.cumprod")):
    op(_name, inputs="x axis", outputs="y", attrs={"exclusive": Attr("int", 0), "reverse": Attr("int", 0)},
       family=F, layout=attribute("axis", rule=L.cumsum), infer=same_as(0),
       doc=f"Cumulative {_name[3:].lower()} along an axis. Equivalents: {_eq}.")(_cum(_fn))


def _scan_axis(node):
    """(x, axis, axis length) of a cumulative op whose axis and length are known, else None."""
    x, axis_v = node.inputs
    if x.shape is None or axis_v.const is None:
        return None
    axis = norm_axis(int(np.asarray(axis_v.const).ravel()[0]), len(x.shape))
    return (x, axis, x.shape[axis]) if isinstance(x.shape[axis], int) else None


class _AlongAxis:
    """Flips and shifts along one axis of known length, built with `b`."""

    def __init__(self, b, axis: int, n: int, rank: int):
        self.b, self.axis, self.n, self.rank = b, axis, n, rank

    def _ints(self, v):
        return self.b.const(np.array([v], np.int64))

    def flip(self, v):
        return self.b.op("Slice", v, self._ints(-1), self._ints(np.iinfo(np.int64).min), self._ints(self.axis),
                         self._ints(-1))

    def shifted(self, v, by: int, fill):
        """v moved `by` along the axis, `fill` shifted in."""
        pads = [0] * (2 * self.rank)
        pads[self.axis] = by
        head = self.b.op("Slice", v, self._ints(0), self._ints(self.n - by), self._ints(self.axis))
        return self.b.op("Pad", head, self.b.const(np.array(pads, np.int64)), self.b.const(np.array(fill, v.dtype)),
                         mode="constant")


def _decompose_cumprod(graph, node):
    """Prefix products by doubling: y *= y shifted by 1, 2, 4 ... along the axis (ones shifted in); exclusive
    shifts once more, reverse works on the flipped axis. Needs the axis length."""
    known = _scan_axis(node)
    if known is None:
        return False
    x, axis, n = known
    along = _AlongAxis(Builder.replacing(node), axis, n, len(x.shape))
    reverse = node.attrs.get("reverse", 0)
    y = along.flip(x) if reverse else x
    if node.attrs.get("exclusive", 0):
        y = along.shifted(y, 1, 1)
    step = 1
    while step < n:
        y = along.b.op("Mul", y, along.shifted(y, step, 1))
        step *= 2
    graph.replace_node(node, [along.flip(y) if reverse else y])
    return True


def _decompose_cumsum(graph, node):
    """An exclusive or reverse CumSum as a plain one: on the flipped axis (reverse), shifted by one with a zero
    in front (exclusive)."""
    known = _scan_axis(node)
    reverse, exclusive = node.attrs.get("reverse", 0), node.attrs.get("exclusive", 0)
    if known is None or not (reverse or exclusive):
        return False
    x, axis, n = known
    along = _AlongAxis(Builder.replacing(node), axis, n, len(x.shape))
    y = along.b.op("CumSum", along.flip(x) if reverse else x, node.inputs[1])
    if exclusive:
        y = along.shifted(y, 1, 0)
    graph.replace_node(node, [along.flip(y) if reverse else y])
    return True


set_decomposition("CumProd", _decompose_cumprod)
set_decomposition("CumSum", _decompose_cumsum)


@op("BitCast", inputs="input", outputs="output", attrs={"to": Attr("dtype")}, family=F, layout=TERMINATE,
    doc="Reinterpret the bits as another dtype of the same width. Equivalents: torch.view(dtype), tf.bitcast, BITCAST.")
def bit_cast(input, to):
    return np.ascontiguousarray(input).reshape(-1).view(dtypes.dtype(to)).reshape(input.shape)


@op("TensorScatter", inputs="past_cache update write_indices?", outputs="present_cache", family=F,
    layout=TERMINATE, attrs={"axis": Attr("int", -2), "mode": Attr("str", "linear")}, infer=same_as(0),
    doc="Write updates into a KV cache at per-batch positions (linear or circular).")
def tensor_scatter(past_cache, update, write_indices=None, *, axis, mode):
    out = past_cache.copy()
    ax = norm_axis(axis, out.ndim)
    max_len, n = out.shape[ax], update.shape[ax]
    for b in range(out.shape[0]):
        start = int(write_indices[b]) if write_indices is not None else 0
        pos = np.arange(start, start + n)
        if mode == "circular":
            pos = pos % max_len
        dst = np.moveaxis(out[b], ax - 1, 0)
        dst[pos] = np.moveaxis(update[b], ax - 1, 0)
    return out


def _implicit_broadcast(graph, node) -> bool:
    """op(a, Expand(b)) -> op(a, b) where broadcasting b gives the op the same output shape: the broadcasts
    that jaxprs and StableHLO spell out before every elementwise op, which the op does implicitly."""
    changed = False
    out = node.outputs[0].shape
    for i, v in enumerate(node.inputs):
        expand = v.producer if v is not None and v.producer is not None and v.producer.op == "Expand" else None
        if expand is None or out is None or expand.inputs[0].shape is None:
            continue
        shapes = [expand.inputs[0].shape] + [w.shape for j, w in enumerate(node.inputs) if j != i and w is not None]
        if any(s is None or not all(isinstance(d, int) for d in s) for s in shapes):
            continue
        try:
            broadcast = np.broadcast_shapes(*shapes)
        except ValueError:
            continue
        if broadcast == tuple(out):
            node.set_input(i, expand.inputs[0])
            changed = True
    return changed


for _root in ("Add", "Sub", "Mul", "Div", "Max", "Min", "Pow", "Mod", "Where", "Equal", "Less", "LessOrEqual",
              "Greater", "GreaterOrEqual", "And", "Or", "Xor"):
    set_recovery("Expand", _root, _implicit_broadcast)
