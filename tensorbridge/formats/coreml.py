"""Core ML files: an `.mlpackage` (a folder: `Manifest.json`, the spec `model.mlmodel` and, for an ML Program,
the weights blob `weights/weight.bin`) or a bare `.mlmodel` spec.

The spec is protobuf, read with coremltools' generated modules, loaded without the rest of coremltools (its
package import loads TensorFlow and PyTorch to check their versions). An ML Program's large constants live in
the blob: at each constant's offset a 64-byte header (sentinel 0xDEADBEEF, data type, size in bytes, offset of
the data) precedes the data.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import logging
import struct
import sys
import types
from pathlib import Path

import numpy as np

from tensorbridge.errors import ModelError

#: MIL data types (MIL.proto's DataType) -> NumPy's
MIL_DTYPES = {1: np.bool_, 10: np.float16, 11: np.float32, 12: np.float64, 21: np.int8, 22: np.int16, 23: np.int32,
              24: np.int64, 31: np.uint8, 32: np.uint16, 33: np.uint32, 34: np.uint64}
BLOB_SENTINEL = 0xDEADBEEF
SPEC = "model.mlmodel"


def protos():
    """coremltools' generated `Model_pb2` and `MIL_pb2`."""
    if "coremltools.proto.Model_pb2" not in sys.modules:
        found = importlib.util.find_spec("coremltools")
        if found is None:
            raise ModelError("coremltools is needed for Core ML files (pip install 'tensorbridge[coreml]')")
        bare = "coremltools" not in sys.modules
        if bare:
            package = types.ModuleType("coremltools")
            package.__path__ = list(found.submodule_search_locations)
            sys.modules["coremltools"] = package
        try:
            importlib.import_module("coremltools.proto.Model_pb2")
        finally:
            if bare:
                del sys.modules["coremltools"]
    return sys.modules["coremltools.proto.Model_pb2"], sys.modules["coremltools.proto.MIL_pb2"]


def coremltools():
    """The coremltools package, its import-time notices (untested TensorFlow/PyTorch versions, the missing
    macOS-only prediction library) kept out of the user's output."""
    for name in ("coremltools", "torchao", "torch.utils._pytree"):  # its imports' notices too
        logging.getLogger(name).setLevel(logging.ERROR)
    try:
        import coremltools as ct
    except ModuleNotFoundError:
        raise ModelError("coremltools is needed for Core ML files (pip install 'tensorbridge[coreml]')") from None
    if not hasattr(ct, "proto") and "coremltools.proto" in sys.modules:
        ct.proto = sys.modules["coremltools.proto"]
    return ct


def spec_path(path) -> tuple[Path, Path | None]:
    """(the spec file, the folder its weights blobs are in — None for a bare `.mlmodel`)."""
    path = Path(path)
    if path.is_file():
        return path, None
    manifest = path / "Manifest.json"
    if not manifest.is_file():
        raise ModelError(f"{path} is not a Core ML package (no Manifest.json)")
    try:
        info = json.loads(manifest.read_text())
        entry = info["itemInfoEntries"][info["rootModelIdentifier"]]
        spec = path / "Data" / entry["path"]
    except (ValueError, KeyError, TypeError) as e:
        raise ModelError(f"{manifest} does not name the model's spec: {e}") from None
    if not spec.resolve().is_relative_to((path / "Data").resolve()) or not spec.is_file():
        raise ModelError(f"{manifest} names a spec that is not in the package: {entry.get('path')!r}")
    return spec, spec.parent


def read(path):
    """(the spec as a `Model` message, the folder its blobs are relative to)."""
    model_pb2, _ = protos()
    spec_file, folder = spec_path(path)
    model = model_pb2.Model()
    try:
        model.ParseFromString(spec_file.read_bytes())
    except Exception as e:  # noqa: BLE001 - protobuf's DecodeError and its C implementation's errors
        raise ModelError(f"{spec_file} is not a Core ML spec: {e}") from None
    if model.WhichOneof("Type") is None:
        raise ModelError(f"{spec_file} holds no model")
    return model, folder


def blob(folder: Path | None, file_name: str, offset: int, dtype, shape) -> np.ndarray:
    """A constant stored in a weights blob (`@model_path/weights/weight.bin` at `offset`)."""
    if folder is None:
        raise ModelError("a constant refers to a weights file, which only a Core ML package holds")
    relative = file_name.removeprefix("@model_path/")
    path = (folder / relative).resolve()
    if not path.is_relative_to(folder.resolve()) or not path.is_file():
        raise ModelError(f"the weights file {file_name!r} is not in the package")
    with open(path, "rb") as f:
        f.seek(offset)
        header = f.read(64)
        if len(header) < 64:
            raise ModelError(f"{file_name}: no constant at offset {offset}")
        sentinel, _, size, start = struct.unpack_from("<IIQQ", header)
        dtype = np.dtype(dtype)
        expected = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        if sentinel != BLOB_SENTINEL or size != expected:
            raise ModelError(f"{file_name}: the constant at offset {offset} is not the {dtype.name} {list(shape)} "
                             "its op declares")
        f.seek(start)
        data = f.read(size)
    if len(data) != size:
        raise ModelError(f"{file_name} is truncated")
    return np.frombuffer(data, dtype).reshape(shape).copy()
