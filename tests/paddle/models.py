"""Paddle architectures for the Paddle fixtures, written with paddle.nn after their papers (runs in the Paddle venv
that `make runtimes` builds; nothing is downloaded): PP-LCNet, ResNet50-vd, a PP-OCR-style text detector (DB head
on a MobileNetV3 backbone with an FPN) and recognizer (convolutions, a bidirectional LSTM, CTC logits), an
SVTR-style transformer block, a GRU and simple-RNN model, and `Layers`, one of each op the Paddle frontend reads
that these do not use.
"""

from __future__ import annotations

import paddle
from paddle import nn
from paddle.nn import functional as F


class ConvBN(nn.Layer):
    def __init__(self, cin, cout, k, stride=1, groups=1, act="hardswish"):
        super().__init__()
        self.conv = nn.Conv2D(cin, cout, k, stride, (k - 1) // 2, groups=groups, bias_attr=False)
        self.bn = nn.BatchNorm2D(cout)
        self.act = act

    def forward(self, x):
        x = self.bn(self.conv(x))
        return getattr(F, self.act)(x) if self.act else x


class SE(nn.Layer):
    def __init__(self, c, r=4):
        super().__init__()
        self.pool = nn.AdaptiveAvgPool2D(1)
        self.reduce = nn.Conv2D(c, c // r, 1)
        self.expand = nn.Conv2D(c // r, c, 1)

    def forward(self, x):
        s = F.relu(self.reduce(self.pool(x)))
        return x * F.hardsigmoid(self.expand(s), slope=0.2, offset=0.5)


class DepthwiseSeparable(nn.Layer):
    def __init__(self, cin, cout, k, stride, se=False):
        super().__init__()
        self.dw = ConvBN(cin, cin, k, stride, groups=cin)
        self.se = SE(cin) if se else None
        self.pw = ConvBN(cin, cout, 1)

    def forward(self, x):
        x = self.dw(x)
        if self.se is not None:
            x = self.se(x)
        return self.pw(x)


class PPLCNet(nn.Layer):
    """PP-LCNet x0.5 (Cui et al. 2021): depthwise-separable blocks, hard-swish, SE in the last two, a 1x1 conv
    head of 1280 after global pooling."""

    BLOCKS = [(3, 16, 32, 1, False), (3, 32, 64, 2, False), (3, 64, 64, 1, False), (3, 64, 128, 2, False),
              (3, 128, 128, 1, False), (3, 128, 256, 2, False), (5, 256, 256, 1, False), (5, 256, 256, 1, False),
              (5, 256, 512, 2, True), (5, 512, 512, 1, True)]

    def __init__(self, classes=100, scale=0.5):
        super().__init__()
        c = lambda n: max(8, int(n * scale))  # noqa: E731
        self.stem = ConvBN(3, c(16), 3, 2)
        self.blocks = nn.Sequential(*[DepthwiseSeparable(c(i), c(o), k, s, se) for k, i, o, s, se in self.BLOCKS])
        self.pool = nn.AdaptiveAvgPool2D(1)
        self.last = nn.Conv2D(c(512), 1280, 1, bias_attr=False)
        self.dropout = nn.Dropout(0.2, mode="downscale_in_infer")
        self.fc = nn.Linear(1280, classes)

    def forward(self, x):
        x = self.pool(self.blocks(self.stem(x)))
        x = self.dropout(F.hardswish(self.last(x)))
        return self.fc(paddle.flatten(x, 1, -1))


class BottleneckVd(nn.Layer):
    def __init__(self, cin, width, stride, first):
        super().__init__()
        self.a = ConvBN(cin, width, 1, act="relu")
        self.b = ConvBN(width, width, 3, stride, act="relu")
        self.c = ConvBN(width, width * 4, 1, act=None)
        self.short = None
        if cin != width * 4 or stride != 1:
            pool = nn.AvgPool2D(2, 2, ceil_mode=True) if stride != 1 and not first else None
            self.short = nn.Sequential(*([pool] if pool else []), ConvBN(cin, width * 4, 1, act=None))

    def forward(self, x):
        y = self.c(self.b(self.a(x)))
        return F.relu(y + (self.short(x) if self.short is not None else x))


class ResNetVd(nn.Layer):
    """ResNet-vd (He et al., Bag of Tricks 2019): a deep stem of three 3x3 convolutions, and downsampling
    shortcuts that average-pool before their 1x1 convolution."""

    def __init__(self, depths=(3, 4, 6, 3), classes=100):
        super().__init__()
        self.stem = nn.Sequential(ConvBN(3, 32, 3, 2, act="relu"), ConvBN(32, 32, 3, act="relu"),
                                  ConvBN(32, 64, 3, act="relu"))
        self.pool = nn.MaxPool2D(3, 2, 1)
        blocks, cin = [], 64
        for stage, depth in enumerate(depths):
            width = 64 * 2 ** stage
            for i in range(depth):
                blocks.append(BottleneckVd(cin, width, 2 if i == 0 and stage else 1, stage == 0))
                cin = width * 4
        self.blocks = nn.Sequential(*blocks)
        self.head = nn.Linear(cin, classes)

    def forward(self, x):
        x = self.blocks(self.pool(self.stem(x)))
        return self.head(paddle.flatten(F.adaptive_avg_pool2d(x, 1), 1))


class OCRDetector(nn.Layer):
    """PP-OCR's text detector in small (Liao et al. DBNet, as PP-OCR uses it): a MobileNetV3-style backbone,
    an FPN that upsamples and adds, and the DB head (conv, BN, two transposed convolutions, sigmoid)."""

    def __init__(self):
        super().__init__()
        self.stem = ConvBN(3, 8, 3, 2)
        self.s1 = DepthwiseSeparable(8, 16, 3, 2)
        self.s2 = DepthwiseSeparable(16, 24, 5, 2, se=True)
        self.s3 = DepthwiseSeparable(24, 32, 3, 2, se=True)
        self.lat = nn.LayerList([nn.Conv2D(c, 16, 1, bias_attr=False) for c in (16, 24, 32)])
        self.out = nn.LayerList([nn.Conv2D(16, 4, 3, padding=1, bias_attr=False) for _ in range(3)])
        self.head = nn.Sequential(ConvBN(12, 4, 3, act="relu"), nn.Conv2DTranspose(4, 4, 2, 2), nn.BatchNorm2D(4),
                                  nn.ReLU(), nn.Conv2DTranspose(4, 1, 2, 2))

    def forward(self, x):
        c1 = self.s1(self.stem(x))
        c2 = self.s2(c1)
        c3 = self.s3(c2)
        p3 = self.lat[2](c3)
        p2 = self.lat[1](c2) + F.upsample(p3, scale_factor=2, mode="nearest")
        p1 = self.lat[0](c1) + F.upsample(p2, scale_factor=2, mode="nearest")
        size = p1.shape[2:]
        fused = paddle.concat([F.interpolate(self.out[2](p3), size=size, mode="nearest"),
                               F.interpolate(self.out[1](p2), scale_factor=2, mode="bilinear", align_corners=False),
                               self.out[0](p1)], axis=1)
        return F.sigmoid(self.head(fused))


class OCRRecognizer(nn.Layer):
    """PP-OCR's CRNN-style recognizer in small: convolutions that pool the height away, the width as the
    sequence, a two-layer bidirectional LSTM and per-step CTC logits."""

    def __init__(self, classes=40):
        super().__init__()
        self.convs = nn.Sequential(ConvBN(3, 16, 3, act="relu"), nn.MaxPool2D(2, 2), ConvBN(16, 32, 3, act="relu"),
                                   nn.MaxPool2D((2, 1), (2, 1)), ConvBN(32, 48, 3, act="relu"))
        self.rnn = nn.LSTM(48, 32, num_layers=2, direction="bidirect")
        self.fc = nn.Linear(64, classes)

    def forward(self, x):
        x = self.convs(x)
        x = paddle.mean(x, axis=2)  # N, C, W
        x = paddle.transpose(x, [0, 2, 1])  # N, W, C
        x, _ = self.rnn(x)
        return F.softmax(self.fc(x), axis=-1)


class SVTRBlock(nn.Layer):
    """An SVTR mixing block (Du et al. 2022): patch embedding, pre-norm global attention and a GELU MLP."""

    def __init__(self, dim=32, heads=4):
        super().__init__()
        self.embed = nn.Conv2D(3, dim, 4, 4)
        self.norm1, self.norm2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, dim * 3)
        self.proj = nn.Linear(dim, dim)
        self.fc1, self.fc2 = nn.Linear(dim, dim * 2), nn.Linear(dim * 2, dim)
        self.heads = heads

    def forward(self, x):
        x = self.embed(x).flatten(2).transpose([0, 2, 1])  # N, L, D
        n, length, dim = x.shape
        qkv = self.qkv(self.norm1(x)).reshape([-1, length, 3, self.heads, dim // self.heads])
        qkv = qkv.transpose([2, 0, 3, 1, 4])
        q, k, v = qkv[0], qkv[1], qkv[2]
        attention = F.softmax(paddle.matmul(q, k, transpose_y=True) * (dim // self.heads) ** -0.5, axis=-1)
        y = paddle.matmul(attention, v).transpose([0, 2, 1, 3]).reshape([-1, length, dim])
        x = x + self.proj(y)
        return x + self.fc2(F.gelu(self.fc1(self.norm2(x))))


class Recurrent(nn.Layer):
    """Paddle's other recurrent layers: a two-layer bidirectional GRU, a ReLU SimpleRNN over its output, per-step
    logits."""

    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(12, 16, num_layers=2, direction="bidirect")
        self.rnn = nn.SimpleRNN(32, 8, activation="relu")
        self.fc = nn.Linear(8, 5)

    def forward(self, x):
        y, _ = self.gru(x)
        y, _ = self.rnn(y)
        return self.fc(y)


class Layers(nn.Layer):
    """The ops the Paddle frontend reads that the architectures above do not use."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2D(4, 8, 3, padding="SAME", dilation=2)
        self.prelu = nn.PReLU(8, 0.2)
        self.inorm = nn.InstanceNorm2D(8)
        self.gnorm = nn.GroupNorm(2, 8)
        self.embed = nn.Embedding(10, 6)

    def forward(self, x, ids):
        y = self.prelu(self.conv(x))
        y = self.gnorm(self.inorm(y)) + F.leaky_relu(y, 0.1)
        y = paddle.clip(y, -1.5, 2.0) + F.swish(y) + F.elu(y) + F.relu6(y) - paddle.tanh(y) * paddle.exp(-y.abs())
        y = F.max_pool2d(y, 2) + F.avg_pool2d(y, 3, 2, 1, exclusive=False)
        y = F.pad(y, [1, 0, 0, 1], mode="reflect")
        pieces = paddle.split(y, [3, 5], axis=1)
        y = paddle.concat([pieces[1] / (paddle.sqrt(pieces[1] ** 2 + 1.0)), pieces[0]], axis=1)
        y = paddle.sum(y, axis=[2, 3]) + paddle.max(y, axis=[2, 3]) * paddle.mean(y, axis=[2, 3], keepdim=False)
        e = self.embed(ids).sum(axis=1)
        z = paddle.unsqueeze(y, 1) * paddle.unsqueeze(F.sigmoid(paddle.concat([e, e[:, :2]], axis=1)), 1)
        return paddle.squeeze(z, 1), paddle.log(paddle.nn.functional.softplus(z) + 1e-3).slice([2], [1], [5])


ARCHITECTURES = {"pplcnet": (PPLCNet, [1, 3, 64, 64]), "resnet50_vd": (ResNetVd, [1, 3, 64, 64]),
                 "ocr_det": (OCRDetector, [1, 3, 64, 64]), "ocr_rec": (OCRRecognizer, [1, 3, 32, 64]),
                 "svtr_block": (SVTRBlock, [1, 3, 16, 32]), "recurrent": (Recurrent, [1, 7, 12])}
