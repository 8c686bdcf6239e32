"""Records the Caffe fixtures `make test` checks against, from real Caffe 1.0 (needs `make runtimes`).

- `layers.prototxt` + `layers.caffemodel`: the net of every layer (tests/caffe/models.py) with its seeded
  weights, and in `layers.caffe.npz` the input and every blob as Caffe computed it, by IR value name;
- for each architecture of models.NETS, `<name>.caffe.npz`: Caffe's outputs and logits for `image(shape)` (the
  weights and the image are regenerated from their seeds by the tests: VGG-16's weights are 550 MB).

    python -m tests.caffe.record [NAME ...]
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import numpy as np

from tensorbridge.verification.runners.caffe import CaffeRunner
from tests.caffe.models import NETS, write

DATA = Path(__file__).with_name("data")


def image(shape) -> np.ndarray:
    return np.random.default_rng(5).uniform(-1, 1, shape).astype(np.float32)


def record(name: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        prototxt = write(name, (DATA if name == "layers" else Path(tmp)) / name)
        runner = CaffeRunner(prototxt)
        x = image(runner.inputs[0][2])
        if name == "layers":
            blobs = runner.run_intermediates({"data": x})
        else:
            blobs = runner.run({"data": x})
            logits = logits_of(prototxt)
            blobs.update({k: v for k, v in runner.run_intermediates({"data": x}).items() if k in logits})
            blobs.pop("data", None)  # the tests regenerate the image from its seed (`image`)
        np.savez_compressed(DATA / f"{name}.caffe.npz", **{"data": x, **blobs} if name == "layers" else blobs)


def logits_of(prototxt) -> set[str]:
    """The IR values that the nets' final Softmax layers read (compared besides the probabilities)."""
    import tensorbridge as tb

    graph = tb.load(prototxt)
    return {n.input(0).name for n in graph.nodes if n.op == "Softmax" and n.outputs[0] in graph.outputs}


if __name__ == "__main__":
    for net in sys.argv[1:] or NETS:
        record(net)
        print("recorded", net)
