"""Reading hostile input in a throwaway process: a C library that loops for ever or crashes on a damaged file
(HDF5, MLIR bytecode) takes down only a child Python run under a time and address-space limit.
"""

from __future__ import annotations

import subprocess
import sys

from tensorbridge.errors import ModelError

#: address space the child may use beyond what it starts with
MEMORY_LIMIT = 2 << 30

_LIMIT_MEMORY = """
import resource
with open("/proc/self/status") as status:
    size = next(int(line.split()[1]) * 1024 for line in status if line.startswith("VmSize:"))
hard = resource.getrlimit(resource.RLIMIT_AS)[1]
soft = size + {limit}
resource.setrlimit(resource.RLIMIT_AS, (soft if hard == resource.RLIM_INFINITY else min(soft, hard), hard))
"""


def run_child(script: str, args: list[str], seconds: float, refusal: str, memory: int = MEMORY_LIMIT) -> str:
    """The standard output of `script` run with `args` by an isolated interpreter (`python -I`) after limiting
    its memory to `memory` bytes beyond what it starts with. A child that fails or runs out of time is a
    ModelError: `refusal` (what the file is not) followed by the child's last error line, or the time it did not
    finish in."""
    try:
        done = subprocess.run([sys.executable, "-I", "-c", _LIMIT_MEMORY.format(limit=memory) + script, *args],
                              capture_output=True, text=True, errors="replace", timeout=seconds)
    except subprocess.TimeoutExpired:
        raise ModelError(f"{refusal}: reading it did not finish in {seconds:.0f} s (a damaged file makes the "
                         "reader loop)") from None
    if done.returncode:
        lines = [line for line in done.stderr.splitlines() if line.strip()]
        why = lines[-1] if lines else f"the reader stopped with signal {-done.returncode}"
        raise ModelError(f"{refusal}: {why[:300]}")
    return done.stdout
