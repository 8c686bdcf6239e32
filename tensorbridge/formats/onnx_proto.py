"""Reading and writing ONNX files without copying weights.

`onnx.load` materialises every weight twice (file bytes, then protobuf), and
`SerializeToString` once more on the way out. For large models that is several times the
weight size in memory. Here the file is memory-mapped, the protobuf wire format is walked
just deep enough to find each initializer's `raw_data` span, the small remainder is parsed
by protobuf, and weights become read-only NumPy views of the mapping. The writer streams
`raw_data` straight from the arrays. External data (models over 2 GB) is memory-mapped on
read and written to a side file.

Wire format (formats/protowire.py) facts used: ModelProto.graph is
field 7, GraphProto.initializer is field 5, TensorProto.raw_data is field 9.
"""

from __future__ import annotations

import mmap
import os
from dataclasses import dataclass
from pathlib import Path

import ml_dtypes
import numpy as np
import onnx
from onnx import numpy_helper

from tensorbridge.errors import ModelError
from tensorbridge.formats.protowire import fields, len_field
from tensorbridge.formats.streaming import write_array

_MODEL_GRAPH, _GRAPH_INITIALIZER, _TENSOR_RAW_DATA = 7, 5, 9
WHAT = "ONNX file"
_STREAM_MIN_BYTES = 1024  # smaller raw_data stays inside the parsed protobuf
#: ONNX element types whose raw_data is plain little-endian NumPy storage.
_PLAIN = {1: np.float32, 2: np.uint8, 3: np.int8, 4: np.uint16, 5: np.int16, 6: np.int32, 7: np.int64,
          9: np.bool_, 10: np.float16, 11: np.float64, 12: np.uint32, 13: np.uint64, 14: np.complex64,
          15: np.complex128, 16: ml_dtypes.bfloat16}


@dataclass
class LoadedModel:
    proto: onnx.ModelProto
    weights: dict[str, np.ndarray]  # initializer name -> array (memory-mapped where possible)
    path: Path


def read_model(path: str | os.PathLike) -> LoadedModel:
    """Parse an ONNX file, memory-mapping large initializers instead of copying them."""
    path = Path(path)
    try:
        size = path.stat().st_size
    except OSError as e:
        raise ModelError(f"cannot read {path}: {e.strerror}") from None
    if size == 0:
        raise ModelError(f"{path} is empty, not an ONNX model")
    try:
        with open(path, "rb") as f:
            mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    except OSError as e:
        raise ModelError(f"cannot read {path}: {e.strerror}") from None
    try:
        return _read_mapped(mm, path)
    except ModelError:
        raise
    except Exception as e:  # protobuf DecodeError and friends
        raise ModelError(f"{path} is not a valid ONNX model ({type(e).__name__}: {e})") from None


def _read_mapped(mm: mmap.mmap, path: Path) -> LoadedModel:
    model_keep: list[bytes] = []
    graph_parts: list[bytes] = []
    streamed: list[tuple[int, int, int]] = []  # (initializer index, offset, length)
    saw_graph = False
    for number, _, fstart, vstart, vend in fields(mm, 0, len(mm), WHAT):
        if number != _MODEL_GRAPH:
            model_keep.append(mm[fstart:vend])
            continue
        saw_graph = True
        init_index = 0
        for gnum, _, gfs, gvs, gve in fields(mm, vstart, vend, WHAT):
            if gnum != _GRAPH_INITIALIZER:
                graph_parts.append(mm[gfs:gve])
                continue
            tensor_keep: list[bytes] = []
            for tnum, _, tfs, tvs, tve in fields(mm, gvs, gve, WHAT):
                if tnum == _TENSOR_RAW_DATA and tve - tvs >= _STREAM_MIN_BYTES:
                    streamed.append((init_index, tvs, tve - tvs))
                else:
                    tensor_keep.append(mm[tfs:tve])
            body = b"".join(tensor_keep)
            graph_parts.append(len_field(_GRAPH_INITIALIZER, len(body)) + body)
            init_index += 1
    if not saw_graph:
        raise ModelError(f"{path} holds no ONNX graph (not an ONNX model, or truncated)")
    graph_body = b"".join(graph_parts)
    proto = onnx.ModelProto.FromString(b"".join(model_keep) + len_field(_MODEL_GRAPH, len(graph_body))
                                       + graph_body)
    weights: dict[str, np.ndarray] = {}
    inits = proto.graph.initializer
    for index, offset, length in streamed:
        t = inits[index]
        dt = _PLAIN.get(t.data_type)
        if dt is None:  # exotic storage: let onnx decode it (copies, but such tensors are small)
            t.raw_data = mm[offset:offset + length]
            continue
        count = length // np.dtype(dt).itemsize
        arr = np.frombuffer(mm, dtype=dt, count=count, offset=offset).reshape(tuple(t.dims))
        weights[t.name] = arr
    for t in inits:
        if t.name in weights:
            continue
        if t.data_location == onnx.TensorProto.EXTERNAL:
            weights[t.name] = _external(t, path.parent)
        else:
            weights[t.name] = numpy_helper.to_array(t)
    return LoadedModel(proto, weights, path)


def _external(t: onnx.TensorProto, base: Path) -> np.ndarray:
    info = {e.key: e.value for e in t.external_data}
    loc = info.get("location", "")
    target = (base / loc).resolve()
    if not loc or os.path.isabs(loc) or base.resolve() not in target.parents:
        raise ModelError(f"initializer {t.name!r}: external data location {loc!r} leaves the model folder")
    if not target.exists():
        raise ModelError(f"initializer {t.name!r}: external data file {loc!r} is missing")
    dt = _PLAIN.get(t.data_type)
    if dt is None:
        raise ModelError(f"initializer {t.name!r}: external data of type {t.data_type} is not supported")
    offset = int(info.get("offset", 0))
    count = int(np.prod(t.dims)) if t.dims else 1
    if offset + count * np.dtype(dt).itemsize > target.stat().st_size:
        raise ModelError(f"initializer {t.name!r}: external data file {loc!r} is too short")
    return np.memmap(target, dtype=dt, mode="r", offset=offset, shape=tuple(t.dims))


# -- writing ---------------------------------------------------------------------------------
_DTYPE_CODE = {np.dtype(v): k for k, v in _PLAIN.items()}
EXTERNAL_THRESHOLD = 1_800_000_000  # protobuf cannot hold 2 GB; switch to a side file early


def write_model(proto: onnx.ModelProto, weights: list[tuple[str, np.ndarray]], path: str | os.PathLike,
                external: bool | None = None) -> None:
    """Write `proto` (whose graph has no initializers) plus `weights` as initializers.

    Plain-typed weights are streamed from their arrays; others go through `numpy_helper`.
    `external=None` picks external data when the weights would not fit in one protobuf.
    """
    path = Path(path)
    total = sum(int(a.nbytes) for _, a in weights)
    if external is None:
        external = total > EXTERNAL_THRESHOLD
    data_name = path.name + ".data"
    graph_bytes = proto.graph.SerializeToString()
    head = onnx.ModelProto()
    head.CopyFrom(proto)
    head.ClearField("graph")
    pieces: list[bytes | np.ndarray] = []
    side: list[tuple[int, np.ndarray]] = []
    side_offset = 0
    for name, arr in weights:
        code = _DTYPE_CODE.get(arr.dtype)
        if code is None:
            t = numpy_helper.from_array(np.asarray(arr), name)
            body = t.SerializeToString()
            pieces.append(len_field(_GRAPH_INITIALIZER, len(body)) + body)
            continue
        t = onnx.TensorProto(name=name, data_type=code, dims=list(arr.shape))
        if external and arr.nbytes >= _STREAM_MIN_BYTES:  # small ones (shapes, axes) inline: runtimes read them
            pad = (-side_offset) % 64
            side_offset += pad
            side.append((pad, arr))
            t.data_location = onnx.TensorProto.EXTERNAL
            for k, v in (("location", data_name), ("offset", str(side_offset)), ("length", str(arr.nbytes))):
                e = t.external_data.add()
                e.key, e.value = k, v
            side_offset += arr.nbytes
            body = t.SerializeToString()
            pieces.append(len_field(_GRAPH_INITIALIZER, len(body)) + body)
        else:
            body = t.SerializeToString()
            raw_head = len_field(_TENSOR_RAW_DATA, arr.nbytes)
            pieces.append(len_field(_GRAPH_INITIALIZER, len(body) + len(raw_head) + arr.nbytes)
                          + body + raw_head)
            pieces.append(arr)
    graph_len = len(graph_bytes) + sum(p.nbytes if isinstance(p, np.ndarray) else len(p) for p in pieces)
    with open(path, "wb") as f:
        f.write(head.SerializeToString())
        f.write(len_field(_MODEL_GRAPH, graph_len))
        f.write(graph_bytes)
        for p in pieces:
            write_array(f, p) if isinstance(p, np.ndarray) else f.write(p)
    if external:
        with open(path.parent / data_name, "wb") as f:
            for pad, arr in side:
                f.write(b"\0" * pad)
                write_array(f, arr)
