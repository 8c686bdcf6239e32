"""TensorFlow's own functions in Keras model code (rules/code.py), read as the `keras.ops` calls they equal: custom
layers written for TensorFlow's Keras call `tf.nn.relu`, `tf.matmul`, `tf.reduce_mean`, `tf.concat` beside the layers
(`tf.keras.layers.Dense` is Keras' own: imports.ALIASES). Only these rows are read; any other `tf.` call is refused.
"""

from __future__ import annotations

import ast
from functools import partial

from tensorbridge.rules.code import (
    DTYPE_NAMES,
    OpCall,
    Refused,
    dtype_name,
    known,
    only,
    read_gelu,
    read_pad,
    split_cuts,
)
from tensorbridge.rules.keras.code import C

TF = "tensorflow."
#: TensorFlow's dtypes by path -> the dtype's name
DTYPES = {f"{TF}{name}": name for name in DTYPE_NAMES}

_fn = partial(C.reads, inputs="x")


def _paths(names: str) -> str:
    """`tf.<name>` for each name ("nn.relu math.sigmoid")."""
    return " ".join(TF + n for n in names.split())


for _names, _op, _arg in (("nn.relu", "Relu", "features"), ("nn.relu6", "Relu6", "features"),
                          ("nn.elu", "Elu", "features"), ("nn.softplus", "Softplus", "features"),
                          ("nn.sigmoid sigmoid math.sigmoid", "Sigmoid", "x"), ("nn.tanh tanh math.tanh", "Tanh", "x"),
                          ("sqrt math.sqrt", "Sqrt", "x"), ("exp math.exp", "Exp", "x"), ("math.log", "Log", "x"),
                          ("square math.square", "Square", "x"), ("math.rsqrt", "Rsqrt", "x"),
                          ("abs math.abs", "Abs", "x"), ("math.erf", "Erf", "x"), ("sin math.sin", "Sin", "x"),
                          ("cos math.cos", "Cos", "x")):
    _fn(_paths(_names), _op, f"{_arg} name=None", inputs=_arg)
_fn(_paths("nn.silu nn.swish"), "SiLU", "features beta=1.0", inputs="features", check=lambda a: only(a, beta=1.0))
_fn(_paths("nn.leaky_relu"), "LeakyRelu", "features alpha=0.2 name=None", inputs="features", alpha="alpha")
C.function(_paths("nn.gelu"), "Gelu", "features approximate=False name=None",
           read=lambda a: read_gelu({"x": a["features"], "approximate": a["approximate"]}))
for _name, _op in (("softmax", "Softmax"), ("log_softmax", "LogSoftmax")):
    C.function(_paths(f"nn.{_name}"), _op, "logits axis=None name=None", read=lambda a, op=_op: OpCall(
        op, [a["logits"]], {"axis": a["axis"] if known(a["axis"]) is not None else -1}))
for _name, _op in (("add", "Add"), ("subtract", "Sub"), ("multiply", "Mul"), ("divide", "Div"),
                   ("maximum", "Max"), ("minimum", "Min"), ("pow", "Pow")):
    _fn(_paths(f"{_name} math.{_name}"), _op, "x y name=None", inputs="x y")
def _matmul(a):
    """tf.matmul, either factor transposed over its last two axes (`transpose_b=True`)."""
    only(a, adjoint_a=False, adjoint_b=False, output_type=None)
    flags = {f: known(a[f]) for f in ("transpose_a", "transpose_b")}
    if not all(isinstance(v, bool) for v in flags.values()):
        raise Refused("transpose_a or transpose_b given by a variable")
    return OpCall("MatMul", [a["a"], a["b"]], {f: True for f, v in flags.items() if v})


C.function(_paths("matmul linalg.matmul"), "MatMul", "a b transpose_a=False transpose_b=False adjoint_a=False "
           "adjoint_b=False a_is_sparse=False b_is_sparse=False output_type=None grad_a=False grad_b=False name=None",
           read=_matmul)
for _name, _op in (("argmax", "ArgMax"), ("argmin", "ArgMin")):  # along axis 0 unless told otherwise
    C.function(_paths(f"{_name} math.{_name}"), _op, "input axis=None output_type=None name=None",
               read=lambda a, op=_op: OpCall(op, [a["input"]], {
                   "axis": a["axis"] if known(a["axis"]) is not None else 0, "keepdims": False}))
for _name, _op in (("sum", "ReduceSum"), ("mean", "ReduceMean"), ("max", "ReduceMax"), ("min", "ReduceMin")):
    _fn(_paths(f"reduce_{_name} math.reduce_{_name}"), _op, "input_tensor axis=None keepdims=False name=None",
        inputs="input_tensor", axis="axis", keepdims="keepdims")
_fn(_paths("concat"), "Concat", "values axis name=None", inputs="values", axis="axis")
_fn(_paths("stack"), "Stack", "values axis=0 name=None", inputs="values", axis="axis")
_fn(_paths("reshape"), "Reshape", "tensor shape name=None", inputs="tensor", shape="shape")
_fn(_paths("transpose"), "Transpose", "a perm=None conjugate=False name=None", inputs="a", perm="perm",
    check=lambda a: only(a, conjugate=False))
_fn(_paths("expand_dims"), "Unsqueeze", "input axis name=None", inputs="input", axis="axis")
_fn(_paths("squeeze"), "Squeeze", "input axis=None name=None", inputs="input", axis="axis")
_fn(_paths("cast"), "Cast", "x dtype name=None", to="dtype")
_fn(_paths("stop_gradient"), "StopGradient", "input name=None", inputs="input")
_fn(_paths("identity"), "Identity", "input name=None", inputs="input")


def _extract_patches(a):
    """tf.image.extract_patches of patches side by side (keras.io's ViT: `sizes=[1, p, p, 1]`, the same strides,
    rates of 1, "VALID"), which keras.ops.image.extract_patches computes; overlapping, dilated or padded patches
    are refused."""
    sizes = a["sizes"]
    if not (isinstance(sizes, (ast.List, ast.Tuple)) and len(sizes.elts) == 4 and
            known(sizes.elts[0]) == known(sizes.elts[3]) == 1 and _same(sizes.elts[1], sizes.elts[2])):
        raise Refused("sizes other than a displayed [1, p, p, 1]")
    if not _same(a["strides"], sizes) or known(a["rates"]) not in ([1, 1, 1, 1], (1, 1, 1, 1)) or \
            known(a["padding"]) not in ("VALID", "valid"):
        raise Refused("patches that overlap, are spaced, dilated or padded (only strides equal to sizes, rates of "
                      "1 and VALID padding are translated)")
    return OpCall("ExtractPatches", [a["images"]], {"size": sizes.elts[1]})


def _same(a, b) -> bool:
    """Whether two arguments are the same expression."""
    return isinstance(a, ast.AST) and isinstance(b, ast.AST) and ast.dump(a) == ast.dump(b)


C.function(_paths("image.extract_patches"), "ExtractPatches", "images sizes strides rates padding name=None",
           read=_extract_patches)


def _one_hot(a):
    """tf.one_hot: float32 ones and zeros along the last axis unless told otherwise."""
    only(a, on_value=None, off_value=None, axis=None)
    dtype = known(a["dtype"])
    if dtype is not None and dtype not in DTYPE_NAMES:
        raise Refused("dtype given by a variable")
    return OpCall("OneHot", [a["indices"]], {"num_classes": a["depth"], "dtype": dtype or "float32"})


C.function(_paths("one_hot"), "OneHot", "indices depth on_value=None off_value=None axis=None dtype=None name=None",
           read=_one_hot)
_fn(_paths("shape"), "Shape", "input out_type=None name=None", inputs="input", returns="python", index=None,
    check=lambda a: only(a, out_type=None))
def _both_branches(a) -> None:
    """tf.where(condition) alone gives the indices where it holds: a result whose size depends on the data."""
    if known(a["x"]) is None or known(a["y"]) is None:
        raise Refused("tf.where(condition) without x and y (its result's size depends on the data)")


_fn(_paths("where"), "Where", "condition x=None y=None name=None", inputs="condition x y",
    check=_both_branches)
_fn(_paths("clip_by_value"), "Clip", "t clip_value_min clip_value_max name=None", inputs="t",
    min="clip_value_min", max="clip_value_max")
_fn(_paths("tile"), "Tile", "input multiples name=None", inputs="input", repeats="multiples")
for _name, _value in (("zeros_like", 0.0), ("ones_like", 1.0)):
    _fn(_paths(_name), "ConstantLike", "input dtype=None name=None layout=None", inputs="input", value=_value,
        dtype="dtype")
_fn(_paths("einsum"), "Einsum", "equation *inputs", inputs="inputs", equation="equation")
_fn(_paths("range"), "Range", "start limit=None delta=1 dtype=None name=None", inputs="", start="start",
    stop="limit", step="delta", dtype="dtype", check=lambda a: dtype_name(a["dtype"]))


C.function(_paths("pad"), "Pad", "tensor paddings mode='CONSTANT' constant_values=0 name=None",
           read=lambda a: read_pad(a, "tensor", "paddings", "constant_values", {
               **{m: m.lower() for m in ("CONSTANT", "REFLECT")}, "constant": "constant", "reflect": "reflect"}))


def _split(a):
    """tf.split into equal parts (a number) or parts of the sizes listed (the indices where keras.ops.split cuts:
    their running sums)."""
    only(a, num=None)
    if isinstance(known(a["num_or_size_splits"]), int):
        return OpCall("Split", [a["value"]], {"sections": a["num_or_size_splits"], "axis": a["axis"]})
    cuts = split_cuts(a["num_or_size_splits"])
    if cuts is None:
        raise Refused("num_or_size_splits given by a variable or with a -1 part")
    return OpCall("Split", [a["value"]], {"sections": cuts, "axis": a["axis"]})


C.function(_paths("split"), "Split", "value num_or_size_splits axis=0 num=None name=None", read=_split,
           returns="tensors")
