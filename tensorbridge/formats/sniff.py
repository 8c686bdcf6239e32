"""A model file's format from its content, whatever its name: the first bytes, and for zip archives the
names of their members. Reads no more than a file's header and zip directory; parses nothing it would
have to trust.
"""

from __future__ import annotations

import json
import struct
import zipfile
from pathlib import Path

from tensorbridge.formats.cntk import is_model as is_cntk_model

HDF5 = b"\x89HDF\r\n\x1a\n"
ZIP = b"PK\x03\x04"
MXNET_PARAMS = struct.pack("<Q", 0x112)


def sniff(path: str | Path) -> str | None:
    """The format name ("tflite", "keras", "torchscript", "pt2", "torch", "tbir", "mxnet", "paddle", "cntk") the bytes
    say, or None when they do not tell."""
    path = Path(path)
    try:
        with open(path, "rb") as f:
            head = f.read(128)
    except OSError:
        return None
    if head[4:8] == b"TFL3":
        return "tflite"
    if head.startswith(HDF5):
        return "keras"  # a Keras .h5 / .hdf5 (Keras 2 or 3)
    if head.startswith(ZIP):
        return _zip_kind(path)
    if _is_tbir(path, head):
        return "tbir"
    if head[:8] == MXNET_PARAMS or (head.lstrip()[:1] == b"{" and _is_mxnet_symbol(path)):
        return "mxnet"
    if head.lstrip()[:1] == b"{" and _is_paddle_program(path):
        return "paddle"
    if is_cntk_model(head):
        return "cntk"
    return None


def is_hdf5(path: str | Path) -> bool:
    """The file starts with HDF5's signature (a Keras .h5 / .hdf5)."""
    try:
        with open(path, "rb") as f:
            return f.read(len(HDF5)) == HDF5
    except OSError:
        return False


def looks_like_onnx(path: str | Path) -> bool:
    """A weak sign, for files whose name does not tell: an ONNX ModelProto starts with one of its first fields
    (ir_version, producer_name, ...) as a small protobuf tag."""
    try:
        with open(path, "rb") as f:
            head = f.read(2)
    except OSError:
        return False
    return len(head) == 2 and head[0] in (0x08, 0x12, 0x1a, 0x22, 0x2a, 0x3a, 0x42) and head[1] < 0x80


def _zip_kind(path: Path) -> str | None:
    try:
        with zipfile.ZipFile(path) as z:
            names = z.namelist()
    except (OSError, ValueError, EOFError, zipfile.BadZipFile):
        return None
    base = {n.rsplit("/", 1)[-1] for n in names}
    if {"config.json", "metadata.json"} <= base and any(n.endswith(".weights.h5") or n.endswith(".h5")
                                                       for n in names):
        return "keras"
    if any("/code/" in n for n in names):
        return "torchscript"
    if "archive_format" in base or any("serialized_exported_program" in n or "/models/" in n for n in names):
        return "pt2"
    if "data.pkl" in base:
        return "torch"  # torch.save's archive: weights without code (the PyTorch loader says so)
    return None


def _is_tbir(path: Path, head: bytes) -> bool:
    """A safetensors file whose metadata holds a tensorbridge graph."""
    if len(head) < 9:
        return False
    (n,) = struct.unpack("<Q", head[:8])
    if head[8:9] != b"{" or n > 1 << 28:
        return False
    try:
        with open(path, "rb") as f:
            f.seek(8)
            header = json.loads(f.read(n))
    except (OSError, ValueError):
        return False
    metadata = header.get("__metadata__") if isinstance(header, dict) else None
    return isinstance(metadata, dict) and any("tensorbridge" in k for k in metadata)



def _start(path: Path) -> str:
    try:
        with open(path, "rb") as f:
            return f.read(4096).decode("utf-8", "replace")
    except OSError:
        return ""


def _is_paddle_program(path: Path) -> bool:
    """JSON that starts as a Paddle PIR program (`base_code` with the magic "pir")."""
    from tensorbridge.formats.paddle import is_pir

    return is_pir(_start(path))


def _is_mxnet_symbol(path: Path) -> bool:
    """JSON whose first keys are an MXNet symbol's (`nodes`, then `arg_nodes`), read from its first 4 KB."""
    start = _start(path)
    return '"nodes"' in start and ('"arg_nodes"' in start or '"heads"' in start or '"op"' in start)
