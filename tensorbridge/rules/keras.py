"""Keras 3 <-> IR mapping tables.

Import side: layer class -> converter in `frontends/keras/convert.py`; activation name ->
IR op (with attributes). Keras is channels-last: layout-carrying ops keep `layout="NHWC"`
in the IR (changing layout is a pass), while kernels are permuted once at import into the
IR's [out, in, *kernel] convention.
"""

from __future__ import annotations

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
