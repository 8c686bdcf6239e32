"""The CNTK registry object and what its op rules share.

A primitive op is read by a converter `fn(imp, fn) -> Value | list[Value]` (kind "op", keyed by CNTK's name of the
op, `NAMES`): `imp.inputs` are its inputs as IR values, `imp.attrs` its attributes, `imp.dynamic(v)` how many of a
value's leading axes are CNTK's dynamic axes (0 for a parameter, 1 for the batch axis, 2 for a sequence: (batch,
sequence, ...)), and the rule says the same of its results with `imp.result(value, dynamic)` where it differs from
its inputs'. A value's other axes are its static axes, in NumPy's order; `static_axis` turns CNTK's stored axis
index (counted from the innermost) into the IR axis. An attribute no rule reads is a blocker.
"""

from __future__ import annotations

import functools

from tensorbridge.errors import ModelError
from tensorbridge.formats.cntk import Axis
from tensorbridge.rules.core import Registry, TrackedAttrs

R = Registry("cntk")
op = functools.partial(R.imports, kind="op")

#: CNTK's PrimitiveOpType codes (as CNTK 2.7 stores them) -> the op's name
NAMES = {0: "Negate", 1: "Sigmoid", 2: "Tanh", 3: "ReLU", 4: "Exp", 5: "Log", 6: "Sqrt", 7: "Floor", 8: "Abs",
         9: "Reciprocal", 10: "Softmax", 11: "Hardmax", 12: "TransposeAxes", 13: "Where", 14: "Slice", 15: "Dropout",
         16: "Reshape", 17: "Pooling", 18: "SumAll", 19: "Plus", 20: "Minus", 21: "ElementTimes", 22: "Equal",
         23: "NotEqual", 24: "Less", 25: "LessEqual", 26: "Greater", 27: "GreaterEqual", 28: "PackedIndex",
         29: "GatherPacked", 30: "ScatterPacked", 31: "Times", 32: "TransposeTimes", 33: "Convolution",
         34: "SquaredError", 35: "CrossEntropyWithSoftmax", 36: "ClassificationError", 37: "PastValue",
         38: "FutureValue", 39: "ReduceElements", 40: "BatchNormalization", 41: "Clip", 42: "Select", 43: "Splice",
         44: "Combine", 45: "RandomSample", 46: "RandomSampleInclusionFrequency", 47: "ROIPooling", 48: "Logistic",
         49: "OptimizedRNNStack", 50: "ReconcileDynamicAxis", 51: "LogSoftmax", 52: "LogPlus", 53: "CosDistance",
         54: "Sin", 55: "Cos", 56: "Pass", 57: "Block", 58: "Unpooling", 59: "LambdaRank", 60: "NDCG",
         61: "EditDistanceError", 62: "NoOp", 63: "LabelsToGraph", 64: "StopGradient", 65: "ELU",
         66: "ForwardBackward", 67: "CosDistanceWithNegativeSamples", 68: "OneHot", 69: "Pow", 70: "ToSequence",
         71: "ToSequenceLike", 72: "UnpackSequence", 73: "Assign", 74: "Gather", 75: "StableSigmoid",
         76: "RandomDistribution", 77: "Sinh", 78: "Cosh", 79: "UnpackBatch", 80: "ToBatch", 81: "Asin", 82: "Acos",
         83: "Pad", 84: "Crop", 85: "Atanh", 86: "Asinh", 87: "TopK", 88: "Squeeze", 89: "ConstantOp",
         90: "LatticeSequenceWithSoftmax", 91: "Cast", 92: "EyeLikeOp", 93: "CustomProxyOp", 94: "StraightThrough",
         95: "Tan", 96: "Atan"}
#: how many inputs the ops read take (CNTK checks this when it builds a model; a damaged file may not hold it)
ARITY = {**dict.fromkeys(("Negate", "Sigmoid", "StableSigmoid", "Tanh", "ReLU", "Exp", "Log", "Sqrt", "Floor", "Abs",
                          "Reciprocal", "Sin", "Cos", "Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh", "Atanh",
                          "ELU", "Pass", "NoOp", "StopGradient", "Dropout", "Softmax", "Hardmax",
                          "Reshape", "TransposeAxes", "Slice", "ReduceElements", "Pad", "Cast", "Squeeze", "Pooling",
                          "Where", "UnpackSequence"), 1),
         **dict.fromkeys(("Plus", "Minus", "ElementTimes", "Pow", "Equal", "NotEqual", "Less", "LessEqual", "Greater",
                          "GreaterEqual", "LogPlus", "Times", "Convolution", "PastValue", "FutureValue",
                          "ReconcileDynamicAxis", "PackedIndex", "GatherPacked"), 2),
         "Select": 3, "Clip": 3, "BatchNormalization": 6}
#: ops with more than one output, and how many (UnpackSequence's count depends on an attribute)
OUTPUTS = {"TopK": 2}
#: the delays: a value of the step before (PastValue) or after (FutureValue) along a sequence
DELAYS = frozenset({"PastValue", "FutureValue"})
#: attributes that tune how CNTK runs or trains an op, not what it computes at inference
TUNING = frozenset({"maxTempMemSizeInSamples", "useCuDNNEngine", "normalizationTimeConstant", "blendTimeConstant",
                    "disableRegularization", "rngSeed", "rngOffset", "dropoutRate", "sequential"})
#: the names CNTK gives its dynamic axes
BATCH_AXIS, SEQUENCE_AXIS = "defaultBatchAxis", "defaultDynamicAxis"


def attributes(raw: dict) -> TrackedAttrs:
    """A function's attributes, TUNING not counted as unread."""
    return TrackedAttrs(raw, TUNING)


def static_axis(imp, x, axis: Axis) -> int:
    """The IR axis of a CNTK static axis of `x` (stored counted from the innermost)."""
    if not isinstance(axis, Axis) or not axis.static:
        raise ModelError(f"an op along the {getattr(axis, 'name', axis)} axis (only static axes are read)")
    rank = static_rank(imp, x)
    if not 0 <= axis.index < rank:
        raise ModelError(f"static axis {axis.index} of a value of {rank} static axes")
    return imp.dynamic(x) + rank - 1 - axis.index


def static_rank(imp, x) -> int:
    if x.shape is None:
        raise ModelError("an input of unknown rank")
    return len(x.shape) - imp.dynamic(x)


def static_shape(imp, x) -> tuple:
    if x.shape is None:
        raise ModelError("an input of unknown shape")
    return tuple(x.shape[imp.dynamic(x):])


def numpy_order(stored) -> list[int]:
    """A stored (column-major) shape attribute in NumPy's order."""
    return list(reversed(list(stored)))
