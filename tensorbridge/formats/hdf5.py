"""HDF5 files (Keras `.h5`/`.hdf5`) opened as hostile input: read once, in full, in a child process first.

The HDF5 library can loop forever or crash on a damaged file (a bit flip in an attribute's heap), and a
C library stuck in a loop cannot be interrupted from Python. So a throwaway process reads every attribute
and every dataset of the file under a time and memory limit before the file is opened here; a file it
cannot read is refused with its reason, one that it cannot finish reading in time as damaged.
"""

from __future__ import annotations

from pathlib import Path

from tensorbridge.formats.isolated import run_child

#: seconds allowed to read a file: a base for starting Python and h5py, plus time per byte
BASE_SECONDS = 8
BYTES_PER_SECOND = 100 << 20
#: elements of a dataset read at once
BLOCK = 1 << 22

_READ_EVERYTHING = f"""
import sys

import h5py

def read(name, obj):
    for key in obj.attrs:
        obj.attrs[key]
    if isinstance(obj, h5py.Dataset) and obj.shape:
        rows = max(1, {BLOCK} // max(1, obj.size // obj.shape[0]))
        for start in range(0, obj.shape[0], rows):
            obj[start:start + rows]
    elif isinstance(obj, h5py.Dataset):
        obj[()]

with h5py.File(sys.argv[1], "r") as f:
    read("/", f)
    f.visititems(read)
"""


#: files read to their end in this process, by (path, size, modification time): a conversion loads its source
#: again to verify it, and the check need not run twice
_READ: set[tuple[str, int, int]] = set()


def check_readable(path: Path, what: str) -> None:
    """Refuse an HDF5 file that the HDF5 library cannot read to its end in bounded time and memory."""
    stat = path.stat()
    key = (str(path.resolve()), stat.st_size, stat.st_mtime_ns)
    if key in _READ:
        return
    limit = BASE_SECONDS + stat.st_size / BYTES_PER_SECOND
    run_child(_READ_EVERYTHING, [str(path)], limit, f"{path} is not a readable {what} (a damaged HDF5 file)")
    _READ.add(key)
