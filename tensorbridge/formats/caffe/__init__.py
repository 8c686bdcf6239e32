"""Caffe's files, read and written without Caffe.

The net (`.prototxt`, protobuf text) is parsed with message classes that protobuf builds at run time from
`caffe_descriptor.pb`, compiled from the vendored `caffe.proto` (BVLC, BSD 2-Clause; see LICENSE.caffe). The
legacy V1 form (`layers { type: CONVOLUTION }`) is upgraded to the V2 form (`layer { type: "Convolution" }`) by
the frontend, as Caffe itself does.

The weights (`.caffemodel`, protobuf binary) are walked on the wire (formats/protowire.py): only each layer's
name and blobs are read, and every blob's data becomes a read-only NumPy view of the memory-mapped file, so a
550 MB VGG-16 is not copied. Writing streams the blobs from the arrays the same way.
"""

from __future__ import annotations

import functools
import mmap
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from tensorbridge.errors import ModelError
from tensorbridge.formats.protodesc import message_classes
from tensorbridge.formats.protowire import fields, len_field, varint
from tensorbridge.formats.streaming import write_array

DESCRIPTOR = Path(__file__).with_name("caffe_descriptor.pb")
WHAT = "caffemodel"

#: NetParameter.layer / .layers (V1); LayerParameter.name / .blobs; V1LayerParameter.name / .blobs
_NET_LAYER, _NET_LAYERS_V1 = 100, 2
_NAME, _BLOBS = {_NET_LAYER: 1, _NET_LAYERS_V1: 4}, {_NET_LAYER: 7, _NET_LAYERS_V1: 6}
#: BlobProto fields: the 4-D legacy shape, data (float), double_data, shape; BlobShape.dim
_LEGACY_DIMS, _DATA, _DOUBLE_DATA, _SHAPE, _DIM = (1, 2, 3, 4), 5, 8, 7, 1

@functools.cache
def messages() -> SimpleNamespace:
    """Caffe's message classes (NetParameter, LayerParameter, ...), built from the shipped descriptor."""
    return message_classes(DESCRIPTOR, "caffe",
                           ("NetParameter", "LayerParameter", "V1LayerParameter", "BlobProto", "BlobShape"))


def read_prototxt(path: str | Path):
    """The NetParameter of a prototxt, as written (the frontend upgrades V1 layers)."""
    from google.protobuf import text_format

    path = Path(path)
    try:
        text = path.read_text()
    except UnicodeDecodeError:
        raise ModelError(f"{path} is not a Caffe prototxt (not text; a .caffemodel is read with its prototxt)") \
            from None
    net = messages().NetParameter()
    try:
        text_format.Parse(text, net)
    except text_format.ParseError as e:
        raise ModelError(f"{path}: not a valid Caffe prototxt: {e}") from None
    return net


def format_prototxt(net) -> str:
    from google.protobuf import text_format

    return text_format.MessageToString(net)


# -- weights ----------------------------------------------------------------------------------------------------
def read_weights(path: str | Path) -> dict[str, list[np.ndarray]]:
    """Each layer's blobs in a caffemodel, by layer name; the arrays are views of the memory-mapped file."""
    path = Path(path)
    try:
        with open(path, "rb") as f:
            if path.stat().st_size == 0:
                raise ModelError(f"{path} is empty, not a caffemodel")
            mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    except OSError as e:
        raise ModelError(f"cannot read {path}: {e.strerror}") from None
    layers: dict[str, list[np.ndarray]] = {}
    for number, wire, _, start, end in fields(mm, 0, len(mm), WHAT):
        if number in _NAME and wire == 2:
            name, blobs = "", []
            for n, w, _, s, e in fields(mm, start, end, WHAT):
                if n == _NAME[number] and w == 2:
                    name = _text(mm[s:e])
                elif n == _BLOBS[number] and w == 2:
                    blobs.append(_blob(mm, s, e, f"{name or 'a layer'}'s blob {len(blobs)}"))
            if blobs:
                layers[name] = blobs
    return layers


def _text(raw: bytes) -> str:
    try:
        return raw.decode()
    except UnicodeDecodeError:
        raise ModelError(f"malformed {WHAT} (a layer name is not UTF-8)") from None


def _blob(mm, start: int, end: int, what: str) -> np.ndarray:
    shape, legacy, data = None, {}, None
    for n, w, _, s, e in fields(mm, start, end, WHAT):
        if n == _SHAPE and w == 2:
            shape = _dims(mm, s, e)
        elif n in _LEGACY_DIMS and w == 0:
            legacy[n] = varint(mm, s, e, WHAT)[0]
        elif n in (_DATA, _DOUBLE_DATA) and w == 2:
            dtype = np.float32 if n == _DATA else np.float64
            if (e - s) % np.dtype(dtype).itemsize:
                raise ModelError(f"malformed {WHAT}: {what} is not a whole number of values")
            data = np.frombuffer(mm, dtype=dtype, count=(e - s) // np.dtype(dtype).itemsize, offset=s)
        elif n in (_DATA, _DOUBLE_DATA):
            raise ModelError(f"{what} stores its values unpacked, which Caffe never writes")
    if shape is None:
        shape = tuple(legacy.get(i, 0) for i in _LEGACY_DIMS) if legacy else None
    data = np.zeros(0, np.float32) if data is None else data.astype(np.float32, copy=False)
    if shape is None:
        shape = (data.size,)
    if int(np.prod(shape)) != data.size:
        raise ModelError(f"malformed {WHAT}: {what} has shape {list(shape)} but {data.size} values")
    return data.reshape(shape)


def _dims(mm, start: int, end: int) -> tuple[int, ...]:
    dims = []
    for n, w, _, s, e in fields(mm, start, end, WHAT):
        if n != _DIM:
            continue
        if w == 0:
            dims.append(varint(mm, s, e, WHAT)[0])
        else:
            pos = s
            while pos < e:
                d, pos = varint(mm, pos, e, WHAT)
                dims.append(d)
    return tuple(dims)


def write_caffemodel(path: str | Path, net, blobs: dict[str, list[np.ndarray]]) -> None:
    """Write `net` (V2 layers, no blobs in it) with each layer's `blobs` (by name), streamed from the arrays."""
    m = messages()
    head = m.NetParameter()
    head.CopyFrom(net)
    head.ClearField("layer")
    with open(path, "wb") as f:
        f.write(head.SerializeToString())
        for layer in net.layer:
            body = layer.SerializeToString()
            parts = []
            for array in blobs.get(layer.name, ()):
                array = np.asarray(array, np.float32)
                shape = m.BlobShape(dim=array.shape).SerializeToString()
                blob_head = len_field(_SHAPE, len(shape)) + shape + len_field(_DATA, array.nbytes)
                parts.append((len_field(_BLOBS[_NET_LAYER], len(blob_head) + array.nbytes) + blob_head, array))
            f.write(len_field(_NET_LAYER, len(body) + sum(len(h) + a.nbytes for h, a in parts)) + body)
            for blob_head, array in parts:
                f.write(blob_head)
                write_array(f, array)
