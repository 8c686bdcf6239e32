"""Keras 3 <-> IR mapping tables.

Import side: layer class -> converter in `frontends/keras/convert.py`; `keras.ops` call ->
IR op or converter in `frontends/keras/ops.py`; activation name -> IR op (with attributes).
Keras is channels-last: layout-carrying ops keep `layout="NHWC"` in the IR (changing layout
is a pass), while kernels are permuted once at import into the IR's [out, in, *kernel]
convention.
"""

from __future__ import annotations

import re

#: activation name (keras.activations) -> (IR op, attributes); None means identity.
ACTIVATIONS = {
    "linear": None, "relu": ("Relu", {}), "relu6": ("Clip", {"min": 0.0, "max": 6.0}),
    "sigmoid": ("Sigmoid", {}), "tanh": ("Tanh", {}), "softmax": ("Softmax", {"axis": -1}),
    "log_softmax": ("LogSoftmax", {"axis": -1}), "swish": ("SiLU", {}), "silu": ("SiLU", {}),
    "gelu": ("Gelu", {"approximate": "none"}), "elu": ("Elu", {}), "selu": ("Selu", {}),
    "softplus": ("Softplus", {}), "softsign": ("Softsign", {}), "exponential": ("Exp", {}),
    "hard_sigmoid": ("HardSigmoid", {"alpha": 1.0 / 6, "beta": 0.5}), "hard_silu": ("HardSwish", {}),
    "hard_swish": ("HardSwish", {}), "mish": ("Mish", {}), "leaky_relu": ("LeakyRelu", {"alpha": 0.2}),
}

#: layer class name -> converter function name in frontends/keras/convert.py
LAYERS = {
    "Conv1D": "conv", "Conv2D": "conv", "Conv3D": "conv", "DepthwiseConv2D": "depthwise_conv",
    "DepthwiseConv1D": "depthwise_conv", "SeparableConv2D": "separable_conv", "SeparableConv1D": "separable_conv",
    "Conv2DTranspose": "conv_transpose", "Conv1DTranspose": "conv_transpose", "Dense": "dense",
    "BatchNormalization": "batch_norm", "LayerNormalization": "layer_norm", "GroupNormalization": "group_norm",
    "Activation": "activation", "ReLU": "relu", "Softmax": "softmax", "LeakyReLU": "leaky_relu", "ELU": "elu",
    "PReLU": "prelu",
    "Add": "merge", "Subtract": "merge", "Multiply": "merge", "Average": "merge", "Maximum": "merge",
    "Minimum": "merge", "Concatenate": "concatenate",
    "MaxPooling1D": "pool", "MaxPooling2D": "pool", "MaxPooling3D": "pool", "AveragePooling1D": "pool",
    "AveragePooling2D": "pool", "AveragePooling3D": "pool",
    "GlobalAveragePooling1D": "global_pool", "GlobalAveragePooling2D": "global_pool",
    "GlobalAveragePooling3D": "global_pool", "GlobalMaxPooling1D": "global_pool",
    "GlobalMaxPooling2D": "global_pool", "GlobalMaxPooling3D": "global_pool",
    "ZeroPadding1D": "zero_padding", "ZeroPadding2D": "zero_padding", "ZeroPadding3D": "zero_padding",
    "Cropping1D": "cropping", "Cropping2D": "cropping", "Cropping3D": "cropping",
    "UpSampling2D": "upsampling", "Reshape": "reshape", "Flatten": "flatten", "Permute": "permute",
    "Dropout": "identity", "SpatialDropout1D": "identity", "SpatialDropout2D": "identity",
    "GaussianNoise": "identity", "GaussianDropout": "identity", "AlphaDropout": "identity",
    "Identity": "identity", "ActivityRegularization": "identity",
    "Rescaling": "rescaling", "Normalization": "normalization", "Embedding": "embedding",
    "MultiHeadAttention": "multi_head_attention", "LSTM": "recurrent", "GRU": "recurrent",
    "SimpleRNN": "recurrent", "Bidirectional": "bidirectional", "RepeatVector": "repeat_vector",
}

#: keras.ops operation class -> IR op, one to one (operands in call order; constants take the tensors' type)
OPS = {
    "Add": "Add", "Subtract": "Sub", "Multiply": "Mul", "Divide": "Div", "TrueDivide": "Div", "Power": "Pow",
    "Maximum": "Max", "Minimum": "Min", "Equal": "Equal", "Greater": "Greater", "GreaterEqual": "GreaterOrEqual",
    "Less": "Less", "LessEqual": "LessOrEqual", "LogicalAnd": "And", "LogicalOr": "Or", "LogicalNot": "Not",
    "Absolute": "Abs", "Abs": "Abs", "Negative": "Neg", "Exp": "Exp", "Log": "Log", "Sqrt": "Sqrt", "Sin": "Sin",
    "Cos": "Cos", "Tanh": "Tanh", "Floor": "Floor", "Ceil": "Ceil", "Sign": "Sign", "Reciprocal": "Reciprocal",
    "Isnan": "IsNaN", "Erf": "Erf", "Relu": "Relu", "Sigmoid": "Sigmoid", "Silu": "SiLU", "Softplus": "Softplus",
    "HardSilu": "HardSwish", "Matmul": "MatMul", "Where": "Where",
}

#: keras.ops operation class -> converter function name in frontends/keras/ops.py
OPS_SPECIAL = {
    "Clip": "clip", "Relu6": "relu6", "Softmax": "softmax", "LogSoftmax": "softmax", "Gelu": "gelu",
    "HardSigmoid": "hard_sigmoid", "Elu": "elu", "LeakyRelu": "leaky_relu", "Cast": "cast", "Round": "round_",
    "Reshape": "reshape", "Transpose": "transpose", "Squeeze": "squeeze", "ExpandDims": "expand_dims",
    "Concatenate": "concatenate", "Stack": "stack", "Split": "split", "Take": "take", "BroadcastTo": "broadcast_to",
    "Flip": "flip", "Pad": "pad", "Mean": "reduce", "Sum": "reduce", "Max": "reduce", "Min": "reduce",
    "Prod": "reduce", "GetItem": "get_item", "DotProductAttention": "dot_product_attention",
}


def tf_layer_scopes(op_name: str) -> tuple[str, ...]:
    """The Keras layer a TF op or TFLite tensor name points to, `[StatefulPartitionedCall/]model_1/layer_1/op`
    (a fused TFLite tensor lists the op computing it first). Keras scopes a layer's ops `layer_1` when
    the model is traced again, so `layer_1` and `layer` are both candidates."""
    path = op_name.split(";")[0].removeprefix("StatefulPartitionedCall/").split("/")
    if len(path) < 3:
        return ()
    stripped = re.sub(r"_\d+$", "", path[1])
    return (path[1], stripped) if stripped != path[1] else (path[1],)
