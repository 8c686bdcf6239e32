"""Keras 3 -> IR: preprocessing layers models carry inside them (Resizing, CenterCrop, data augmentation).

Their calls run through backend-specific code that does not trace on symbolic tensors, so they are read here.
Augmentation layers (RandomFlip, RandomRotation, MixUp, ...) change images only while training: at inference
each is checked to pass a random batch through unchanged, and reads as nothing.
"""

from __future__ import annotations

import numpy as np

from tensorbridge.errors import ModelError
from tensorbridge.rules import tensorflow_semantics as tf_semantics
from tensorbridge.rules.keras.base import NHWC, layer


def _channels_last(layer) -> None:
    if getattr(layer, "data_format", "channels_last") != "channels_last":
        raise ModelError(f"{layer.name}: data_format={layer.data_format} is not supported (channels_last only)")


@layer("Resizing", produces="Resize")
def read_resizing(imp, layer, inputs, node):
    _channels_last(layer)
    if layer.interpolation not in ("bilinear", "nearest") or layer.crop_to_aspect_ratio or \
            getattr(layer, "pad_to_aspect_ratio", False) or getattr(layer, "antialias", False):
        raise ModelError(f"{layer.name}: Resizing with interpolation={layer.interpolation!r}, antialias, or an "
                         "aspect ratio kept is not supported")
    attrs = tf_semantics.resize_attrs(layer.interpolation == "bilinear", False, True)
    size = imp.const(np.asarray([layer.height, layer.width], np.int64), dtype=np.int64)
    return tf_semantics.resize(imp, inputs[0], size, {**attrs, "layout": NHWC})


@layer("CenterCrop", produces="Slice")
def read_center_crop(imp, layer, inputs, node):
    """The centre (height, width) window of a larger image; one no larger is resized by Keras: refused."""
    _channels_last(layer)
    shape = tuple(node.input_tensors[0].shape)
    h, w = shape[-3], shape[-2]
    if not isinstance(h, int) or not isinstance(w, int) or h < layer.height or w < layer.width:
        raise ModelError(f"{layer.name}: CenterCrop of a {h}x{w} image to {layer.height}x{layer.width} "
                         "(only a static image at least that large is read)")
    top, left = (h - layer.height) // 2, (w - layer.width) // 2
    rank = len(shape)
    starts = imp.const(np.asarray([top, left], np.int64), dtype=np.int64)
    ends = imp.const(np.asarray([top + layer.height, left + layer.width], np.int64), dtype=np.int64)
    axes = imp.const(np.asarray([rank - 3, rank - 2], np.int64), dtype=np.int64)
    return imp.emit("Slice", [inputs[0], starts, ends, axes])


#: layers that augment training data and, at inference, return their input
AUGMENTATIONS = ("RandomFlip", "RandomRotation", "RandomZoom", "RandomTranslation", "RandomContrast",
                 "RandomBrightness", "RandomHue", "RandomSaturation", "RandomSharpness", "RandomShear",
                 "RandomColorJitter", "RandomColorDegeneration", "RandomPosterization", "RandomErasing",
                 "RandomGaussianBlur", "RandomGrayscale", "RandomInvert", "RandomPerspective",
                 "RandomElasticTransform", "AugMix", "CutMix", "MixUp", "RandAugment")


@layer(*AUGMENTATIONS, produces=())
def read_augmentation(imp, layer, inputs, node):
    shape = [d if isinstance(d, int) else 2 for d in node.input_tensors[0].shape]
    probe = np.random.default_rng(0).uniform(0.0, 255.0, shape).astype(np.float32)
    if not np.array_equal(np.asarray(layer(probe, training=False)), probe):
        raise ModelError(f"{layer.name}: {type(layer).__name__} changes its input at inference")
    return inputs[0]
