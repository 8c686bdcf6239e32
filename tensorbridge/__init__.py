"""tensorbridge: convert trained models between frameworks through one IR, and prove it.

Public API: `load`, `save`, `convert`, `verify`, `run`; exceptions live in `tensorbridge.errors`.
Heavy frameworks are imported lazily by the frontend or backend that needs them.
"""

from tensorbridge import errors
from tensorbridge.api import convert, load, run, save, verify

__version__ = "0.1.0"
__all__ = ["load", "save", "convert", "verify", "run", "errors", "__version__"]
