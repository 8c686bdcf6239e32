"""Neural-network layers (the `.mlmodel` form before ML Programs) read into the IR.

A converter `fn(imp, layer)` reads the layer's parameter message (`imp.params`) and inputs (`imp.inputs`). The
layer semantics are those coremltools' own MIL-to-neural-network mapping relies on: a layer is read only in
the configurations that mapping writes for a MIL op whose meaning is stated (e.g. `innerProduct` on inputs of
rank 1 to 3 is MIL's `linear` on the last axis); anything else is a blocker naming the layer and what differs.
"""

from __future__ import annotations

import numpy as np

from tensorbridge.errors import ModelError
from tensorbridge.rules.coreml.base import layer

ACTIVATIONS = {"ReLU": "Relu", "tanh": "Tanh", "sigmoid": "Sigmoid", "softplus": "Softplus", "softsign": "Softsign"}
BROADCAST = {"addBroadcastable": "Add", "subtractBroadcastable": "Sub", "multiplyBroadcastable": "Mul",
             "divideBroadcastable": "Div", "maxBroadcastable": "Max", "minBroadcastable": "Min"}
#: comparisons and logic: a neural network holds their results (and reads truth values) as 1.0 and 0.0
COMPARE = {"greaterThan": "Greater", "lessThan": "Less", "equal": "Equal", "greaterEqual": "GreaterOrEqual",
           "lessEqual": "LessOrEqual", "notEqual": "Equal", "logicalAnd": "And", "logicalOr": "Or"}
UNARY = {"floor": "Floor", "ceil": "Ceil"}
REDUCE = {"reduceMean": "ReduceMean", "reduceSum": "ReduceSum", "reduceMax": "ReduceMax", "reduceMin": "ReduceMin",
          "reduceProd": "ReduceProd"}


def weights(params, shape) -> np.ndarray:
    """A WeightParams message as a float32 array of `shape`."""
    if len(params.floatValue):
        data = np.asarray(params.floatValue, np.float32)
    elif params.float16Value:
        data = np.frombuffer(params.float16Value, np.float16).astype(np.float32)
    elif params.rawValue:
        data = np.frombuffer(params.rawValue, np.float32).copy()
    else:
        raise ModelError("weights stored quantized or empty")
    if data.size != int(np.prod(shape)):
        raise ModelError(f"{data.size} weights for a shape {list(shape)}")
    return data.reshape(shape)


def _rank(imp, index: int = 0) -> int:
    shape = imp.inputs[index].shape
    if shape is None:
        raise ModelError("an input of unknown rank")
    return len(shape)


@layer("activation", produces=(*ACTIVATIONS.values(), "LeakyRelu", "Elu", "HardSigmoid", "PRelu", "Mul", "Add"))
def activation(imp, lay):
    p = imp.params
    kind = p.WhichOneof("NonlinearityType")
    x, b = imp.x, imp.b
    if kind in ACTIVATIONS:
        return b.op(ACTIVATIONS[kind], x)
    if kind == "leakyReLU":
        return b.op("LeakyRelu", x, alpha=p.leakyReLU.alpha)
    if kind == "ELU":
        return b.op("Elu", x, alpha=p.ELU.alpha)
    if kind == "sigmoidHard":
        return b.op("HardSigmoid", x, alpha=p.sigmoidHard.alpha, beta=p.sigmoidHard.beta)
    if kind == "linear":
        scaled = b.op("Mul", x, b.const(np.array(p.linear.alpha, x.dtype)), suffix="scaled")
        return b.op("Add", scaled, b.const(np.array(p.linear.beta, x.dtype)))
    if kind == "PReLU":
        rank = _rank(imp)
        slopes = weights(p.PReLU.alpha, (len(p.PReLU.alpha.floatValue) or -1,)) if rank >= 3 else None
        if slopes is None:
            raise ModelError("PReLU of an input of rank below 3")
        return b.op("PRelu", x, imp.weight("alpha", slopes.reshape((-1,) + (1,) * (rank - 2))))
    raise ModelError(f"activation {kind}")


@layer("convolution", produces=("Conv", "ConvTranspose"))
def convolution(imp, lay):
    p = imp.params
    if _rank(imp) != 4 or len(imp.inputs) != 1:
        raise ModelError("a convolution of other than one (N, C, H, W) input with constant weights")
    groups = p.nGroups or 1
    kernel = list(p.kernelSize) or [3, 3]
    strides, dilations = list(p.stride) or [1, 1], list(p.dilationFactor) or [1, 1]
    if p.WhichOneof("ConvolutionPaddingType") != "valid" or p.isDeconvolution:
        raise ModelError("a convolution with 'same' padding or a deconvolution")
    amounts = p.valid.paddingAmounts.borderAmounts
    pads = [a.startEdgeSize for a in amounts] + [a.endEdgeSize for a in amounts] if amounts else [0] * 4
    weight = weights(p.weights, (p.outputChannels, p.kernelChannels, *kernel))
    bias = weights(p.bias, (p.outputChannels,)) if p.hasBias else None
    return imp.b.op("Conv", imp.x, imp.weight("weight", weight), None if bias is None else imp.weight("bias", bias),
                    kernel_shape=kernel, strides=strides, dilations=dilations, pads=pads, group=groups)


@layer("pooling", produces=("MaxPool", "AveragePool", "GlobalMaxPool", "GlobalAveragePool"))
def pooling(imp, lay):
    p = imp.params
    kind = {0: "MaxPool", 1: "AveragePool"}.get(p.type)
    if kind is None or _rank(imp) != 4:
        raise ModelError("pooling other than max or average of an (N, C, H, W) input")
    if p.globalPooling:
        return imp.b.op(f"Global{kind}", imp.x)
    padding = p.WhichOneof("PoolingPaddingType")
    if padding != "valid":
        raise ModelError(f"pooling padding {padding} (Core ML's border rule for it is not stated)")
    amounts = p.valid.paddingAmounts.borderAmounts
    pads = [a.startEdgeSize for a in amounts] + [a.endEdgeSize for a in amounts] if amounts else [0] * 4
    attrs = {"kernel_shape": list(p.kernelSize), "strides": list(p.stride), "pads": pads}
    if kind == "AveragePool":
        attrs["count_include_pad"] = int(not p.avgPoolExcludePadding)
    return imp.b.op(kind, imp.x, **attrs)


@layer("batchnorm", produces="BatchNormalization")
def batchnorm(imp, lay):
    p = imp.params
    if p.computeMeanVar or p.instanceNormalization:
        raise ModelError("batch statistics computed at run time")
    c = (p.channels,)
    parts = [imp.weight(n, weights(getattr(p, n), c)) for n in ("gamma", "beta", "mean", "variance")]
    return imp.b.op("BatchNormalization", imp.x, *parts, epsilon=p.epsilon)


@layer("innerProduct", produces="Dense")
def inner_product(imp, lay):
    """On inputs of rank 1 to 3 it is MIL's `linear`: the last axis times the weights."""
    p = imp.params
    if not 1 <= _rank(imp) <= 3:
        raise ModelError("innerProduct of an input of rank above 3 (its channel-axis form)")
    weight = weights(p.weights, (p.outputChannels, p.inputChannels))
    bias = weights(p.bias, (p.outputChannels,)) if p.hasBias else None
    return imp.b.op("Dense", imp.x, imp.weight("weight", np.ascontiguousarray(weight.T)),
                    None if bias is None else imp.weight("bias", bias))


@layer("batchedMatmul", produces=("MatMul", "Dense", "Transpose"))
def batched_matmul(imp, lay):
    p = imp.params
    b = imp.b
    if len(imp.inputs) == 1:
        if p.transposeA:
            raise ModelError("a transposed input times constant weights")
        weight = weights(p.weights, (p.weightMatrixRows, p.weightMatrixColumns))
        bias = weights(p.bias, (p.weightMatrixColumns,)) if p.hasBias else None
        return b.op("Dense", imp.x, imp.weight("weight", weight), None if bias is None else imp.weight("bias", bias))
    operands = []
    for k, flag in enumerate((p.transposeA, p.transposeB)):
        v = imp.inputs[k]
        if flag:
            rank = _rank(imp, k)
            v = b.op("Transpose", v, perm=list(range(rank - 2)) + [rank - 1, rank - 2], suffix=f"t{k}")
        operands.append(v)
    return b.op("MatMul", *operands)


@layer("add", "multiply", produces=("Add", "Mul", "Sum"))
def add_multiply(imp, lay):
    ir = "Add" if lay.WhichOneof("layer") == "add" else "Mul"
    b = imp.b
    if len(imp.inputs) == 1:
        return b.op(ir, imp.x, b.const(np.array(imp.params.alpha, imp.x.dtype)))
    total = imp.inputs[0]
    for k, v in enumerate(imp.inputs[1:]):
        total = b.op(ir, total, v, suffix="" if k == len(imp.inputs) - 2 else f"part{k}")
    return total


for _name, _ir in BROADCAST.items():
    layer(_name, produces=_ir)(lambda imp, lay, _ir=_ir: imp.b.op(_ir, *imp.inputs))
for _name, _ir in UNARY.items():
    layer(_name, produces=_ir)(lambda imp, lay, _ir=_ir: imp.b.op(_ir, imp.x))


def _truth(imp, v, k: int):
    return v if v.dtype == np.bool_ else imp.b.op("Cast", v, to=np.dtype(np.bool_), suffix=f"truth{k}")


@layer(*COMPARE, produces=(*sorted(set(COMPARE.values())), "Not", "Cast"))
def compare(imp, lay):
    kind, b = lay.WhichOneof("layer"), imp.b
    operands = imp.inputs if len(imp.inputs) == 2 else [imp.x, b.const(np.array(imp.params.alpha, imp.x.dtype))]
    if kind.startswith("logical"):
        operands = [_truth(imp, v, k) for k, v in enumerate(operands)]
    result = b.op(COMPARE[kind], *operands, suffix="truth")
    if kind == "notEqual":
        result = b.op("Not", result, suffix="not")
    return b.op("Cast", result, to=np.dtype(imp.x.dtype if imp.x.dtype != np.bool_ else np.float32))


@layer("whereBroadcastable", produces=("Where", "Cast"))
def where(imp, lay):
    return imp.b.op("Where", _truth(imp, imp.inputs[0], 0), imp.inputs[1], imp.inputs[2])


def _indices(imp, v):
    return v if v.dtype.kind in "iu" else imp.b.op("Cast", v, to=np.dtype(np.int64), suffix="indices")


@layer("gather", produces=("Gather", "Cast"))
def gather(imp, lay):
    return imp.b.op("Gather", imp.inputs[0], _indices(imp, imp.inputs[1]), axis=imp.params.axis)


@layer("gatherND", produces=("GatherND", "Cast"))
def gather_nd(imp, lay):
    return imp.b.op("GatherND", imp.inputs[0], _indices(imp, imp.inputs[1]))


@layer("embeddingND", produces=("Gather", "Squeeze", "Add", "Cast"))
def embedding_nd(imp, lay):
    """Indices with a trailing axis of 1 -> their rows of the (embedding, vocabulary) weights, transposed."""
    p, b = imp.params, imp.b
    if imp.x.shape is None or imp.x.shape[-1] != 1:
        raise ModelError("embeddingND of indices without a trailing axis of 1")
    table = weights(p.weights, (p.embeddingSize, p.vocabSize)).T
    ids = b.op("Squeeze", _indices(imp, imp.x), b.const(np.array([-1], np.int64)), suffix="ids")
    rows = b.op("Gather", imp.weight("weight", np.ascontiguousarray(table)), ids, axis=0,
                suffix="rows" if p.hasBias else "")
    return b.op("Add", rows, imp.weight("bias", weights(p.bias, (p.embeddingSize,)))) if p.hasBias else rows


@layer("mvn", produces="LayerNormalization")
def mvn(imp, lay):
    """Mean and variance normalisation over the last two axes (H, W), or the last three (C, H, W) across
    channels: MIL's layer_norm over those axes, as coremltools maps it."""
    p = imp.params
    rank = _rank(imp)
    if not p.normalizeVariance or rank < 3:
        raise ModelError("mean normalisation without the variance, or of an input of rank below 3")
    axis = rank - 3 if p.acrossChannels else rank - 2
    normalised = tuple(imp.x.shape[axis:])
    b = imp.b
    return b.op("LayerNormalization", imp.x, b.const(np.ones(normalised, imp.x.dtype)),
                b.const(np.zeros(normalised, imp.x.dtype)), axis=axis, epsilon=p.epsilon)


def _per_channel(array: np.ndarray, shape) -> np.ndarray:
    """A scale layer's parameter of `shape` ([1], [C] or [C, H, W]) aligned with the (C, H, W) axes."""
    shape = tuple(shape) or (1,)
    array = array.reshape(shape)
    return array.reshape(-1, 1, 1) if len(shape) == 1 and shape[0] > 1 else array


@layer("scale", produces=("Mul", "Add"))
def scale(imp, lay):
    p, b = imp.params, imp.b
    if _rank(imp) < 3 or len(p.shapeScale) not in (0, 1, 3) or len(p.shapeBias) not in (0, 1, 3):
        raise ModelError("a scale of other than (C, H, W) axes")
    factor = _per_channel(weights(p.scale, (int(np.prod(p.shapeScale or [1])),)), p.shapeScale)
    y = b.op("Mul", imp.x, imp.weight("scale", factor), suffix="scaled" if p.hasBias else "")
    if p.hasBias:
        y = b.op("Add", y, imp.weight("bias", _per_channel(weights(p.bias, (int(np.prod(p.shapeBias or [1])),)),
                                                           p.shapeBias)))
    return y


@layer("clip", produces="Clip")
def clip(imp, lay):
    b, dtype = imp.b, imp.x.dtype
    return b.op("Clip", imp.x, b.const(np.array(imp.params.minVal, dtype)), b.const(np.array(imp.params.maxVal, dtype)))


@layer("concatND", produces="Concat")
def concat_nd(imp, lay):
    if getattr(imp.params, "interleave", False):
        raise ModelError("interleaved concatenation")
    return imp.b.op("Concat", *imp.inputs, axis=imp.params.axis)


@layer("softmaxND", produces="Softmax")
def softmax_nd(imp, lay):
    return imp.b.op("Softmax", imp.x, axis=imp.params.axis)


@layer("reshapeStatic", produces="Reshape")
def reshape_static(imp, lay):
    return imp.b.op("Reshape", imp.x, imp.b.const(np.array(list(imp.params.targetShape), np.int64)))


@layer("flattenTo2D", produces="Flatten")
def flatten_to_2d(imp, lay):
    return imp.b.op("Flatten", imp.x, axis=imp.params.axis)


@layer("transpose", produces="Transpose")
def transpose(imp, lay):
    return imp.b.op("Transpose", imp.x, perm=list(imp.params.axes))


@layer("expandDims", "squeeze", produces=("Unsqueeze", "Squeeze"))
def expand_squeeze(imp, lay):
    p, b = imp.params, imp.b
    if lay.WhichOneof("layer") == "expandDims":
        return b.op("Unsqueeze", imp.x, b.const(np.array(list(p.axes), np.int64)))
    if p.squeezeAll:
        return b.op("Squeeze", imp.x)
    return b.op("Squeeze", imp.x, b.const(np.array(list(p.axes), np.int64)))


for _name, _ir in REDUCE.items():
    layer(_name, produces=_ir)(lambda imp, lay, _ir=_ir: imp.b.op(
        _ir, imp.x, *(() if imp.params.reduceAll else (imp.b.const(np.array(list(imp.params.axes), np.int64)),)),
        keepdims=int(imp.params.keepDims)))


@layer("loadConstantND", produces=())
def load_constant(imp, lay):
    shape = tuple(imp.params.shape)
    return imp.weight("value", weights(imp.params.data, shape))


@layer("gelu", produces="Gelu")
def gelu(imp, lay):
    mode = imp.params.mode  # EXACT = 0, TANH_APPROXIMATION = 1
    if mode not in (0, 1):
        raise ModelError("gelu's sigmoid approximation")
    return imp.b.op("Gelu", imp.x, approximate="none" if mode == 0 else "tanh")


@layer("splitND", produces="Split")
def split_nd(imp, lay):
    p = imp.params
    rank = _rank(imp)
    axis = p.axis % rank
    sizes = list(p.splitSizes)
    if not sizes:
        sizes = [imp.x.shape[axis] // p.numSplits] * p.numSplits
    return list(imp.b.emit("Split", [imp.x, imp.b.const(np.array(sizes, np.int64))], {"axis": axis},
                           outputs=len(sizes)))
