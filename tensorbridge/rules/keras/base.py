"""The Keras registry object, its row helpers, and what its import and export rules share.

Namespaces of source names: `layer` (layer classes), `op` (the `keras.ops` operation classes
that a functional graph records for calls such as `ops.add(x, c)` or `x * 2.0`) and
`activation` (activation names, as layers take them). Layer converters take (importer, layer,
input values, keras node); `keras.ops` converters take (importer, operation, operands, keyword
operands, keras node); both return the output value(s). Export writers take (emitter, ir_node).

Keras is channels-last: layout-carrying ops keep `layout="NHWC"` in the IR (changing layout is
a pass), while kernels are permuted once at import into the IR's [out, in, *kernel] convention.
"""

from __future__ import annotations

import functools
import re

import numpy as np

from tensorbridge.codegen import pyast as P
from tensorbridge.codegen.rule_helpers import Unsupported, int_operand  # noqa: F401 (the Keras rules' import)
from tensorbridge.errors import ModelError
from tensorbridge.ir import dtypes
from tensorbridge.ir.value import Value
from tensorbridge.ops import schema as op_schema
from tensorbridge.ops.elementwise import LOGICAL
from tensorbridge.rules.core import ImportRule, Registry

R = Registry("keras")
STRINGS = "keras.ops has no string operations"
R.refuses_strings(STRINGS)
#: a constant MelWeightMatrix is folded at conversion, so one reaching a writer is sized by values known only when it
#: runs: Keras's symbolic tensors (and LiteRT's) have their shapes before the data
R.refuses("MelWeightMatrix", "its size is its inputs' values, known only when it runs (a constant one is folded "
          "at conversion)")
#: tensor types Keras code computes on
KERAS_DTYPES = {"float16", "float32", "float64", "bfloat16", "int8", "int16", "int32", "int64", "uint8", "uint16",
                "uint32", "uint64", "bool"}
R.holds(lambda node, name: None if name in KERAS_DTYPES else STRINGS if name == "string"
        else f"Keras code holds no {name} tensors")
layer = functools.partial(R.imports, kind="layer")
keras_op = functools.partial(R.imports, kind="op")


def to_numpy(w) -> np.ndarray:
    return np.asarray(w.numpy() if hasattr(w, "numpy") else w)


# -- rows --------------------------------------------------------------------------------------------
def activation(names: str, ir_op: str | None, layer_name: str | None = None, **attrs) -> None:
    """Activation name(s) read as `ir_op` (None: identity); written back as `layers.Activation(layer_name)`."""
    def convert(imp, x, suffix):
        if ir_op == "Clip":
            return imp.emit("Clip", [x, imp.const(attrs["min"]), imp.const(attrs["max"])], suffix=suffix)
        return imp.emit(ir_op, [x], dict(attrs), suffix=suffix)
    R.add_import(ImportRule("activation", tuple(names.split()), (ir_op,) if ir_op else (),
                            convert=convert if ir_op else None, ir_op=ir_op, attrs=attrs))
    if layer_name:
        R.add_export((ir_op,), _write_activation_layer(layer_name), check=_fixed_attributes(ir_op, attrs))


def _fixed_attributes(ir_op: str, attrs: dict):
    """A check that `ir_op`'s attributes are the ones a Keras activation fixes (the op's defaults, or `attrs`):
    a SELU with other constants is not `selu`."""
    def check(node) -> str | None:
        from tensorbridge.ops import schema

        fixed = {k: a.default for k, a in schema.get(ir_op).attrs.items() if not a.required} | attrs
        other = sorted(k for k, v in node.attrs.items() if k in fixed and not np.allclose(v, fixed[k], rtol=1e-6))
        return f"{ir_op} with {', '.join(other)} other than Keras's" if other else None
    return check


def op_row(names: str | None, ir_op: str, call: str | None = None) -> None:
    """`keras.ops` class(es) read as `ir_op` over all operands; written back as `call(...)` over the inputs."""
    if names:
        R.add_import(ImportRule("op", tuple(names.split()), (ir_op,),
                                convert=functools.partial(elementwise, ir_op=ir_op), ir_op=ir_op))
    if call:
        R.add_export((ir_op,), _write_call(call))


def _write_activation_layer(name: str):
    def write(em, node):
        em.out(node, em.layer(node, "layers.Activation", [name], {}, [], em.tensor(node.inputs[0])))
    return write


def _write_call(fn: str):
    def write(em, node):
        vals = [em.tensor(v) for v in node.inputs]
        if len(vals) == 1 and op_schema.get(node.op).inputs[0].variadic:  # Max/Min of one operand: that operand
            return em.alias(node, vals[0])
        expr = vals[0] if len(vals) > 1 else P.call(fn, vals[0])
        for v in vals[1:]:
            expr = P.call(fn, expr, v)
        em.out(node, expr)
    return write


#: Keras layers into which TensorFlow's TFLite converter folds a BatchNormalization that only they read
FOLDS_BATCH_NORM = {"Conv1D", "Conv2D", "Conv3D", "DepthwiseConv2D", "Dense"}


def folded_batch_norms(model) -> dict[str, str]:
    """Convolution/Dense layer -> the BatchNormalization that is its only reader (TF's converter folds it)."""
    folded = {}
    for layer in model.layers:
        readers = [n.operation for n in layer._outbound_nodes]
        if type(layer).__name__ in FOLDS_BATCH_NORM and len(readers) == 1 and \
                type(readers[0]).__name__ == "BatchNormalization":
            folded[layer.name] = readers[0].name
    return folded


def tf_layer_scopes(op_name: str) -> tuple[str, ...]:
    """The Keras layer a TF op or TFLite tensor name points to, `[StatefulPartitionedCall/]model_1/layer_1/op`
    (a fused TFLite tensor lists the op computing it first). Keras scopes a layer's ops `layer_1` when
    the model is traced again, so `layer_1` and `layer` are both candidates."""
    path = op_name.split(";")[0].removeprefix("StatefulPartitionedCall/").split("/")
    if len(path) < 3:
        return ()
    stripped = re.sub(r"_\d+$", "", path[1])
    return (path[1], stripped) if stripped != path[1] else (path[1],)


NHWC = "NHWC"


def int_list(v, n):
    return [int(v)] * n if isinstance(v, int) else [int(x) for x in v]


def padding_attrs(layer, attrs):
    if layer.padding == "same":
        attrs["auto_pad"] = "SAME_UPPER"
    elif layer.padding == "causal":
        raise ModelError(f"{layer.name}: causal padding is not supported")
    return attrs


def require_channels_last(layer):
    if getattr(layer, "data_format", "channels_last") != "channels_last":
        raise ModelError(f"{layer.name}: data_format={layer.data_format} is not supported (channels_last only)")


def activate(imp, layer, x, name=None, suffix="activation"):
    """Apply a Keras activation (by name) as a separate IR op."""
    given = name or getattr(layer, "activation", None)
    act = getattr(given, "__name__", given) or "linear"
    rule = R.import_rule(act, "activation")
    if rule is None and callable(given):  # a function of keras.ops (keras_hub's gelu_approximate): traced
        return imp.traced_function(given, x, act)
    if rule is None:
        raise ModelError(f"{layer.name}: activation {act!r} is not supported")
    return rule.convert(imp, x, suffix) if rule.convert is not None else x


def bias_weight(imp, layer, w):
    return imp.weight("bias", to_numpy(layer.bias)) if getattr(layer, "use_bias", False) else None


def activation_name(layer):
    act = getattr(layer, "activation", None)
    return getattr(act, "__name__", act) or "linear"


def axes_list(axis, rank: int | None = None) -> list[int] | None:
    if axis is None:
        return None if rank is None else list(range(rank))
    return [int(a) for a in (axis if isinstance(axis, (list, tuple)) else [axis])]


def operand_value(imp, a, like: np.dtype | None) -> Value:
    """An operand as an IR value: constants take `like`'s type (Keras converts them to the result's)."""
    if isinstance(a, Value):
        return a
    arr = np.asarray(a)
    return imp.const(arr, like if like is not None and arr.dtype.kind in "fiub" else arr.dtype)


def result_dtype(node) -> np.dtype:
    return dtypes.dtype(dtypes.name(np.dtype(node.output_tensors[0].dtype)))


def elementwise(imp, op, args, kwargs, node, ir_op: str):
    """One IR op over the operands; constants and mixed-type tensors are brought to the operands' common
    type: the result's, or for a comparison its first tensor's; Where's condition and a logical op's operands are
    bools (Keras reads a number as true where it is not zero)."""
    out = result_dtype(node)
    tensors = [a for a in args if isinstance(a, Value)]
    comparison = out.kind == "b" and ir_op not in LOGICAL and any(t.dtype is not None and t.dtype.kind != "b"
                                                                  for t in tensors)
    common = tensors[0].dtype if comparison else out
    values = []
    for i, a in enumerate(args):
        want = np.dtype(bool) if ir_op == "Where" and i == 0 else common  # a number: true where it is not zero
        v = operand_value(imp, a, want)
        if v.dtype is not None and want is not None and v.dtype != want:
            v = imp.emit("Cast", [v], {"to": dtypes.name(want)}, suffix=f"cast{i}")
        values.append(v)
    return imp.emit(ir_op, values)


def require_nhwc(node):
    """A node the layout planner left channels-first (an unset `layout` is the IR's NCHW) has no Keras form."""
    if node.attrs.get("layout", "NCHW") != "NHWC":
        raise Unsupported("channels-first layout reached the Keras backend")


def keras_padding(em, node, x_expr, nsp, kernel, fill=None, same_ok=True):
    """(expression, keras padding) for the node's ONNX padding; "same" where the pads are Keras's own (only
    when `same_ok`: an average pool's "same" leaves the padding out of its count)."""
    ap = node.attrs.get("auto_pad", "NOTSET")
    if ap == "SAME_UPPER":
        return x_expr, "same"
    if ap == "VALID":
        return x_expr, "valid"
    if ap == "SAME_LOWER":
        raise Unsupported("SAME_LOWER padding")
    pads = node.attrs.get("pads") or [0] * (2 * nsp)
    if not any(pads):
        return x_expr, "valid"
    if same_ok and list(pads) == same_pads(node, nsp, kernel):
        return x_expr, "same"
    widths = [[0, 0]] + [[pads[i], pads[i + nsp]] for i in range(nsp)] + [[0, 0]]
    kwargs = {} if fill is None else {"constant_values": fill}
    return P.call("ops.pad", x_expr, widths, **kwargs), "valid"


def same_pads(node, nsp: int, kernel) -> list[int] | None:
    """The pads (ONNX order) that Keras's padding="same" adds for the node's channels-last input (None where
    they depend on a spatial size that is not static)."""
    shape = node.inputs[0].shape
    spatial = list(shape[1 : 1 + nsp]) if shape is not None and len(shape) >= nsp + 2 else [None] * nsp
    strides = node.attrs.get("strides") or [1] * nsp
    dilations = node.attrs.get("dilations") or [1] * nsp
    before, after = [], []
    for size, k, s, d in zip(spatial, kernel, strides, dilations):
        if s == 1:
            total = (int(k) - 1) * d
        elif isinstance(size, int):
            total = max((-(-size // s) - 1) * s + (int(k) - 1) * d + 1 - size, 0)
        else:
            return None
        before.append(total // 2)
        after.append(total - total // 2)
    return before + after


def has_activation(layer) -> bool:
    """True when the layer applies an activation other than the identity."""
    rule = R.import_rule(activation_name(layer), "activation")
    return rule is not None and rule.ir_op is not None
