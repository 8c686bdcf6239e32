"""tensorbridge: convert trained models between frameworks through one IR, and prove it.

Public API: `load`, `save`, `convert`, `verify`, `run`, `transpile` (model code; its `port_weights`),
and `LayoutOptions` (the --layout, --io-layout and --pin-layout choices); exceptions live in `tensorbridge.errors`.
Heavy frameworks are imported lazily by the frontend or backend that needs them.
"""

from tensorbridge import errors, transpile
from tensorbridge.api import convert, load, run, save, verify
from tensorbridge.passes.layout import LayoutOptions

__version__ = "0.1.0"
__all__ = ["load", "save", "convert", "verify", "run", "transpile", "LayoutOptions", "errors", "__version__"]
