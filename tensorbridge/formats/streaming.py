"""Writing weights to files without copying them whole, and letting go of a memory-mapped source's pages once
they are written, so converting a model larger than memory holds about one tensor at a time."""

from __future__ import annotations

import mmap

import numpy as np

try:
    from numpy.lib.array_utils import byte_bounds
except ImportError:  # numpy < 2
    byte_bounds = np.byte_bounds

_CHUNK_BYTES = 16 << 20
_TILE = 256


def write_array(f, arr: np.ndarray) -> None:
    """Write an array's bytes in C order; a strided view (a transposed weight) in slices of its first axis, each
    copied in cache-sized tiles, so it is never copied whole. A memory-mapped array's pages are released after
    (`release`)."""
    if arr.flags.c_contiguous:
        f.write(memoryview(arr.reshape(-1).view(np.uint8)))
    else:
        rows = max(1, _CHUNK_BYTES // max(1, arr[0].nbytes if arr.ndim > 1 else arr.itemsize))
        for start in range(0, arr.shape[0], rows):
            part = arr[start:start + rows]
            out = np.empty(part.shape, part.dtype)
            for c in range(0, part.shape[-1], _TILE):  # a transposed matrix copies ~3x faster in tiles
                out[..., c:c + _TILE] = part[..., c:c + _TILE]
            f.write(memoryview(out.reshape(-1).view(np.uint8)))
    release(arr)


def release(arr: np.ndarray) -> None:
    """Drop the pages of `arr` from this process's resident memory when it is a view of a read-only file mapping
    (the file keeps the data; a later read maps the pages back). Anything else is left alone."""
    mapping = _read_only_mapping(arr)
    if mapping is None or arr.nbytes == 0:
        return
    try:
        start = np.frombuffer(mapping, np.uint8).__array_interface__["data"][0]
    except (ValueError, TypeError):  # closed or empty
        return
    low, high = byte_bounds(arr)
    low = max(0, (low - start) // mmap.PAGESIZE * mmap.PAGESIZE)
    high = min(len(mapping), -(-(high - start) // mmap.PAGESIZE) * mmap.PAGESIZE)
    if high > low:
        mapping.madvise(mmap.MADV_DONTNEED, low, high - low)


def _read_only_mapping(arr) -> mmap.mmap | None:
    base = arr
    while base is not None and not isinstance(base, mmap.mmap):
        base = base.obj if isinstance(base, memoryview) else getattr(base, "base", None)
    if base is None:
        return None
    try:
        return base if memoryview(base).readonly else None
    except ValueError:  # closed
        return None
