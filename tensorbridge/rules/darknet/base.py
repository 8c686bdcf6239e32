"""The Darknet registry object, the options each section takes, and the activations.

Sections are read by converters `fn(imp, section) -> Value` (kind "section"); activations are rows (kind
"activation": Darknet's name <-> IR op with constant attributes) or converters `fn(imp, x) -> Value` for the
piecewise ones no IR op states. Export rules take (writer, node). Darknet is channels-first with one image
per call; its batch normalisation divides by `sqrt(variance) + 1e-6` (IR: `epsilon_on="std"`).
"""

from __future__ import annotations

import functools

from tensorbridge.rules.core import ImportRule, Registry

R = Registry("darknet", variants=("epsilon_on",))
section = functools.partial(R.imports, kind="section")
activation = functools.partial(R.imports, kind="activation")

#: Darknet's batch normalisation epsilon, added to the standard deviation
BN_EPSILON = 1e-6

#: options that only training reads: accepted on every section, ignored
TRAINING = frozenset("""learning_rate momentum decay policy steps scales max_batches burn_in power burn_in
    saturation exposure hue angle jitter random ignore_thresh truth_thresh rescore object_scale noobject_scale
    class_scale coord_scale bias_match thresh absolute aspect max_crop min_crop subdivisions batch seen adam B1 B2
    eps time_steps notruth max probability label_smooth_eps iou_normalizer cls_normalizer iou_loss nms_kind
    beta_nms iou_thresh obj_normalizer max_delta resize rotate flip mosaic cutmix mixup track""".split())

#: per section kind, the options that change what it computes (all are read; any other is refused)
OPTIONS = {
    "net": {"width", "height", "channels", "inputs"},
    "convolutional": {"filters", "size", "stride", "pad", "padding", "groups", "batch_normalize", "activation",
                      "dilation", "binary", "xnor", "flipped", "dot"},
    "connected": {"output", "activation", "batch_normalize"},
    "maxpool": {"size", "stride", "padding"},
    "avgpool": set(),
    "route": {"layers", "groups", "group_id"},
    "shortcut": {"from", "activation", "alpha", "beta"},
    "upsample": {"stride", "scale"},
    "softmax": {"groups", "temperature", "spatial", "noloss", "tree"},
    "dropout": {"probability"},
    "batchnorm": set(),
    "activation": {"activation"},
    "yolo": {"mask", "anchors", "classes", "num", "scale_x_y"},
    "region": {"anchors", "classes", "num", "coords", "softmax", "background", "tree", "map", "sqrt", "softmax_tree",
               "log"},
    "cost": {"type", "scale", "ratio", "noobject_scale"},
}

#: weight arrays of each writable section, in the order the weights file holds them
WEIGHT_ORDER = {"convolutional": ("biases", "scales", "mean", "variance", "weights"),
                "connected": ("biases", "weights", "scales", "mean", "variance"),
                "batchnorm": ("scales", "mean", "variance")}


def activation_row(name: str, ir_op: str, **attrs) -> None:
    """Darknet's activation `name` is the IR op `ir_op` with `attrs`."""
    R.add_import(ImportRule("activation", (name,), (ir_op,), ir_op=ir_op, attrs=attrs))


def layer_name(kind: str, index: int) -> str:
    """The IR name of layer `index` (its nodes' base): conv3, route9, yolo16 ..."""
    short = {"convolutional": "conv", "connected": "fc", "activation": "act"}.get(kind, kind)
    return f"{short}{index}"
