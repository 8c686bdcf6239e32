"""ResNet-50 written natively in Flax NNX, the way a Flax user writes it: the reference the generated code is
timed against (same architecture as tests/models/torch_zoo.resnet50, channels-last, inference mode)."""

from __future__ import annotations

import jax
from flax import nnx


class Bottleneck(nnx.Module):
    def __init__(self, cin: int, width: int, stride: int, *, rngs: nnx.Rngs):
        cout = width * 4
        self.conv1 = nnx.Conv(cin, width, (1, 1), use_bias=False, rngs=rngs)
        self.bn1 = nnx.BatchNorm(width, rngs=rngs)
        self.conv2 = nnx.Conv(width, width, (3, 3), strides=stride, padding=((1, 1), (1, 1)), use_bias=False,
                              rngs=rngs)
        self.bn2 = nnx.BatchNorm(width, rngs=rngs)
        self.conv3 = nnx.Conv(width, cout, (1, 1), use_bias=False, rngs=rngs)
        self.bn3 = nnx.BatchNorm(cout, rngs=rngs)
        projects = stride != 1 or cin != cout
        self.shortcut = nnx.Sequential(nnx.Conv(cin, cout, (1, 1), strides=stride, use_bias=False, rngs=rngs),
                                       nnx.BatchNorm(cout, rngs=rngs)) if projects else None

    def __call__(self, x):
        identity = x if self.shortcut is None else self.shortcut(x)
        y = jax.nn.relu(self.bn1(self.conv1(x)))
        y = jax.nn.relu(self.bn2(self.conv2(y)))
        return jax.nn.relu(self.bn3(self.conv3(y)) + identity)


class ResNet50(nnx.Module):
    def __init__(self, num_classes: int = 1000, *, rngs: nnx.Rngs):
        self.conv1 = nnx.Conv(3, 64, (7, 7), strides=2, padding=((3, 3), (3, 3)), use_bias=False, rngs=rngs)
        self.bn1 = nnx.BatchNorm(64, rngs=rngs)
        blocks, cin = [], 64
        for width, count, stride in ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)):
            for i in range(count):
                blocks.append(Bottleneck(cin, width, stride if i == 0 else 1, rngs=rngs))
                cin = width * 4
        self.blocks = nnx.List(blocks)
        self.fc = nnx.Linear(cin, num_classes, rngs=rngs)

    def __call__(self, x):
        x = jax.nn.relu(self.bn1(self.conv1(x)))
        x = nnx.max_pool(x, (3, 3), strides=(2, 2), padding=((1, 1), (1, 1)))
        for block in self.blocks:
            x = block(x)
        return self.fc(x.mean(axis=(1, 2)))
