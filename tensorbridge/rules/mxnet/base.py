"""The MXNet registry object and what its op rules share.

An op is read by a converter `fn(imp, node) -> Value | list[Value]` (kind "op", keyed by the symbol's op name):
`imp.x` is its first input, `imp.inputs` all of them (weights are constants), `imp.attrs` its attributes. MXNet
writes every attribute as a string ("(3, 3)", "True", "0.001"); `Attrs` parses them and remembers which were
read, so an attribute no rule reads is a blocker instead of a silently ignored option. MXNet's image ops are
channels-first (N, C, H, W).
"""

from __future__ import annotations

import ast
import functools

from tensorbridge.errors import ModelError
from tensorbridge.rules.core import Registry

R = Registry("mxnet")
op = functools.partial(R.imports, kind="op")

#: attributes that tune how MXNet runs an op, not what it computes (and a variable's training hints)
TUNING = frozenset({"workspace", "cudnn_tune", "cudnn_off", "num_args", "momentum", "sparse_grad",
                    "min_calib_range", "max_calib_range", "lr_mult", "wd_mult", "ctx_group"})
#: the op of a variable (a weight or an input)
VARIABLE = "null"
#: ops with `num_outputs` outputs (named NAME_output0, NAME_output1, ... when there are several)
MULTI_OUTPUT = frozenset({"SliceChannel", "split"})
#: ops whose outputs have names of their own
OUTPUT_NAMES = {"RNN": ("output", "state_output", "statecell_output")}
#: ops whose inputs after the first are their parameters
PARAMETERISED = frozenset({"Convolution", "Deconvolution", "FullyConnected", "BatchNorm", "LayerNorm", "InstanceNorm",
                           "Embedding", "LeakyReLU"})
#: ops that take zeros of a shape MXNet infers (the importer's LaterZeros) as their initial state
READS_LATER_ZEROS = frozenset({"RNN"})
#: losses: at inference they pass their data through (SoftmaxOutput's rule says how); their labels are not inputs
LABEL_READERS = {"SoftmaxOutput": 1, "LinearRegressionOutput": 1, "LogisticRegressionOutput": 1,
                 "MAERegressionOutput": 1}
#: MXNet dtype names -> NumPy's
DTYPE_NAMES = {"float32": "float32", "float64": "float64", "float16": "float16", "uint8": "uint8", "int8": "int8",
               "int32": "int32", "int64": "int64", "bool": "bool"}


class Attrs:
    """A node's string attributes, parsed on request; `unread()` lists those no rule asked for."""

    def __init__(self, raw: dict[str, str]):
        self.raw = raw
        self.read: set[str] = set()

    def __contains__(self, key: str) -> bool:
        return key in self.raw and self.raw[key] != "None"

    def text(self, key: str, default: str | None = None) -> str | None:
        self.read.add(key)
        value = self.raw.get(key)
        return default if value is None or value == "None" else value

    def choice(self, key: str, default: str, allowed: tuple[str, ...]) -> str:
        value = self.text(key, default)
        if value not in allowed:
            raise ModelError(f"{key}={value!r} (read: {', '.join(allowed)})")
        return value

    def int(self, key: str, default: int | None = None) -> int | None:
        value = self.text(key)
        return default if value is None else _parse(key, value, int)

    def float(self, key: str, default: float | None = None) -> float | None:
        value = self.text(key)
        return default if value is None else float(_parse(key, value, float))

    def bool(self, key: str, default: bool = False) -> bool:
        value = self.text(key)
        if value is None:
            return default
        if value.lower() in ("true", "1"):
            return True
        if value.lower() in ("false", "0"):
            return False
        raise ModelError(f"{key}={value!r} is not a boolean")

    def ints(self, key: str, default: list[int] | None = None) -> list[int] | None:
        """A shape-like tuple: "(3, 3)", "[3, 3]", "3" or "()"; `None` values stay None."""
        value = self.text(key)
        if value is None:
            return default
        parsed = _parse(key, value, (tuple, list, int))
        items = list(parsed) if isinstance(parsed, tuple | list) else [parsed]
        if not all(v is None or type(v) is int for v in items):
            raise ModelError(f"{key}={value!r} is not a tuple of integers")
        return items

    def unread(self) -> list[str]:
        return [f"{k}={v}" for k, v in self.raw.items()
                if k not in self.read and k not in TUNING and not k.startswith("__")]


def _parse(key: str, value: str, kinds):
    try:
        parsed = ast.literal_eval(value.strip())
    except (ValueError, SyntaxError):
        parsed = None
    if isinstance(parsed, bool) or not isinstance(parsed, kinds):
        if kinds is float and isinstance(parsed, int) and not isinstance(parsed, bool):
            return float(parsed)
        if value.strip() in ("inf", "-inf", "nan") and kinds is float:
            return float(value)
        raise ModelError(f"{key}={value!r} is not a {getattr(kinds, '__name__', 'tuple')}")
    return parsed


def spatial(attrs: Attrs, key: str, rank: int, default: int) -> list[int]:
    """A window option (kernel, stride, pad, dilate) for `rank` spatial axes; "()" means the default."""
    values = attrs.ints(key) or []
    if not values:
        return [default] * rank
    if len(values) == 1 and rank > 1:
        values = values * rank
    if len(values) != rank or any(v is None for v in values):
        raise ModelError(f"{key}={attrs.raw.get(key)} does not fit {rank} spatial axes")
    return values


def dtype_of(name: str) -> str:
    if name not in DTYPE_NAMES:
        raise ModelError(f"dtype {name!r} is not read")
    return DTYPE_NAMES[name]


def known_shape(x, what: str) -> tuple[int, ...]:
    if x.shape is None or not all(isinstance(d, int) for d in x.shape):
        raise ModelError(f"{what} needs an input of known shape, not {x.shape}")
    return tuple(x.shape)
