"""Code rows shared by the targets whose tensor functions follow NumPy's API (`keras.ops`, `jax.numpy`): the
IR op written as `<namespace>.<numpy name>(...)`, the same way for each (see rules/code.py); and what their
layers share: channels-last convolution kernels, dense kernels [in, out], the ChannelPReLU helper's call, and
upsampling by integer factors."""

from __future__ import annotations

import ast
from collections.abc import Callable

import numpy as np

from tensorbridge.codegen import pyast as P
from tensorbridge.ops.attention_layer import PROJECTIONS
from tensorbridge.rules.code import (
    COMPARISONS,
    NOT_LITERAL,
    CodeTable,
    OpCall,
    Refused,
    Renamed,
    changed,
    definition,
    keywords,
    known,
    pairs,
    range_bounds,
    shrink_kind,
    softmax_axis,
    value_of,
    write_matmul,
)
from tensorbridge.rules.sampling_code import sampling_helpers

#: IR op -> NumPy's name for it, written as `<namespace>.<name>(*inputs)`
SAME_NAME = {"Exp": "exp", "Log": "log", "Sqrt": "sqrt", "Abs": "abs", "Neg": "negative", "Sin": "sin", "Cos": "cos",
             "Floor": "floor", "Ceil": "ceil", "Reciprocal": "reciprocal", "Square": "square",
             "Where": "where", "Pow": "power", "Sign": "sign", "Round": "round", "Log1p": "log1p", "Expm1": "expm1",
             "Trunc": "trunc"}
REDUCTIONS = {"ReduceMean": "mean", "ReduceSum": "sum", "ReduceMax": "max", "ReduceMin": "min", "ReduceAll": "all",
              "ReduceAny": "any", "ReduceProd": "prod"}


def activation_writers(table: CodeTable, ns: str, act: str, shrinks: tuple[str, str] | None = None) -> None:
    """Register on `table` the writers of the activations composed from others: `ns` is the array namespace
    ("ops", "jnp"), `act` the activations' ("ops", "nnx"), `shrinks` the (hard, soft) shrink functions taking
    `threshold=` when the namespace has them."""
    @table.writes("Shrink", f"{ns}.where")
    def _shrink(c):
        x, lambd, bias = c.inputs[0], c.attrs["lambd"], c.attrs["bias"]
        kind = shrink_kind(c)
        if kind == "hard":
            if shrinks:
                return P.call(shrinks[0], x, threshold=lambd)
            return P.call(f"{ns}.where", P.binop(P.call(f"{ns}.abs", x), ">", lambd), x, 0.0)
        if kind == "soft":
            if shrinks:
                return P.call(shrinks[1], x, threshold=lambd)
            return P.binop(P.call(f"{ns}.sign", x), "*",
                           P.call(f"{ns}.maximum", P.binop(P.call(f"{ns}.abs", x), "-", lambd), 0.0))
        return P.call(f"{ns}.where", P.binop(x, "<", P.neg(lambd)), P.binop(x, "+", bias),
                      P.call(f"{ns}.where", P.binop(x, ">", lambd), P.binop(x, "-", bias), 0.0))

    table.writes("ScaledSoftplus", f"{act}.softplus")(lambda c: P.call(  # PyTorch's softplus(x, beta, threshold)
        f"{ns}.where", P.binop(P.binop(c.attrs["beta"], "*", c.inputs[0]), ">", c.attrs["threshold"]), c.inputs[0],
        P.binop(P.call(f"{act}.softplus", P.binop(c.attrs["beta"], "*", c.inputs[0])), "/", c.attrs["beta"])))
    table.writes_call("Selu", f"{act}.selu")
    table.writes_call("Celu", f"{act}.celu", alpha="alpha")
    table.writes("Tanhshrink", f"{act}.tanh")(lambda c: P.binop(c.inputs[0], "-", P.call(f"{act}.tanh", c.inputs[0])))
    table.writes("Softmin", f"{act}.softmax")(lambda c: P.call(f"{act}.softmax", ast.UnaryOp(ast.USub(), c.inputs[0]),
                                                               axis=softmax_axis(c)))


def numpy_writers(table: CodeTable, ns: str, shape: Callable[[ast.expr], ast.expr], norm: str,
                  pad_modes: tuple = ("constant", "reflect", "edge", "wrap"), attention_dropout: bool = False,
                  mutable: bool = False, random_source: str | None = None, logsumexp: str | None = None,
                  pad_helper: str | None = None) -> None:
    """Register on `table` the writers of NumPy-style namespace `ns` ("ops", "jnp", "np"); `shape(x)` is the
    expression of x's shape, `norm` the vector norm's path, `pad_modes` the modes its pad has,
    `attention_dropout` whether its attention helper applies a dropout (`function_helpers`), `random_source` what
    the helper draws it from when it needs one passed (NNX: `self.rngs`), `mutable` whether its arrays are written
    in place (NumPy's: a copy the source makes is then written as one), `logsumexp` its log-sum-exp's path,
    `pad_helper` the helper `(x, widths, mode)` padding in the modes its pad lacks."""
    def fn(name: str) -> str:
        return f"{ns}.{name}"

    for op, name in SAME_NAME.items():
        table.writes_call(op, fn(name))
    write_matmul(table, fn("matmul"))
    for op, symbol in (("Add", "+"), ("Sub", "-"), ("Mul", "*"), ("Div", "/")):
        table.writes(op, f"(the {symbol} operator)")(lambda c, s=symbol: P.binop(c.inputs[0], s, c.inputs[1]))
    for op, (name, _) in COMPARISONS.items():
        table.writes_call(op, fn(name))
    table.writes("Frac", fn("trunc"))(lambda c: P.binop(c.inputs[0], "-", P.call(fn("trunc"), c.inputs[0])))
    table.writes_call("Dot", fn("dot"))
    table.writes_call("Not", fn("logical_not"))
    table.writes_call("Max", fn("maximum"))
    table.writes_call("Min", fn("minimum"))
    table.writes("Range", fn("arange"))(lambda c: P.call(fn("arange"), *range_bounds(c.attrs), **dtype_keyword(c)))

    @table.writes("ConstantOfShape", fn("full"))
    def _constant(c):
        value, shape = known(c.attrs["value"]), shape_argument(c.attrs["shape"])
        if value in (0.0, 1.0):
            return P.call(fn("ones" if value else "zeros"), shape, **dtype_keyword(c))
        return P.call(fn("full"), shape, c.attrs["value"], **dtype_keyword(c))

    @table.writes("ConstantLike", fn("full_like"))
    def _constant_like(c):
        value = known(c.attrs["value"])
        if value in (0.0, 1.0):
            return P.call(fn("ones_like" if value else "zeros_like"), c.inputs[0], **dtype_keyword(c))
        return P.call(fn("full_like"), c.inputs[0], c.attrs["value"], **dtype_keyword(c))

    def with_index(name):
        """`x.max(dim)`'s (values, indices) as a tuple of the two reductions."""
        @table.writes(f"{name.title()}WithIndex", fn(name))
        def write(c):
            kwargs = {"axis": c.attrs["axis"], **keywords(keepdims=(c.attrs["keepdims"], False))}
            return ast.Tuple([P.call(fn(f), c.inputs[0], **kwargs) for f in (name, f"arg{name}")], ast.Load())

    with_index("max")
    with_index("min")
    for op, name in (("ArgMax", "argmax"), ("ArgMin", "argmin")):
        table.writes(op, fn(name))(lambda c, n=name: P.call(fn(n), c.inputs[0], **keywords(
            axis=(c.attrs["axis"], None), keepdims=(c.attrs["keepdims"], False))))
    table.writes("CumSum", fn("cumsum"))(lambda c: P.call(fn("cumsum"), c.inputs[0], axis=c.attrs["axis"],
                                                          **keywords(dtype=(c.attrs.get("dtype"), None))))
    table.writes("CumProd", fn("cumprod"))(lambda c: P.call(fn("cumprod"), c.inputs[0], axis=c.attrs["axis"],
                                                            **keywords(dtype=(c.attrs.get("dtype"), None))))
    table.writes("ArgSort", fn("argsort"))(lambda c: P.call(  # descending: the negated values' ascending order
        fn("argsort"), ast.UnaryOp(ast.USub(), c.inputs[0]) if known(c.attrs["descending"]) else c.inputs[0],
        axis=c.attrs["axis"]))
    table.writes("Flip", fn("flip"))(lambda c: P.call(fn("flip"), c.inputs[0], axis=_axes(c.attrs["axes"])))
    table.writes("Roll", fn("roll"))(lambda c: P.call(fn("roll"), c.inputs[0], c.attrs["shifts"],
                                                      **keywords(axis=(c.attrs["axes"], None))))
    table.writes("Tile", fn("tile"))(lambda c: P.call(fn("tile"), c.inputs[0], shape_argument(c.attrs["repeats"])))
    table.writes("Repeat", fn("repeat"))(lambda c: P.call(fn("repeat"), c.inputs[0], c.attrs["repeats"],
                                                          **keywords(axis=(c.attrs["axis"], None))))
    table.writes("Triu", fn("triu"))(lambda c: P.call(fn("triu"), c.inputs[0], **keywords(k=(c.attrs["k"], 0))))
    table.writes("Take", fn("take"))(lambda c: P.call(fn("take"), *c.inputs, axis=c.attrs["axis"]))
    table.writes("Unstack", fn("unstack"))(lambda c: P.call(fn("unstack"), c.inputs[0],
                                                            **keywords(axis=(c.attrs["axis"], 0))))
    table.writes("SplitSize", fn("split"))(lambda c: P.call(
        fn("split"), c.inputs[0], P.binop(P.subscript(shape(c.inputs[0]), c.attrs["axis"]), "//", c.attrs["size"]),
        axis=c.attrs["axis"]))
    table.writes("ReduceL2", norm)(lambda c: P.call(norm, c.inputs[0], **keywords(
        axis=(c.attrs["axis"], None), keepdims=(c.attrs["keepdims"], False))))

    @table.writes("Linear", fn("matmul"))
    def _linear(c):
        x, weight, bias = c.inputs
        y = P.call(fn("matmul"), x, P.call(fn("transpose"), weight))
        return y if known(bias) is None else P.binop(y, "+", bias)

    table.writes_call("Concat", fn("concatenate"), axis="axis")
    table.writes_call("Stack", fn("stack"), axis="axis")
    table.writes_call("SwapAxes", fn("swapaxes"), "axis1", "axis2")
    table.writes_call("Unsqueeze", fn("expand_dims"), "axis")
    table.writes_call("Split", fn("split"), "sections", axis="axis")
    table.writes("Einsum", fn("einsum"))(lambda c: P.call(fn("einsum"), c.attrs["equation"], *c.inputs[0]))
    table.writes("MaskedFill", fn("where"))(lambda c: P.call(fn("where"), c.inputs[1], c.attrs["value"], c.inputs[0]))
    write_merge_arithmetic(table)
    table.writes("Identity", "(the input itself)")(lambda c: _copied(c, ns) if mutable else c.inputs[0])
    if ns != "ops":  # NumPy's and JAX's arrays index as PyTorch's do; keras.ops has a helper (rules/keras/code.py)
        table.writes("TensorIndex", "(indexing)")(lambda c: P.subscript(c.inputs[0], c.inputs[1]))
        table.writes("Item", "(the array's .item())")(lambda c: P.method(c.inputs[0], "item"))
    table.writes("Linspace", fn("linspace"))(lambda c: P.call(fn("linspace"), c.attrs["start"], c.attrs["stop"],
                                                              c.attrs["num"], **dtype_keyword(c)))
    table.writes("ReshapeItems", fn("reshape"))(lambda c: P.call(fn("reshape"), c.inputs[0], ast.Tuple(
        [P.subscript(shape(c.inputs[0]), 0), ast.Starred(c.attrs["shape"], ast.Load())], ast.Load())))
    table.writes("Merge", MERGE)(lambda c: write_merge(c, fn))
    table.writes("SizeOrValues", fn("asarray"))(  # PyTorch's legacy constructors: a number is the size, a
        # sequence or an array the values
        lambda c: ast.IfExp(ast.Compare(P.call(fn("ndim"), c.inputs[0]), [ast.Eq()], [P.lit(0)]),
                            P.call(fn("zeros"), c.inputs[0], dtype=c.attrs["dtype"]),
                            P.call(fn("asarray"), c.inputs[0], dtype=c.attrs["dtype"])))
    table.writes("MeshGrid", fn("meshgrid"))(
        lambda c: P.call(fn("meshgrid"), *c.inputs[0], indexing=c.attrs["indexing"]))
    table.writes("Device", "(no device: the framework places arrays itself)")(lambda c: P.lit(None))
    table.writes("IsCuda", "(no device: the framework places arrays itself)")(lambda c: P.lit(False))
    table.writes("AsTensor", fn("asarray" if ns != "ops" else "convert_to_tensor"))(
        lambda c: P.call(fn("asarray" if ns != "ops" else "convert_to_tensor"), c.inputs[0]))
    table.writes("Rank", fn("ndim"))(lambda c: P.call(fn("ndim"), c.inputs[0]))
    table.writes("DType", "(the array's .dtype)")(lambda c: ast.Attribute(c.inputs[0], "dtype", ast.Load()))

    finfo = "np.finfo" if ns == "ops" else fn("finfo")  # keras.ops has none: NumPy's

    @table.writes("FInfo", finfo)
    def _finfo(c):  # Keras names a tensor's dtype by its backend's class (tf.float32): NumPy takes Keras' name
        dtype = c.inputs[0] if ns != "ops" else P.call("keras.backend.standardize_dtype", c.inputs[0])
        return P.call(finfo, dtype)
    table.writes("Tril", fn("tril"))(lambda c: P.call(fn("tril"), c.inputs[0], **keywords(k=(c.attrs["k"], 0))))
    table.writes("Expand", fn("broadcast_to"))(
        lambda c: P.call(fn("broadcast_to"), c.inputs[0], expanded_shape(c.inputs[0], c.attrs["sizes"], shape)))
    table.writes("ExpandAs", fn("broadcast_to"))(lambda c: P.call(fn("broadcast_to"), c.inputs[0], shape(c.inputs[1])))
    table.writes("Reshape", fn("reshape"))(
        lambda c: P.call(fn("reshape"), c.inputs[0], shape_argument(c.attrs["shape"])))
    table.writes("Transpose", fn("transpose"))(  # without axes: every axis reversed
        lambda c: P.call(fn("transpose"), c.inputs[0], *([] if known(c.attrs["perm"]) is None else
                                                         [shape_argument(c.attrs["perm"])])))
    table.writes("Shape", "(the shape)")(
        lambda c: shape(c.inputs[0]) if known(c.attrs["index"]) is None else P.subscript(shape(c.inputs[0]),
                                                                                         c.attrs["index"]))

    @table.writes("Clip", fn("clip"))
    def _clip(c):
        lo, hi = (known(c.attrs[k]) for k in ("min", "max"))
        if lo is None and hi is None:
            raise Refused("clamp without bounds")
        if hi is None:
            return P.call(fn("maximum"), c.inputs[0], c.attrs["min"])
        if lo is None:
            return P.call(fn("minimum"), c.inputs[0], c.attrs["max"])
        return P.call(fn("clip"), c.inputs[0], c.attrs["min"], c.attrs["max"])

    @table.writes("Flatten", fn("reshape"))
    def _flatten(c):
        start, end = known(c.attrs.get("start", 1)), known(c.attrs.get("end", -1))
        if not isinstance(start, int) or not isinstance(end, int):
            raise Refused("flatten dims given by a variable")
        dims = ast.Tuple([ast.Constant(-1)], ast.Load())
        if start != 0:  # the dims before start_dim, kept
            dims = P.binop(P.call("tuple", P.subscript(shape(c.inputs[0]), P.slice_(None, start))), "+", dims)
        if end != -1:  # the dims after end_dim, kept
            dims = P.binop(dims, "+", P.call("tuple", P.subscript(shape(c.inputs[0]), P.slice_(end + 1, None))))
        return P.call(fn("reshape"), c.inputs[0], dims)

    table.writes("NanToNum", fn("nan_to_num"))(lambda c: P.call(fn("nan_to_num"), c.inputs[0], **keywords(
        nan=(c.attrs["nan"], 0.0), posinf=(c.attrs["posinf"], None), neginf=(c.attrs["neginf"], None))))

    @table.writes("Unflatten", fn("reshape"))
    def _unflatten(c):
        dim = known(c.attrs["dim"])
        if not isinstance(dim, int):
            raise Refused("unflatten dim given by a variable")
        sizes = c.attrs["sizes"]
        dims = sizes if isinstance(sizes, ast.Tuple) else P.call("tuple", sizes)
        if dim != 0:  # the dims before it, kept
            dims = P.binop(P.call("tuple", P.subscript(shape(c.inputs[0]), P.slice_(None, dim))), "+", dims)
        if dim != -1:  # the dims after it, kept
            dims = P.binop(dims, "+", P.call("tuple", P.subscript(shape(c.inputs[0]), P.slice_(dim + 1, None))))
        return P.call(fn("reshape"), c.inputs[0], dims)

    @table.writes("Squeeze", fn("squeeze"))
    def _squeeze(c):
        if known(c.attrs["axis"]) is None:
            return P.call(fn("squeeze"), c.inputs[0])
        return P.call(fn("squeeze"), c.inputs[0], c.attrs["axis"])

    def reduction(op, path):
        @table.writes(op, path)
        def write(c):
            kwargs = {}
            if known(c.attrs["axis"]) is not None:
                kwargs["axis"] = c.attrs["axis"]
            if known(c.attrs["keepdims"]) is not False:
                kwargs["keepdims"] = c.attrs["keepdims"]
            return P.call(path, c.inputs[0], **kwargs)

    for op, name in REDUCTIONS.items():
        reduction(op, fn(name))
    if logsumexp is not None:
        reduction("ReduceLogSumExp", logsumexp)

    @table.writes("LpNormalize", norm)
    def _normalize(c):
        x = c.inputs[0]
        return P.binop(x, "/", P.call(fn("maximum"), P.call(norm, x, axis=c.attrs["axis"], keepdims=True),
                                      c.attrs["epsilon"]))

    @table.writes("CosineSimilarity", norm)
    def _cosine(c):
        """PyTorch's: each operand divided by its norm (at least eps) first, then the products summed."""
        a = c.attrs

        def unit(x):
            return P.binop(x, "/", P.call(fn("maximum"), P.call(norm, x, axis=a["dim"], keepdims=True), a["eps"]))
        return P.call(fn("sum"), P.binop(unit(c.inputs[0]), "*", unit(c.inputs[1])), axis=a["dim"])

    @table.writes("PairwiseDistance", norm)
    def _distance(c):
        """PyTorch's: the p-norm of x1 - x2 + eps over the last axis."""
        a = c.attrs
        difference = P.binop(P.binop(c.inputs[0], "-", c.inputs[1]), "+", a["eps"])
        return P.call(norm, difference, **keywords(ord=(a["p"], 2.0)), axis=-1,
                      **keywords(keepdims=(a["keepdim"], False)))

    for op, name in (("GlobalAveragePool", "mean"), ("GlobalMaxPool", "max")):  # functional (channels first)
        table.writes(op, fn(name))(lambda c, n=name: P.call(
            fn(n), c.inputs[0], axis=tuple(range(2, 2 + c.attrs["rank"])), keepdims=True))

    table.writes("LayerNormFn", "layer_norm")(_write_layer_norm_function)
    table.writes("ScaledDotProductAttention", "scaled_dot_product_attention")(
        lambda c: _write_attention_function(c, attention_dropout, random_source))

    @table.writes("DepthToSpace", "pixel_shuffle")
    def _pixel_shuffle(c):
        if c.attrs["mode"] != "CRD":
            raise Refused("depth to space in DCR order (PyTorch's pixel_shuffle is CRD)")
        return P.call("pixel_shuffle", c.inputs[0], c.attrs["blocksize"])

    @table.writes("SpaceToDepth", "pixel_unshuffle")
    def _pixel_unshuffle(c):
        if c.attrs["mode"] != "CRD":
            raise Refused("space to depth in DCR order (PyTorch's pixel_unshuffle is CRD)")
        return P.call("pixel_unshuffle", c.inputs[0], c.attrs["blocksize"])

    @table.writes("AddMatMul", fn("matmul"))
    def _add_matmul(c):
        x, a, b = c.inputs
        product = P.call(fn("matmul"), a, b)
        beta, alpha = (c.attrs[k] for k in ("beta", "alpha"))
        product = product if known(alpha) == 1 else P.binop(alpha, "*", product)
        if known(beta) == 0:  # PyTorch ignores the input then (NaN included)
            return product
        return P.binop(x if known(beta) == 1 else P.binop(beta, "*", x), "+", product)

    @table.writes("CDist", fn("sqrt"))
    def _cdist(c):
        a, b = c.inputs
        rows, columns = P.subscript(a, _index("...", ":", None, ":")), P.subscript(b, _index("...", None, ":", ":"))
        pairs = P.binop(rows, "-", columns)
        if known(c.attrs["p"]) == 1:
            return P.call(fn("sum"), P.call(fn("abs"), pairs), axis=-1)
        return P.call(fn("sqrt"), P.call(fn("sum"), P.call(fn("square"), pairs), axis=-1))

    table.writes("LocalResponseNorm", "local_response_norm")(lambda c: P.call(
        "local_response_norm", c.inputs[0], c.attrs["size"], **keywords(
            alpha=(c.attrs["alpha"], 1e-4), beta=(c.attrs["beta"], 0.75), k=(c.attrs["k"], 1.0))))
    table.writes("ChannelShuffle", "channel_shuffle")(
        lambda c: P.call("channel_shuffle", c.inputs[0], c.attrs["groups"]))
    table.writes("AdaptivePool", "adaptive_pool")(
        lambda c: P.call("adaptive_pool", c.inputs[0], c.attrs["output_size"], P.name(fn(c.attrs["reduce"]))))
    table.writes("PackPadded", "pack_padded_sequence")(lambda c: P.call("pack_padded_sequence", *c.inputs, **keywords(
        batch_first=(c.attrs["batch_first"], False))))
    table.writes("PadPacked", "pad_packed_sequence")(lambda c: P.call("pad_packed_sequence", c.inputs[0], **keywords(
        batch_first=(c.attrs["batch_first"], False), padding_value=(c.attrs["padding_value"], 0.0),
        total_length=(c.attrs["total_length"], None))))
    table.writes("DotProductAttention", "dot_product_attention")(write_dot_product_attention)
    table.writes("CausalMask", "make_causal_mask")(lambda c: P.call("make_causal_mask", c.inputs[0], **keywords(
        extra_batch_dims=(c.attrs["extra_batch_dims"], 0)), **dtype_keyword(c)))
    table.writes("Windows", "windows")(lambda c: P.call("windows", c.inputs[0], *[c.attrs[k] for k in (
        "axis", "size", "step")]))
    table.writes("ImageResize", "resize")(write_image_resize)
    table.writes("Interpolate", "interpolate")(lambda c: P.call("interpolate", c.inputs[0], **keywords(
        size=(c.attrs["size"], None), scale_factor=(c.attrs["scale_factor"], None), mode=(c.attrs["mode"], "nearest"),
        align_corners=(c.attrs["align_corners"], False))))
    table.writes("AffineGrid", "affine_grid")(lambda c: P.call("affine_grid", c.inputs[0], c.attrs["size"], **keywords(
        align_corners=(c.attrs["align_corners"], False))))
    table.writes("GridSample", "grid_sample")(lambda c: P.call("grid_sample", *c.inputs, **keywords(
        align_corners=(c.attrs["align_corners"], False))))
    table.writes("ScatterElements", "scatter")(
        lambda c: P.call("scatter", c.inputs[0], c.attrs["axis"], c.inputs[1], c.inputs[2]))
    table.writes("GatherElements", "gather")(lambda c: P.call("gather", c.inputs[0], c.attrs["axis"], c.inputs[1]))
    table.writes("CrossEntropy", "cross_entropy")(lambda c: P.call("cross_entropy", *c.inputs, **keywords(
        ignore_index=(c.attrs["ignore_index"], -100), reduction=(c.attrs["reduction"], "mean"))))

    @table.writes("Pad", fn("pad"))
    def _pad(c):
        mode = c.attrs.get("mode", "constant")
        if mode not in pad_modes and pad_helper is None:
            raise Refused(f"{ns}.pad has no {mode!r} mode here")
        widths = leading_zero_pads(c.inputs[0], c.attrs["trailing_pads"], fn("ndim"))
        if mode not in pad_modes:
            return P.call(pad_helper, c.inputs[0], widths, mode)
        if mode != "constant":
            return P.call(fn("pad"), c.inputs[0], widths, mode=mode)
        return P.call(fn("pad"), c.inputs[0], widths, **keywords(constant_values=(c.attrs["value"], 0.0)))


SPATIAL_PADDING = "spatial_padding"
#: a pool's padding given by a variable, as PyTorch takes it (an int, or one per spatial axis)
SPATIAL_PADDING_HELPER = {SPATIAL_PADDING: definition('''def spatial_padding(padding, rank):
    """(before, after) pads of each spatial axis for PyTorch's padding: an int for every axis or one per axis."""
    return [(p, p) for p in (padding if isinstance(padding, (tuple, list)) else [padding] * rank)]''')}


CEIL_MODE_PADDING = "ceil_mode_padding"
#: the padding of a max pool in PyTorch's ceil_mode, which depends on the input's size
CEIL_MODE_PADDING_HELPER = {CEIL_MODE_PADDING: definition('''def ceil_mode_padding(sizes, kernel, stride, padding):
    """(before, after) pads of each spatial axis, of the given sizes, for a max pool in PyTorch's ceil_mode: the
    padding, and after the end what the last window reaches beyond it (windows start inside the input or its
    leading padding)."""
    out = []
    for size, k, s, p in zip(sizes, kernel, stride, padding):
        windows = -(-(size + 2 * p - k) // s) + 1
        if (windows - 1) * s >= size + p:
            windows -= 1
        out.append((p, max(p, (windows - 1) * s + k - size - p)))
    return out''')}


def ceil_mode_padding(sizes: ast.expr, a: dict) -> ast.expr:
    """`ceil_mode_padding(sizes, kernel, stride, padding)` for a pool's attributes (literal sizes)."""
    rank = a["rank"]
    return P.call(CEIL_MODE_PADDING, sizes, *(P.lit(pairs(a[k], rank)) for k in ("kernel_shape", "strides", "pads")))


EXTRACT_PATCHES = '''def extract_patches(images, size):
    """keras.ops.image.extract_patches of channels-last images into non-overlapping size x size patches (the
    rows and columns that do not fill a patch dropped): each patch's values in (row, column, channel) order."""
    b, h, w, c = images.shape
    rows, columns = h // size, w // size
    patches = images[:, :rows * size, :columns * size].reshape(b, rows, size, columns, size, c)
    return patches.{transpose}(0, 1, 3, 2, 4, 5).reshape(b, rows, columns, size * size * c)
'''


KERAS_CONV = '''def functional_conv(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """PyTorch's F.conv1d/2d/3d: channels-first x, a [out, in / groups, *kernel] weight (ops.conv takes the
    groups from it), padding an int, one per axis, "valid" or "same"."""
    rank = len(weight.shape) - 2
    x = ops.moveaxis(x, 1, -1)
    if not isinstance(padding, str):
        pads = padding if isinstance(padding, (tuple, list)) else (padding,) * rank
        x = ops.pad(x, [(0, 0), *[(p, p) for p in pads], (0, 0)])
        padding = "valid"
    kernel = ops.transpose(weight, (*range(2, rank + 2), 1, 0))
    y = ops.conv(x, kernel, strides=stride, padding=padding, dilation_rate=dilation)
    if bias is not None:
        y = y + bias
    return ops.moveaxis(y, -1, 1)
'''
JAX_CONV = '''def functional_conv(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """PyTorch's F.conv1d/2d/3d: channels-first x, a [out, in / groups, *kernel] weight, padding an int, one per
    axis, "valid" or "same"."""
    weight = jnp.asarray(weight)  # a weight the module holds (nnx.Param) as its array
    rank = weight.ndim - 2
    spatial = "DHW"[-rank:]
    if isinstance(padding, str):
        pads = padding.upper()
    else:
        pads = [(p, p) for p in (padding if isinstance(padding, (tuple, list)) else (padding,) * rank)]
    y = jax.lax.conv_general_dilated(
        x, weight, ntuple(stride, rank), pads, rhs_dilation=ntuple(dilation, rank),
        dimension_numbers=(f"NC{spatial}", f"OI{spatial}", f"NC{spatial}"), feature_group_count=groups)
    return y if bias is None else y + bias.reshape((1, -1) + (1,) * rank)
'''


# -- calls of the helpers every target writes under one name (PyTorch's too) ------------------------------
def write_dot_product_attention(c: OpCall) -> ast.expr:
    """`dot_product_attention(q, k, v, ...)`: the helper for JAX's jax.nn.dot_product_attention."""
    return P.call("dot_product_attention", *c.inputs[:3], **keywords(
        bias=(c.inputs[3], None), mask=(c.inputs[4], None), scale=(c.attrs["scale"], None),
        is_causal=(c.attrs["is_causal"], False)))


def write_image_resize(c: OpCall) -> ast.expr:
    """`resize(x, shape, ...)`: the helper for jax.image.resize."""
    return P.call("resize", c.inputs[0], c.attrs["shape"], **keywords(
        method=(c.attrs["method"], "linear"), antialias=(c.attrs["antialias"], True)))


def write_nnx_einsum(c: OpCall) -> ast.expr:
    """`NnxEinsum(equation, kernel_shape, ...)`: the helper layer for nnx.Einsum."""
    return P.call("NnxEinsum", c.attrs["einsum_str"], c.attrs["kernel_shape"],
                  **keywords(bias_shape=(c.attrs["bias_shape"], None)))


def nnx_einsum_weights(w: dict, attrs) -> dict:
    """from_ir of the NnxEinsum helpers: the kernel as it is, the bias when there is one."""
    return {"kernel": w["W"], **({"bias": w["B"]} if "B" in w else {})}


def write_top_k(c: OpCall, top_k: str) -> ast.expr:
    """`top_k(x, k)` (the target's, along the last axis, the largest), else the helper along `axis`, the smallest
    when not `largest`."""
    axis, largest = c.attrs.get("axis", -1), c.attrs.get("largest", True)
    if known(axis) == -1 and known(largest) is True:
        return P.call(top_k, c.inputs[0], c.attrs["k"])
    return P.call("top_k", c.inputs[0], c.attrs["k"], **keywords(axis=(axis, -1), largest=(largest, True)))


def write_conv_function(c: OpCall) -> ast.expr:
    """F.conv2d(x, weight, ...) as the `functional_conv` helper (KERAS_CONV, JAX_CONV)."""
    return P.call("functional_conv", *c.inputs[:2], **keywords(
        bias=(c.inputs[2], None), stride=(c.attrs["stride"], 1), padding=(c.attrs["padding"], 0),
        dilation=(c.attrs["dilation"], 1), groups=(c.attrs["groups"], 1)))


def extract_patches_helper(transpose: str) -> dict:
    """The extract_patches helper for arrays whose axes are reordered by the method `transpose`."""
    return {"extract_patches": definition(EXTRACT_PATCHES.format(transpose=transpose))}


MERGE = "merge"
#: a Keras merge layer's list of tensors combined pairwise (they broadcast: Multiply of a feature map and a gate)
MERGE_HELPER = {MERGE: definition('''def merge(tensors, combine):
    """A Keras merge layer (Add, Multiply, Maximum, ...): `combine` applied across the list, pair by pair."""
    out = tensors[0]
    for tensor in tensors[1:]:
        out = combine(out, tensor)
    return out''')}


def write_merge(c: OpCall, fn: Callable[[str], str]) -> ast.expr:
    """`merge(tensors, <the target's add / multiply / ...>)`, divided by the count for an average; `fn(name)` is
    the target's function of NumPy's name."""
    average = c.attrs["combine"] == "average"
    merged = P.call(MERGE, c.inputs[0], P.name(fn("add" if average else c.attrs["combine"])))
    return P.binop(merged, "/", P.call("len", c.inputs[0])) if average else merged


def write_merge_arithmetic(table: CodeTable) -> None:
    """Keras' Subtract of a list of two tensors and Rescaling, written with Python's operators (every target)."""
    table.writes("Difference", "(the - operator)")(
        lambda c: P.binop(P.subscript(c.inputs[0], 0), "-", P.subscript(c.inputs[0], 1)))
    table.writes("Rescale", "(the * and + operators)")(lambda c: P.binop(
        P.binop(c.inputs[0], "*", c.attrs["scale"]), "+", c.attrs["offset"]) if known(c.attrs["offset"]) != 0 else
        P.binop(c.inputs[0], "*", c.attrs["scale"]))


def _copied(c: OpCall, ns: str) -> ast.expr:
    """The input itself, or the copy the source made of it (`clone()`; `contiguous()` copies a strided view only),
    for arrays written in place."""
    if c.attrs.get("copy") == "always":
        return P.method(c.inputs[0], "copy")
    if c.attrs.get("copy") == "if_strided":
        return P.call(f"{ns}.ascontiguousarray", c.inputs[0])
    return c.inputs[0]


def _index(*items) -> ast.expr:
    """A subscript's index of `...`, `:` and None (a new axis) items."""
    parts = [ast.Constant(Ellipsis) if i == "..." else P.slice_() if i == ":" else ast.Constant(None) for i in items]
    return ast.Tuple(parts, ast.Load())


def dtype_keyword(c, like: ast.expr | None = None) -> dict:
    """`dtype=` of a creation call, when the source gives one; else, for a call making values like the array
    `like`, that array's dtype."""
    if known(c.attrs.get("dtype")) is not None:
        return {"dtype": c.attrs["dtype"]}
    return {"dtype": ast.Attribute(like, "dtype", ast.Load())} if like is not None else {}


def _axes(axes):
    """A list of axes as one axis or a tuple."""
    return axes[0] if isinstance(axes, list) and len(axes) == 1 else tuple(axes) if isinstance(axes, list) else axes


def shape_argument(items):
    """A varargs shape (`view(b, -1)`, `view(shape)`, `view(*shape)`) as one expression."""
    if not isinstance(items, list):
        return items
    if len(items) == 1:
        only = items[0]
        if isinstance(only, ast.Starred):
            return only.value
        return P.lit((known(only),)) if isinstance(known(only), int) else only
    return ast.Tuple(list(items), ast.Load())


def expanded_shape(x: ast.expr, sizes: list, shape: Callable) -> ast.expr:
    """The target shape of `x.expand(*sizes)`: each -1 replaced by x's size of that dim (`shape(x)[i]`, counted
    from the end, as expand aligns trailing dims); a shape given as one expression is taken as it is."""
    if not isinstance(sizes, list):
        return sizes  # one shape expression (NumPy's broadcast_to): sizes as they are
    n = len(sizes)
    return ast.Tuple([P.subscript(shape(x), i - n) if known(s) == -1 else s for i, s in enumerate(sizes)], ast.Load())


def leading_zero_pads(x: ast.expr, trailing: list, ndim: str) -> ast.expr:
    """`[[0, 0]] * (ndim(x) - k) + trailing`: pad widths for every dim of `x` from those of its last k dims."""
    leading = P.binop(P.lit([[0, 0]]), "*", P.binop(P.call(ndim, x), "-", len(trailing)))
    return P.binop(leading, "+", ast.List(list(trailing), ast.Load()))


# -- what the two targets' layers share ----------------------------------------------------------------
def conv_weights(w, attrs) -> dict:
    """An IR convolution's weights as Keras' and Flax's: the kernel, OIHW (Conv) or (in, out/group, k...)
    (ConvTranspose), with its two leading axes moved last and swapped ((k..., in/group, out) / (k..., out, in))."""
    out = {"kernel": np.ascontiguousarray(np.moveaxis(w["W"], (0, 1), (-1, -2)))}
    if "B" in w:
        out["bias"] = w["B"]
    return out


def conv_weights_to_ir(w, attrs) -> dict:
    """The inverse of `conv_weights`: a channels-last kernel (k..., in/group, out) or (k..., out, in) -> the IR's."""
    out = {"W": np.ascontiguousarray(np.moveaxis(w["kernel"], (-1, -2), (0, 1)))}
    if "bias" in w:
        out["B"] = w["bias"]
    return out


def separable_conv_writer(write_conv: Callable, sequential: Callable, wrap: Callable, weights: Callable):
    """(write, from_ir) of a separable convolution (Keras' SeparableConv): the two convolutions it is, a depthwise
    one without bias, then a 1x1 one with the bias, written by the target's Conv row in the target's sequential
    container, which `wrap(layer, attrs)` wraps as the Conv row wraps a convolution (layout, activation); its
    weights are the two convolutions' in that order."""
    def write(call: OpCall) -> ast.expr:
        a = call.attrs
        ones = (1,) * known(a["rank"])
        inner = {k: v for k, v in a.items() if k not in ("layout", "activation")}
        depthwise = {**inner, "filters": None, "bias": False}
        pointwise = {k: v for k, v in inner.items() if k != "depth_multiplier"}
        pointwise.update(in_channels=None, kernel_shape=ones, strides=ones, pads="valid", dilations=ones, group=1)
        convs = [write_conv(OpCall("Conv", attrs=depthwise)), write_conv(OpCall("Conv", attrs=pointwise))]
        return wrap(sequential(ast.List(convs, ast.Load())), a)

    def from_ir(parts: list, attrs) -> list:
        return [weights(w, attrs) for w in parts]
    return write, from_ir


def mode_padded(write_conv: Callable, sequential: Callable, table: CodeTable) -> Callable:
    """A Conv writer taking a convolution that pads in another mode than zeros (PyTorch's `padding_mode`, as
    NumPy's name in `padding_mode`): that pad (the table's Pad writer), then the convolution without padding."""
    def write(call: OpCall) -> ast.expr:
        a = call.attrs
        mode = a.get("padding_mode", "constant")
        if mode == "constant":
            return write_conv(call)
        widths = pairs(a["pads"], known(a["rank"]))
        if widths is NOT_LITERAL:
            raise Refused(f"padding_mode {mode!r} with padding given by a variable or by name")
        pad = OpCall("Pad", attrs={"trailing_pads": [ast.List([ast.Constant(w)] * 2, ast.Load()) for w in widths],
                                   "value": 0.0, "mode": mode})
        conv = OpCall("Conv", attrs={**{k: v for k, v in a.items() if k != "padding_mode"}, "pads": 0})
        return sequential(ast.List([table.write_layer(pad), write_conv(conv)], ast.Load()))
    return write


#: an IR Dense's weights as Keras' and Flax's: the kernel [in, out] as it is
DENSE_WEIGHTS = Renamed(kernel="W", bias="B")
dense_weights = DENSE_WEIGHTS.from_ir


def write_channel_prelu(call: OpCall) -> ast.expr:
    """`ChannelPReLU(...)`: the helper class each target writes with the translation, holding its `slope`."""
    return P.call("ChannelPReLU", **keywords(num_parameters=(call.attrs["num_parameters"], 1),
                                             init=(call.attrs["init"], 0.25)))


def write_bilinear(call: OpCall, **extra) -> ast.expr:
    """`Bilinear(in1, in2, out, ...)`: the helper class each target writes with the translation (`extra`: the
    target's own keywords, NNX's rngs)."""
    a = call.attrs
    return P.call("Bilinear", a["in1_features"], a["in2_features"], a["out_features"],
                  **keywords(use_bias=(value_of(a["bias"]), True)), **extra)


def bilinear_weights(w, attrs) -> dict:
    """from_ir of the Bilinear helpers: the kernel (out, in1, in2) as PyTorch holds it, the bias if any."""
    return {"kernel": w["W"], **({"bias": w["B"]} if "B" in w else {})}


def bilinear_helper(base: str, ns: str, param: str, call: str, params: str = "", read: str = "") -> str:
    """The Bilinear helper class of a target: `base` its layer class, `ns` its array namespace, `param` how it makes
    a weight of `{shape}` uniform in (-bound, bound) as PyTorch's, `call` its call method's name, `params` the
    constructor's own parameters, `read` what reads a weight's array (NNX's `[...]`)."""
    return (
        f"class Bilinear({base}):\n"
        f"    \"\"\"PyTorch's nn.Bilinear: each output feature o is x1 . kernel[o] . x2 (+ bias[o]), kernel of shape\n"
        f"    (out_features, in1_features, in2_features).\"\"\"\n\n"
        f"    def __init__(self, in1_features, in2_features, out_features, use_bias=True{params}):\n"
        f"        super().__init__()\n"
        f"        bound = 1 / in1_features ** 0.5\n"
        f"        self.kernel = {param.format(shape='(out_features, in1_features, in2_features)')}\n"
        f"        self.bias = {param.format(shape='(out_features,)')} if use_bias else None\n\n"
        f"    def {call}(self, x1, x2):\n"
        f"        y = {ns}.einsum('...i,oij,...j->...o', x1, self.kernel{read}, x2)\n"
        f"        return y if self.bias is None else y + self.bias{read}\n")


def prelu_weights(w, attrs) -> dict:
    return {"slope": w["slope"]}


def integer_scale(attrs, who: str):
    """An upsampling's scale_factor as an int, or the variable holding it; Refused unless it is one."""
    scale = known(attrs["scale"])
    if scale is None:
        raise Refused("upsampling without scale_factor")
    if isinstance(scale, float) and scale.is_integer():
        return int(scale)
    if scale is NOT_LITERAL:
        return attrs["scale"]
    if not isinstance(scale, int):
        raise Refused(f"scale_factor={scale!r} ({who} upsamples by integer factors)")
    return scale


#: the layer of the TorchMultiheadAttention helpers (Keras, Flax) per IR projection
ATTENTION_LAYERS = ("q_proj", "k_proj", "v_proj", "out_proj")


#: the helpers written for another framework's attention layer -> (the attributes passed first, then the options
#: and their defaults, passed by name when they differ)
ATTENTION_HELPERS = {
    "KerasMultiHeadAttention": (("num_heads", "key_dim"), {"value_dim": None, "dropout": 0.0, "use_bias": True}),
    "NnxMultiHeadAttention": (("num_heads", "in_features"), {"qkv_features": None, "out_features": None,
                                                             "in_kv_features": None, "dropout_rate": 0.0,
                                                             "use_bias": True})}


def attention_helper(helper: str, **extra) -> Callable[[OpCall], ast.expr]:
    """The writer of `helper(...)` (ATTENTION_HELPERS), with `extra` keywords (Flax's rngs)."""
    leading, options = ATTENTION_HELPERS[helper]

    def write(c: OpCall) -> ast.expr:
        return P.call(helper, *[c.attrs[k] for k in leading], **changed(c.attrs, options), **extra)
    return write


def per_head_projections_to_ir(w: dict, layers: tuple) -> dict:
    """Per-head projection kernels (Keras' and NNX's attention: (in, heads, dim) for query/key/value, (heads, dim,
    out) for the output; biases (heads, dim) and (out,)) of the four `layers`, in the IR's roles order, as the IR's
    [in, out] weights and flat biases."""
    out = {}
    for role, layer in zip(PROJECTIONS, layers):
        kernel = w[f"{layer}.kernel"]
        out[f"{role}_weight"] = kernel.reshape(-1, kernel.shape[-1]) if role == "output" else \
            kernel.reshape(kernel.shape[0], -1)
        if f"{layer}.bias" in w:
            out[f"{role}_bias"] = w[f"{layer}.bias"].reshape(-1)
    return out


def attention_weights(w: dict, attrs, layers=ATTENTION_LAYERS) -> dict:
    """The IR's query/key/value/output weights and biases ([in, out]) -> the attention helper's projection kernels
    and biases (its projection `layers` in that order)."""
    out = {f"{layer}.kernel": w[f"{role}_weight"] for role, layer in zip(PROJECTIONS, layers)}
    out.update({f"{layer}.bias": w[f"{role}_bias"] for role, layer in zip(PROJECTIONS, layers)
                if f"{role}_bias" in w})
    return out


# -- helper functions both targets write with a translation (PyTorch's functional layers) -------------------
LAYER_NORM = '''def layer_norm(x, axes, weight=None, bias=None, eps=1e-05):
    """PyTorch's F.layer_norm: `x` normalised over its last `axes` axes, then scaled and shifted."""
    axes = tuple(range(-axes, 0))
    x = (x - {ns}.mean(x, axis=axes, keepdims=True)) * {rsqrt}({ns}.var(x, axis=axes, keepdims=True) + eps)
    x = x if weight is None else x * weight
    return x if bias is None else x + bias
'''
ATTENTION = '''def scaled_dot_product_attention(query, key, value, attn_mask=None, is_causal=False, scale=None{extra}):
    """PyTorch's F.scaled_dot_product_attention: softmax(query keyᵀ scale + mask) value over the last two axes;
    a boolean mask keeps the positions where it is True, is_causal keeps those at or before the query's."""
    scale = query.shape[-1] ** -0.5 if scale is None else scale
    scores = {ns}.matmul(query, {ns}.swapaxes(key, -1, -2)) * scale
    if is_causal:
        attn_mask = {ns}.tril({ns}.ones((query.shape[-2], key.shape[-2]), dtype="bool"))
    if attn_mask is not None and attn_mask.dtype == "bool":
        scores = {ns}.where(attn_mask, scores, float("-inf"))
    elif attn_mask is not None:
        scores = scores + attn_mask
    weights = {softmax}(scores, axis=-1)
    if attn_mask is not None:  # a query masked from every key attends to nothing, as in PyTorch
        weights = {ns}.where({ns}.all(scores == float("-inf"), axis=-1, keepdims=True), 0.0, weights){dropout}
    return {ns}.matmul(weights, value)
'''


SHUFFLES = '''def pixel_shuffle(x, factor):
    """PyTorch's F.pixel_shuffle: (..., channels x factor², height, width) -> (..., channels, height x factor,
    width x factor)."""
    *batch, channels, height, width = {ns}.shape(x)
    k = len(batch)
    x = {ns}.reshape(x, (*batch, channels // factor ** 2, factor, factor, height, width))
    x = {ns}.transpose(x, (*range(k + 1), k + 3, k + 1, k + 4, k + 2))
    return {ns}.reshape(x, (*batch, channels // factor ** 2, height * factor, width * factor))


def channel_shuffle(x, groups):
    """PyTorch's nn.ChannelShuffle: the channels (axis 1) as (groups, channels per group), transposed."""
    batch, channels, *rest = {ns}.shape(x)
    x = {ns}.reshape(x, (batch, groups, channels // groups, *rest))
    return {ns}.reshape({ns}.swapaxes(x, 1, 2), (batch, channels, *rest))


def pixel_unshuffle(x, factor):
    """PyTorch's F.pixel_unshuffle: (..., channels, height x factor, width x factor) -> (..., channels x factor²,
    height, width)."""
    *batch, channels, height, width = {ns}.shape(x)
    k = len(batch)
    x = {ns}.reshape(x, (*batch, channels, height // factor, factor, width // factor, factor))
    x = {ns}.transpose(x, (*range(k + 1), k + 2, k + 4, k + 1, k + 3))
    return {ns}.reshape(x, (*batch, channels * factor ** 2, height // factor, width // factor))
'''
ADAPTIVE_POOL = '''def adaptive_pool(x, output_size, reduce):
    """PyTorch's adaptive pooling over the last len(output_size) axes (None keeps an axis): output i of an axis
    of n inputs reduces inputs floor(i n / size) to ceil((i + 1) n / size)."""
    for axis, size in enumerate(output_size, start=len(x.shape) - len(output_size)):
        n = x.shape[axis]
        if size is None or size == n:
            continue
        cells = [x[(slice(None),) * axis + (slice(i * n // size, -(-(i + 1) * n // size)),)] for i in range(size)]
        x = {ns}.concatenate([reduce(cell, axis=axis, keepdims=True) for cell in cells], axis=axis)
    return x
'''
INTERPOLATE = '''def interpolate(x, size=None, scale_factor=None, mode="nearest", align_corners=False):
    """PyTorch's F.interpolate over the axes after the channels: to `size`, or by `scale_factor`, sampling where
    PyTorch samples ("nearest", "nearest-exact", or linearly along each axis, half-pixel or corner-aligned)."""
    spatial = range(2, len(x.shape))
    sizes = size if isinstance(size, (tuple, list)) else [size] * len(spatial)
    factors = scale_factor if isinstance(scale_factor, (tuple, list)) else [scale_factor] * len(spatial)
    for axis, out, factor in zip(spatial, sizes, factors):
        n = x.shape[axis]
        out = int(n * factor) if out is None else int(out)
        step = 1 / factor if factor else n / out
        positions = {ns}.arange(out, dtype="float32")
        if mode in ("nearest", "nearest-exact"):
            offset = 0.5 if mode == "nearest-exact" else 0.0
            index = {ns}.minimum({ns}.floor((positions + offset) * step), n - 1)
            x = {ns}.take(x, {cast}(index, "int32"), axis=axis)
            continue
        if align_corners:
            source = positions * ((n - 1) / (out - 1) if out > 1 else 0.0)
        else:
            source = {ns}.maximum((positions + 0.5) * step - 0.5, 0.0)
        x = sample_linearly(x, axis, source)
    return x
'''
SAMPLE_LINEARLY = '''def sample_linearly(x, axis, source):
    """x's values along `axis` at the fractional positions `source` (within the axis): each the weighted mean of
    the two entries around it."""
    n = x.shape[axis]
    low = {ns}.floor(source)
    weight = {ns}.reshape(source - low, [source.shape[0] if a == axis else 1 for a in range(len(x.shape))])
    low = {cast}(low, "int32")
    high = {ns}.minimum(low + 1, n - 1)
    return {ns}.take(x, low, axis=axis) * (1 - weight) + {ns}.take(x, high, axis=axis) * weight
'''
GATHER = '''def gather(x, dim, index):
    """PyTorch's torch.gather: x's entries at `index` along `dim` (index may be shorter than x on other axes)."""
    dim = dim % len(x.shape)
    x = x[tuple(slice(None) if axis == dim else slice(0, n) for axis, n in enumerate(index.shape))]
    return {ns}.take_along_axis(x, index, axis=dim)
'''


SCATTER = '''def scatter(x, dim, index, src):
    """PyTorch's scatter: x with `src` (a tensor shaped like `index`, or a number) written where `index` says along
    `dim`, each place once (where PyTorch's result is defined); index as long as x on the other axes."""
    dim = dim % len(x.shape)
    hot = {ns}.moveaxis({one_hot}(index, x.shape[dim], dtype=x.dtype), -1, dim + 1)
    values = {ns}.expand_dims({ns}.broadcast_to({cast}(src, x.dtype), index.shape), dim + 1)
    hit = {ns}.sum(hot, axis=dim) > 0
    return {ns}.where(hit, {ns}.sum(hot * values, axis=dim), x)
'''


RESIZE = '''def resize(x, shape, method="linear", antialias=True):
    """jax.image.resize to `shape`: each axis whose size changes sampled at half-pixel centres, nearest or
    linearly; its antialiasing, which acts only when a linear resize shrinks an axis, is not translated."""
    for axis, out in enumerate(shape):
        n, out = x.shape[axis], int(out)
        if out == n:
            continue
        if antialias and out < n and method != "nearest":
            raise NotImplementedError("jax.image.resize shrinking linearly with antialias=True is not translated")
        positions = ({ns}.arange(out, dtype="float32") + 0.5) * (n / out)
        if method == "nearest":
            x = {ns}.take(x, {cast}({ns}.minimum({ns}.floor(positions), n - 1), "int32"), axis=axis)
            continue
        x = sample_linearly(x, axis, {ns}.clip(positions - 0.5, 0.0, n - 1))
    return x
'''


PACKED = '''def pack_padded_sequence(x, lengths, batch_first=False, enforce_sorted=True):
    """PyTorch's pack_padded_sequence, kept padded: the batch-major sequences and their lengths, which the
    recurrent helpers read (each sequence's steps past its length skipped) and pad_packed_sequence unpacks."""
    return {{"padded": x if batch_first else {ns}.swapaxes(x, 0, 1), "lengths": {cast}({as_array}(lengths), "int32")}}


def pad_packed_sequence(sequence, batch_first=False, padding_value=0.0, total_length=None):
    """PyTorch's pad_packed_sequence: (the sequences as long as the longest or `total_length`, steps past each
    one's length set to `padding_value`; their lengths)."""
    x, lengths = sequence["padded"], sequence["lengths"]
    steps = int(total_length or {ns}.max(lengths))
    x = x[:, :steps]
    if steps > x.shape[1]:
        x = {ns}.pad(x, [(0, 0), (0, steps - x.shape[1])] + [(0, 0)] * (len(x.shape) - 2))
    kept = {ns}.arange(steps)[None, :] < lengths[:, None]
    x = {ns}.where({ns}.reshape(kept, tuple(kept.shape) + (1,) * (len(x.shape) - 2)), x, padding_value)
    return (x if batch_first else {ns}.swapaxes(x, 0, 1)), lengths
'''


WINDOWS = '''def windows(x, axis, size, step):
    """PyTorch's Tensor.unfold: the windows of `size` along `axis`, `step` apart, each window's entries along a
    new last axis."""
    axis = axis % len(x.shape)
    count = (x.shape[axis] - size) // step + 1
    index = {ns}.reshape({ns}.arange(count)[:, None] * step + {ns}.arange(size)[None, :], (-1,))
    found = {ns}.take(x, index, axis=axis)
    found = {ns}.reshape(found, tuple(x.shape[:axis]) + (count, size) + tuple(x.shape[axis + 1:]))
    return {ns}.moveaxis(found, axis + 1, -1)
'''


LOCAL_RESPONSE_NORM = '''def local_response_norm(x, size, alpha=1e-4, beta=0.75, k=1.0):
    """PyTorch's local response normalization over the channels (axis 1): x divided by (k + alpha times the mean
    of the squares over `size` neighbouring channels, zeros past the edges) to the power beta."""
    channels = x.shape[1]
    widths = [(0, 0), (size // 2, (size - 1) // 2)] + [(0, 0)] * (len(x.shape) - 2)
    squares = {ns}.pad({ns}.square(x), widths)
    total = sum(squares[:, i:i + channels] for i in range(size))
    return x / (k + alpha * total / size) ** beta
'''


JAX_ATTENTION = '''def dot_product_attention(query, key, value, bias=None, mask=None, scale=None, is_causal=False):
    """JAX's jax.nn.dot_product_attention on (batch, steps, heads, features): a score masked out (by `mask`, False
    where a query may not attend, or causally) is JAX's large negative number, so a query masked from every key
    attends to all evenly, as in JAX."""
    if is_causal:
        causal = {ns}.tril({ns}.ones((query.shape[-3], key.shape[-3]), dtype="bool"))
        mask = causal if mask is None else {ns}.logical_and(mask, causal)
    if mask is not None:
        bias = {ns}.where(mask, 0.0 if bias is None else bias, -0.7 * 3.4028234663852886e38)
    out = scaled_dot_product_attention({ns}.swapaxes(query, -3, -2), {ns}.swapaxes(key, -3, -2),
                                       {ns}.swapaxes(value, -3, -2), attn_mask=bias, scale=scale)
    return {ns}.swapaxes(out, -3, -2)
'''


CAUSAL_MASK = '''def make_causal_mask(x, extra_batch_dims=0, dtype="float32"):
    """Flax's nnx.make_causal_mask: (*x.shape[:-1], 1, steps, steps), 1 where a step may attend (at or before
    itself), as `dtype`, after `extra_batch_dims` axes of 1."""
    n = x.shape[-1]
    mask = {ns}.broadcast_to({cast}({ns}.tril({ns}.ones((n, n))), dtype), tuple(x.shape[:-1]) + (1, n, n))
    return {ns}.reshape(mask, (1,) * extra_batch_dims + tuple(mask.shape))
'''


TOP_K = '''def top_k(x, k, axis=-1, largest=True):
    """The k largest (or smallest) entries along `axis` and their indices, as PyTorch's torch.topk."""
    values, indices = {top_k}({ns}.moveaxis(x if largest else -x, axis, -1), k)
    return {ns}.moveaxis(values if largest else -values, -1, axis), {ns}.moveaxis(indices, -1, axis)
'''


CROSS_ENTROPY = '''def cross_entropy(logits, target, ignore_index=-100, reduction="mean"):
    """PyTorch's F.cross_entropy of class scores (classes on axis 1) against class indices: each target's negative
    log-probability, those equal to ignore_index left out; their mean, their sum, or each ("none")."""
    keep = target != ignore_index
    index = {ns}.expand_dims({ns}.where(keep, target, 0), 1)
    picked = {ns}.take_along_axis({log_softmax}(logits, axis=1), index, axis=1)
    losses = {ns}.where(keep, -{ns}.squeeze(picked, 1), 0.0)
    if reduction == "none":
        return losses
    total = {ns}.sum(losses)
    return total if reduction == "sum" else total / {ns}.sum({cast}(keep, losses.dtype))
'''


MAX_POOL_WITH_INDICES = '''def max_pool_with_indices(x, kernel_size, strides):
    """PyTorch's max pooling with return_indices=True over a channels-first x, without padding: the maxima and,
    within each channel plane, the flat position of each (the first maximum in window order, as PyTorch's)."""
    spatial = x.shape[2:]
    out = [(n - k) // s + 1 for n, k, s in zip(spatial, kernel_size, strides)]
    values = positions = None
    for offset in itertools.product(*(range(k) for k in kernel_size)):
        window = tuple(slice(o, o + (m - 1) * s + 1, s) for o, m, s in zip(offset, out, strides))
        tap = x[(slice(None), slice(None)) + window]
        coords = {ns}.meshgrid(*({ns}.arange(m) * s + o for m, s, o in zip(out, strides, offset)), indexing="ij")
        position = sum(c * math.prod(spatial[i + 1:]) for i, c in enumerate(coords))
        if values is None:
            values, positions = tap, position + {ns}.zeros_like(tap, dtype="int32")
            continue
        taken = tap > values
        values, positions = {ns}.where(taken, tap, values), {ns}.where(taken, position, positions)
    return values, positions
'''


MAX_UNPOOL = '''def max_unpool(x, indices, kernel_size, strides, output_size=None):
    """PyTorch's max unpooling of a channels-first x, without padding: each value written at the position of its
    channel plane that `indices` names (max pooling's return_indices), zeros elsewhere; to `output_size` (its
    trailing dims) when given."""
    rank = len(kernel_size)
    spatial = list(output_size)[-rank:] if output_size is not None else \\
        [(m - 1) * s + k for m, s, k in zip(x.shape[2:], strides, kernel_size)]
    plane = math.prod(spatial)
    rows = {ns}.shape(x)[0] * x.shape[1]
    starts = {ns}.reshape({ns}.arange(rows) * plane, (-1, x.shape[1]) + (1,) * rank)  # each plane's first position
    positions = {ns}.reshape({cast}(indices, "int32") + starts, (-1,))
    flat = {scatter}
    return {ns}.reshape(flat, (-1, x.shape[1], *spatial))
'''


def pool_index_helpers(ns: str, cast: str) -> dict:
    """The helper functions of namespace `ns` ("ops", "jnp") for PyTorch's max pooling with indices and its
    unpooling: Keras scatters with ops.scatter_update, JAX with an indexed update."""
    zeros = f"{ns}.zeros((rows * plane,), x.dtype)"
    scatter = f"ops.scatter_update({zeros}, ops.reshape(positions, (-1, 1)), ops.reshape(x, (-1,)))" \
        if ns == "ops" else f"{zeros}.at[positions].set(jnp.ravel(x))"
    return {"max_pool_with_indices": definition(MAX_POOL_WITH_INDICES.format(ns=ns)),
            "max_unpool": definition(MAX_UNPOOL.format(ns=ns, cast=cast, scatter=scatter))}


#: code op -> the pool_index_helpers function computing it
POOL_INDEX_HELPERS = {"MaxPoolWithIndices": "max_pool_with_indices", "MaxUnpool": "max_unpool"}


def write_pool_index_layer(c: OpCall) -> ast.expr:
    """A max pool returning its indices, or an unpooling, held by a layer attribute: the helper function with its
    window fixed (`partial`)."""
    return P.call("partial", P.name(POOL_INDEX_HELPERS[c.op]), kernel_size=c.attrs["kernel_shape"],
                  strides=c.attrs["strides"])


def write_pool_index_function(c: OpCall) -> ast.expr:
    extra = keywords(output_size=(c.attrs.get("output_size"), None)) if c.op == "MaxUnpool" else {}
    return P.call(POOL_INDEX_HELPERS[c.op], *c.inputs, c.attrs["kernel_shape"], c.attrs["strides"], **extra)


def function_helpers(ns: str, rsqrt: str, softmax: str, cast: str, dropout: str = "", random_source: str = "") -> dict:
    """The helper functions of namespace `ns` (`rsqrt`, `softmax`, `cast`: its functions) for PyTorch's functional
    layers (rules/code.py `definition`); `dropout` applies the attention's dropout (`weights` by `dropout_p`),
    where the target can, drawing from the parameter `random_source` when the target needs one (NNX's rngs)."""
    extra = ", dropout_p=0.0" + (f", {random_source}=None" if random_source else "") if dropout else ""
    fill = {"ns": ns, "rsqrt": rsqrt, "softmax": softmax, "cast": cast, "extra": extra,
            "one_hot": "ops.one_hot" if ns == "ops" else "jax.nn.one_hot",
            "top_k": "ops.top_k" if ns == "ops" else "jax.lax.top_k",
            "as_array": "ops.convert_to_tensor" if ns == "ops" else f"{ns}.asarray",
            "log_softmax": softmax.replace("softmax", "log_softmax"),
            "dropout": f"\n    if dropout_p:\n        weights = {dropout}" if dropout else ""}
    pixel_shuffle, channel_shuffle, pixel_unshuffle = SHUFFLES.format(**fill).split("\n\n\n")
    return {"layer_norm": definition(LAYER_NORM.format(**fill)),
            "scaled_dot_product_attention": definition(ATTENTION.format(**fill)),
            "pixel_shuffle": definition(pixel_shuffle), "pixel_unshuffle": definition(pixel_unshuffle),
            "channel_shuffle": definition(channel_shuffle),
            "adaptive_pool": definition(ADAPTIVE_POOL.format(**fill)), "gather": definition(GATHER.format(**fill)),
            "interpolate": definition(INTERPOLATE.format(**fill)),
            "sample_linearly": definition(SAMPLE_LINEARLY.format(**fill)), **sampling_helpers(ns, cast, definition),
            "scatter": definition(SCATTER.format(**fill)),
            "cross_entropy": definition(CROSS_ENTROPY.format(**fill)), "top_k": definition(TOP_K.format(**fill)),
            "resize": definition(RESIZE.format(**fill)), "windows": definition(WINDOWS.format(**fill)),
            "local_response_norm": definition(LOCAL_RESPONSE_NORM.format(**fill)),
            "dot_product_attention": definition(JAX_ATTENTION.format(**fill)),
            "make_causal_mask": definition(CAUSAL_MASK.format(**fill)),
            **dict(zip(("pack_padded_sequence", "pad_packed_sequence"), map(definition, PACKED.format(
                **fill).split("\n\n\n"))))}


def _write_layer_norm_function(c: OpCall) -> ast.expr:
    """`layer_norm(x, axes, weight, bias, eps)` (the helper), its defaults left out."""
    x, weight, bias = c.inputs
    return P.call("layer_norm", x, c.attrs["axes"], **keywords(weight=(weight, None), bias=(bias, None),
                                                              eps=(c.attrs["epsilon"], 1e-05)))


def _write_attention_function(c: OpCall, dropout: bool, random_source: str | None = None) -> ast.expr:
    """`scaled_dot_product_attention(q, k, v, ...)` (the helper); a dropout only where the helper applies it, with
    the random source passed where the target needs one."""
    q, k, v, mask = c.inputs
    no_dropout = known(c.attrs["dropout"]) in (0, 0.0)
    if not dropout and not no_dropout:
        raise Refused("attention dropout (the written helper has no random numbers; 0.0 in inference)")
    extra = keywords(dropout_p=(c.attrs["dropout"], 0.0)) if dropout else {}
    if dropout and random_source and not no_dropout:
        extra[random_source.rsplit(".", 1)[-1]] = P.name(random_source)
    return P.call("scaled_dot_product_attention", q, k, v, **keywords(
        attn_mask=(mask, None), is_causal=(c.attrs["is_causal"], False), scale=(c.attrs["scale"], None)), **extra)


def transformer_layer_weights(norm: tuple[str, str]):
    """from_ir of the transformer helpers: the IR's `self_attn.*` (MultiHeadAttention's roles), `linear1.W`, ...
    and `norm1.scale` / `.B` -> the helper's attention projections, Dense/Linear kernels and the norms' weights
    (named `norm` = (scale, offset): Keras' gamma/beta, Flax's scale/bias); `layers.{i}.` prefixes kept."""
    def from_ir(w: dict, attrs) -> dict:
        out, prefixes = {}, sorted({k[:k.index("self_attn.")] for k in w if "self_attn." in k})
        for prefix in prefixes:
            helper = "stack." + prefix[len("layers."):] if prefix else ""
            for name in ("self_attn", "multihead_attn"):  # the decoder's attention over the memory: the second
                attention = {k[len(f"{prefix}{name}."):]: v for k, v in w.items() if k.startswith(f"{prefix}{name}.")}
                if attention:
                    out.update({f"{helper}{name}.{k}": v for k, v in attention_weights(attention, attrs).items()})
            for layer in ("linear1", "linear2"):
                out.update({f"{helper}{layer}.{name}": w[f"{prefix}{layer}.{role}"]
                            for name, role in (("kernel", "W"), ("bias", "B")) if f"{prefix}{layer}.{role}" in w})
            out.update(_norm_weights(w, prefix, helper, ("norm1", "norm2", "norm3"), norm))
        out.update(_norm_weights(w, "", "", ("norm",), norm))
        return out
    return from_ir


def _norm_weights(w, prefix, helper, norms, names) -> dict:
    return {f"{helper}{n}.{name}": w[f"{prefix}{n}.{role}"] for n in norms
            for name, role in zip(names, ("scale", "B")) if f"{prefix}{n}.{role}" in w}


#: nn.TransformerEncoderLayer's options and defaults, as the transformer helpers take them
TRANSFORMER_DEFAULTS = {"dim_feedforward": 2048, "dropout": 0.1, "activation": "relu", "layer_norm_eps": 1e-05,
                        "batch_first": False, "norm_first": False, "bias": True}


#: the transformer ops of model code: the encoder's and decoder's layers and stacks
TRANSFORMER_OPS = ("TransformerEncoderLayer", "TransformerEncoder", "TransformerDecoderLayer", "TransformerDecoder")


def write_transformer(c: OpCall, **extra) -> ast.expr:
    """`TorchTransformerEncoderLayer(d_model, nhead, ...)` or `TorchTransformerEncoder(num_layers, ...)` (the
    helpers; the decoder's likewise), with `extra` keywords (Flax's rngs)."""
    a = c.attrs
    options = changed(a, TRANSFORMER_DEFAULTS)
    if not c.op.endswith("Layer"):
        return P.call(f"Torch{c.op}", a["num_layers"], **keywords(norm_eps=(value_of(a["norm_eps"]), None)),
                      d_model=a["d_model"], nhead=a["nhead"], **options, **extra)
    return P.call(f"Torch{c.op}", a["d_model"], a["nhead"], **options, **extra)
