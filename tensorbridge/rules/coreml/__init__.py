"""The Core ML registry: MIL ops and neural-network layers <-> IR ops.

`REGISTRY` is read by the Core ML frontend (import rules: kind "mil" for ML Program ops, kind "layer" for the
layers of a neural network), the Core ML writer (export rules), the support matrix and the per-op corpus.
`base.py` holds the registry and what the rules share; `export.py` and `export_shape.py` the way out;
`program.py` reads ML Programs and `network.py` neural networks.
"""

from tensorbridge.rules.coreml import export, export_shape, network, program, program_shape  # noqa: F401 (registers)
from tensorbridge.rules.coreml.base import R as REGISTRY

__all__ = ["REGISTRY"]
