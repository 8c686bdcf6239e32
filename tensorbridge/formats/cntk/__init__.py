"""CNTK 2.x's model file (`Function.save`, the default `ModelFormat.CNTKv2`), read without CNTK.

The file is one protobuf `Dictionary` (schema: CNTK.proto, MIT, compiled into `cntk_descriptor.pb` by
scripts/extract_cntk_descriptor.py; see LICENSE.cntk): a composite function whose `inputs` are its variables (inputs,
parameters, constants, placeholders, each with its shape and its value where it has one) and whose
`primitive_functions` are its ops, each an op code with attributes, the uids of its inputs, and for a block (a layer
of the layers library) the composite it stands for and which of its placeholders each of its inputs fills. A
function's outputs are the variables named `<uid>_Output_<k>`.

CNTK stores shapes in column-major order, the reverse of the order its Python API and NumPy use: `Variable.shape`
here is in NumPy's order, and a value's data, stored column-major in the stored shape, is the same bytes in row-major
order of that shape. Attribute shapes and static axis indices stay as stored; the op rules turn them around.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from tensorbridge.errors import ModelError
from tensorbridge.formats.protodesc import message_classes

DESCRIPTOR = Path(__file__).with_name("cntk_descriptor.pb")
PACKAGE = "CNTK.proto"
#: NDArrayView.DataType -> NumPy dtype
DTYPES = {1: "float32", 2: "float64", 4: "float16", 5: "int8", 6: "int16"}
#: VariableKind
INPUT, OUTPUT, PARAMETER, CONSTANT, PLACEHOLDER = range(5)
#: the op code of a block (a composite standing as one op)
BLOCK = 57
#: CNTK's static axis index of an axis that is not static (the batch axis, a sequence axis) and of all static axes
DYNAMIC_AXIS, ALL_STATIC_AXES = 2147483647, 2147483646
#: the most a dimension or value count may be (a malformed file must not make us allocate more)
MAX_ELEMENTS = 1 << 34


@dataclass(frozen=True)
class Axis:
    """A CNTK axis: a static one by its stored index (counted from the innermost), or a dynamic one by name."""

    index: int
    name: str
    ordered: bool

    @property
    def static(self) -> bool:
        return self.index not in (DYNAMIC_AXIS, ALL_STATIC_AXES)


@dataclass
class Variable:
    uid: str
    kind: int
    name: str
    dtype: str
    shape: tuple[int, ...]  # NumPy order; -1 for a size inferred when the model runs
    dynamic_axes: tuple[str, ...]  # e.g. ("defaultDynamicAxis", "defaultBatchAxis"): the sequence and batch axes
    value: np.ndarray | None = None


@dataclass
class Function:
    uid: str
    op: int
    name: str
    inputs: list[str]
    attrs: dict
    #: a block's composite: the root function's uid, and which placeholder each of its inputs fills
    root: str | None = None
    arguments: dict[str, str] = field(default_factory=dict)
    block_name: str = ""


@dataclass
class Model:
    variables: dict[str, Variable]
    functions: dict[str, Function]  # by uid, in the order stored (CNTK stores each before the ops that read it)
    root: str


@functools.cache
def messages() -> SimpleNamespace:
    return message_classes(DESCRIPTOR, PACKAGE, ("Dictionary",))


def is_model(head: bytes) -> bool:
    """The start of a file says it is a CNTK v2 model: a Dictionary (a version, then entries) whose first entries
    say it is a composite function."""
    return head[:1] == b"\x08" and b"\x0a\x04type" in head[:64] and b"CompositeFunction" in head[:128]


def read_model(path) -> Model:
    from google.protobuf.message import DecodeError

    path = Path(path)
    try:
        raw = messages().Dictionary.FromString(path.read_bytes())
        top = _dictionary(raw)
    except (DecodeError, RuntimeError, ValueError, OverflowError) as e:
        raise ModelError(f"{path} is not a CNTK v2 model (a protobuf Dictionary): {e}") from None
    if top.get("type") != "CompositeFunction" or "primitive_functions" not in top:
        raise ModelError(f"{path} is not a CNTK v2 model: it holds no composite function (a model saved by CNTK 1 "
                         "or BrainScript is not read; load it in CNTK 2 and save it again)")
    try:
        variables = [_variable(v) for v in top.get("inputs", [])]
        functions = [_function(f) for f in top["primitive_functions"]]
        root = str(top["root"])
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise ModelError(f"{path}: malformed CNTK model ({type(e).__name__}: {e})") from None
    return Model({v.uid: v for v in variables}, {f.uid: f for f in functions}, root)


# -- the protobuf Dictionary as Python values --------------------------------------------------------------------
def _dictionary(d) -> dict:
    return {key: _value(d.data[key]) for key in d.data}


def _value(v):
    kind = v.WhichOneof("value")
    if kind is None:
        return None
    x = getattr(v, kind)
    if kind == "dictionary_value":
        return _dictionary(x)
    if kind == "vector_value":
        return [_value(item) for item in x.value]
    if kind == "nd_shape_value":
        return _shape(x)
    if kind == "axis_value":
        return Axis(int(x.static_axis_idx), x.name, bool(x.is_ordered_dynamic_axis))
    if kind == "nd_array_view_value":
        return x  # decoded by _array, which knows the variable's dtype
    return x


def _shape(shape) -> tuple[int, ...]:
    """A stored NDShape (column-major; sizes are uint64, the special ones near 2**64 read as negative)."""
    return tuple(int(d) - (1 << 64) if d >= 1 << 63 else int(d) for d in shape.shape_dim)


def _variable(raw: dict) -> Variable:
    stored = raw["shape"]
    dtype = DTYPES.get(int(raw.get("data_type", 1)))
    if dtype is None:
        raise ValueError(f"variable {raw.get('uid')} of element type {raw.get('data_type')}")
    if raw.get("is_sparse"):
        raise ValueError(f"variable {raw.get('uid')} is sparse (sparse inputs are not read)")
    axes = tuple(a.name for a in raw.get("dynamic_axis") or [])
    variable = Variable(str(raw["uid"]), int(raw["kind"]), str(raw.get("name") or ""), dtype, tuple(reversed(stored)),
                        axes)
    if raw.get("value") is not None:
        variable.value = _array(raw["value"], variable)
    return variable


def _array(view, variable: Variable) -> np.ndarray:
    kind = view.WhichOneof("values")
    if view.storage_format != 0:
        raise ValueError(f"{variable.uid} is stored sparse")
    shape = tuple(reversed(_shape(view.shape)))
    count = int(np.prod(shape, dtype=np.int64)) if shape else 1
    if any(d < 0 for d in shape) or count > MAX_ELEMENTS:
        raise ValueError(f"{variable.uid} has shape {list(shape)}")
    if kind == "float_values":
        data = np.asarray(view.float_values.value, np.float32)
    elif kind == "double_values":
        data = np.asarray(view.double_values.value, np.float64)
    elif kind == "sint32_values":
        data = np.asarray(view.sint32_values.value, np.int32).astype(variable.dtype)
    elif kind == "bytes_value" and DTYPES.get(view.data_type) == "float16":
        data = np.frombuffer(view.bytes_value.value, np.float16)
    else:
        raise ValueError(f"{variable.uid} holds values of kind {kind}")
    if data.size != count:
        raise ValueError(f"{variable.uid} holds {data.size} values for shape {list(shape)}")
    return data.astype(variable.dtype, copy=False).reshape(shape)


def _function(raw: dict) -> Function:
    function = Function(str(raw["uid"]), int(raw["op"]), str(raw.get("name") or ""),
                        [str(u) for u in raw.get("inputs") or []], dict(raw.get("attributes") or {}))
    if function.op == BLOCK:
        keys = raw.get("block_function_composite_arguments_map_keys") or []
        values = raw.get("block_function_composite_arguments_map_values") or []
        if len(keys) != len(values):
            raise ValueError(f"block {function.uid} maps {len(keys)} placeholders to {len(values)} arguments")
        function.root = str(raw["block_function_composite"]["root"])
        function.arguments = dict(zip(map(str, keys), map(str, values)))
        function.block_name = str(raw.get("block_function_op_name") or "")
    return function


def output_uid(function_uid: str, index: int = 0) -> str:
    """The uid of a function's output variable."""
    return f"{function_uid}_Output_{index}"


def producer(uid: str) -> tuple[str, int] | None:
    """(function uid, output index) of an output variable's uid; None for any other variable."""
    head, sep, index = uid.rpartition("_Output_")
    return (head, int(index)) if sep and index.isdigit() else None
