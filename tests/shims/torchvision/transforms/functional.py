"""torchvision.transforms.functional as timm imports it: the interpolation modes, and stand-in functions."""

from enum import Enum


class InterpolationMode(Enum):
    NEAREST = "nearest"
    NEAREST_EXACT = "nearest-exact"
    BILINEAR = "bilinear"
    BICUBIC = "bicubic"
    BOX = "box"
    HAMMING = "hamming"
    LANCZOS = "lanczos"


def __getattr__(name: str):
    def refuse(*_args, **_kwargs):
        raise RuntimeError(f"torchvision is not installed: transforms.functional.{name} is a test stand-in")

    if name.startswith("__"):
        raise AttributeError(name)
    return refuse
