"""StableHLO ops -> IR: how the ops of a `jax.export` artifact's module read into IR ops.

Namespace `stablehlo`: op names as the module prints them (`stablehlo.add`, `chlo.erf`). Most ops are the
lowering of one jaxpr primitive: those are read by that primitive's rule (jaxpr.py), with its parameters
rebuilt from the op's attributes, so each op's meaning is written once. The rest (reductions by their body,
dynamic slices, select's operand order) have their own converter here. A converter takes (importer,
`HloOp`, *operand values); `HloOp` (frontends/jax/stablehlo.py) holds the attributes as Python values.
"""

from __future__ import annotations

import functools
from types import SimpleNamespace

import numpy as np

from tensorbridge.errors import ModelError
from tensorbridge.rules.core import ImportRule
from tensorbridge.rules.flax.base import R
from tensorbridge.rules.flax.jaxpr import if_, loop, second_branch

read = functools.partial(R.imports, kind="stablehlo")


def _equation(primitive: str, params: dict):
    """What a jaxpr rule reads of an equation: its primitive's name and parameters."""
    return SimpleNamespace(primitive=SimpleNamespace(name=primitive), params=params)


def _lowered(name: str, primitive: str, params=lambda op: {}) -> None:
    """The op `name` is the lowering of the jaxpr `primitive`: read it by that primitive's rule."""
    rule = R.import_rule(primitive, "jax")

    def convert(imp, op, *xs):
        return rule.convert(imp, _equation(primitive, params(op)), *xs)
    R.add_import(ImportRule("stablehlo", (name,), rule.produces, convert=convert))


for _name, _primitive in {"add": "add", "subtract": "sub", "multiply": "mul", "divide": "div", "maximum": "max",
                          "minimum": "min", "power": "pow", "remainder": "rem", "negate": "neg",
                          "exponential": "exp", "log": "log", "tanh": "tanh", "logistic": "logistic",
                          "sqrt": "sqrt", "rsqrt": "rsqrt", "abs": "abs", "sign": "sign", "floor": "floor",
                          "ceil": "ceil", "sine": "sin", "cosine": "cos", "tan": "tan",
                          "exponential_minus_one": "expm1", "log_plus_one": "log1p", "and": "and", "or": "or",
                          "xor": "xor", "not": "not", "clamp": "clamp", "shift_left": "shift_left",
                          "shift_right_logical": "shift_right_logical"}.items():
    _lowered(f"stablehlo.{_name}", _primitive)
for _name in ("erf", "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh"):
    _lowered(f"chlo.{_name}", _name)

_lowered("stablehlo.round_nearest_even", "round", lambda op: {"rounding_method": 1})
_lowered("stablehlo.round_nearest_afz", "round", lambda op: {"rounding_method": 0})
_lowered("stablehlo.convert", "convert_element_type", lambda op: {"new_dtype": op.results[0][1]})
_lowered("stablehlo.bitcast_convert", "bitcast_convert_type", lambda op: {"new_dtype": op.results[0][1]})
_lowered("stablehlo.reshape", "reshape", lambda op: {"new_sizes": op.results[0][0]})
_lowered("stablehlo.transpose", "transpose", lambda op: {"permutation": op.attrs["permutation"]})
_lowered("stablehlo.broadcast_in_dim", "broadcast_in_dim",
         lambda op: {"shape": op.results[0][0], "broadcast_dimensions": op.attrs["broadcast_dimensions"]})
_lowered("stablehlo.concatenate", "concatenate", lambda op: {"dimension": op.attrs["dimension"]})
_lowered("stablehlo.slice", "slice", lambda op: {k: op.attrs[k] for k in ("start_indices", "limit_indices",
                                                                             "strides")})
_lowered("stablehlo.pad", "pad", lambda op: {"padding_config": list(zip(
    op.attrs["edge_padding_low"], op.attrs["edge_padding_high"], op.attrs["interior_padding"]))})
_lowered("stablehlo.reverse", "rev", lambda op: {"dimensions": op.attrs["dimensions"]})
_lowered("stablehlo.iota", "iota", lambda op: {"shape": op.results[0][0], "dimension": op.attrs["iota_dimension"],
                                               "dtype": op.results[0][1]})
_lowered("stablehlo.dot_general", "dot_general", lambda op: {"dimension_numbers": (
    (op.attrs["dot_dimension_numbers"]["lhs_contracting_dimensions"],
     op.attrs["dot_dimension_numbers"]["rhs_contracting_dimensions"]),
    (op.attrs["dot_dimension_numbers"]["lhs_batching_dimensions"],
     op.attrs["dot_dimension_numbers"]["rhs_batching_dimensions"]))})


def _window(op, rank: int) -> dict:
    """A window op's strides, padding and dilations, with StableHLO's defaults made explicit."""
    padding = op.attrs.get("padding")
    return {"window_strides": op.attrs.get("window_strides") or [1] * rank,
            "padding": [tuple(int(v) for v in row) for row in padding] if padding is not None
            else [(0, 0)] * rank,
            "base_dilation": op.attrs.get("base_dilations") or [1] * rank,
            "window_dilation": op.attrs.get("window_dilations") or [1] * rank}


def _conv_params(op) -> dict:
    d = op.attrs["dimension_numbers"]
    nsp = len(d["input_spatial_dimensions"])
    if any(op.attrs.get("window_reversal") or []):
        raise ModelError("a convolution with window reversal is not read yet")
    window = _window(op, nsp)
    return {"dimension_numbers": (
        (d["input_batch_dimension"], d["input_feature_dimension"], *d["input_spatial_dimensions"]),
        (d["kernel_output_feature_dimension"], d["kernel_input_feature_dimension"], *d["kernel_spatial_dimensions"]),
        (d["output_batch_dimension"], d["output_feature_dimension"], *d["output_spatial_dimensions"])),
        "window_strides": window["window_strides"], "padding": window["padding"],
        "lhs_dilation": op.attrs.get("lhs_dilation") or [1] * nsp,
        "rhs_dilation": op.attrs.get("rhs_dilation") or [1] * nsp,
        "feature_group_count": op.attrs.get("feature_group_count", 1),
        "batch_group_count": op.attrs.get("batch_group_count", 1)}


_lowered("stablehlo.convolution", "conv_general_dilated", _conv_params)


def _gather_params(op) -> dict:
    d = op.attrs["dimension_numbers"]
    numbers = SimpleNamespace(**{k: tuple(v) if isinstance(v, list) else v for k, v in d.items()})
    return {"dimension_numbers": numbers, "slice_sizes": tuple(op.attrs["slice_sizes"])}


@read("stablehlo.gather", produces=("Gather", "GatherND", "Squeeze"))
def read_gather(imp, op, data, indices):
    if op.attrs["dimension_numbers"]["index_vector_dim"] != len(indices.shape) - 1:
        raise ModelError("a gather whose index vectors are not its indices' last axis is not read yet")
    return R.import_rule("gather", "jax").convert(imp, _equation("gather", _gather_params(op)), data, indices)


@read("stablehlo.select", produces="Where")
def read_select(imp, op, which, on_true, on_false):
    return imp.emit("Where", [which, on_true, on_false])


@read("stablehlo.compare", produces=("Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual", "Not", "IsNaN"))
def read_compare(imp, op, a, b):
    primitive = op.attrs["comparison_direction"].lower()
    return R.import_rule(primitive, "jax").convert(imp, _equation(primitive, {}), a, b)


@read("stablehlo.optimization_barrier", produces=())
def read_barrier(imp, op, *xs):
    return list(xs)


#: reduction body op -> (jaxpr reduction primitive, its identity, the IR op combining a result with another init)
REDUCERS = {"stablehlo.add": ("reduce_sum", 0, "Add"), "stablehlo.maximum": ("reduce_max", -np.inf, "Max"),
            "stablehlo.minimum": ("reduce_min", np.inf, "Min"), "stablehlo.multiply": ("reduce_prod", 1, "Mul")}


def _is_identity(init, identity) -> bool:
    if init.const is None:
        return False
    value = np.asarray(init.const)
    if value.dtype.kind in "iu" and np.isinf(identity):  # an integer max/min starts from the type's extreme
        info = np.iinfo(value.dtype)
        identity = info.min if identity < 0 else info.max
    return bool(np.all(value == identity))


@read("stablehlo.reduce", produces=("ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd", "Add", "Max", "Min",
                                    "Mul", "Cast", "ArgMax", "ArgMin"))
def read_reduce(imp, op, *operands):
    """A reduction by one combining op (sum, max, min, product; and/or over booleans), or jnp.argmax/argmin's
    pair reduction of (values, iota)."""
    axes = op.attrs["dimensions"]
    if len(operands) == 4:
        return _arg_reduction(imp, op, *operands)
    if len(operands) != 2 or len(op.body) != 1:
        raise ModelError("a reduction whose body is more than one op is not read yet")
    x, init = operands
    combine = op.body[0][0]
    if combine in ("stablehlo.and", "stablehlo.or"):  # all / any: the min / max of the booleans as 0/1
        as_int = imp.emit("Cast", [x], {"to": "uint8"}, suffix="as_int")
        ir_op = "ReduceMin" if combine == "stablehlo.and" else "ReduceMax"
        out = imp.emit(ir_op, [as_int, imp.const(np.array(axes, np.int64))], {"keepdims": 0}, suffix="reduce")
        out = imp.emit("Cast", [out], {"to": "bool"}, suffix="as_bool")
        pair = "And" if combine == "stablehlo.and" else "Or"
        return out if _is_identity(init, combine == "stablehlo.and") else imp.emit(pair, [out, init])
    if combine not in REDUCERS:
        raise ModelError(f"a reduction by {combine} is not read yet")
    primitive, identity, pair = REDUCERS[combine]
    out = R.import_rule(primitive, "jax").convert(imp, _equation(primitive, {"axes": axes}), x)
    return out if _is_identity(init, identity) else imp.emit(pair, [out, init], suffix="init")


def _arg_reduction(imp, op, x, index, x_init, index_init):
    """jnp.argmax / argmin: (values, iota along the axis) reduced by comparing values, GT for max, LT for min."""
    axes = op.attrs["dimensions"]
    directions = {direction for name, direction in op.body if name == "stablehlo.compare"}
    kind = "argmax" if "GT" in directions else "argmin" if "LT" in directions else None
    if kind is None or len(axes) != 1 or not _is_iota(index, axes[0]):
        raise ModelError("a reduction of several operands (other than argmax / argmin) is not read yet")
    primitive, identity = ("reduce_max", -np.inf) if kind == "argmax" else ("reduce_min", np.inf)
    values = R.import_rule(primitive, "jax").convert(imp, _equation(primitive, {"axes": axes}), x)
    indices = R.import_rule(kind, "jax").convert(imp, _equation(kind, {"axes": axes,
                                                                       "index_dtype": op.results[1][1]}), x)
    return [values, indices]


def _is_iota(v, axis: int) -> bool:
    """`v` counts 0, 1, ... along `axis` (the positions argmax reduces with its values)."""
    if v.const is None:
        return False
    shape = v.const.shape
    counting = np.arange(shape[axis]).reshape([-1 if i == axis else 1 for i in range(len(shape))])
    return bool(np.array_equal(v.const, np.broadcast_to(counting, shape)))


@read("stablehlo.reduce_window", produces=("MaxPool", "AveragePool", "Mul", "CumSum"))
def read_reduce_window(imp, op, x, init):
    """A window max (max pooling) or sum (sum pooling, or jnp.cumsum: a window the length of one axis,
    padded before it by one less)."""
    combine = op.body[0][0] if len(op.body) == 1 else None
    rank = len(x.shape)
    window = op.attrs["window_dimensions"]
    params = {"window_dimensions": window, **_window(op, rank)}
    if combine == "stablehlo.add" and _is_identity(init, 0):
        cumulative = _cumulative_axis(params, x.shape)
        if cumulative is not None:
            axis, reverse = cumulative
            return imp.emit("CumSum", [x, imp.const(np.array(axis, np.int64))], {"reverse": int(reverse)})
        primitive = "reduce_window_sum"
    elif combine == "stablehlo.maximum" and _is_identity(init, -np.inf):
        primitive = "reduce_window_max"
    else:
        raise ModelError(f"a window reduction by {combine or 'a body of several ops'} from this initial value "
                         "is not read yet")
    return R.import_rule(primitive, "jax").convert(imp, _equation(primitive, params), x)


def _cumulative_axis(params: dict, shape) -> tuple[int, bool] | None:
    """(axis, reverse) when the window sum is a cumulative sum along one axis, else None."""
    window, padding = params["window_dimensions"], params["padding"]
    if any(s != 1 for s in params["window_strides"]) or any(d != 1 for d in (*params["base_dilation"],
                                                                              *params["window_dilation"])):
        return None
    long = [i for i, w in enumerate(window) if w != 1]
    if len(long) != 1 or any(padding[i] != (0, 0) for i in range(len(window)) if i != long[0]):
        return None
    axis = long[0]
    n = shape[axis]
    if window[axis] != n or n < 2:
        return None
    if padding[axis] == (n - 1, 0):
        return axis, False
    if padding[axis] == (0, n - 1):
        return axis, True
    return None


def _start_vector(imp, starts: list, shape, sizes) -> object:
    """The start indices as one int64 vector, clamped as StableHLO does so the slice stays inside the operand."""
    parts = [imp.emit("Reshape", [imp.emit("Cast", [s], {"to": "int64"}, suffix=f"start{i}"),
                                  imp.const(np.array([1], np.int64))], suffix=f"start{i}.vector")
             for i, s in enumerate(starts)]
    vector = imp.emit("Concat", parts, {"axis": 0}, suffix="starts")
    limit = imp.const(np.array([d - s for d, s in zip(shape, sizes)], np.int64))
    low = imp.emit("Max", [vector, imp.const(np.array(0, np.int64))], suffix="starts.positive")
    return imp.emit("Min", [low, limit], suffix="starts.clamped")


@read("stablehlo.dynamic_slice", produces=("Cast", "Reshape", "Concat", "Max", "Min", "Add", "Slice"))
def read_dynamic_slice(imp, op, x, *starts):
    sizes = op.attrs["slice_sizes"]
    begin = _start_vector(imp, list(starts), x.shape, sizes)
    end = imp.emit("Add", [begin, imp.const(np.array(sizes, np.int64))], suffix="ends")
    return imp.emit("Slice", [x, begin, end, imp.const(np.arange(len(sizes), dtype=np.int64))])


@read("stablehlo.dynamic_update_slice", produces=("Cast", "Reshape", "Concat", "Max", "Min", "Add", "ScatterND"))
def read_dynamic_update_slice(imp, op, x, update, *starts):
    """The update written at the (clamped) start: a ScatterND of every element's index."""
    begin = _start_vector(imp, list(starts), x.shape, update.shape)
    grid = np.stack(np.meshgrid(*[np.arange(d) for d in update.shape], indexing="ij"), axis=-1).astype(np.int64)
    indices = imp.emit("Add", [imp.const(grid), begin], suffix="indices")
    return imp.emit("ScatterND", [x, indices, update])


@read("stablehlo.if", "stablehlo.case", produces=("Equal", "Not", "If"))
def read_branches(imp, op, selector):
    """`if` on a predicate, and two-branch `case` on an index (0 selects the first branch, any other the
    second), as an If."""
    regions = list(op.regions)
    if len(regions) != 2:
        raise ModelError(f"a lax.switch of {len(regions)} branches (two are read)")
    if op.name == "stablehlo.case":
        selector = second_branch(imp, selector)
        regions.reverse()
    then_region, else_region = regions
    return if_(imp, selector, lambda: imp.inline(then_region, []), lambda: imp.inline(else_region, []),
               len(op.results))


@read("stablehlo.while", produces="Loop")
def read_while(imp, op, *initial):
    condition, body = op.regions
    return loop(imp, list(initial), lambda values: imp.inline(condition, values),
                lambda values: imp.inline(body, values))
