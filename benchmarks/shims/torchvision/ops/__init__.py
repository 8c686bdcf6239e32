"""The three names onnx2torch imports; calling them means a model needed real torchvision."""


def _missing(*_args, **_kwargs):
    raise RuntimeError("torchvision is not installed: this benchmark stand-in only satisfies imports")


nms = box_convert = roi_align = _missing
