"""The Paddle registry object and what its op rules share.

An op is read by a converter `fn(imp, op) -> Value | list[Value]` (kind "op", keyed by Paddle's PIR op name:
"conv2d", "add", "batch_norm_" ...). `imp.inputs` are its inputs by position (a list of values for an input that
takes several, None for an absent optional one), `imp.attrs` its attributes; constants made by `full` and
`full_int_array` arrive as constant values. An attribute no rule reads is a blocker, unless it only tunes how
Paddle runs the op (TUNING).

The legacy ProgramDesc names ops and slots differently ("elementwise_add" with slots X and Y, "pool2d" with its
kernel as the attribute `ksize` where PIR takes an input). `LEGACY` says, for each legacy op read, which PIR op it
is and where each PIR input comes from: a slot, or an attribute turned into a constant ("@ksize").
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

import numpy as np

from tensorbridge.errors import ModelError
from tensorbridge.rules.core import Registry, TrackedAttrs

R = Registry("paddle")
op = functools.partial(R.imports, kind="op")

#: attributes that tune how Paddle runs an op, or record where it came from, not what it computes
TUNING = frozenset({"struct_name", "op_callstack", "op_namescope", "op_role", "op_role_var", "op_device",
                    "with_quant_attr", "use_mkldnn", "use_cudnn", "use_quantizer", "mkldnn_data_type", "is_test",
                    "name", "place", "stop_gradient", "persistable", "trainable", "exhaustive_search",
                    "workspace_size_MB", "fuse_relu_before_depthwise_conv", "use_addto", "fix_seed", "seed",
                    "momentum", "trainable_statistics", "sparse", "__onednn__"})


def attributes(raw: dict) -> TrackedAttrs:
    """An op's attributes, TUNING not counted as unread."""
    return TrackedAttrs(raw, TUNING)


@dataclass(frozen=True)
class Legacy:
    """A legacy op as the PIR op `pir`: each PIR input from the first of its sources present (a slot name, or
    "@attr" for an attribute given as a constant); a slot named "*Name" holds a list of variables (what PIR
    combines), even of one; `renames` maps legacy attribute names to PIR's."""

    pir: str
    inputs: tuple[tuple[str, ...], ...]
    outputs: tuple[str, ...] = ("Out",)
    renames: dict = field(default_factory=dict)


def _legacy(names, pir: str, inputs, outputs=("Out",), **renames) -> None:
    for name in (names,) if isinstance(names, str) else names:
        LEGACY[name] = Legacy(pir or name, tuple(tuple(s.split("|")) for s in inputs), tuple(outputs), renames)


LEGACY: dict[str, Legacy] = {}
_legacy("conv2d", "", ["Input", "Filter"], ["Output"])
_legacy("depthwise_conv2d", "", ["Input", "Filter"], ["Output"])
_legacy("batch_norm", "batch_norm_", ["X", "Mean", "Variance", "Scale", "Bias"], ["Y"], data_layout="data_format")
_legacy("pool2d", "", ["X", "@ksize"])
_legacy("matmul_v2", "matmul", ["X", "Y"], trans_x="transpose_x", trans_y="transpose_y")
_legacy("flatten_contiguous_range", "flatten", ["X"])
_legacy("reshape2", "reshape", ["X", "ShapeTensor|Shape|@shape"])
_legacy("hard_swish", "hardswish", ["X"])
_legacy("hard_sigmoid", "hardsigmoid", ["X"])
_legacy("dropout", "", ["X"], dropout_prob="p", dropout_implementation="mode")
for _name in ("relu", "sigmoid", "tanh", "exp", "log", "sqrt", "abs", "erf", "floor", "ceil", "sin", "cos",
              "reciprocal", "softplus", "softmax", "elu", "gelu", "assign"):
    _legacy(_name, "", ["X"])
for _name, _pir in (("elementwise_add", "add"), ("elementwise_mul", "multiply"), ("elementwise_sub", "subtract"),
                    ("elementwise_div", "divide"), ("elementwise_pow", ""), ("elementwise_max", "maximum"),
                    ("elementwise_min", "minimum")):
    _legacy(_name, _pir, ["X", "Y"])
_legacy("leaky_relu", "", ["X"], alpha="negative_slope")
_legacy("clip", "", ["X", "Min|@min", "Max|@max"])
_legacy("conv2d_transpose", "", ["Input", "Filter", "@output_size"], ["Output"])
_legacy("layer_norm", "", ["X", "Scale", "Bias"], ["Y", "Mean", "Variance"])
_legacy("transpose2", "transpose", ["X"], axis="perm")
_legacy("squeeze2", "squeeze", ["X", "AxesTensor|@axes"])
_legacy("unsqueeze2", "unsqueeze", ["X", "AxesTensor|@axes"])
_legacy("concat", "", ["*X", "AxisTensor|@axis"])
_legacy("slice", "", ["Input", "StartsTensor|@starts", "EndsTensor|@ends"])
_legacy("split", "", ["X", "SectionsTensorList|@sections", "AxisTensor|@axis"], ["*Out"])
_legacy("lookup_table_v2", "embedding", ["Ids", "W"])
for _name in ("equal", "greater_than", "less_than", "logical_and", "logical_or"):
    _legacy(_name, "", ["X", "Y"])
_legacy("logical_not", "", ["X"])
_legacy("where", "", ["Condition", "X", "Y"])
_legacy("cast", "", ["X"])
_legacy("expand_v2", "expand", ["X", "Shape|@shape"])
_legacy("gather_nd", "", ["X", "Index"])
_legacy("scale", "", ["X"])
_legacy("relu6", "", ["X"])
_legacy("swish", "", ["X"])
_legacy("prelu", "", ["X", "Alpha"])
_legacy("group_norm", "", ["X", "Scale", "Bias"], ["Y", "Mean", "Variance"], data_layout="data_format")
_legacy("instance_norm", "", ["X", "Scale", "Bias"], ["Y", "SavedMean", "SavedVariance"])
_legacy("shape", "shape64", ["Input"])
_legacy("fill_constant", "", ["ShapeTensor", "ShapeTensorList", "ValueTensor"])
_legacy("rnn", "", ["Input", "*PreState", "*WeightList", "SequenceLength"],
        ["Out", "DropoutState", "*State", "Reserve"])
_legacy("pad", "", ["X"])
_legacy("pad3d", "", ["X", "Paddings|@paddings"], value="pad_value")
_legacy("nearest_interp_v2", "nearest_interp", ["X"], data_layout="data_format")
_legacy("bilinear_interp_v2", "bilinear_interp", ["X"], data_layout="data_format")
_legacy("gather", "", ["X", "Index", "Axis|@axis"])
for _name in ("sum", "mean", "max"):
    _legacy(f"reduce_{_name}", _name, ["X", "@dim"], keep_dim="keepdim")


def const(imp, index: int, what: str) -> np.ndarray:
    """Input `index` as the constant it must be."""
    v = imp.inputs[index] if index < len(imp.inputs) else None
    if v is None or isinstance(v, list) or v.const is None:
        raise ModelError(f"its {what} is computed at run time; tensorbridge reads only a constant {what}")
    return np.asarray(v.const)


def ints(imp, index: int, what: str) -> list[int]:
    return [int(v) for v in const(imp, index, what).reshape(-1)]


def known_shape(x, what: str, start: int = 1) -> tuple:
    """The input's shape, every size known from axis `start` on (the first is often the symbolic batch)."""
    if x.shape is None or not all(isinstance(d, int) for d in x.shape[start:]):
        raise ModelError(f"{what} needs an input of known shape, not {x.shape}")
    return tuple(x.shape)


def rank_of(x, what: str) -> int:
    if x.shape is None:
        raise ModelError(f"{what} needs an input of known rank")
    return len(x.shape)


def channels_first(imp, what: str, key: str = "data_format") -> None:
    layout = imp.attrs.get(key, "NCHW")
    if layout not in ("NCHW", "NCDHW", "NCL", "AnyLayout"):
        raise ModelError(f"{key}={layout}: only channels-first {what} is read")
