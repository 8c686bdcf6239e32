"""Records the MXNet fixtures `make test` checks against, from real MXNet 1.9.1 (needs `make runtimes`).

- `layers-symbol.json` + `layers-0000.params`: a Gluon block using every op the frontend reads (`Layers`), as
  Gluon exports it, and in `layers.mxnet.npz` the input and every op's output as MXNet computed it, by MXNet's
  output name; the same for `encoder` (a BERT-style encoder: embeddings, attention, LayerNorm, GELU) and
  `tagger` (Gluon's LSTM, GRU and RNN layers);
- for each Gluon model-zoo architecture of ZOO: its `-symbol.json`, and in `<name>.mxnet.npz` MXNet's output
  for `weights.image`, the BatchNorm statistics (calibrated on data, so no layer is degenerate) and the shapes
  of the other parameters, which the tests regenerate from their names (`weights.parameter`).

    ~/.cache/tensorbridge/runtimes/mxnet/venv/bin/python -m tests.mxnet.record [NAME ...]
"""

from __future__ import annotations

import json
import sys
import tempfile
import warnings
from pathlib import Path

import mxnet as mx
import numpy as np
from mxnet import autograd, gluon
from mxnet.gluon import nn
from mxnet.gluon.model_zoo import vision

from tests.mxnet.weights import image, parameter

warnings.filterwarnings("ignore")
DATA = Path(__file__).with_name("data")
ZOO = {"resnet50_v1": 224, "resnet50_v2": 224, "mobilenetv2_1.0": 224, "inceptionv3": 299, "densenet121": 224}
STATISTICS = ("running_mean", "running_var")


class Layers(gluon.HybridBlock):
    """Every op the MXNet frontend reads, in the forms Gluon and the symbol API write them."""

    def __init__(self):
        super().__init__()
        with self.name_scope():
            self.conv = nn.Conv2D(8, 3, padding=1, in_channels=4)
            self.grouped = nn.Conv2D(8, 3, padding=2, dilation=2, groups=2, in_channels=8)
            self.bn = nn.BatchNorm(in_channels=8)
            self.deconv = nn.Conv2DTranspose(4, 3, strides=2, padding=1, output_padding=1, in_channels=8)
            self.inorm = nn.InstanceNorm(in_channels=4)
            self.prelu = nn.PReLU(alpha_initializer=mx.init.Constant(0.2))
            self.lnorm = nn.LayerNorm(in_channels=12)
            self.dense = nn.Dense(6, in_units=8 * 6 * 6)
            self.seq_dense = nn.Dense(5, flatten=False, in_units=12)
            self.conv1d = nn.Conv1D(3, 3, padding=1, in_channels=4)
            self.fixed_bn = nn.BatchNorm(in_channels=4, scale=False)

    def hybrid_forward(self, F, x):
        y = F.Activation(self.bn(self.conv(x)), act_type="relu")
        y = self.grouped(y)
        pools = [F.Pooling(y, kernel=(3, 3), stride=(2, 2), pool_type="max", pooling_convention="full"),
                 F.Pooling(y, kernel=(3, 3), stride=(2, 2), pad=(1, 1), pool_type="avg"),
                 F.Pooling(y, kernel=(3, 3), stride=(2, 2), pad=(1, 1), pool_type="avg", pooling_convention="full",
                           count_include_pad=False),
                 F.Pooling(y, kernel=(2, 2), stride=(2, 2), pad=(1, 1), pool_type="avg", pooling_convention="full"),
                 F.Pooling(y, kernel=(2, 2), stride=(2, 2), pool_type="sum")]
        pooled = F.add_n(*[F.slice(p, begin=(None, None, 0, 0), end=(None, None, 6, 6)) for p in pools])
        logits = self.dense(pooled)
        up = F.UpSampling(pooled, scale=2, sample_type="nearest")
        d = self.deconv(up)
        d = F.LeakyReLU(self.inorm(d), act_type="leaky", slope=0.1)
        d = F.LRN(self.prelu(d), nsize=3, alpha=1e-3, beta=0.7, knorm=1.5)
        d = self.fixed_bn(d)
        acts = [F.Activation(d, act_type=k) for k in ("sigmoid", "tanh", "softrelu", "softsign")]
        acts += [F.LeakyReLU(d, act_type=k) for k in ("elu", "selu", "gelu")]
        acts += [F.clip(d, a_min=-0.5, a_max=0.7), F.relu(d), F.sigmoid(d), F.tanh(d), F.abs(d), F.negative(d),
                 F.erf(d), F.sin(d), F.cos(d), F.floor(d), F.ceil(d), F.square(d)]
        positive = F.exp(F.clip(d, a_min=-2, a_max=2)) + 0.5
        acts += [F.sqrt(positive), F.rsqrt(positive), F.log(positive), F.reciprocal(positive),
                 1.5 - d, 2.0 / positive, d * 3, d / 4, d ** 2, 2 ** F.clip(d, a_min=-1, a_max=1),
                 F.maximum(d, 0.1), F.minimum(d, 0.2), d - 1]
        mixed = F.add_n(*acts)
        pair = F.broadcast_mul(mixed, F.mean(mixed, axis=(2, 3), keepdims=True))
        pair = F.broadcast_add(pair, F.max(mixed, axis=1, keepdims=True)) - F.broadcast_div(
            mixed, F.broadcast_maximum(F.sum(F.abs(mixed), axis=(1,), keepdims=True), F.ones_like(mixed) * 0.5))
        pair = F.elemwise_mul(pair, F.broadcast_minimum(mixed, mixed * 0.5)) + F.broadcast_power(
            F.clip(d + 1, 0.1, 2), F.ones_like(mixed) * 1.5)
        parts = F.split(pair, num_outputs=2, axis=1)
        halves = F.SliceChannel(F.slice_axis(pair, axis=1, begin=0, end=4), num_outputs=4, axis=1, squeeze_axis=True)
        joined = F.concat(parts[1], parts[0], F.expand_dims(halves[2], axis=1), dim=1)
        joined = F.Pad(joined, mode="reflect", pad_width=(0, 0, 0, 0, 1, 2, 2, 1))
        joined = F.Pad(joined, mode="constant", constant_value=0.5, pad_width=(0, 0, 0, 0, 1, 0, 0, 1))
        joined = F.L2Normalization(joined, mode="channel")
        rows = F.reshape(joined, shape=(0, -3, -1))  # (1, 5 * 28, 28)
        rows = F.reshape(rows, shape=(-4, 1, -1, 0, 0), reverse=False)
        rows = F.reshape(rows, shape=(-1, 28), reverse=True)
        seq = F.transpose(F.reshape(rows, shape=(1, 5, 28, 28)), axes=(0, 2, 1, 3))
        seq = F.SwapAxis(seq, dim1=2, dim2=3)
        seq = F.slice_axis(seq, axis=3, begin=1, end=None)
        seq = F.reshape(seq, shape=(1, 28, -1))
        seq = F.slice_axis(seq, axis=2, begin=0, end=12)
        seq = self.lnorm(seq)
        scores = F.batch_dot(seq, seq, transpose_b=True)
        attn = F.softmax(scores / 4.0, axis=-1) + F.exp(F.log_softmax(scores, axis=1, temperature=2.0))
        ctx = self.seq_dense(F.batch_dot(attn, seq))
        flat = F.dot(F.reshape(ctx, shape=(-1, 5)), F.transpose(F.reshape(ctx, shape=(-1, 5))))
        smallest = F.transpose(F.transpose(F.min(flat, axis=0, exclude=True, keepdims=True)))
        reduced = F.concat(F.sum(flat, axis=1, keepdims=True), smallest,
                           F.prod(1 + 0.1 * F.tanh(F.L2Normalization(flat) * 5), axis=1, keepdims=True), dim=1)
        reduced = F.squeeze(F.expand_dims(reduced, axis=0), axis=0)
        line = self.conv1d(F.reshape(F.slice(pooled, begin=(0, 0, 0, 0), end=(1, 4, 6, 6)), shape=(1, 4, 36)))
        line = F.Cast(F.Cast(line * 10, dtype="int32"), dtype="float32")
        tail = F.Flatten(F.Dropout(F.SoftmaxActivation(pooled, mode="channel"), p=0.3))
        resized = F.contrib.BilinearResize2D(pooled, height=9, width=11) + F.contrib.BilinearResize2D(
            F.contrib.BilinearResize2D(pooled, height=4, width=5, align_corners=False), height=9, width=11,
            align_corners=False)
        return logits, reduced, line, tail, resized


class Encoder(gluon.HybridBlock):
    """A BERT-style encoder: token and position embeddings, LayerNorm, two blocks of multi-head attention and
    a GELU feed-forward, written as Gluon NLP writes them (reshape codes, batch_dot, transpose)."""

    def __init__(self, vocab=50, units=32, heads=4, layers=2, length=8):
        super().__init__()
        self.units, self.heads, self.length = units, heads, length
        with self.name_scope():
            self.tokens = nn.Embedding(vocab, units)
            self.positions = nn.Embedding(length, units)
            self.norm = nn.LayerNorm(in_channels=units)
            self.qkv = [nn.Dense(3 * units, flatten=False, in_units=units) for _ in range(layers)]
            self.proj = [nn.Dense(units, flatten=False, in_units=units) for _ in range(layers)]
            self.ffn1 = [nn.Dense(4 * units, flatten=False, in_units=units) for _ in range(layers)]
            self.ffn2 = [nn.Dense(units, flatten=False, in_units=4 * units) for _ in range(layers)]
            self.norm1 = [nn.LayerNorm(in_channels=units) for _ in range(layers)]
            self.norm2 = [nn.LayerNorm(in_channels=units) for _ in range(layers)]
            for i, blocks in enumerate(zip(self.qkv, self.proj, self.ffn1, self.ffn2, self.norm1, self.norm2)):
                for j, block in enumerate(blocks):
                    self.register_child(block, f"l{i}_{j}")
            self.pooler = nn.Dense(units, activation="tanh", in_units=units)

    def hybrid_forward(self, F, tokens, positions):
        x = self.norm(self.tokens(tokens) + self.positions(positions))
        d = self.units // self.heads
        for qkv, proj, ffn1, ffn2, norm1, norm2 in zip(self.qkv, self.proj, self.ffn1, self.ffn2, self.norm1,
                                                       self.norm2):
            h = F.reshape(qkv(x), shape=(0, 0, self.heads, 3, d))  # (B, T, H, 3, D)
            q, k, v = F.split(h, num_outputs=3, axis=3, squeeze_axis=True)
            q, k, v = (F.reshape(F.transpose(a, axes=(0, 2, 1, 3)), shape=(-1, 0, 0), reverse=True)
                       for a in (q, k, v))  # (B * H, T, D)
            scores = F.batch_dot(q, k, transpose_b=True) / float(np.sqrt(d))
            att = F.batch_dot(F.softmax(scores, axis=-1), v)
            att = F.transpose(F.reshape(att, shape=(-4, -1, self.heads, 0, 0)), axes=(0, 2, 1, 3))
            x = norm1(x + proj(F.reshape(att, shape=(0, 0, -1))))
            x = norm2(x + ffn2(F.LeakyReLU(ffn1(x), act_type="gelu")))
        return x, self.pooler(F.slice_axis(x, axis=1, begin=0, end=1))


class Tagger(gluon.HybridBlock):
    """A sequence tagger: a two-layer bidirectional LSTM, a GRU (batch-major) and a ReLU RNN, as Gluon's `rnn`
    layers write them (one fused RNN op each, weights packed by `_rnn_param_concat`, zero initial states)."""

    def __init__(self):
        super().__init__()
        with self.name_scope():
            self.embed = nn.Embedding(30, 6)
            self.lstm = gluon.rnn.LSTM(8, num_layers=2, bidirectional=True, input_size=6)
            self.gru = gluon.rnn.GRU(7, layout="NTC", input_size=16)
            self.simple = gluon.rnn.RNN(5, activation="relu", input_size=7)
            self.out = nn.Dense(4, flatten=False, in_units=5)

    def hybrid_forward(self, F, tokens):
        x = self.lstm(F.transpose(self.embed(tokens), axes=(1, 0, 2)))  # (T, N, 16)
        x = self.gru(F.transpose(x, axes=(1, 0, 2)))  # (N, T, 7)
        return self.out(self.simple(F.transpose(x, axes=(1, 0, 2))))


def _set_weights(net, batch: list, calibrate: bool) -> None:
    """Parameters from their names; BatchNorm statistics from a forward pass in training mode on `batch` with
    momentum 0, so each layer's statistics are those of its own input."""
    net(*batch)  # shapes
    for name, p in net.collect_params().items():
        if not name.endswith(STATISTICS):
            p.set_data(mx.nd.array(parameter(name, p.shape)))
    if calibrate:
        norms = [b for b in _blocks(net) if isinstance(b, nn.BatchNorm)]
        for b in norms:
            b._kwargs["momentum"] = 0.0
        with autograd.record(train_mode=True):
            net(*batch)
        for b in norms:
            b._kwargs["momentum"] = 0.9


def _blocks(block):
    yield block
    for child in block._children.values():
        yield from _blocks(child)


def _export(net, inputs: list, prefix: Path) -> None:
    net.hybridize()
    net(*inputs)
    net.export(str(prefix))
    Path(f"{prefix}-symbol.json").write_text(json.dumps(json.loads(Path(f"{prefix}-symbol.json").read_text()),
                                                         indent=1))


def _internals(prefix: Path, feeds: dict) -> dict:
    """Every op output of the exported model, by MXNet's name."""
    internals = mx.sym.load(f"{prefix}-symbol.json").get_internals()
    names = [n for n in internals.list_outputs() if n.endswith(tuple(f"_output{i}" for i in ("", *range(8))))]
    block = gluon.SymbolBlock(mx.sym.Group([internals[n] for n in names]), [mx.sym.var(k) for k in feeds])
    block.collect_params().load(f"{prefix}-0000.params", ctx=mx.cpu(), ignore_extra=True)
    return {n: r.asnumpy() for n, r in zip(names, block(*[mx.nd.array(v) for v in feeds.values()]))}


def record_small(name: str) -> None:
    if name == "layers":
        net, feeds = Layers(), {"data": image((1, 4, 12, 12))}
    elif name == "tagger":
        net, feeds = Tagger(), {"data": np.random.default_rng(4).integers(0, 30, (3, 9)).astype(np.float32)}
    else:
        rng = np.random.default_rng(3)
        feeds = {"data0": rng.integers(0, 50, (2, 8)).astype(np.float32),
                 "data1": np.tile(np.arange(8, dtype=np.float32), (2, 1))}
        net = Encoder()
    net.initialize()
    batch = [mx.nd.array(v) for v in feeds.values()]
    _set_weights(net, batch, calibrate=name == "layers")
    _export(net, batch, DATA / name)
    np.savez_compressed(DATA / f"{name}.mxnet.npz", **feeds, **_internals(DATA / name, feeds))


def record_zoo(name: str) -> None:
    size = ZOO[name]
    net = vision.get_model(name, pretrained=False)
    net.initialize()
    calibration = [mx.nd.array(image((8, 3, size, size), seed=11))]
    _set_weights(net, calibration, calibrate=True)
    x = image((1, 3, size, size))
    with tempfile.TemporaryDirectory() as tmp:
        prefix = Path(tmp) / name
        _export(net, [mx.nd.array(x)], prefix)
        (DATA / f"{name}-symbol.json").write_text(Path(f"{prefix}-symbol.json").read_text())
        saved = mx.nd.load(f"{prefix}-0000.params")
        out = net(mx.nd.array(x)).asnumpy()
    statistics = {k: v.asnumpy() for k, v in saved.items() if k.startswith("aux:")}
    shapes = {k: list(v.shape) for k, v in saved.items() if k.startswith("arg:")}
    np.savez_compressed(DATA / f"{name}.mxnet.npz", output=out, shapes=json.dumps(shapes), **statistics)


if __name__ == "__main__":
    mx.random.seed(0)
    for model in sys.argv[1:] or ["layers", "encoder", "tagger", *ZOO]:
        (record_small if model in ("layers", "encoder", "tagger") else record_zoo)(model)
        print("recorded", model)
