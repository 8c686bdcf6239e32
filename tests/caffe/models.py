"""Caffe nets for tests: real architectures (and one net of every layer), written as prototxt with seeded weights
whose batch-normalisation statistics are calibrated on an image, so every blob varies with the input.

    python -m tests.caffe.models NAME OUT_PREFIX   # writes OUT_PREFIX.prototxt and OUT_PREFIX.caffemodel
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
from google.protobuf import json_format

from tensorbridge.formats.caffe import format_prototxt, messages, write_caffemodel
from tensorbridge.frontends.caffe.importer import Importer
from tensorbridge.reference.interpreter import run_node


class Net:
    """Builds a NetParameter layer by layer; each method returns the top it writes."""

    def __init__(self, name: str, shape):
        self.net = messages().NetParameter(name=name)
        self.add("Input", [], "data", input_param={"shape": [{"dim": list(shape)}]})

    def add(self, kind: str, bottoms, top: str, name: str | None = None, tops=None, **params) -> str:
        json_format.ParseDict({"name": name or top, "type": kind, "bottom": list(bottoms),
                               "top": list(tops or [top]), **params}, self.net.layer.add())
        return top

    def conv(self, x, name, n, k, s=1, p=0, g=1, bias=True, relu=True, bn=False, **extra):
        self.add("Convolution", [x], name, convolution_param={
            "num_output": n, "kernel_size": [k], "stride": [s], "pad": [p], "group": g, "bias_term": bias, **extra})
        if bn:
            self.add("BatchNorm", [name], name, name=f"{name}/bn")
            self.add("Scale", [name], name, name=f"{name}/scale", scale_param={"bias_term": True})
        if relu:
            self.add("ReLU", [name], name, name=f"{name}/relu")
        return name

    def pool(self, x, name, k, s, method="MAX", p=0):
        return self.add("Pooling", [x], name, pooling_param={"pool": method, "kernel_size": k, "stride": s, "pad": p})

    def fc(self, x, name, n, relu=True):
        self.add("InnerProduct", [x], name, inner_product_param={"num_output": n})
        if relu:
            self.add("ReLU", [name], name, name=f"{name}/relu")
        return name

    def lrn(self, x, name):
        return self.add("LRN", [x], name, lrn_param={"local_size": 5, "alpha": 1e-4, "beta": 0.75})


# -- architectures --------------------------------------------------------------------------------------------
def alexnet() -> Net:
    m = Net("AlexNet", (1, 3, 227, 227))
    x = m.conv("data", "conv1", 96, 11, s=4)
    x = m.pool(m.lrn(x, "norm1"), "pool1", 3, 2)
    x = m.conv(x, "conv2", 256, 5, p=2, g=2)
    x = m.pool(m.lrn(x, "norm2"), "pool2", 3, 2)
    x = m.conv(x, "conv3", 384, 3, p=1)
    x = m.conv(x, "conv4", 384, 3, p=1, g=2)
    x = m.pool(m.conv(x, "conv5", 256, 3, p=1, g=2), "pool5", 3, 2)
    for name in ("fc6", "fc7"):
        x = m.fc(x, name, 4096)
        m.add("Dropout", [x], x, name=f"drop{name[2]}", dropout_param={"dropout_ratio": 0.5})
    m.add("Softmax", [m.fc(x, "fc8", 1000, relu=False)], "prob")
    return m


def vgg16() -> Net:
    m = Net("VGG_ILSVRC_16_layers", (1, 3, 224, 224))
    x = "data"
    for stage, (n, convs) in enumerate([(64, 2), (128, 2), (256, 3), (512, 3), (512, 3)], 1):
        for i in range(1, convs + 1):
            x = m.conv(x, f"conv{stage}_{i}", n, 3, p=1)
        x = m.pool(x, f"pool{stage}", 2, 2)
    for name in ("fc6", "fc7"):
        x = m.fc(x, name, 4096)
        m.add("Dropout", [x], x, name=f"drop{name[2]}", dropout_param={"dropout_ratio": 0.5})
    m.add("Softmax", [m.fc(x, "fc8", 1000, relu=False)], "prob")
    return m


def googlenet() -> Net:
    m = Net("GoogleNet", (1, 3, 224, 224))
    x = m.conv("data", "conv1/7x7_s2", 64, 7, s=2, p=3)
    x = m.lrn(m.pool(x, "pool1/3x3_s2", 3, 2), "pool1/norm1")
    x = m.conv(x, "conv2/3x3_reduce", 64, 1)
    x = m.pool(m.lrn(m.conv(x, "conv2/3x3", 192, 3, p=1), "conv2/norm2"), "pool2/3x3_s2", 3, 2)
    blocks = {"3a": (64, 96, 128, 16, 32, 32), "3b": (128, 128, 192, 32, 96, 64), "4a": (192, 96, 208, 16, 48, 64),
              "4b": (160, 112, 224, 24, 64, 64), "4c": (128, 128, 256, 24, 64, 64), "4d": (112, 144, 288, 32, 64, 64),
              "4e": (256, 160, 320, 32, 128, 128), "5a": (256, 160, 320, 32, 128, 128),
              "5b": (384, 192, 384, 48, 128, 128)}
    for block, (c1, r3, c3, r5, c5, proj) in blocks.items():
        p = f"inception_{block}"
        branches = [m.conv(x, f"{p}/1x1", c1, 1),
                    m.conv(m.conv(x, f"{p}/3x3_reduce", r3, 1), f"{p}/3x3", c3, 3, p=1),
                    m.conv(m.conv(x, f"{p}/5x5_reduce", r5, 1), f"{p}/5x5", c5, 5, p=2),
                    m.conv(m.pool(x, f"{p}/pool", 3, 1, p=1), f"{p}/pool_proj", proj, 1)]
        x = m.add("Concat", branches, f"{p}/output")
        if block in ("3b", "4e"):
            x = m.pool(x, f"pool{block[0]}/3x3_s2", 3, 2)
    x = m.pool(x, "pool5/7x7_s1", 7, 1, method="AVE")
    m.add("Dropout", [x], x, name="pool5/drop_7x7_s1", dropout_param={"dropout_ratio": 0.4})
    m.add("Softmax", [m.fc(x, "loss3/classifier", 1000, relu=False)], "prob")
    return m


def resnet50() -> Net:
    m = Net("ResNet-50", (1, 3, 224, 224))
    x = m.pool(m.conv("data", "conv1", 64, 7, s=2, p=3, bias=False, bn=True), "pool1", 3, 2)
    width = 64
    for stage, blocks in zip("2345", (3, 4, 6, 3)):
        for i in range(blocks):
            name = f"res{stage}{chr(ord('a') + i)}"
            stride = 2 if i == 0 and stage != "2" else 1
            if i == 0:
                short = m.conv(x, f"{name}_branch1", width * 4, 1, s=stride, bias=False, bn=True, relu=False)
            else:
                short = x
            y = m.conv(x, f"{name}_branch2a", width, 1, s=stride, bias=False, bn=True)
            y = m.conv(y, f"{name}_branch2b", width, 3, p=1, bias=False, bn=True)
            y = m.conv(y, f"{name}_branch2c", width * 4, 1, bias=False, bn=True, relu=False)
            x = m.add("Eltwise", [short, y], name)
            m.add("ReLU", [x], x, name=f"{name}_relu")
        width *= 2
    x = m.pool(x, "pool5", 7, 1, method="AVE")
    m.add("Softmax", [m.fc(x, "fc1000", 1000, relu=False)], "prob")
    return m


def squeezenet() -> Net:
    m = Net("SqueezeNet_v1.1", (1, 3, 227, 227))
    x = m.pool(m.conv("data", "conv1", 64, 3, s=2), "pool1", 3, 2)

    def fire(x, i, squeeze, expand):
        s = m.conv(x, f"fire{i}/squeeze1x1", squeeze, 1)
        parts = [m.conv(s, f"fire{i}/expand1x1", expand, 1), m.conv(s, f"fire{i}/expand3x3", expand, 3, p=1)]
        return m.add("Concat", parts, f"fire{i}/concat")

    x = fire(fire(x, 2, 16, 64), 3, 16, 64)
    x = fire(fire(m.pool(x, "pool3", 3, 2), 4, 32, 128), 5, 32, 128)
    x = m.pool(x, "pool5", 3, 2)
    for i, (squeeze, expand) in enumerate([(48, 192), (48, 192), (64, 256), (64, 256)], 6):
        x = fire(x, i, squeeze, expand)
    m.add("Dropout", [x], x, name="drop9", dropout_param={"dropout_ratio": 0.5})
    x = m.conv(x, "conv10", 1000, 1)
    x = m.add("Pooling", [x], "pool10", pooling_param={"pool": "AVE", "global_pooling": True})
    m.add("Softmax", [x], "prob")
    return m


def mobilenet_ssd() -> Net:
    """The MobileNet backbone of MobileNet-SSD (depthwise convolutions, BatchNorm + Scale), its extra feature
    layers and the box and class convolutions of two heads."""
    m = Net("MobileNet-SSD", (1, 3, 300, 300))
    x = m.conv("data", "conv0", 32, 3, s=2, p=1, bias=False, bn=True)
    plan = [(64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2)] + [(512, 1)] * 5 + [(1024, 2), (1024, 1)]
    channels = 32
    for i, (n, stride) in enumerate(plan, 1):
        x = m.conv(x, f"conv{i}/dw", channels, 3, s=stride, p=1, g=channels, bias=False, bn=True)
        x = m.conv(x, f"conv{i}", n, 1, bias=False, bn=True)
        channels = n
    heads = {"conv11": None, "conv13": x}
    for i, (n1, n2) in enumerate([(256, 512), (128, 256)], 14):
        x = m.conv(m.conv(x, f"conv{i}_1", n1, 1, bias=False, bn=True), f"conv{i}_2", n2, 3, s=2, p=1, bias=False,
                   bn=True)
        heads[f"conv{i}_2"] = x
    heads["conv11"] = "conv11"
    for feature, priors in (("conv11", 3), ("conv13", 6), ("conv14_2", 6), ("conv15_2", 6)):
        m.add("Convolution", [feature], f"{feature}_mbox_loc", convolution_param={
            "num_output": priors * 4, "kernel_size": [1]})
        m.add("Convolution", [feature], f"{feature}_mbox_conf", convolution_param={
            "num_output": priors * 21, "kernel_size": [1]})
    return m


def layers() -> Net:
    """One small net with every BVLC Caffe layer the frontend reads, in the configurations that differ between
    frameworks (rounded-up pooling with padding, grouped and dilated convolution, in-place layers ...)."""
    m = Net("layers", (1, 3, 17, 17))
    a = m.conv("data", "conv_group", 12, 3, p=1, relu=False)
    m.add("Convolution", [a], "conv_rect", convolution_param={"num_output": 8, "kernel_h": 3, "kernel_w": 2,
                                                              "stride_h": 2, "stride_w": 1, "pad_h": 1, "pad_w": 0})
    b = m.conv(a, "conv_dilated", 12, 3, p=2, g=3, dilation=[2], relu=False, bn=True)
    m.add("BatchNorm", [b], "bn_alone", batch_norm_param={"eps": 1e-3})
    m.add("PReLU", ["bn_alone"], "prelu_channels")
    m.add("PReLU", ["conv_rect"], "prelu_shared", prelu_param={"channel_shared": True})
    m.add("ReLU", ["prelu_channels"], "leaky", relu_param={"negative_slope": 0.1})
    m.add("ELU", ["leaky"], "elu", elu_param={"alpha": 0.5})
    m.pool("elu", "max_ceil", 3, 2)                    # 17 -> 8 (rounded up)
    m.pool("elu", "max_pad", 3, 2, p=1)                # 17 -> 9
    m.pool("elu", "ave_pad", 3, 2, method="AVE", p=1)  # the border rule
    m.pool("elu", "ave_ceil", 2, 2, method="AVE")      # 17 -> 9: the last window overhangs
    m.add("Pooling", ["elu"], "ave_edge", pooling_param={  # 17 -> 6 rows: Caffe drops a window in the padding
        "pool": "AVE", "kernel_h": 1, "kernel_w": 3, "stride_h": 3, "stride_w": 1, "pad_h": 0, "pad_w": 1})
    m.add("LRN", ["max_pad"], "lrn_across", lrn_param={"local_size": 3, "alpha": 0.5, "beta": 0.75, "k": 2})
    m.add("LRN", ["ave_pad"], "lrn_within", lrn_param={"local_size": 3, "alpha": 0.5, "beta": 0.75,
                                                       "norm_region": "WITHIN_CHANNEL"})
    m.add("Eltwise", ["lrn_across", "lrn_within", "ave_ceil"], "sum_coeff",
          eltwise_param={"operation": "SUM", "coeff": [1.0, -0.5, 2.0]})
    m.add("Eltwise", ["lrn_across", "ave_ceil"], "prod", eltwise_param={"operation": "PROD"})
    m.add("Eltwise", ["sum_coeff", "prod"], "max", eltwise_param={"operation": "MAX"})
    m.add("Deconvolution", ["max"], "deconv", convolution_param={"num_output": 6, "kernel_size": [4], "stride": [2],
                                                                 "pad": [1], "group": 3})
    m.add("Crop", ["deconv", "data"], "crop", crop_param={"axis": 2, "offset": [1]})
    m.add("Sigmoid", ["crop"], "sigmoid")
    m.add("TanH", ["max_ceil"], "tanh")
    m.add("AbsVal", ["tanh"], "abs")
    m.add("Power", ["abs"], "power", power_param={"power": 2, "scale": 0.5, "shift": 1})
    m.add("Log", ["power"], "log", log_param={"base": 2, "scale": 1.5, "shift": 0.5})
    m.add("Exp", ["log"], "exp", exp_param={"base": 3, "scale": 0.25})
    m.add("BNLL", ["exp"], "bnll")
    m.add("Threshold", ["tanh"], "threshold", threshold_param={"threshold": 0.1})
    m.add("Scale", ["bnll", "threshold"], "scale_by_blob", scale_param={"axis": 0})
    m.add("Scale", ["scale_by_blob"], "scale_bias", scale_param={"bias_term": True})
    m.add("Bias", ["scale_bias"], "bias")
    m.add("Concat", ["bias", "max_ceil"], "concat")
    m.add("Slice", ["concat"], "slice_a", tops=["slice_a", "slice_b", "slice_c"],
          slice_param={"axis": 1, "slice_point": [3, 9]})
    m.add("Split", ["slice_b"], "split_a", tops=["split_a", "split_b"])
    m.add("Tile", ["slice_a"], "tile", tile_param={"axis": 1, "tiles": 2})
    m.add("Eltwise", ["tile", "split_a", "split_b"], "joined")
    m.add("Flatten", ["joined"], "flat")
    m.add("InnerProduct", ["flat"], "fc", inner_product_param={"num_output": 10})
    m.add("InnerProduct", ["slice_c"], "fc_transposed", inner_product_param={"num_output": 7, "transpose": True})
    m.add("Reshape", ["fc_transposed"], "reshaped", reshape_param={"shape": {"dim": [0, -1, 1]}})
    m.add("Softmax", ["reshaped"], "softmax", softmax_param={"axis": 1})
    m.add("Dropout", ["fc"], "fc", name="drop")
    m.add("Softmax", ["fc"], "prob")
    m.add("Reshape", ["prelu_shared"], "prelu_flat", reshape_param={"shape": {"dim": [0, -1]}})
    return m


NETS = {"layers": layers, "alexnet": alexnet, "vgg16": vgg16, "googlenet": googlenet, "resnet50": resnet50,
        "squeezenet": squeezenet, "mobilenet_ssd": mobilenet_ssd}


# -- seeded weights -------------------------------------------------------------------------------------------
class _Seeded(Importer):
    """An importer that makes each layer's blobs (seeded, scaled by fan-in) when it first asks for them."""

    def __init__(self, net, seed: int):
        super().__init__(net, {}, {}, None)
        self.rng = np.random.default_rng(seed)

    def blobs_of(self, layer):
        if layer.name not in self.weights:
            saved = self.layer, self.index
            self.layer, self.index = layer, next(i for i, lay in enumerate(self.layers) if lay is layer)
            self.weights[layer.name] = self._make(layer)
            self.layer, self.index = saved
        return self.weights[layer.name]

    def _make(self, layer) -> list[np.ndarray]:
        rng, x, kind = self.rng, self.x, layer.type
        f32 = lambda a: np.asarray(a, np.float32)  # noqa: E731
        if kind in ("Convolution", "Deconvolution"):
            p = layer.convolution_param
            k = list(p.kernel_size) * (2 // max(1, len(p.kernel_size))) or [p.kernel_h, p.kernel_w]
            c, g, n = x.shape[1], p.group, p.num_output
            shape = (c, n // g, *k) if kind == "Deconvolution" else (n, c // g, *k)
            fan_in = (c // g if kind == "Convolution" else n // g) * k[0] * k[1]
            blobs = [f32(rng.standard_normal(shape) * np.sqrt(2.0 / fan_in))]
            return blobs + ([f32(rng.uniform(-0.1, 0.1, n))] if p.bias_term else [])
        if kind == "InnerProduct":
            p = layer.inner_product_param
            k = int(np.prod(x.shape[p.axis:]))
            w = rng.standard_normal((k, p.num_output) if p.transpose else (p.num_output, k)) * np.sqrt(2.0 / k)
            return [f32(w)] + ([f32(rng.uniform(-0.1, 0.1, p.num_output))] if p.bias_term else [])
        c = x.shape[1]
        if kind == "BatchNorm":
            return [f32(np.zeros(c)), f32(np.ones(c)), f32([1.0])]
        if kind == "Scale" and len(layer.bottom) == 1:  # shifts as explained in `build`
            return [f32(rng.uniform(0.5, 1.5, c))] + ([f32(rng.uniform(0.5, 1.0, c))] if
                                                       layer.scale_param.bias_term else [])
        if kind == "Scale":
            return [f32(rng.uniform(-0.2, 0.2, c))] if layer.scale_param.bias_term else []
        if kind == "Bias":
            return [f32(rng.uniform(-0.2, 0.2, c))]
        if kind == "PReLU":
            shared = layer.prelu_param.channel_shared  # Caffe keeps one shared slope in a blob of no axes
            return [f32(rng.uniform(0.05, 0.3, () if shared else c))]
        if kind == "Normalize":
            return [f32(rng.uniform(10, 20, 1 if layer.norm_param.channel_shared else c))]
        return []


def build(name_or_net, seed: int = 0, image_seed: int = 1):
    """(net, blobs by layer name) with seeded weights; BatchNorm statistics calibrated on a seeded image, the
    way the net's own data would set them, so no blob is degenerate.

    The Scale after a BatchNorm shifts by 0.5 to 1, as trained nets mostly do on the paths they use: with shifts
    around 0, each BatchNorm-ReLU layer of a random net amplifies a perturbation about 1.2 times, and two float32
    runtimes of ResNet-50 then differ by 5e-5 from rounding alone, more than the 1e-5 a conversion is held to."""
    net = NETS[name_or_net]().net if isinstance(name_or_net, str) else name_or_net
    seeded = _Seeded(net, seed)
    graph = seeded.run()
    x = graph.inputs[0]
    values = {id(x): np.random.default_rng(image_seed).uniform(-1, 1, x.shape).astype(np.float32)}
    stats = {}
    for node in graph.nodes:
        args = [None if v is None else v.const if v.const is not None else values[id(v)] for v in node.inputs]
        if node.op == "BatchNormalization":
            data = args[0].astype(np.float64)
            axes = (0, 2, 3) if data.ndim == 4 else (0,)
            spread = data.var(axis=axes)  # near-constant channels would amplify rounding: floor them
            mean, var = data.mean(axis=axes), np.maximum(spread, max(0.1 * spread.mean(), 1e-3))
            node.input(3).const[...], node.input(4).const[...] = mean, var
            stats[node.meta["source_name"]] = (mean, var)
            args = [None if v is None else v.const if v.const is not None else values[id(v)] for v in node.inputs]
        for v, out in zip(node.outputs, run_node(node, args)):
            values[id(v)] = out
    blobs = dict(seeded.weights)
    for layer, (mean, var) in stats.items():
        factor = 2.0 if layer == "bn_alone" else 1.0  # Caffe keeps sums scaled by a factor: read one that is not 1
        blobs[layer] = [np.float32(mean * factor), np.float32(var * factor), np.float32([factor])]
    return net, {k: v for k, v in blobs.items() if v}


def write(name: str, prefix: str | Path, seed: int = 0) -> Path:
    """PREFIX.prototxt and PREFIX.caffemodel of the net `name` with seeded weights; the prototxt's path."""
    prefix = Path(prefix)
    net, blobs = build(name, seed)
    prefix.with_suffix(".prototxt").write_text(format_prototxt(net))
    write_caffemodel(prefix.with_suffix(".caffemodel"), net, blobs)
    return prefix.with_suffix(".prototxt")


if __name__ == "__main__":
    write(sys.argv[1], sys.argv[2])
