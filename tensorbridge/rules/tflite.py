"""TFLite <-> IR mapping tables: element types, fused activations, builtin operators.

Simple operators are one row (IR op); the rest name a converter in
`frontends/tflite/convert.py`. TFLite tensors are channels-last: layout-carrying ops keep
`layout="NHWC"`; filters are permuted once at import (OHWI -> OIHW, depthwise
[1, H, W, C*M] -> [C*M, 1, H, W]).
"""

from __future__ import annotations

#: TensorType enum value -> IR dtype name
DTYPES = {0: "float32", 1: "float16", 2: "int32", 3: "uint8", 4: "int64", 5: "string", 6: "bool", 7: "int16",
          9: "int8", 10: "float64", 12: "uint64", 15: "uint32", 16: "uint16", 17: "int4"}

#: ActivationFunctionType -> (IR op, attrs) applied after the op; None = no activation
FUSED = {0: None, 1: ("Relu", {}), 2: ("Clip", {"min": -1.0, "max": 1.0}), 3: ("Clip", {"min": 0.0, "max": 6.0}),
         4: ("Tanh", {})}

#: builtin operators that are one IR op (inputs passed through, no options)
SIMPLE = {
    "LOGISTIC": "Sigmoid", "TANH": "Tanh", "RELU": "Relu", "EXP": "Exp", "LOG": "Log", "SQRT": "Sqrt",
    "ABS": "Abs", "NEG": "Neg", "SIN": "Sin", "COS": "Cos", "FLOOR": "Floor", "CEIL": "Ceil", "ROUND": "Round",
    "SIGN": "Sign", "HARD_SWISH": "HardSwish", "MAXIMUM": "Max", "MINIMUM": "Min", "POW": "Pow",
    "LESS": "Less", "LESS_EQUAL": "LessOrEqual", "GREATER": "Greater", "GREATER_EQUAL": "GreaterOrEqual",
    "EQUAL": "Equal", "LOGICAL_AND": "And", "LOGICAL_OR": "Or", "LOGICAL_NOT": "Not", "SELECT": "Where",
    "SELECT_V2": "Where", "TILE": "Tile", "BROADCAST_TO": "Expand", "PRELU": "PRelu", "FLOOR_MOD": "Mod",
    "ELU": "Elu",
}

#: builtin operators with a converter function (name in frontends/tflite/convert.py)
SPECIAL = {
    "CONV_2D": "conv_2d", "DEPTHWISE_CONV_2D": "depthwise_conv_2d", "TRANSPOSE_CONV": "transpose_conv",
    "FULLY_CONNECTED": "fully_connected", "ADD": "binary", "SUB": "binary", "MUL": "binary", "DIV": "binary",
    "AVERAGE_POOL_2D": "pool_2d", "MAX_POOL_2D": "pool_2d", "MEAN": "reduce", "SUM": "reduce",
    "REDUCE_MAX": "reduce", "REDUCE_MIN": "reduce", "REDUCE_PROD": "reduce", "RESHAPE": "reshape",
    "SOFTMAX": "softmax", "LOG_SOFTMAX": "log_softmax", "RELU6": "relu6", "RELU_N1_TO_1": "relu_n1_to_1",
    "LEAKY_RELU": "leaky_relu", "GELU": "gelu", "PAD": "pad", "PADV2": "pad", "MIRROR_PAD": "pad",
    "CONCATENATION": "concatenation", "TRANSPOSE": "transpose", "SQUEEZE": "squeeze", "EXPAND_DIMS": "expand_dims",
    "STRIDED_SLICE": "strided_slice", "SLICE": "slice", "GATHER": "gather", "SHAPE": "shape", "PACK": "pack",
    "UNPACK": "unpack", "SPLIT": "split", "SPLIT_V": "split_v", "RESIZE_BILINEAR": "resize",
    "RESIZE_NEAREST_NEIGHBOR": "resize", "BATCH_MATMUL": "batch_matmul", "DEQUANTIZE": "dequantize",
    "QUANTIZE": "quantize", "ARG_MAX": "arg", "ARG_MIN": "arg", "CAST": "cast", "FILL": "fill",
    "SPACE_TO_DEPTH": "space_to_depth", "DEPTH_TO_SPACE": "depth_to_space", "L2_NORMALIZATION": "l2_norm",
    "LOCAL_RESPONSE_NORMALIZATION": "lrn", "RSQRT": "rsqrt", "SQUARE": "square",
    "SQUARED_DIFFERENCE": "squared_difference", "FLOOR_DIV": "floor_div", "ZEROS_LIKE": "zeros_like",
    "IF": "if_", "WHILE": "while_",
}

#: control-flow operators -> the option fields naming the subgraphs they run
CONTROL_FLOW = {"IF": ("ThenSubgraphIndex", "ElseSubgraphIndex"), "WHILE": ("CondSubgraphIndex", "BodySubgraphIndex")}


def signature_name(name: str) -> str:
    """'serving_default_input_ids:0' -> 'input_ids': TF's converter names inputs after the Keras inputs."""
    if name.startswith("serving_default_"):
        name = name[len("serving_default_"):]
    return name.rsplit(":", 1)[0] if name.endswith(":0") else name
