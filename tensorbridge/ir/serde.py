"""`.tbir` files: one safetensors file whose metadata header holds the graph as JSON.

The weights are the file's tensors, keyed by constant name; they are memory-mapped on load
and streamed on save, so nothing is copied needlessly and nothing is ever unpickled.
Dtypes safetensors cannot name (sub-byte ints, some float8 flavours) are stored as raw
bytes (`U8`) with the true dtype recorded in the graph JSON. The file is a plain
safetensors file: `safetensors.numpy.load_file` reads its weights too.
"""

from __future__ import annotations

import json
import math
import mmap
import struct
from pathlib import Path
from typing import Any

import numpy as np

from tensorbridge.errors import ModelError
from tensorbridge.formats.streaming import write_array
from tensorbridge.ir import dtypes
from tensorbridge.ir.graph import Graph
from tensorbridge.ir.value import QuantParams, Value
from tensorbridge.ops import schema as op_schema

FORMAT = "tensorbridge-ir"
VERSION = 1
_META_KEY = "tensorbridge.graph"
_ST_DTYPES = {"float64": "F64", "float32": "F32", "float16": "F16", "bfloat16": "BF16",
              "float8e4m3fn": "F8_E4M3", "float8e5m2": "F8_E5M2", "int64": "I64", "int32": "I32",
              "int16": "I16", "int8": "I8", "uint64": "U64", "uint32": "U32", "uint16": "U16",
              "uint8": "U8", "bool": "BOOL"}
_ST_TO_IR = {v: k for k, v in _ST_DTYPES.items()}
_HEADER_LIMIT = 100 << 20
MAX_NESTING = 64  # subgraphs inside subgraphs


# -- graph <-> JSON ------------------------------------------------------------------------------
def value_to_json(v: Value) -> dict:
    d: dict[str, Any] = {"name": v.name}
    if v.dtype is not None:
        d["dtype"] = dtypes.name(v.dtype)
    if v.shape is not None:
        d["shape"] = list(v.shape)
    if v.layout:
        d["layout"] = v.layout if isinstance(v.layout, str) else list(v.layout)
    if v.quant is not None:
        d["quant"] = v.quant.to_json()
    if v.meta:
        d["meta"] = v.meta
    return d


def _apply_value_json(v: Value, d: dict) -> Value:
    if "dtype" in d:
        v.dtype = dtypes.dtype(d["dtype"])
    if "shape" in d:
        v.shape = tuple(d["shape"])
    layout = d.get("layout")
    v.layout = tuple(layout) if isinstance(layout, list) else layout
    v.quant = QuantParams.from_json(d["quant"]) if d.get("quant") else None
    v.meta = dict(d.get("meta", {}))
    return v


def graph_to_json(g: Graph, tensors: dict[str, np.ndarray], prefix: str = "") -> dict:
    """JSON structure of a graph; constant and tensor-attribute data go into `tensors`."""
    consts = []
    for name, v in g.constants.items():
        key = prefix + name
        consts.append({**value_to_json(v), "tensor": _store(tensors, key, v.const)})
    nodes = []
    for n in g.nodes:
        attrs = {}
        schema = op_schema.get(n.op)
        for k, a in n.attrs.items():
            kind = schema.attrs[k].kind if schema and k in schema.attrs else None
            attrs[k] = attr_to_json(a, kind, tensors, f"{prefix}{n.name}/{k}/")
        nodes.append({"op": n.op, "name": n.name, "inputs": [None if v is None else v.name for v in n.inputs],
                      "outputs": [value_to_json(v) for v in n.outputs], "attrs": attrs, "meta": n.meta})
    return {"name": g.name, "metadata": _jsonable(g.metadata), "inputs": [value_to_json(v) for v in g.inputs],
            "constants": consts, "nodes": nodes, "outputs": [v.name for v in g.outputs]}


def attr_to_json(a, kind, tensors, prefix):
    if isinstance(a, Graph):
        return {"graph": graph_to_json(a, tensors, prefix)}
    if isinstance(a, np.ndarray) or kind == "tensor":
        arr = np.asarray(a)
        return {"tensor": _store(tensors, prefix + "value", arr)}
    return _jsonable(a)


def _jsonable(x):
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    if isinstance(x, np.generic):
        return x.item()
    return x


def _store(tensors: dict, key: str, arr: np.ndarray) -> dict:
    arr = np.asarray(arr)
    name = dtypes.name(arr.dtype)
    if name == "string":
        return {"dtype": "string", "shape": list(arr.shape), "strings": [str(s) for s in arr.ravel()]}
    tensors[key] = arr
    return {"key": key, "dtype": name, "shape": list(arr.shape)}


def graph_from_json(d: dict, tensors: dict[str, np.ndarray], parent: Graph | None = None,
                    scope: dict[str, Value] | None = None, depth: int = 0) -> Graph:
    if depth > MAX_NESTING:
        raise ModelError(f"subgraphs nest deeper than {MAX_NESTING} levels")
    if not isinstance(d, dict) or not all(isinstance(x, str) for x in _names(d)):
        raise ModelError("a graph, node or value has a name or op that is not text")
    g = Graph(d.get("name", "main"), parent)
    g.metadata = dict(d.get("metadata", {}))
    scope = dict(scope or {})
    for vd in d.get("inputs", []):
        v = g.add_input(vd["name"])
        _apply_value_json(v, vd)
        scope[v.name] = v
    for cd in d.get("constants", []):
        v = g.add_constant(cd["name"], _load(tensors, cd["tensor"]))
        _apply_value_json(v, {k: cd[k] for k in ("layout", "quant", "meta") if k in cd})
        scope[v.name] = v
    for nd in d.get("nodes", []):
        inputs = []
        for name in nd["inputs"]:
            if name is None:
                inputs.append(None)
            elif name not in scope:
                raise ModelError(f"node {nd['name']!r} reads {name!r}, which is not defined before it")
            else:
                inputs.append(scope[name])
        attrs = {k: _attr_from_json(a, tensors, g, scope, depth) for k, a in nd.get("attrs", {}).items()}
        node = g.add_node(nd["op"], inputs, attrs, outputs=[o["name"] for o in nd["outputs"]],
                          name=nd["name"], meta=nd.get("meta"))
        for v, od in zip(node.outputs, nd["outputs"]):
            _apply_value_json(v, od)
            scope[od["name"]] = v
    for name in d.get("outputs", []):
        if name not in scope:
            raise ModelError(f"graph output {name!r} is not defined")
        g.outputs.append(scope[name])
    return g


def _names(d: dict):
    """The names and ops a graph's JSON declares (each must be text)."""
    yield d.get("name", "main")
    for key in ("inputs", "constants"):
        yield from (v.get("name") if isinstance(v, dict) else None for v in d.get(key, []))
    for nd in d.get("nodes", []):
        if not isinstance(nd, dict):
            yield None
            continue
        yield nd.get("op")
        yield nd.get("name")
        yield from (o.get("name") if isinstance(o, dict) else None for o in nd.get("outputs", []))
        yield from (i for i in nd.get("inputs", []) if i is not None)
    yield from d.get("outputs", [])


def _attr_from_json(a, tensors, g, scope, depth):
    if isinstance(a, dict) and "graph" in a:
        return graph_from_json(a["graph"], tensors, g, scope, depth + 1)
    if isinstance(a, dict) and "tensor" in a:
        return _load(tensors, a["tensor"])
    return a


def _load(tensors: dict, ref: dict) -> np.ndarray:
    dt = dtypes.dtype(ref["dtype"])
    if ref["dtype"] == "string":
        return np.array(ref["strings"], dtype=object).reshape(ref["shape"])
    try:
        raw = tensors[ref["key"]]
    except KeyError:
        raise ModelError(f"tensor {ref['key']!r} is missing from the weights") from None
    if raw.dtype != dt:
        if raw.nbytes % dt.itemsize:
            raise ModelError(f"tensor {ref['key']!r} holds {raw.nbytes} bytes, not a whole number of {dt}")
        raw = raw.reshape(-1).view(dt)
    return raw.reshape(tuple(ref["shape"]))


# -- safetensors container ------------------------------------------------------------------------
def save(graph: Graph, path, **_options) -> None:
    """Write `graph` to a `.tbir` file."""
    tensors: dict[str, np.ndarray] = {}
    doc = {"format": FORMAT, "version": VERSION, "graph": graph_to_json(graph, tensors)}
    write_safetensors(path, tensors, {_META_KEY: json.dumps(doc, separators=(",", ":"))})


def write_safetensors(path, tensors: dict[str, np.ndarray], metadata: dict[str, str] | None = None) -> None:
    """Stream tensors into a safetensors file, one at a time (a strided view in slices, a memory-mapped source's
    pages released once written): no copy of the whole payload, nor of any whole tensor."""
    header: dict[str, Any] = {"__metadata__": dict(metadata or {})}
    offset = 0
    order = []
    for key, arr in tensors.items():
        st = _ST_DTYPES.get(dtypes.name(arr.dtype))
        if st is None:  # keep the bytes; the JSON records the real dtype
            arr = np.ascontiguousarray(arr).reshape(-1).view(np.uint8)
            st = "U8"
        header[key] = {"dtype": st, "shape": list(arr.shape), "data_offsets": [offset, offset + arr.nbytes]}
        offset += arr.nbytes
        order.append(arr)
    blob = json.dumps(header, separators=(",", ":")).encode("utf-8")
    blob += b" " * ((-len(blob)) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(blob)))
        f.write(blob)
        for arr in order:
            write_array(f, arr)


def load(path, **_options) -> Graph:
    """Read a `.tbir` file; weights are read-only views of a memory map."""
    path = Path(path)
    try:
        size = path.stat().st_size
        if size < 8:
            raise ModelError(f"{path} is too short to be a .tbir file")
        with open(path, "rb") as f:
            mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    except OSError as e:
        raise ModelError(f"cannot read {path}: {e.strerror}") from None
    (n,) = struct.unpack("<Q", mm[:8])
    if n > min(size - 8, _HEADER_LIMIT):
        raise ModelError(f"{path} is not a .tbir file (bad header length)")
    try:
        header = json.loads(mm[8:8 + n])
        doc = json.loads(header.pop("__metadata__")[_META_KEY])
        if not isinstance(header, dict) or not isinstance(doc, dict):
            raise TypeError("not an object")
    except (ValueError, KeyError, TypeError, AttributeError, RecursionError):
        raise ModelError(f"{path} is not a .tbir file (no tensorbridge graph in its header)") from None
    if doc.get("format") != FORMAT or not isinstance(doc.get("version", 0), int) or doc.get("version", 0) > VERSION:
        raise ModelError(f"{path}: unsupported .tbir format/version {doc.get('format')} {doc.get('version')}")
    base = 8 + n
    tensors = {key: _tensor(mm, base, size, key, info, path) for key, info in header.items()}
    try:
        return graph_from_json(doc["graph"], tensors)
    except ModelError as e:
        raise ModelError(f"{path}: malformed graph: {e}") from None
    except (KeyError, TypeError, ValueError, AttributeError, IndexError, OverflowError, RecursionError) as e:
        raise ModelError(f"{path}: malformed graph ({type(e).__name__}: {str(e)[:300]})") from None


def _tensor(mm, base: int, size: int, key: str, info, path) -> np.ndarray:
    """One header entry's tensor, a view of the file, once its dtype, shape and offsets are consistent and
    inside the data section (nothing is allocated or read before that)."""
    if not isinstance(info, dict) or not isinstance(info.get("dtype"), str) or info["dtype"] not in _ST_TO_IR:
        raise ModelError(f"{path}: tensor {key!r} has no valid dtype")
    shape, offsets = info.get("shape"), info.get("data_offsets")
    if not isinstance(shape, list) or not all(isinstance(d, int) and 0 <= d < 1 << 48 for d in shape):
        raise ModelError(f"{path}: tensor {key!r} has an invalid shape {str(shape)[:80]}")
    if not isinstance(offsets, list) or len(offsets) != 2 or not all(isinstance(o, int) for o in offsets):
        raise ModelError(f"{path}: tensor {key!r} has invalid data_offsets")
    b, e = offsets
    if not 0 <= b <= e or base + e > size:
        raise ModelError(f"{path}: tensor {key!r} lies outside the file's data ({b}..{e})")
    dt = np.dtype(dtypes.dtype(_ST_TO_IR[info["dtype"]]))
    if math.prod(shape) * dt.itemsize != e - b:
        raise ModelError(f"{path}: tensor {key!r} has {e - b} bytes for shape {shape} of {dt}")
    return np.frombuffer(mm, dtype=dt, count=math.prod(shape), offset=base + b).reshape(shape)
