"""torchvision.transforms as timm's data module imports it: every class a stand-in."""

from torchvision import missing

from . import functional  # noqa: F401


def __getattr__(name: str):
    if name[:1].isupper():
        return missing(name)
    raise AttributeError(name)
