"""PaddlePaddle's saved inference models, read and written without Paddle.

Paddle 3 saves `model.json` (the PIR program as JSON) with `model.pdiparams`; Paddle 2 and Paddle 3 with
FLAGS_enable_pir_api=0 save `model.pdmodel` (a ProgramDesc protobuf, parsed with message classes built from the
vendored `framework.proto`, Apache-2.0, see LICENSE.paddle) with the same `.pdiparams`. Both programs are read
into one `Program`: ops in order, each with its inputs and outputs (value names) and plain attributes; the PIR
form lists inputs by position, the legacy form by slot name ("Input", "Filter"), which the registry's legacy
signatures turn into positions (rules/paddle/legacy.py).

`.pdiparams` holds the persistable tensors in the sorted order of their names, each as a version, its LoD levels,
a TensorDesc protobuf (dtype and dims) and the raw little-endian data; the data are read as NumPy views of the
memory-mapped file. (`.pdiparams.info`, a pickle, is never read.)
"""

from __future__ import annotations

import functools
import json
import mmap
import struct
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from tensorbridge.errors import ModelError
from tensorbridge.formats.protodesc import message_classes

DESCRIPTOR = Path(__file__).with_name("framework_descriptor.pb")
PACKAGE = "paddle.framework.proto"
MODEL_SUFFIXES = (".json", ".pdmodel")
PARAMS_SUFFIX = ".pdiparams"
#: VarType.Type (legacy programs, .pdiparams) -> NumPy dtype
DTYPES = {0: "bool", 1: "int16", 2: "int32", 3: "int64", 4: "float16", 5: "float32", 6: "float64", 20: "uint8",
          21: "int8", 23: "complex64", 24: "complex128"}
#: PIR element types -> NumPy dtype
PIR_DTYPES = {"0.t_bool": "bool", "0.t_i8": "int8", "0.t_ui8": "uint8", "0.t_i16": "int16", "0.t_i32": "int32",
              "0.t_i64": "int64", "0.t_f16": "float16", "0.t_f32": "float32", "0.t_f64": "float64",
              "0.t_c64": "complex64", "0.t_c128": "complex128"}
_DENSE_TENSOR, _FEED_LIST, _FETCH_LIST = 7, 9, 10
_BLOCK_ATTRS = (8, 10)  # AttrType BLOCK, BLOCKS: an op with a sub-block (control flow)


@dataclass
class Var:
    name: str
    dtype: str | None
    shape: tuple | None  # -1 for a size fixed only at run time


@dataclass
class Op:
    type: str
    #: PIR: value names by position (None for an absent optional input); legacy: {slot: [value names]}
    inputs: list | dict
    outputs: list | dict
    attrs: dict
    name: str = ""


@dataclass
class Program:
    form: str  # "pir" | "legacy"
    ops: list[Op]
    inputs: list[Var]
    outputs: list[str]
    params: list[Var]  # by the name they are stored under in .pdiparams
    types: dict[str, Var] = field(default_factory=dict)  # every value's declared dtype and shape
    #: PIR: an input's or parameter's name -> the value it is (legacy programs name values by these names)
    value: dict[str, str] = field(default_factory=dict)
    #: PIR: values of parameters that are not stored (an rnn's dropout state): no op reads data from them
    absent: set[str] = field(default_factory=set)


@functools.cache
def messages() -> SimpleNamespace:
    return message_classes(DESCRIPTOR, PACKAGE, ("ProgramDesc", "VarType", "OpDesc", "VarDesc", "BlockDesc"))


def paths(source, weights=None) -> tuple[Path, Path]:
    """(program file, params file): `source` is the program (or the .pdiparams, with the program beside it)."""
    source = Path(source)
    if source.suffix == PARAMS_SUFFIX:
        found = [source.with_suffix(s) for s in MODEL_SUFFIXES if source.with_suffix(s).is_file()]
        if not found:
            raise ModelError(f"no {' or '.join(source.stem + s for s in MODEL_SUFFIXES)} beside {source}: a Paddle "
                             ".pdiparams holds only weights; pass its program")
        return found[0], source
    if source.suffix not in MODEL_SUFFIXES:
        raise ModelError(f"{source} is not a Paddle program (model.json or model.pdmodel)")
    params = Path(weights) if weights else source.with_suffix(PARAMS_SUFFIX)
    if not source.is_file():
        raise ModelError(f"{source} does not exist")
    if not params.is_file():
        raise ModelError(f"no {params.name} beside {source.name}: Paddle keeps the weights there (or pass weights=)")
    return source, params


def read_program(path: Path) -> Program:
    data = Path(path).read_bytes()
    if Path(path).suffix == ".json":
        return _read_pir(path, data)
    return _read_legacy(path, data)


def is_pir(head: str) -> bool:
    """The start of a JSON file says it is a PIR program."""
    return '"base_code"' in head and '"pir"' in head


# -- PIR ---------------------------------------------------------------------------------------------------
def _read_pir(path: Path, data: bytes) -> Program:
    try:
        doc = json.loads(data)
        base, regions = doc["base_code"], doc["program"]["regions"]
    except (ValueError, KeyError, TypeError):
        raise ModelError(f"{path} is not a Paddle PIR program (JSON with base_code and program)") from None
    if not isinstance(base, dict) or base.get("magic") != "pir":
        raise ModelError(f"{path} is not a Paddle PIR program (its magic is not 'pir')")
    if len(regions) != 1 or len(regions[0].get("blocks", ())) != 1:
        raise ModelError(f"{path}: a PIR program of one region and one block is read, not {len(regions)} regions")
    program = Program("pir", [], [], [], [])
    try:
        for raw in regions[0]["blocks"][0]["ops"]:
            _pir_op(program, raw)
    except (KeyError, TypeError, IndexError, ValueError) as e:
        raise ModelError(f"{path}: malformed PIR op ({type(e).__name__}: {e})") from None
    return program


def _pir_op(program: Program, raw: dict) -> None:
    kind = raw["#"]
    outputs = raw.get("O", [])
    outputs = [outputs] if isinstance(outputs, dict) else outputs
    names = []
    for out in outputs:
        name = f"%{out['%']}" if out.get("%") else None
        names.append(name)
        if name and out.get("TT"):
            program.types[name] = Var(name, *_pir_type(out["TT"]))
    if kind == "p":  # a parameter: its stored name is the last of its attributes; persistable ones are stored
        stored = raw["A"][-1]
        if not isinstance(stored, str):
            raise ValueError("parameter without a name")
        if not (raw.get("OA") or [1])[0]:
            program.absent.add(names[0])
            return
        program.value[stored] = names[0]
        program.params.append(Var(stored, *_pir_type(outputs[0]["TT"])))
        return
    attrs = {a["N"]: _pir_attr(a["AT"]) for a in raw.get("A", [])}
    inputs = [f"%{i['%']}" if i.get("%") else None for i in raw.get("I", [])]
    if raw.get("regions"):
        attrs["__regions__"] = len(raw["regions"])
    if kind == "1.data":  # an input
        declared = program.types[names[0]]
        program.inputs.append(Var(attrs["name"], declared.dtype, declared.shape))
        program.value[attrs["name"]] = names[0]
        return
    if kind == "1.fetch":  # an output
        program.outputs.append(inputs[0])
        return
    op_type = kind.split(".", 1)[1] if "." in kind else kind
    program.ops.append(Op(("builtin." if kind.startswith("0.") else "") + op_type, inputs, names, attrs))


def _pir_type(raw: dict) -> tuple[str | None, tuple | None]:
    kind, data = raw["#"], raw.get("D")
    if kind == "0.t_dtensor":
        element = data[0]["#"]
        return PIR_DTYPES.get(element, element), tuple(int(d) for d in data[1])
    return None, None  # a vector of values (builtin.combine's) or a type not read


def _pir_attr(raw: dict):
    kind, data = raw["#"], raw.get("D")
    if kind == "0.a_array":
        return [_pir_attr(x) for x in data]
    if kind in ("0.a_i32", "0.a_i64"):
        return int(data)
    if kind in ("0.a_f32", "0.a_f64"):
        return float(data)
    if kind == "0.a_bool":
        return bool(data)
    if kind in ("0.a_str", "1.a_dtype"):
        return str(data)
    if kind == "1.a_intarray":
        return [int(d) for d in data]
    if kind == "1.a_place":
        return None  # where to run: not what is computed
    raise ValueError(f"attribute type {kind}")


# -- legacy ProgramDesc -----------------------------------------------------------------------------------
def _read_legacy(path: Path, data: bytes) -> Program:
    from google.protobuf.message import DecodeError

    try:
        desc = messages().ProgramDesc.FromString(data)
    except (DecodeError, RuntimeError, ValueError):
        raise ModelError(f"{path} is not a Paddle ProgramDesc (.pdmodel)") from None
    if not desc.blocks:
        raise ModelError(f"{path} holds no program block")
    block = desc.blocks[0]
    program = Program("legacy", [], [], [], [])
    for var in block.vars:
        if var.type.type == _DENSE_TENSOR:
            tensor = var.type.dense_tensor.tensor
            v = Var(var.name, DTYPES.get(tensor.data_type, f"type {tensor.data_type}"), tuple(tensor.dims))
            program.types[var.name] = v
            if var.persistable:
                program.params.append(v)
    program.params.sort(key=lambda v: v.name)
    fetched = []
    for op in block.ops:
        inputs = {slot.parameter: list(slot.arguments) for slot in op.inputs}
        outputs = {slot.parameter: list(slot.arguments) for slot in op.outputs}
        attrs = {a.name: _legacy_attr(a) for a in op.attrs}
        if any(a.type in _BLOCK_ATTRS for a in op.attrs):
            attrs["__regions__"] = 1
        if op.type == "feed":
            name = outputs["Out"][0]
            program.inputs.append(program.types.get(name, Var(name, None, None)))
        elif op.type == "fetch":
            fetched.append((attrs.get("col", len(fetched)), inputs["X"][0]))
        else:
            program.ops.append(Op(op.type, inputs, outputs, attrs))
    program.outputs = [name for _, name in sorted(fetched)]
    return program


_ATTR_FIELDS = {0: "i", 1: "f", 2: "s", 3: "ints", 4: "floats", 5: "strings", 6: "b", 7: "bools", 9: "l",
                11: "longs", 12: "float64s", 13: "var_name", 14: "vars_name", 15: "float64"}


def _legacy_attr(attr):
    name = _ATTR_FIELDS.get(attr.type)
    if name is None:
        return None  # blocks (control flow, refused by the frontend) and scalars
    value = getattr(attr, name)
    return list(value) if hasattr(value, "__len__") and not isinstance(value, (str, bytes)) else value


# -- .pdiparams ---------------------------------------------------------------------------------------------
def read_params(path: Path, params: list[Var]) -> dict[str, np.ndarray]:
    """The tensors of a .pdiparams, by the names of `params` (the program's persistable values, stored in the
    sorted order of their names); each is checked against the dtype and shape the program declares."""
    path = Path(path)
    names = sorted(v.name for v in params)
    declared = {v.name: v for v in params}
    with open(path, "rb") as f:
        buffer = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) if path.stat().st_size else b""
    arrays, pos = {}, 0
    for name in names:
        array, pos = _read_tensor(buffer, pos, path, name)
        want = declared[name]
        if want.shape is not None and tuple(array.shape) != tuple(want.shape):
            raise ModelError(f"{path.name}: {name} has shape {list(array.shape)}, the program declares "
                             f"{list(want.shape)}")
        arrays[name] = array
    if pos != len(buffer):
        raise ModelError(f"{path.name} holds more than the {len(names)} tensors its program declares "
                         f"({len(buffer) - pos} bytes left)")
    return arrays


def _read_tensor(buffer, pos: int, path: Path, name: str) -> tuple[np.ndarray, int]:
    def take(fmt: str):
        nonlocal pos
        size = struct.calcsize(fmt)
        if pos + size > len(buffer):
            raise ModelError(f"{path.name} is truncated (in {name})")
        (value,) = struct.unpack_from(fmt, buffer, pos)
        pos += size
        return value

    if take("<I") != 0:
        raise ModelError(f"{path.name}: {name} has a tensor version other than 0")
    for _ in range(take("<Q")):  # LoD levels: offsets into the batch, not part of a weight's value
        pos += take("<Q")
    if take("<I") != 0:
        raise ModelError(f"{path.name}: {name} has a dense tensor version other than 0")
    size = take("<i")
    if size < 0 or pos + size > len(buffer):
        raise ModelError(f"{path.name} is truncated (in {name}'s description)")
    desc = messages().VarType.TensorDesc.FromString(bytes(buffer[pos:pos + size]))
    pos += size
    if desc.data_type not in DTYPES:
        raise ModelError(f"{path.name}: {name} has element type {desc.data_type}, which tensorbridge does not read")
    dtype, shape = np.dtype(DTYPES[desc.data_type]).newbyteorder("<"), tuple(int(d) for d in desc.dims)
    if any(d < 0 for d in shape):
        raise ModelError(f"{path.name}: {name} has shape {list(shape)}")
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    if pos + nbytes > len(buffer):
        raise ModelError(f"{path.name} is truncated (in {name}'s data)")
    array = np.frombuffer(buffer, dtype, int(np.prod(shape, dtype=np.int64)), pos).reshape(shape)
    return array, pos + nbytes


def write_params(path: Path, arrays: dict[str, np.ndarray]) -> None:
    """A .pdiparams holding `arrays`, in the sorted order of their names."""
    codes = {np.dtype(v): k for k, v in DTYPES.items()}
    with open(path, "wb") as f:
        for name in sorted(arrays):
            a = np.asarray(arrays[name], order="C")
            if a.dtype not in codes:
                raise ModelError(f"{name}: Paddle stores no {a.dtype} tensors")
            desc = messages().VarType.TensorDesc(data_type=codes[a.dtype], dims=list(a.shape)).SerializeToString()
            f.write(struct.pack("<IQIi", 0, 0, 0, len(desc)) + desc)
            f.write(a.astype(a.dtype.newbyteorder("<"), copy=False).tobytes())
