"""Which model files may run code: only the ones the user vouched for, and tensorbridge's own output.

Model files are data; some formats are code. A generated code folder (`model.py` + weights) runs its
Python when it is imported, and a TorchScript archive runs its TorchScript when loaded. Reading either
as a source needs the user's word: `--trust-code` on the command line, `trust_code=True` in the API.
Folders this process wrote itself (the output of a conversion it is verifying) are trusted without it.
"""

from __future__ import annotations

import contextlib
import contextvars
from pathlib import Path

from tensorbridge.errors import ModelError

_trust_all = contextvars.ContextVar("tensorbridge_trust_code", default=False)
_written: set[Path] = set()  # folders tensorbridge wrote in this process


@contextlib.contextmanager
def trusting(enabled: bool = True):
    """Within the block, code-carrying sources load without asking (the user passed --trust-code)."""
    token = _trust_all.set(enabled or _trust_all.get())
    try:
        yield
    finally:
        _trust_all.reset(token)


def written_by_us(path) -> None:
    """`path` is tensorbridge's own output: loading it runs only code tensorbridge generated."""
    _written.add(Path(path).resolve())


def require(path, what: str) -> None:
    """Refuse to run the code of `path` (described as `what`) unless trusted."""
    if _trust_all.get() or Path(path).resolve() in _written:
        return
    raise ModelError(f"{path} is {what}: loading it runs the code it holds, which could do anything. If you trust "
                     "it, pass --trust-code (trust_code=True in the Python API).")
