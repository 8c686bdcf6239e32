"""ML Program (MIL) ops read into the IR: the iOS 15 opset and the later forms of its ops that coremltools'
converters write.

A converter `fn(imp, op)` reads the op's arguments through `imp` (frontends/coreml/program.py): `imp.x` is
its `x`, `imp.tensor(name)` any tensor argument, `imp.const(name, default)` a constant one (NumPy),
`imp.known(name)` an argument's known shape. The op semantics follow coremltools' op definitions; those whose
definition leaves a case open (a rounding, a border) are read only in the case it states.
"""

from __future__ import annotations

import numpy as np

from tensorbridge.errors import ModelError
from tensorbridge.reference.kernels.conv import resolve_pads
from tensorbridge.rules.coreml.base import R, mil
from tensorbridge.rules.coreml.export import ALPHA, BINARY, GELU, REDUCE, UNARY

MIL_DTYPES = {"fp32": np.float32, "fp16": np.float16, "int32": np.int32, "bool": np.bool_, "int8": np.int8,
              "uint8": np.uint8, "int16": np.int16, "uint16": np.uint16, "fp64": np.float64, "int64": np.int64}

for _ir, _mil in UNARY.items():
    R.row(_mil, _ir, kind="mil")
for _ir, _mil in BINARY.items():
    R.row(_mil, _ir, kind="mil")


def _scalar(imp, name: str, default=None) -> float:
    value = imp.const(name, default)
    return float(np.asarray(value).reshape(-1)[0])


def _ints(imp, name: str, default=None) -> list[int]:
    value = imp.const(name, default)
    return [int(v) for v in np.asarray(value).reshape(-1)]


def _add_epsilon(imp, name: str, default: float):
    x, eps = imp.x, _scalar(imp, name, default)
    return x if eps == 0 else imp.b.op("Add", x, imp.b.const(np.array(eps, x.dtype)), suffix="epsilon")


@mil("inverse", produces=("Reciprocal", "Add"))
def inverse(imp, op):
    return imp.b.op("Reciprocal", _add_epsilon(imp, "epsilon", 1e-4))


@mil("log", produces=("Log", "Add"))
def log(imp, op):
    return imp.b.op("Log", _add_epsilon(imp, "epsilon", 1e-45))


@mil("rsqrt", produces=("Reciprocal", "Sqrt", "Add"))
def rsqrt(imp, op):
    return imp.b.op("Reciprocal", imp.b.op("Sqrt", _add_epsilon(imp, "epsilon", 1e-12), suffix="sqrt"))


@mil("mod", produces="Mod")
def mod(imp, op):
    """x % y with the divisor's sign (Python's), ONNX's Mod with fmod 0."""
    return imp.b.op("Mod", imp.x, imp.tensor("y"), fmod=0)


@mil("square", produces="Mul")
def square(imp, op):
    return imp.b.op("Mul", imp.x, imp.x)


@mil("threshold", produces="Max")
def threshold(imp, op):
    return imp.b.op("Max", imp.x, imp.b.const(np.array(_scalar(imp, "alpha"), imp.x.dtype)))


@mil("relu6", produces="Clip")
def relu6(imp, op):
    b, dtype = imp.b, imp.x.dtype
    return b.op("Clip", imp.x, b.const(np.array(0, dtype)), b.const(np.array(6, dtype)))


for _ir, (_mil, _attr, _default) in ALPHA.items():
    mil(_mil, produces=_ir)(lambda imp, op, _ir=_ir, _attr=_attr, _default=_default: imp.b.op(
        _ir, imp.x, **{_attr: _scalar(imp, "alpha", _default)}))


@mil("sigmoid_hard", produces="HardSigmoid")
def sigmoid_hard(imp, op):
    return imp.b.op("HardSigmoid", imp.x, alpha=_scalar(imp, "alpha", 0.2), beta=_scalar(imp, "beta", 0.5))


@mil("gelu", produces=("Gelu", "Mul", "Sigmoid"))
def gelu(imp, op):
    mode = str(imp.const("mode", "EXACT"))
    if mode == "SIGMOID_APPROXIMATION":  # x * sigmoid(1.702 x)
        b = imp.b
        scaled = b.op("Mul", imp.x, b.const(np.array(1.702, imp.x.dtype)), suffix="scaled")
        return b.op("Mul", imp.x, b.op("Sigmoid", scaled, suffix="sigmoid"))
    approximate = {v: k for k, v in GELU.items()}.get(mode)
    if approximate is None:
        raise ModelError(f"gelu mode {mode!r}")
    return imp.b.op("Gelu", imp.x, approximate=approximate)


@mil("prelu", produces="PRelu")
def prelu(imp, op):
    x, alpha = imp.x, imp.const("alpha")
    rank = len(imp.known("x"))
    return imp.b.op("PRelu", x, imp.weight("alpha", np.asarray(alpha).reshape((-1,) + (1,) * (rank - 2))))


@mil("linear_activation", produces=("Mul", "Add"))
def linear_activation(imp, op):
    b, dtype = imp.b, imp.x.dtype
    scaled = b.op("Mul", imp.x, b.const(np.array(_scalar(imp, "alpha"), dtype)), suffix="scaled")
    return b.op("Add", scaled, b.const(np.array(_scalar(imp, "beta", 0.0), dtype)))


@mil("clip", produces="Clip")
def clip(imp, op):
    b, dtype = imp.b, imp.x.dtype
    return b.op("Clip", imp.x, b.const(np.array(_scalar(imp, "alpha"), dtype)),
                b.const(np.array(_scalar(imp, "beta"), dtype)))


@mil("select", produces="Where")
def select(imp, op):
    return imp.b.op("Where", imp.tensor("cond"), imp.tensor("a"), imp.tensor("b"))


@mil("cast", produces="Cast")
def cast(imp, op):
    dtype = str(imp.const("dtype"))
    if dtype not in MIL_DTYPES:
        raise ModelError(f"cast to {dtype!r}")
    return imp.b.op("Cast", imp.x, to=np.dtype(MIL_DTYPES[dtype]))


# -- convolution and pooling --------------------------------------------------------------------------------
def _pads(imp, kernel, strides, dilations, transpose: bool = False) -> list[int]:
    """ONNX-style pads (begins, then ends) from MIL's pad_type and pad."""
    shape = imp.known("x")
    rank = len(shape) - 2
    kind = str(imp.const("pad_type", "valid"))
    if kind == "custom":
        pad = _ints(imp, "pad", [0] * 2 * rank)
        return pad[0::2] + pad[1::2]
    imp.const("pad", None)
    if kind == "valid":
        return [0] * 2 * rank
    if kind not in ("same", "same_lower") or transpose:
        raise ModelError(f"pad_type {kind!r}")
    return resolve_pads(shape[2:], kernel, strides, dilations, None, "SAME_UPPER" if kind == "same" else "SAME_LOWER")


@mil("conv", "conv_transpose", produces=("Conv", "ConvTranspose"))
def conv(imp, op):
    shape = imp.known("x")
    rank = len(shape) - 2
    weight = imp.const("weight")
    kernel = list(weight.shape[2:])
    strides, dilations = _ints(imp, "strides", [1] * rank), _ints(imp, "dilations", [1] * rank)
    transpose = op.type == "conv_transpose"
    pads = _pads(imp, kernel, strides, dilations, transpose)
    attrs = {"kernel_shape": kernel, "strides": strides, "dilations": dilations, "pads": pads,
             "group": int(_scalar(imp, "groups", 1))}
    bias = imp.const("bias", None)
    inputs = [imp.x, imp.weight("weight", weight), None if bias is None else imp.weight("bias", bias)]
    if transpose:
        output_shape = imp.const("output_shape", None)
        if output_shape is not None:
            attrs["output_shape"] = [int(d) for d in np.asarray(output_shape).reshape(-1)[-rank:]]
        return imp.b.op("ConvTranspose", *inputs, **attrs)
    return imp.b.op("Conv", *inputs, **attrs)


@mil("max_pool", "avg_pool", produces=("MaxPool", "AveragePool"))
def pool(imp, op):
    rank = len(imp.known("x")) - 2
    kernel = _ints(imp, "kernel_sizes")
    strides = _ints(imp, "strides", [1] * rank)
    attrs = {"kernel_shape": kernel, "strides": strides, "pads": _pads(imp, kernel, strides, [1] * rank),
             "ceil_mode": int(bool(imp.const("ceil_mode", False)))}
    if op.type == "max_pool":
        return imp.b.op("MaxPool", imp.x, **attrs)
    exclude = bool(imp.const("exclude_padding_from_average", False))
    if not exclude and attrs["ceil_mode"] and any(attrs["pads"]):
        raise ModelError("an average over padding with ceil rounding (Core ML's border rule is not stated)")
    return imp.b.op("AveragePool", imp.x, count_include_pad=int(not exclude), **attrs)


# -- normalisation, products, softmax -----------------------------------------------------------------------
@mil("batch_norm", produces="BatchNormalization")
def batch_norm(imp, op):
    mean, var = imp.const("mean"), imp.const("variance")
    gamma, beta = imp.const("gamma", np.ones_like(mean)), imp.const("beta", np.zeros_like(mean))
    return imp.b.op("BatchNormalization", imp.x, imp.weight("gamma", gamma), imp.weight("beta", beta),
                    imp.weight("mean", mean), imp.weight("variance", var), epsilon=_scalar(imp, "epsilon", 1e-5))


@mil("instance_norm", produces="InstanceNormalization")
def instance_norm(imp, op):
    channels = imp.known("x")[1]
    gamma = imp.const("gamma", np.ones(channels, imp.x.dtype))
    beta = imp.const("beta", np.zeros(channels, imp.x.dtype))
    return imp.b.op("InstanceNormalization", imp.x, imp.weight("gamma", gamma), imp.weight("beta", beta),
                    epsilon=_scalar(imp, "epsilon", 1e-5))


@mil("layer_norm", produces="LayerNormalization")
def layer_norm(imp, op):
    shape = imp.known("x")
    rank = len(shape)
    axes = sorted(a % rank for a in _ints(imp, "axes", list(range(rank))))
    if axes != list(range(axes[0], rank)):
        raise ModelError(f"normalisation over axes {axes}, which are not the trailing ones")
    normalised = tuple(shape[axes[0]:])
    gamma = imp.const("gamma", np.ones(normalised, imp.x.dtype))
    beta = imp.const("beta", np.zeros(normalised, imp.x.dtype))
    return imp.b.op("LayerNormalization", imp.x, imp.weight("gamma", gamma), imp.weight("beta", beta),
                    axis=axes[0], epsilon=_scalar(imp, "epsilon", 1e-5))


@mil("local_response_norm", produces="LRN")
def local_response_norm(imp, op):
    return imp.b.op("LRN", imp.x, size=int(_scalar(imp, "size")), alpha=_scalar(imp, "alpha", 1e-4),
                    beta=_scalar(imp, "beta", 0.75), bias=_scalar(imp, "k", 1.0))


@mil("linear", produces="Dense")
def linear(imp, op):
    weight, bias = imp.const("weight"), imp.const("bias", None)
    return imp.b.op("Dense", imp.x, imp.weight("weight", np.ascontiguousarray(np.asarray(weight).T)),
                    None if bias is None else imp.weight("bias", bias))


@mil("matmul", produces=("MatMul", "Transpose"))
def matmul(imp, op):
    operands = []
    for name, flag in (("x", "transpose_x"), ("y", "transpose_y")):
        v = imp.tensor(name)
        if bool(imp.const(flag, False)):
            rank = len(imp.known(name))
            perm = list(range(rank - 2)) + [rank - 1, rank - 2]
            v = imp.b.op("Transpose", v, perm=perm, suffix=f"{name}_t")
        operands.append(v)
    return imp.b.op("MatMul", *operands)


@mil("softmax", produces="Softmax")
def softmax(imp, op):
    return imp.b.op("Softmax", imp.x, axis=int(_scalar(imp, "axis", -1)))


# -- reductions ---------------------------------------------------------------------------------------------
for _ir, _mil in REDUCE.items():
    mil(_mil, produces=_ir)(lambda imp, op, _ir=_ir: imp.b.op(
        _ir, imp.x, imp.b.const(np.array(_ints(imp, "axes", list(range(len(imp.known("x"))))), np.int64)),
        keepdims=int(bool(imp.const("keep_dims", False)))))


@mil("reduce_argmax", "reduce_argmin", produces=("ArgMax", "ArgMin"))
def reduce_arg(imp, op):
    ir = "ArgMax" if op.type == "reduce_argmax" else "ArgMin"
    index = imp.b.op(ir, imp.x, axis=int(_scalar(imp, "axis", -1)), keepdims=int(bool(imp.const("keep_dims", False))))
    return imp.b.op("Cast", index, to=np.dtype(np.int32), suffix="int32")


@mil("cumsum", produces="CumSum")
def cumsum(imp, op):
    axis = imp.b.const(np.array(int(_scalar(imp, "axis", 0)), np.int64))
    return imp.b.op("CumSum", imp.x, axis, exclusive=int(bool(imp.const("exclusive", False))),
                    reverse=int(bool(imp.const("reverse", False))))


@mil("topk", produces=("TopK", "Cast"))
def topk(imp, op):
    if not bool(imp.const("sort", True)) or not bool(imp.const("return_indices", True)):
        raise ModelError("top-k unsorted or without its indices")
    k = imp.b.const(np.array([int(_scalar(imp, "k", 1))], np.int64))
    values, indices = imp.b.emit("TopK", [imp.x, k], {"axis": int(_scalar(imp, "axis", -1)),
                                                      "largest": int(not bool(imp.const("ascending", False)))},
                                 outputs=2)
    return [values, imp.b.op("Cast", indices, to=np.dtype(np.int32), suffix="int32")]
