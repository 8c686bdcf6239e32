"""Test- and benchmark-only stand-in for torchvision, which has no CPU wheel here.

onnx2torch (benchmarks, which put this folder on PYTHONPATH for its process) and timm (tests, through
tests/models/timm_zoo.py) import torchvision names at module level; the models converted here use none
of them. Using a stand-in name raises.
"""



def missing(name: str):
    """A class standing in for torchvision's `name`: it can be subclassed and tested against, not made."""

    def refuse(*_args, **_kwargs):
        raise RuntimeError(f"torchvision is not installed: {name} is a test stand-in")

    return type(name, (), {"__init__": refuse, "__call__": refuse})


from . import datasets, ops, transforms  # noqa: E402, F401 - after `missing`, which they use
