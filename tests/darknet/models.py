"""Darknet models for tests: a cfg (Debian's stock cfgs, or one written here) with seeded weights whose batch
normalisation statistics are calibrated on an image, so every layer's output varies with the input.

    python -m tests.darknet.models CFG OUT_PREFIX   # writes OUT_PREFIX.cfg and OUT_PREFIX.weights
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import numpy as np

from tensorbridge.formats.darknet import Header, read_cfg, write_weights
from tensorbridge.frontends.darknet.importer import Importer
from tensorbridge.reference.interpreter import run_node

STOCK = Path("/usr/share/darknet/cfg")


class RandomWeights:
    """Stands in for a weights file: seeded arrays, recorded in the order the layers read them."""

    def __init__(self, seed: int):
        self.rng = np.random.default_rng(seed)
        self.header = Header(0, 2, 0, 32013312)
        self.arrays: list[np.ndarray] = []
        self.fan_in = 1
        self.normalized = False

    def take(self, count: int, what: str) -> np.ndarray:
        if what.endswith("weights"):
            a = self.rng.standard_normal(count) * np.sqrt(2.0 / self.fan_in)
        elif what.endswith("scales"):
            a = self.rng.uniform(0.5, 1.5, count)
        elif what.endswith("rolling_variance"):
            a = np.ones(count)
        elif what.endswith("rolling_mean"):
            a = np.zeros(count)
        elif self.normalized:  # the batch normalisation's shift, as explained in `build`
            a = self.rng.uniform(0.5, 1.0, count)
        else:
            a = self.rng.uniform(-0.2, 0.2, count)
        a = a.astype(np.float32)
        self.arrays.append(a)
        return a

    def finish(self) -> None:
        pass


class _Sizing(Importer):
    """An importer that tells the weight generator each layer's fan-in before it reads the weights."""

    def take(self, count, what):
        self.weights.normalized = bool(self.int("batch_normalize", 0))
        if what.endswith("weights") and self.x is not None and self.x.shape is not None:
            per_output = count // max(1, self.int("filters", 0) or self.int("output", 1))
            self.weights.fan_in = max(1, per_output)
        return super().take(count, what)


def build(cfg: str | Path, seed: int = 0, image_seed: int = 1):
    """(graph, weights) for `cfg`: seeded weights, batch norms calibrated on a seeded image.

    Batch normalisations shift by 0.5 to 1, as trained nets mostly do on the paths they use: with shifts around 0,
    each normalised layer of a random net amplifies a perturbation, and two float32 runtimes of yolov3 then
    differ by 3e-5 from rounding alone, more than the 1e-5 a conversion is held to."""
    weights = RandomWeights(seed)
    graph = _Sizing(read_cfg(cfg), weights, Path(cfg).stem).run()
    x = graph.inputs[0]
    values = {id(x): np.random.default_rng(image_seed).uniform(0, 1, x.shape).astype(np.float32)}
    for node in graph.nodes:
        args = [None if v is None else v.const if v.const is not None else values[id(v)] for v in node.inputs]
        if node.op == "BatchNormalization":
            data = args[0].astype(np.float64)
            axes = (0, 2, 3) if data.ndim == 4 else (0,)
            node.input(3).const[...] = data.mean(axis=axes)
            spread = data.var(axis=axes) if data.ndim == 4 else np.abs(data).mean(axis=0) ** 2
            node.input(4).const[...] = np.maximum(spread, 1e-4)
            args = [None if v is None else v.const if v.const is not None else values[id(v)] for v in node.inputs]
        for v, out in zip(node.outputs, run_node(node, args)):
            values[id(v)] = out
    return graph, weights


def write(cfg: str | Path, prefix: str | Path, seed: int = 0) -> Path:
    """Copy `cfg` to PREFIX.cfg and write PREFIX.weights with calibrated seeded weights; PREFIX.cfg."""
    prefix = Path(prefix)
    _, weights = build(cfg, seed)
    shutil.copyfile(cfg, prefix.with_suffix(".cfg"))
    write_weights(prefix.with_suffix(".weights"), weights.header, weights.arrays)
    return prefix.with_suffix(".cfg")


if __name__ == "__main__":
    write(sys.argv[1], sys.argv[2])
