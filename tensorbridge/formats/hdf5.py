"""HDF5 files (Keras `.h5`/`.hdf5`) opened as hostile input: read once, in full, in a child process first.

The HDF5 library can loop forever or crash on a damaged file (a bit flip in an attribute's heap), and a
C library stuck in a loop cannot be interrupted from Python. So a throwaway process reads every attribute
and every dataset of the file under a time and memory limit before the file is opened here; a file it
cannot read is refused with its reason, one that it cannot finish reading in time as damaged.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tensorbridge.errors import ModelError

#: seconds allowed to read a file: a base for starting Python and h5py, plus time per byte
BASE_SECONDS = 8
BYTES_PER_SECOND = 100 << 20
#: address space the reading process may use beyond what it starts with
MEMORY_LIMIT = 2 << 30
#: elements of a dataset read at once
BLOCK = 1 << 22

_READ_EVERYTHING = f"""
import resource
import sys

import h5py

with open("/proc/self/status") as status:
    size = next(int(line.split()[1]) * 1024 for line in status if line.startswith("VmSize:"))
hard = resource.getrlimit(resource.RLIMIT_AS)[1]
soft = size + {MEMORY_LIMIT}
resource.setrlimit(resource.RLIMIT_AS, (soft if hard == resource.RLIM_INFINITY else min(soft, hard), hard))

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
    try:
        done = subprocess.run([sys.executable, "-I", "-c", _READ_EVERYTHING, str(path)], capture_output=True,
                              text=True, errors="replace", timeout=limit)
    except subprocess.TimeoutExpired:
        raise ModelError(f"{path} is not a readable {what}: the HDF5 library did not finish reading it in "
                         f"{limit:.0f} s (a damaged file makes it loop)") from None
    if done.returncode:
        lines = [line for line in done.stderr.splitlines() if line.strip()]
        why = lines[-1] if lines else f"the reader stopped with signal {-done.returncode}"
        raise ModelError(f"{path} is not a readable {what}: damaged HDF5 file ({why[:300]})")
    _READ.add(key)
