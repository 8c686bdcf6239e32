"""Benchmark-only stand-in for torchvision, which has no CPU wheel here.

onnx2torch imports torchvision for its NMS and RoiAlign converters only; the benchmark
models use neither. This folder is put on PYTHONPATH for the onnx2torch process alone.
"""

from . import ops  # noqa: F401
