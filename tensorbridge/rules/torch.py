"""PyTorch <-> IR mapping tables.

Import side: ATen op (overload packet name, as `torch.export` emits it) -> IR op. Simple
elementwise ops are one row; everything else names a converter in
`frontends/torch/convert.py`. Export side: IR op -> the torch call the code generator
writes (`backends/torch/codegen.py`). Both directions read these tables, so what PyTorch can
express is listed once.
"""

from __future__ import annotations

#: ATen unary ops that are one IR op with no attributes.
UNARY = {
    "relu": "Relu", "sigmoid": "Sigmoid", "tanh": "Tanh", "exp": "Exp", "log": "Log", "sqrt": "Sqrt",
    "abs": "Abs", "neg": "Neg", "erf": "Erf", "sin": "Sin", "cos": "Cos", "reciprocal": "Reciprocal",
    "floor": "Floor", "ceil": "Ceil", "round": "Round", "sign": "Sign", "silu": "SiLU",
    "hardswish": "HardSwish", "mish": "Mish", "softplus": "Softplus", "logical_not": "Not",
    "isnan": "IsNaN", "bitwise_not": "BitwiseNot", "asin": "Asin", "acos": "Acos", "atan": "Atan",
    "sinh": "Sinh", "cosh": "Cosh", "tan": "Tan",
}

#: ATen binary ops (tensor or scalar second operand) -> IR op.
BINARY = {
    "add": "Add", "sub": "Sub", "mul": "Mul", "div": "Div", "pow": "Pow", "maximum": "Max",
    "minimum": "Min", "eq": "Equal", "lt": "Less", "le": "LessOrEqual", "gt": "Greater",
    "ge": "GreaterOrEqual", "logical_and": "And", "logical_or": "Or", "logical_xor": "Xor",
    "bitwise_and": "BitwiseAnd", "bitwise_or": "BitwiseOr", "bitwise_xor": "BitwiseXor",
    "remainder": "Mod", "fmod": "Mod",
}

#: ATen ops that only move or alias data at inference time: the IR value is the input.
PASSTHROUGH = {"contiguous", "clone", "alias", "detach", "lift_fresh_copy", "dropout", "feature_dropout",
               "alpha_dropout", "_assert_tensor_metadata", "copy"}

#: ATen ops whose converter is a named function in frontends/torch/convert.py.
SPECIAL = {
    "conv1d": "convolution", "conv2d": "convolution", "conv3d": "convolution", "convolution": "convolution",
    "_convolution": "convolution", "conv_transpose1d": "conv_transpose", "conv_transpose2d": "conv_transpose",
    "conv_transpose3d": "conv_transpose",
    "linear": "linear", "matmul": "matmul", "mm": "matmul", "bmm": "matmul", "addmm": "addmm",
    "batch_norm": "batch_norm", "_native_batch_norm_legit_no_training": "batch_norm",
    "layer_norm": "layer_norm", "native_layer_norm": "layer_norm", "group_norm": "group_norm",
    "relu6": "relu6", "hardtanh": "hardtanh", "clamp": "clamp", "clip": "clamp", "gelu": "gelu",
    "hardsigmoid": "hardsigmoid", "leaky_relu": "leaky_relu", "elu": "elu", "rsqrt": "rsqrt",
    "softmax": "softmax", "_softmax": "softmax", "log_softmax": "softmax", "_log_softmax": "softmax",
    "view": "reshape", "reshape": "reshape", "_unsafe_view": "reshape", "flatten": "reshape",
    "unflatten": "reshape", "expand": "expand", "squeeze": "squeeze", "unsqueeze": "unsqueeze",
    "permute": "permute", "transpose": "transpose", "t": "transpose", "cat": "cat", "concat": "cat",
    "stack": "stack", "slice": "slice", "select": "select", "index_select": "index_select",
    "embedding": "embedding", "gather": "gather", "repeat": "repeat",
    "mean": "reduce", "sum": "reduce", "amax": "reduce", "amin": "reduce", "prod": "reduce",
    "max": "max_min", "min": "max_min", "argmax": "arg", "argmin": "arg",
    "adaptive_avg_pool1d": "adaptive_avg_pool", "adaptive_avg_pool2d": "adaptive_avg_pool",
    "adaptive_max_pool1d": "adaptive_max_pool", "adaptive_max_pool2d": "adaptive_max_pool",
    "avg_pool1d": "avg_pool", "avg_pool2d": "avg_pool", "max_pool1d": "max_pool", "max_pool2d": "max_pool",
    "max_pool2d_with_indices": "max_pool",
    "scaled_dot_product_attention": "attention", "_to_copy": "to", "to": "to", "type_as": "type_as",
    "where": "where", "masked_fill": "masked_fill", "zeros": "fill", "ones": "fill", "full": "fill",
    "zeros_like": "fill_like", "ones_like": "fill_like", "full_like": "fill_like", "new_zeros": "fill",
    "new_ones": "fill", "new_full": "fill", "scalar_tensor": "scalar_tensor", "arange": "arange",
    "split": "split", "split_with_sizes": "split", "chunk": "split", "unbind": "unbind",
    "constant_pad_nd": "pad", "pad": "pad", "upsample_nearest2d": "upsample", "upsample_bilinear2d": "upsample",
    "pixel_shuffle": "pixel_shuffle", "cumsum": "cumsum", "tril": "trilu", "triu": "trilu",
    "lstm": "lstm", "gru": "gru", "einsum": "einsum", "baddbmm": "baddbmm",
    "any": "any_all", "all": "any_all", "ne": "not_equal", "index": "index", "__and__": "logic",
    "__or__": "logic", "__xor__": "logic", "floor_divide": "floor_divide", "rsub": "rsub",
}

#: PT2E quantization ops (`quantized_decomposed` namespace, written by torchao's convert_pt2e)
#: -> their converter in frontends/torch/convert.py. Dynamic quantization (choose_qparams) is absent.
QUANTIZED = {
    "quantize_per_tensor": "quantize", "quantize_per_channel": "quantize",
    "dequantize_per_tensor": "dequantize", "dequantize_per_channel": "dequantize",
}
