"""The Caffe registry object and what its layer rules share.

A layer is read by a converter `fn(imp, layer) -> Value | list[Value]` (kind "layer"): `imp.x` is its first
bottom, `imp.bottoms` all of them, `imp.blobs` its weights from the caffemodel and `layer.<type>_param` its
options; the values returned are its tops, in order. Caffe is channels-first (N, C, H, W).
"""

from __future__ import annotations

import functools

from tensorbridge.errors import ModelError
from tensorbridge.rules.core import Registry

R = Registry("caffe")
layer = functools.partial(R.imports, kind="layer")

#: layers that only train or feed training: skipped when reading a net (their tops are not outputs)
TRAINING = frozenset("""Accuracy ContrastiveLoss EuclideanLoss HingeLoss InfogainLoss MultinomialLogisticLoss
    SigmoidCrossEntropyLoss SoftmaxWithLoss Silence""".split())
#: layers that read a dataset: a deploy prototxt declares an input instead
DATA = frozenset("Data ImageData HDF5Data MemoryData WindowData DummyData AnnotatedData Python".split())
#: the layer the writer copies a blob with
COPY = "Split"

#: V1 layer type -> the V2 type name (Caffe's upgrade_proto)
V1_TYPES = {
    "ABSVAL": "AbsVal", "ACCURACY": "Accuracy", "ARGMAX": "ArgMax", "BNLL": "BNLL", "CONCAT": "Concat",
    "CONTRASTIVE_LOSS": "ContrastiveLoss", "CONVOLUTION": "Convolution", "DECONVOLUTION": "Deconvolution",
    "DATA": "Data", "DROPOUT": "Dropout", "DUMMY_DATA": "DummyData", "EUCLIDEAN_LOSS": "EuclideanLoss",
    "ELTWISE": "Eltwise", "EXP": "Exp", "FLATTEN": "Flatten", "HDF5_DATA": "HDF5Data", "HDF5_OUTPUT": "HDF5Output",
    "HINGE_LOSS": "HingeLoss", "IM2COL": "Im2col", "IMAGE_DATA": "ImageData", "INFOGAIN_LOSS": "InfogainLoss",
    "INNER_PRODUCT": "InnerProduct", "LRN": "LRN", "MEMORY_DATA": "MemoryData",
    "MULTINOMIAL_LOGISTIC_LOSS": "MultinomialLogisticLoss", "MVN": "MVN", "POOLING": "Pooling", "POWER": "Power",
    "RELU": "ReLU", "SIGMOID": "Sigmoid", "SIGMOID_CROSS_ENTROPY_LOSS": "SigmoidCrossEntropyLoss",
    "SILENCE": "Silence", "SOFTMAX": "Softmax", "SOFTMAX_LOSS": "SoftmaxWithLoss", "SPLIT": "Split",
    "SLICE": "Slice", "TANH": "TanH", "WINDOW_DATA": "WindowData", "THRESHOLD": "Threshold",
}


def spatial(values, h: int | None, w: int | None, default: int, what: str) -> list[int]:
    """Caffe's (h, w) of a window option: `kernel_h`/`kernel_w` when set, else one or two repeated values."""
    if h is not None or w is not None:
        if h is None or w is None:
            raise ModelError(f"{what}: only one of {what}_h and {what}_w is set")
        return [h, w]
    values = list(values)
    if not values:
        return [default, default]
    if len(values) == 1:
        return values * 2
    if len(values) == 2:
        return values
    raise ModelError(f"{what} has {len(values)} values; only 2-D windows are read")


def window(param, name: str, default: int) -> list[int]:
    """The (h, w) of `name` (kernel_size, stride, pad, dilation) in a convolution or pooling parameter."""
    stem = "kernel" if name == "kernel_size" else name
    fields = param.DESCRIPTOR.fields_by_name

    def side(suffix):
        key = f"{stem}_{suffix}"
        return getattr(param, key) if key in fields and param.HasField(key) else None

    value = getattr(param, name)
    if isinstance(value, int | float):
        values = [value] if param.HasField(name) else []
    else:
        values = list(value)
    return spatial(values, side("h"), side("w"), default, stem)


def image(x, what: str) -> tuple[int, int, int, int]:
    if x.shape is None or len(x.shape) != 4 or not all(isinstance(d, int) for d in x.shape):
        raise ModelError(f"{what} needs an image (N, C, H, W) of known size, not {x.shape}")
    return tuple(x.shape)


def axis_of(x, axis: int) -> int:
    rank = len(x.shape or ())
    if not -rank <= axis < rank:
        raise ModelError(f"axis {axis} does not exist in a tensor of rank {rank}")
    return axis % rank
