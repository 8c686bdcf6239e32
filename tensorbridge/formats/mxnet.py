"""MXNet's two files, parsed and written without MXNet: the `-symbol.json` graph and the `.params` arrays.

A symbol file is JSON: `nodes` in topological order (each an `op` — "null" for a variable —, a `name`, string
`attrs`, and `inputs` as [node, output, version] triples that point backwards), `arg_nodes`, and `heads` (the
outputs). A params file is MXNet's NDArray list: magic 0x112, a reserved word, the arrays (each with its own
magic: V1 int64 shapes, V2 adds a storage type, V3 NumPy shape semantics; before V1 the shape came first, in
uint32), then their names (`arg:NAME` for weights, `aux:NAME` for BatchNorm's running statistics). Only dense
arrays are read. What the ops mean lives in the MXNet registry (rules/mxnet).
"""

from __future__ import annotations

import glob
import json
import re
import struct
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from tensorbridge.errors import ModelError

LIST_MAGIC = 0x112
V1, V2, V3 = 0xF993FAC8, 0xF993FAC9, 0xF993FACA
#: MXNet's type flags (mshadow) -> NumPy dtypes
DTYPES = {0: np.float32, 1: np.float64, 2: np.float16, 3: np.uint8, 4: np.int32, 5: np.int8, 6: np.int64,
          7: np.bool_}
FLAGS = {np.dtype(v): k for k, v in DTYPES.items()}
#: the longest symbol file read (a BERT-large symbol is ~2 MB)
SYMBOL_LIMIT = 64 << 20
CPU = 1  # Context::kCPU
PARAMS_NAME = re.compile(r"^(?P<prefix>.*)-(?P<epoch>\d{4})\.params$")


@dataclass
class Node:
    op: str
    name: str
    attrs: dict[str, str] = field(default_factory=dict)
    inputs: list[tuple[int, int]] = field(default_factory=list)  # (node index, output index)


@dataclass
class Symbol:
    nodes: list[Node]
    heads: list[tuple[int, int]]
    version: int | None = None


# -- symbol ---------------------------------------------------------------------------------------------------
def read_symbol(path: str | Path) -> Symbol:
    path = Path(path)
    try:
        if path.stat().st_size > SYMBOL_LIMIT:
            raise ModelError(f"{path} is too large for an MXNet symbol file")
        data = json.loads(path.read_bytes().decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ModelError(f"{path} is not an MXNet symbol file: not JSON ({e})") from None
    except OSError as e:
        raise ModelError(f"cannot read {path}: {e.strerror}") from None
    return parse_symbol(data, str(path))


def parse_symbol(data, origin: str = "symbol") -> Symbol:
    if not isinstance(data, dict) or not isinstance(data.get("nodes"), list) or "heads" not in data:
        raise ModelError(f"{origin} is not an MXNet symbol file: it has no `nodes` and `heads`")
    nodes, problems = [], []
    for i, raw in enumerate(data["nodes"]):
        if not isinstance(raw, dict) or not isinstance(raw.get("op"), str) or not isinstance(raw.get("name"), str):
            problems.append(f"node {i} has no op and name")
            continue
        attrs = raw.get("attrs", raw.get("attr", raw.get("param", {}))) or {}  # the key changed over versions
        if not isinstance(attrs, dict) or not all(isinstance(v, str) for v in attrs.values()):
            problems.append(f"node {i} ({raw['name']}): attributes are not strings")
            attrs = {}
        inputs = _edges(raw.get("inputs", []), i, f"node {i} ({raw['name']})", problems)
        nodes.append(Node(raw["op"], raw["name"], dict(attrs), inputs))
    heads = _edges(data["heads"], len(nodes), "heads", problems)
    if not heads:
        problems.append("it has no outputs (`heads`)")
    if problems:
        raise ModelError(f"{origin} is not a valid MXNet symbol: " + "; ".join(problems[:10]))
    version = (data.get("attrs") or {}).get("mxnet_version")
    return Symbol(nodes, heads, version[1] if isinstance(version, list) and len(version) == 2 else None)


def _edges(raw, before: int, what: str, problems: list) -> list[tuple[int, int]]:
    """[node, output(, version)] entries that point at earlier nodes."""
    edges = []
    if not isinstance(raw, list):
        problems.append(f"{what}: inputs are not a list")
        return edges
    for entry in raw:
        if not isinstance(entry, list) or len(entry) not in (2, 3) or not all(type(v) is int for v in entry) \
                or not 0 <= entry[0] < before or entry[1] < 0:
            problems.append(f"{what}: input {entry!r} does not name an earlier node's output")
            continue
        edges.append((entry[0], entry[1]))
    return edges


def write_symbol(path: str | Path, symbol: Symbol) -> None:
    nodes = [{"op": n.op, "name": n.name, **({"attrs": n.attrs} if n.attrs else {}),
              "inputs": [[i, k, 0] for i, k in n.inputs]} for n in symbol.nodes]
    data = {"nodes": nodes, "arg_nodes": [i for i, n in enumerate(symbol.nodes) if n.op == "null"],
            "node_row_ptr": _row_ptr(symbol), "heads": [[i, k, 0] for i, k in symbol.heads],
            "attrs": {"mxnet_version": ["int", symbol.version or 10901]}}
    Path(path).write_text(json.dumps(data, indent=2))


def _row_ptr(symbol: Symbol) -> list[int]:
    """Where each node's outputs start in the flat list of entries (each node has as many as are read)."""
    counts = [1] * len(symbol.nodes)
    for n in symbol.nodes:
        for i, k in n.inputs:
            counts[i] = max(counts[i], k + 1)
    for i, k in symbol.heads:
        counts[i] = max(counts[i], k + 1)
    ptr = [0]
    for c in counts:
        ptr.append(ptr[-1] + c)
    return ptr


# -- params ---------------------------------------------------------------------------------------------------
def read_params(path: str | Path) -> dict[str, np.ndarray]:
    """{name (with its arg:/aux: prefix): array}."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as e:
        raise ModelError(f"cannot read {path}: {e.strerror}") from None
    return parse_params(raw, str(path))


def parse_params(raw: bytes, origin: str = "params") -> dict[str, np.ndarray]:
    r = _Reader(raw, origin)
    if len(raw) < 16 or r.u64() != LIST_MAGIC:
        raise ModelError(f"{origin} is not an MXNet params file (no NDArray list magic)")
    r.u64()  # reserved
    count = r.u64()
    if count > len(raw) // 8:
        raise ModelError(f"{origin} is truncated or corrupt: it claims {count:,} arrays")
    arrays = [_array(r, i) for i in range(count)]
    names = [r.text() for _ in range(r.u64() if r.left() else 0)]
    if names and len(names) != len(arrays):
        raise ModelError(f"{origin} names {len(names)} of its {len(arrays)} arrays")
    if arrays and not names:
        raise ModelError(f"{origin} has unnamed arrays: tensorbridge reads the named params that export() saves")
    if r.left():
        raise ModelError(f"{origin} has {r.left()} bytes after its last name")
    if len(set(names)) != len(names):
        raise ModelError(f"{origin} names an array twice")
    return dict(zip(names, arrays))


def _array(r: _Reader, index: int) -> np.ndarray:
    magic = r.u32()
    what = f"array {index}"
    if magic in (V2, V3):
        storage = r.i32()
        if storage != 0:
            raise ModelError(f"{r.origin}: {what} is sparse (storage type {storage}); only dense arrays are read")
    if magic in (V1, V2, V3):
        ndim = r.i32()
        if magic == V3 and ndim == -1:
            return np.zeros((0,), np.float32)  # an unknown shape: MXNet writes no data after it
        shape = [r.i64() for _ in range(_ndim(ndim, r, what))]
    else:  # before V1: the word read is the rank, then uint32 dims
        shape = [r.u32() for _ in range(_ndim(magic, r, what))]
    if not shape and magic != V3:
        return np.zeros((0,), np.float32)  # an empty array: nothing follows
    if any(d < 0 for d in shape):
        raise ModelError(f"{r.origin}: {what} has a negative dimension {shape}")
    r.i32(), r.i32()  # the context (device type and id) it was saved from
    flag = r.i32()
    if flag not in DTYPES:
        raise ModelError(f"{r.origin}: {what} has type flag {flag}, which tensorbridge does not read")
    dtype = np.dtype(DTYPES[flag])
    size = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    return np.frombuffer(r.take(size, what), dtype).reshape(shape).copy()


def _ndim(ndim: int, r: _Reader, what: str) -> int:
    if not 0 <= ndim <= 32:
        raise ModelError(f"{r.origin}: {what} has rank {ndim}: the file is corrupt")
    return ndim


class _Reader:
    def __init__(self, raw: bytes, origin: str):
        self.raw, self.at, self.origin = raw, 0, origin

    def left(self) -> int:
        return len(self.raw) - self.at

    def take(self, n: int, what: str = "a header") -> bytes:
        if n > self.left():
            raise ModelError(f"{self.origin} is truncated: {what} needs {n:,} bytes, {self.left():,} are left")
        chunk = self.raw[self.at:self.at + n]
        self.at += n
        return chunk

    def _unpack(self, fmt: str):
        return struct.unpack(fmt, self.take(struct.calcsize(fmt)))[0]

    def u64(self) -> int:
        return self._unpack("<Q")

    def i64(self) -> int:
        return self._unpack("<q")

    def u32(self) -> int:
        return self._unpack("<I")

    def i32(self) -> int:
        return self._unpack("<i")

    def text(self) -> str:
        n = self.u64()
        try:
            return self.take(n, "a name").decode("utf-8")
        except UnicodeDecodeError:
            raise ModelError(f"{self.origin}: a parameter name is not UTF-8") from None


def write_params(path: str | Path, arrays: dict[str, np.ndarray]) -> None:
    """An NDArray list in the V2 form that MXNet 1.x writes (dense, saved from the CPU)."""
    chunks = [struct.pack("<QQQ", LIST_MAGIC, 0, len(arrays))]
    for name, array in arrays.items():
        a = np.asarray(array, order="C")
        if a.dtype not in FLAGS:
            raise ModelError(f"MXNet has no {a.dtype} arrays (parameter {name})")
        chunks.append(struct.pack("<Iii", V2, 0, a.ndim) + struct.pack(f"<{a.ndim}q", *a.shape))
        if a.ndim:
            chunks.append(struct.pack("<iii", CPU, 0, FLAGS[a.dtype]) + a.astype(a.dtype.newbyteorder("<")).tobytes())
    chunks.append(struct.pack("<Q", len(arrays)))
    for name in arrays:
        encoded = name.encode("utf-8")
        chunks.append(struct.pack("<Q", len(encoded)) + encoded)
    Path(path).write_bytes(b"".join(chunks))


# -- the pair of files ------------------------------------------------------------------------------------------
def paths(source, weights=None) -> tuple[Path, Path]:
    """(symbol, params) of a source naming either: `PREFIX-symbol.json` and `PREFIX-NNNN.params` beside it (the
    latest epoch when there are several)."""
    path = Path(source)
    match = PARAMS_NAME.match(path.name)
    if match and weights is None:
        symbol = path.with_name(f"{match['prefix']}-symbol.json")
        if not symbol.is_file():
            raise ModelError(f"{path} needs its graph: no {symbol.name} beside it")
        return symbol, path
    if weights is not None:
        weights = Path(weights)
    else:
        prefix = path.name[:-len("-symbol.json")] if path.name.endswith("-symbol.json") else path.stem
        epochs = sorted(path.parent.glob(f"{glob.escape(prefix)}-[0-9][0-9][0-9][0-9].params"))
        if not epochs:
            raise ModelError(f"{path} needs its weights: no {prefix}-NNNN.params beside it (pass weights=PATH)")
        weights = epochs[-1]
    if not weights.is_file():
        raise ModelError(f"no such file: {weights}")
    return path, weights


def prefix_of(dest: str | Path) -> Path:
    """The checkpoint prefix a destination names: `PREFIX-symbol.json`, `PREFIX.json` or `PREFIX`."""
    dest = Path(dest)
    name = dest.name
    for ending in ("-symbol.json", ".json"):
        if name.endswith(ending):
            return dest.with_name(name[:-len(ending)])
    return dest
