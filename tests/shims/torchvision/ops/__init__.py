"""The torchvision.ops names onnx2torch imports; calling them means a model needed real torchvision."""

from . import misc  # noqa: F401


def _missing(*_args, **_kwargs):
    raise RuntimeError("torchvision is not installed: this stand-in only satisfies imports")


nms = box_convert = roi_align = _missing
