"""JAX primitives -> IR: how the equations of a jaxpr (`jax.make_jaxpr`) read into IR ops.

Namespace `jax`: primitive names as jaxprs print them. A converter takes (importer, equation, *operand values)
and returns the output value(s); `equation.params` holds the primitive's parameters (dimension numbers,
axes, padding). Calls (`jit`/`pjit`, `custom_jvp_call`, `custom_vjp_call`) are inlined by the importer;
the activations jax.nn defines with a custom derivative are read as their IR op (`relu` -> Relu).
"""

from __future__ import annotations

import functools
import math

import numpy as np

from tensorbridge.errors import ModelError
from tensorbridge.ir import dtypes
from tensorbridge.rules.core import ImportRule
from tensorbridge.rules.flax.base import R

primitive = functools.partial(R.imports, kind="jax")


def _row(names: str, ir_op: str, **attrs) -> None:
    def convert(imp, eqn, *xs):
        return imp.emit(ir_op, list(xs), dict(attrs) or None)
    R.add_import(ImportRule("jax", tuple(names.split()), (ir_op,), convert=convert, ir_op=ir_op, attrs=attrs))


for _names, _op in {"add add_any": "Add", "sub": "Sub", "mul": "Mul", "max": "Max", "min": "Min", "pow": "Pow",
                    "eq": "Equal", "lt": "Less", "le": "LessOrEqual", "gt": "Greater", "ge": "GreaterOrEqual",
                    "neg": "Neg", "exp": "Exp", "log": "Log", "tanh": "Tanh", "logistic": "Sigmoid",
                    "sqrt": "Sqrt", "abs": "Abs", "sign": "Sign", "floor": "Floor", "ceil": "Ceil", "sin": "Sin",
                    "cos": "Cos", "tan": "Tan", "asin": "Asin", "acos": "Acos", "atan": "Atan", "sinh": "Sinh",
                    "cosh": "Cosh", "asinh": "Asinh", "acosh": "Acosh", "atanh": "Atanh", "erf": "Erf",
                    "is_nan": "IsNaN", "copy copy_p": "Identity"}.items():
    _row(_names, _op)
R.add_import(ImportRule("jax", ("rem",), ("Mod",), convert=lambda imp, eqn, a, b: imp.emit("Mod", [a, b],
                                                                                            {"fmod": 1})))


@primitive("div", produces="Div")
def read_div(imp, eqn, a, b):
    if a.dtype is not None and a.dtype.kind in "iu":  # lax.div truncates toward zero
        raise ModelError("integer lax.div (rounds toward zero) has no IR op yet")
    return imp.emit("Div", [a, b])


@primitive("ne", produces=("IsNaN", "Equal", "Not"))
def read_ne(imp, eqn, a, b):
    if a is b and a.dtype is not None and a.dtype.kind == "f":  # x != x: jnp.isnan
        return imp.emit("IsNaN", [a])
    return imp.emit("Not", [imp.emit("Equal", [a, b], suffix="eq")])


def _logical(ir_bool: str, ir_bits: str):
    def convert(imp, eqn, *xs):
        return imp.emit(ir_bool if xs[0].dtype == np.bool_ else ir_bits, list(xs))
    return convert


R.add_import(ImportRule("jax", ("and",), ("And", "BitwiseAnd"), convert=_logical("And", "BitwiseAnd")))
R.add_import(ImportRule("jax", ("or",), ("Or", "BitwiseOr"), convert=_logical("Or", "BitwiseOr")))
R.add_import(ImportRule("jax", ("xor",), ("Xor", "BitwiseXor"), convert=_logical("Xor", "BitwiseXor")))
R.add_import(ImportRule("jax", ("not",), ("Not", "BitwiseNot"), convert=_logical("Not", "BitwiseNot")))


@primitive("rsqrt", produces=("Sqrt", "Reciprocal"))
def read_rsqrt(imp, eqn, x):
    return imp.emit("Reciprocal", [imp.emit("Sqrt", [x], suffix="sqrt")])


@primitive("square", produces="Mul")
def read_square(imp, eqn, x):
    return imp.emit("Mul", [x, x])


@primitive("integer_pow", produces=("Mul", "Reciprocal", "Pow"))
def read_integer_pow(imp, eqn, x):
    y = eqn.params["y"]
    if y == 2:
        return imp.emit("Mul", [x, x])
    if y == -1:  # jnp.reciprocal
        return imp.emit("Reciprocal", [x])
    return imp.emit("Pow", [x, imp.const(np.array(y, x.dtype))])


@primitive("log1p", produces=("Add", "Log"))
def read_log1p(imp, eqn, x):
    return imp.emit("Log", [imp.emit("Add", [x, imp.const(np.array(1, x.dtype))], suffix="plus1")])


@primitive("expm1", produces=("Exp", "Sub"))
def read_expm1(imp, eqn, x):
    return imp.emit("Sub", [imp.emit("Exp", [x], suffix="exp"), imp.const(np.array(1, x.dtype))])


@primitive("round", produces="Round")
def read_round(imp, eqn, x):
    if int(eqn.params.get("rounding_method", 0)) != 1:
        raise ModelError("lax.round away from zero has no IR op (jnp.round, to nearest even, does)")
    return imp.emit("Round", [x])


@primitive("clamp", produces="Clip")
def read_clamp(imp, eqn, lo, x, hi):
    return imp.emit("Clip", [x, lo, hi])


@primitive("select_n", produces="Where")
def read_select_n(imp, eqn, which, *cases):
    if len(cases) != 2 or which.dtype != np.bool_:
        raise ModelError("select_n over more than two cases")
    return imp.emit("Where", [which, cases[1], cases[0]])


@primitive("convert_element_type", produces="Cast")
def read_convert(imp, eqn, x):
    return imp.emit("Cast", [x], {"to": dtypes.name(np.dtype(eqn.params["new_dtype"]))})


@primitive("bitcast_convert_type", produces="BitCast")
def read_bitcast(imp, eqn, x):
    return imp.emit("BitCast", [x], {"to": dtypes.name(np.dtype(eqn.params["new_dtype"]))})


@primitive("shift_left", "shift_right_logical", produces="BitShift")
def read_shift(imp, eqn, x, amount):
    """A left shift, or a right shift that brings in zeros (the IR's, as ONNX's on unsigned types)."""
    return imp.emit("BitShift", [x, amount], {"direction": "LEFT" if eqn.primitive.name == "shift_left" else "RIGHT"})


@primitive("reshape", produces="Reshape")
def read_reshape(imp, eqn, x, *_):
    return imp.emit("Reshape", [x, imp.const(np.array(eqn.params["new_sizes"], np.int64))])


@primitive("squeeze", produces="Squeeze")
def read_squeeze(imp, eqn, x):
    return imp.emit("Squeeze", [x, imp.const(np.array(eqn.params["dimensions"], np.int64))])


@primitive("expand_dims", produces="Unsqueeze")
def read_expand_dims(imp, eqn, x):
    return imp.emit("Unsqueeze", [x, imp.const(np.array(eqn.params["dimensions"], np.int64))])


@primitive("transpose", produces="Transpose")
def read_transpose(imp, eqn, x):
    return imp.emit("Transpose", [x], {"perm": list(eqn.params["permutation"])})


@primitive("broadcast_in_dim", produces=("Unsqueeze", "Reshape", "Expand"))
def read_broadcast_in_dim(imp, eqn, x, *_):
    shape, dims = tuple(eqn.params["shape"]), tuple(eqn.params["broadcast_dimensions"])
    placed = [1] * len(shape)
    for source_axis, axis in enumerate(dims):
        placed[axis] = x.shape[source_axis]
    if tuple(placed) == shape and list(dims) == sorted(dims):  # only new axes of size 1: expand_dims
        new_axes = [i for i in range(len(shape)) if i not in dims]
        return imp.emit("Unsqueeze", [x, imp.const(np.array(new_axes, np.int64))]) if new_axes else x
    if tuple(x.shape) != tuple(placed):
        x = imp.emit("Reshape", [x, imp.const(np.array(placed, np.int64))], suffix="rank")
    if tuple(placed) == shape:
        return x
    return imp.emit("Expand", [x, imp.const(np.array(shape, np.int64))])


@primitive("concatenate", produces="Concat")
def read_concatenate(imp, eqn, *xs):
    return imp.emit("Concat", list(xs), {"axis": int(eqn.params["dimension"])})


@primitive("slice", produces="Slice")
def read_slice(imp, eqn, x):
    starts, limits = eqn.params["start_indices"], eqn.params["limit_indices"]
    steps = eqn.params.get("strides") or [1] * len(starts)
    ints = functools.partial(np.array, dtype=np.int64)
    return imp.emit("Slice", [x, imp.const(ints(starts)), imp.const(ints(limits)),
                              imp.const(ints(range(len(starts)))), imp.const(ints(steps))])


@primitive("pad", produces="Pad")
def read_pad(imp, eqn, x, value):
    config = eqn.params["padding_config"]
    if any(interior for _, _, interior in config) or any(lo < 0 or hi < 0 for lo, hi, _ in config):
        raise ModelError("lax.pad with interior or negative padding has no IR op")
    pads = [lo for lo, _, _ in config] + [hi for _, hi, _ in config]
    return imp.emit("Pad", [x, imp.const(np.array(pads, np.int64)), value], {"mode": "constant"})


@primitive("iota", produces=())
def read_iota(imp, eqn):
    p = eqn.params
    shape, axis = tuple(p["shape"]), int(p["dimension"])
    values = np.arange(shape[axis]).reshape([-1 if i == axis else 1 for i in range(len(shape))])
    return imp.const(np.broadcast_to(values, shape).astype(np.dtype(p["dtype"])))


def _reduction(ir_op: str):
    def convert(imp, eqn, x):
        axes = imp.const(np.array(eqn.params["axes"], np.int64))
        return imp.emit(ir_op, [x, axes], {"keepdims": 0})
    return convert


for _name, _op in {"reduce_sum": "ReduceSum", "reduce_max": "ReduceMax", "reduce_min": "ReduceMin",
                   "reduce_prod": "ReduceProd"}.items():
    R.add_import(ImportRule("jax", (_name,), (_op,), convert=_reduction(_op)))


@primitive("argmax", "argmin", produces=("ArgMax", "ArgMin", "Cast"))
def read_arg(imp, eqn, x):
    axes = eqn.params["axes"]
    op = "ArgMax" if eqn.primitive.name == "argmax" else "ArgMin"
    index = imp.emit(op, [x], {"axis": int(axes[0]), "keepdims": 0})
    return imp.emit("Cast", [index], {"to": dtypes.name(np.dtype(eqn.params["index_dtype"]))}, suffix="index")


@primitive("cumsum", produces="CumSum")
def read_cumsum(imp, eqn, x):
    return imp.emit("CumSum", [x, imp.const(np.array(eqn.params["axis"], np.int64))],
                    {"reverse": int(bool(eqn.params.get("reverse")))})


@primitive("dot_general", produces=("MatMul", "Einsum"))
def read_dot_general(imp, eqn, a, b):
    """A matrix product (`x @ W`, or `a @ b` over leading batch axes) is MatMul; anything else an Einsum
    spelling out the dimension numbers."""
    (ca, cb), (ba, bb) = eqn.params["dimension_numbers"]
    ra, rb = len(a.shape), len(b.shape)
    nb = len(ba)
    if not ba and not bb and list(ca) == [ra - 1] and list(cb) == [0] and rb == 2:
        return imp.emit("MatMul", [a, b])
    if list(ba) == list(bb) == list(range(nb)) and ra == rb == nb + 2 and list(ca) == [ra - 1] and \
            list(cb) == [rb - 2]:
        return imp.emit("MatMul", [a, b])  # a @ b over leading batch axes
    letters = iter("abcdefghijklmnopqrstuvwxyz")
    sa, sb = [None] * ra, [None] * rb
    for i, j in zip(ba, bb):
        sa[i] = sb[j] = next(letters)
    for i, j in zip(ca, cb):
        sa[i] = sb[j] = next(letters)
    for spec in (sa, sb):
        for i, s in enumerate(spec):
            spec[i] = s or next(letters)
    out = [sa[i] for i in ba] + [sa[i] for i in range(ra) if i not in ba and i not in ca] + \
        [sb[j] for j in range(rb) if j not in bb and j not in cb]
    return imp.emit("Einsum", [a, b], {"equation": f"{''.join(sa)},{''.join(sb)}->{''.join(out)}"})


def _channels_last(spec: tuple, rank: int) -> bool:
    return tuple(spec) == (0, rank - 1, *range(1, rank - 1))


@primitive("conv_general_dilated", produces="Conv")
def read_conv(imp, eqn, x, w, bias=None):
    p = eqn.params
    lhs, rhs, out = p["dimension_numbers"]
    rank = len(x.shape)
    if any(d != 1 for d in p["lhs_dilation"]) or p["batch_group_count"] != 1:
        raise ModelError("conv_general_dilated with input dilation (a transposed convolution) or batch groups "
                         "is not read yet")
    if tuple(lhs) != tuple(out) or tuple(lhs) not in ((0, 1, *range(2, rank)), (0, rank - 1, *range(1, rank - 1))):
        raise ModelError(f"conv_general_dilated with dimension numbers {lhs}/{out} is not read yet")
    layout = "NHWC" if _channels_last(lhs, rank) else "NCHW"
    kernel = imp.permuted(w, list(rhs), "oihw")  # [out, in/groups, *spatial], as the IR holds it
    padding = p["padding"]
    attrs = {"strides": list(p["window_strides"]), "dilations": list(p["rhs_dilation"]),
             "pads": [lo for lo, _ in padding] + [hi for _, hi in padding], "group": int(p["feature_group_count"]),
             "layout": layout}
    return imp.emit("Conv", [x, kernel] + ([bias] if bias is not None else []), attrs)


def _window_attrs(eqn, x, op_name: str) -> dict:
    p = eqn.params
    rank = len(x.shape)
    window, strides, padding = p["window_dimensions"], p["window_strides"], p["padding"]
    if any(d != 1 for d in (*p["base_dilation"], *p["window_dilation"])):
        raise ModelError(f"{op_name} with dilation is not read yet")
    if window[0] != 1 or strides[0] != 1 or padding[0] != (0, 0):
        raise ModelError(f"{op_name} over the batch axis")
    if window[-1] == 1 and strides[-1] == 1 and tuple(padding[-1]) == (0, 0):
        axes, layout = range(1, rank - 1), "NHWC"
    elif window[1] == 1 and strides[1] == 1 and tuple(padding[1]) == (0, 0):
        axes, layout = range(2, rank), "NCHW"
    else:
        raise ModelError(f"{op_name} that pools over the channels")
    return {"kernel_shape": [window[i] for i in axes], "strides": [strides[i] for i in axes],
            "pads": [padding[i][0] for i in axes] + [padding[i][1] for i in axes], "layout": layout}


@primitive("reduce_window_max", produces="MaxPool")
def read_max_pool(imp, eqn, x):
    return imp.emit("MaxPool", [x], _window_attrs(eqn, x, "reduce_window_max"))


@primitive("reduce_window_sum", produces=("AveragePool", "Mul"))
def read_sum_pool(imp, eqn, x):
    """A window sum: the average over the window, padding counted, times the window size."""
    attrs = _window_attrs(eqn, x, "reduce_window_sum")
    mean = imp.emit("AveragePool", [x], {**attrs, "count_include_pad": 1}, suffix="mean")
    return imp.emit("Mul", [mean, imp.const(np.array(math.prod(attrs["kernel_shape"]), x.dtype))])


@primitive("gather", produces=("Gather", "GatherND"))
def read_gather(imp, eqn, data, indices):
    """The gathers `jnp.take(x, i, axis=a)`, `x[:, i]` and embedding lookups trace to: whole slices of one axis."""
    p = eqn.params
    numbers = p["dimension_numbers"]
    rank, depth = len(data.shape), len(indices.shape) - 1
    axes = tuple(numbers.collapsed_slice_dims)
    axis = axes[0] if len(axes) == 1 else None
    whole = axis is not None and tuple(p["slice_sizes"]) == tuple(1 if i == axis else d for i, d in
                                                                 enumerate(data.shape))
    offsets = tuple(range(axis)) + tuple(range(axis + depth, rank - 1 + depth)) if axis is not None else None
    if getattr(numbers, "operand_batching_dims", ()):
        raise ModelError("a batched gather is not read yet")
    leading = tuple(range(indices.shape[-1]))
    if axes == leading == tuple(numbers.start_index_map) and len(leading) > 1 and \
            tuple(p["slice_sizes"]) == (1,) * len(leading) + tuple(data.shape[len(leading):]) and \
            tuple(numbers.offset_dims) == tuple(range(depth, depth + rank - len(leading))):
        return imp.emit("GatherND", [data, indices])  # x[i, j]: the indices' last axis addresses leading axes
    if not (whole and tuple(numbers.start_index_map) == axes and indices.shape[-1] == 1
            and tuple(numbers.offset_dims) == offsets):
        raise ModelError("this gather (other than whole slices of one axis, or of leading axes) is not read yet")
    squeezed = imp.emit("Squeeze", [indices, imp.const(np.array([-1], np.int64))], suffix="indices")
    return imp.emit("Gather", [data, squeezed], {"axis": axis})


@primitive("erfc", produces=("Erf", "Sub"))
def read_erfc(imp, eqn, x):
    return imp.emit("Sub", [imp.const(np.array(1, x.dtype)), imp.emit("Erf", [x], suffix="erf")])


@primitive("stop_gradient", produces="Identity")
def read_stop_gradient(imp, eqn, x):
    return x


# -- marked calls: NNX layers and jax.nn activations the trace names (frontends/jax/marks.py) ------------------
# A converter takes (importer, equation, settings, layer, *tensors) and returns the output value, or None when
# this configuration is better read from the call's body.
mark = functools.partial(R.imports, kind="nnx")


def _activation_row(names: str, ir_op: str, attrs_of=lambda settings: {}) -> None:
    def convert(imp, eqn, settings, layer, x):
        return imp.emit(ir_op, [x], attrs_of(settings) or None)
    R.add_import(ImportRule("nnx", tuple(names.split()), (ir_op,), convert=convert, ir_op=ir_op))


_activation_row("relu", "Relu")
_activation_row("silu swish", "SiLU")
_activation_row("sigmoid", "Sigmoid")
_activation_row("hard_swish", "HardSwish")
_activation_row("gelu", "Gelu", lambda s: {"approximate": "tanh" if s.get("approximate", True) else "none"})
_activation_row("softmax", "Softmax", lambda s: {"axis": int(s.get("axis", -1))})
_activation_row("log_softmax", "LogSoftmax", lambda s: {"axis": int(s.get("axis", -1))})
_activation_row("hard_sigmoid", "HardSigmoid", lambda s: {"alpha": 1 / 6, "beta": 0.5})
_activation_row("leaky_relu", "LeakyRelu", lambda s: {"alpha": float(s.get("negative_slope", 0.01))})
_activation_row("elu", "Elu", lambda s: {"alpha": float(s.get("alpha", 1.0))})


@mark("relu6", produces="Clip")
def read_relu6(imp, eqn, settings, layer, x):
    return imp.emit("Clip", [x, imp.const(np.array(0, x.dtype)), imp.const(np.array(6, x.dtype))])


@mark("Linear", produces="Dense")
def read_linear(imp, eqn, settings, layer, x, kernel, bias=None):
    return imp.emit("Dense", [x, kernel] + ([bias] if bias is not None else []))


@mark("Conv", produces="Conv")
def read_conv_layer(imp, eqn, settings, layer, x, kernel, bias=None):
    """The call's one convolution, read as the primitive is, with the layer's bias as the op's third input."""
    body = eqn.params["jaxpr"].jaxpr
    convs = [e for e in body.eqns if e.primitive.name == "conv_general_dilated"]
    others = {e.primitive.name for e in body.eqns} - {"conv_general_dilated", "reshape", "add", "broadcast_in_dim"}
    if len(convs) != 1 or others or len(x.shape) != len(convs[0].invars[0].aval.shape):
        return None  # padding done in code (CIRCULAR), unbatched input ...
    return read_conv(imp, convs[0], x, kernel, bias)


def _ones(imp, n: int, dtype):
    return imp.const(np.ones(n, dtype))


@mark("BatchNorm", produces="BatchNormalization")
def read_batch_norm(imp, eqn, settings, layer, x, *tensors):
    rank = len(x.shape)
    if layer.axis not in (-1, rank - 1) or not layer.use_scale or not layer.use_bias:
        return None
    scale, bias, mean, var = tensors
    return imp.emit("BatchNormalization", [x, scale, bias, mean, var],
                    {"epsilon": float(layer.epsilon), "momentum": float(layer.momentum),
                     "layout": "NHWC" if rank > 2 else "NCHW"})


def _last_axis(layer) -> bool:
    return all(getattr(layer, a, -1) in (-1, (-1,)) for a in ("reduction_axes", "feature_axes"))


@mark("LayerNorm", produces="LayerNormalization")
def read_layer_norm(imp, eqn, settings, layer, x, *tensors):
    if not _last_axis(layer):
        return None
    named = dict(zip([t for t in ("scale", "bias") if getattr(layer, t, None) is not None], tensors))
    scale = named.get("scale") or _ones(imp, x.shape[-1], x.dtype)
    inputs = [x, scale] + ([named["bias"]] if "bias" in named else [])
    return imp.emit("LayerNormalization", inputs, {"axis": -1, "epsilon": float(layer.epsilon)})


@mark("RMSNorm", produces="RMSNormalization")
def read_rms_norm(imp, eqn, settings, layer, x, *tensors):
    if not _last_axis(layer):
        return None
    scale = tensors[0] if tensors else _ones(imp, x.shape[-1], x.dtype)
    return imp.emit("RMSNormalization", [x, scale], {"axis": -1, "epsilon": float(layer.epsilon)})


@mark("Embed", produces="Gather")
def read_embed(imp, eqn, settings, layer, indices, embedding):
    return imp.emit("Gather", [embedding, indices], {"axis": 0})


def _body_window(eqn, primitive_name: str):
    found = [e for e in eqn.params["jaxpr"].jaxpr.eqns if e.primitive.name == primitive_name]
    return found[0] if found else None


@mark("max_pool", produces="MaxPool")
def read_max_pool_call(imp, eqn, settings, layer, x):
    window = _body_window(eqn, "reduce_window_max")
    return None if window is None else imp.emit("MaxPool", [x], _window_attrs(window, x, "max_pool"))


@mark("avg_pool", produces="AveragePool")
def read_avg_pool_call(imp, eqn, settings, layer, x):
    """nnx.avg_pool: a window sum divided by the window size, or by the count of input elements in the window
    when `count_include_pad=False`: the IR's AveragePool either way."""
    window = _body_window(eqn, "reduce_window_sum")
    if window is None:
        return None
    attrs = _window_attrs(window, x, "avg_pool")
    return imp.emit("AveragePool", [x], {**attrs, "count_include_pad": int(settings.get("count_include_pad", True))})


@mark("mean", produces="ReduceMean")
def read_mean(imp, eqn, settings, layer, x):
    if set(settings) - {"axis", "keepdims"}:
        return None
    axis, rank = settings.get("axis"), len(x.shape)
    axes = list(range(rank)) if axis is None else [axis] if isinstance(axis, int) else list(axis)
    axes = sorted(a % rank for a in axes)
    if rank > 2 and settings.get("keepdims") and axes == list(range(1, rank - 1)):
        return imp.emit("GlobalAveragePool", [x], {"layout": "NHWC"})
    return imp.emit("ReduceMean", [x, imp.const(np.array(axes, np.int64))],
                    {"keepdims": int(bool(settings.get("keepdims", False)))})


@primitive("split", produces="Split")
def read_split(imp, eqn, x):
    sizes = [int(s) for s in eqn.params["sizes"]]
    return imp.emit("Split", [x, imp.const(np.array(sizes, np.int64))], {"axis": int(eqn.params["axis"])},
                    outputs=len(sizes))


@primitive("stack", produces=("Unsqueeze", "Concat"))
def read_stack(imp, eqn, *xs):
    return stack_steps(imp, list(xs), int(eqn.params["axis"]))


def stack_steps(imp, values: list, axis: int = 0):
    """The values stacked along a new `axis` (a scan's per-step outputs, jnp.stack)."""
    new = imp.const(np.array([axis], np.int64))
    parts = [imp.emit("Unsqueeze", [v, new], suffix=f"part{i}") for i, v in enumerate(values)]
    return imp.emit("Concat", parts, {"axis": axis}) if len(parts) > 1 else parts[0]


@primitive("rev", produces="Slice")
def read_rev(imp, eqn, x):
    """Axes reversed: a Slice from the last element backwards over each."""
    axes = [int(a) for a in eqn.params["dimensions"]]
    ints = functools.partial(np.array, dtype=np.int64)
    return imp.emit("Slice", [x, imp.const(ints([-1] * len(axes))), imp.const(ints([-(2 ** 63)] * len(axes))),
                              imp.const(ints(axes)), imp.const(ints([-1] * len(axes)))])


@mark("RNN", produces=("LSTM", "Transpose", "Squeeze", "Unsqueeze"))
def read_lstm_rnn(imp, eqn, settings, layer, x, *tensors):
    """nnx.RNN over an nnx.LSTMCell as one IR LSTM: the cell's eight dense layers become W, R and B in the IR's
    gate order; returns the call's outputs ((c, h), y with the carry, else y)."""
    if len(tensors) not in (12, 14):
        return None
    c0, h0 = tensors[:2] if len(tensors) == 14 else (None, None)
    kernels, biases = tensors[-12:-4], tensors[-4:]
    if any(v.const is None for v in (*kernels, *biases)):
        return None
    data = [np.asarray(v.const) for v in kernels]
    hidden = data[0].shape[1]
    prefix = kernels[0].name.rsplit(".", 2)[0]
    w = imp.weight(f"{prefix}.W", np.concatenate([k.T for k in data[:4]])[None])
    r = imp.weight(f"{prefix}.R", np.concatenate([k.T for k in data[4:]])[None])
    b = imp.weight(f"{prefix}.B", np.concatenate([np.zeros(4 * hidden, data[0].dtype)] +
                                                 [np.asarray(v.const) for v in biases])[None])
    seq = x if settings["time_major"] else imp.emit("Transpose", [x], {"perm": [1, 0, 2]}, suffix="time_major")
    first = imp.const(np.array([0], np.int64))
    initial = [None, None] if h0 is None else [imp.emit("Unsqueeze", [h0, first], suffix="h0"),
                                               imp.emit("Unsqueeze", [c0, first], suffix="c0")]
    if settings["reverse"] and not settings["keep_order"]:
        return None
    attrs = {"hidden_size": hidden, "direction": "reverse" if settings["reverse"] else "forward"}
    y, y_h, y_c = imp.emit("LSTM", [seq, w, r, b, None, *initial], attrs, outputs=3)
    y = imp.emit("Squeeze", [y, imp.const(np.array([1], np.int64))], suffix="y")
    if not settings["time_major"]:
        y = imp.emit("Transpose", [y], {"perm": [1, 0, 2]}, suffix="batch_major")
    if not settings["return_carry"]:
        return [y]
    state = [imp.emit("Squeeze", [v, first], suffix=tag) for v, tag in ((y_c, "c"), (y_h, "h"))]
    return [*state, y]


# -- control flow: the importer reads the bodies (`imp.inline`) into subgraphs (`imp.subgraph`) ---------------
def second_branch(imp, index):
    """If's condition for a two-branch switch on `index`: any index but 0 selects the second branch."""
    zero = imp.const(np.zeros((), index.dtype))
    return imp.emit("Not", [imp.emit("Equal", [index, zero], suffix="first")], suffix="second")


def loop(imp, initial: list, condition, body) -> list:
    """A while loop as a Loop: `condition(values) -> [flag]` and `body(values) -> values` emit into the graph
    being built. The first test runs before the loop; the Loop body runs the body, then the test again."""
    first, = condition(initial)

    def read(_iteration, _flag, *carried):
        results = body(list(carried))
        return [*condition(results), *results]
    graph = imp.subgraph("body", [("iteration", np.dtype(np.int64), ()), ("cond", np.dtype(np.bool_), ())] +
                         [(f"carried{i}", v.dtype, v.shape) for i, v in enumerate(initial)], read)
    out = imp.emit("Loop", [None, first, *initial], {"body": graph}, outputs=len(initial), suffix="loop")
    return out if isinstance(out, list) else [out]


def scan(imp, carry: list, xs: list, read, reverse: bool, outputs: int) -> list:
    """A scan over the leading axis of `xs` as a Scan whose body is what `read(*carry, *x slices)` emits (carry
    then stacked outputs); reverse=True walks the xs and writes the outputs from the end, as lax.scan does."""
    inputs = [(f"carry{i}", v.dtype, v.shape) for i, v in enumerate(carry)] + \
        [(f"x{i}", v.dtype, v.shape[1:] if v.shape is not None else None) for i, v in enumerate(xs)]
    attrs = {"body": imp.subgraph("scan", inputs, read), "num_scan_inputs": len(xs)}
    if reverse:
        attrs.update(scan_input_directions=[1] * len(xs), scan_output_directions=[1] * (outputs - len(carry)))
    out = imp.emit("Scan", [*carry, *xs], attrs, outputs=outputs, suffix="scan")
    return out if isinstance(out, list) else [out]


def if_(imp, condition, then_read, else_read, outputs: int) -> list:
    """An If whose branches are what `then_read()` and `else_read()` emit."""
    branches = {"then_branch": imp.subgraph("then", [], then_read), "else_branch": imp.subgraph("else", [], else_read)}
    out = imp.emit("If", [condition], branches, outputs=outputs, suffix="if")
    return out if isinstance(out, list) else [out]


@primitive("cond", produces=("Equal", "Not", "If"))
def read_cond(imp, eqn, index, *operands):
    """lax.cond / lax.switch: on a constant index its branch, inlined; on a computed one (two branches) an If."""
    branches = eqn.params["branches"]
    if index.const is not None:
        return imp.inline(branches[int(np.clip(np.asarray(index.const), 0, len(branches) - 1))], list(operands))
    if len(branches) != 2:
        raise ModelError(f"a lax.switch of {len(branches)} branches on a computed index (two are read)")
    return if_(imp, second_branch(imp, index), lambda: imp.inline(branches[1], list(operands)),
               lambda: imp.inline(branches[0], list(operands)), len(eqn.outvars))


@primitive("while", produces="Loop")
def read_while(imp, eqn, *operands):
    p = eqn.params
    n_cond, n_body = int(p["cond_nconsts"]), int(p["body_nconsts"])
    cond_consts, body_consts = list(operands[:n_cond]), list(operands[n_cond:n_cond + n_body])
    return loop(imp, list(operands[n_cond + n_body:]),
                lambda values: imp.inline(p["cond_jaxpr"], cond_consts + values),
                lambda values: imp.inline(p["body_jaxpr"], body_consts + values))
