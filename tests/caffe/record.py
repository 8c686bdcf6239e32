"""Records the Caffe fixtures `make test` checks against, from real Caffe 1.0 (needs `make runtimes`).

- `layers.prototxt` + `layers.caffemodel`: the net of every layer (tests/caffe/models.py) with its seeded
  weights, and in `layers.caffe.npz` the input and every blob as Caffe computed it, by IR value name;
- for each architecture of models.NETS, `<name>.caffe.npz`: Caffe's outputs and logits for `image(shape)` (the
  weights and the image are regenerated from their seeds by the tests: VGG-16's weights are 550 MB).
- for the PyTorch zoo models written as Caffe (`WRITTEN`), `<name>.written.caffe.npz`: Caffe's output of the
  files written and their digest (the tests write them again and check they are the same files).

    python -m tests.caffe.record [NAME ...]
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import numpy as np

from tensorbridge.verification.runners.caffe import CaffeRunner
from tests.caffe.models import NETS, write
from tests.models.faithful import digest

DATA = Path(__file__).with_name("data")
#: PyTorch zoo models written as Caffe (ResNet's rounded-down max pooling; MobileNetV2's ReLU6)
WRITTEN = ("resnet18", "mobilenet_v2")


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


def written_zoo_model(name: str, folder: Path) -> tuple[Path, dict, np.ndarray]:
    """The zoo model `name` written as Caffe into `folder`: (the prototxt, Caffe's feeds, PyTorch's output)."""
    import tensorbridge as tb
    from tests.models.torch_zoo import imported

    module, args, graph = imported(name, batch=1, size=32)
    tb.save(graph, folder / f"{name}.prototxt")
    return folder / f"{name}.prototxt", {graph.inputs[0].name: args[0].numpy()}, module(*args).detach().numpy()


def record_written(name: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        prototxt, feeds, _ = written_zoo_model(name, Path(tmp))
        caffe = CaffeRunner(prototxt)
        np.savez_compressed(DATA / f"{name}.written.caffe.npz", output=caffe.run(feeds)[caffe.outputs[0]],
                            digest=digest(prototxt, prototxt.with_suffix(".caffemodel")))


def logits_of(prototxt) -> set[str]:
    """The IR values that the nets' final Softmax layers read (compared besides the probabilities)."""
    import tensorbridge as tb

    graph = tb.load(prototxt)
    return {n.input(0).name for n in graph.nodes if n.op == "Softmax" and n.outputs[0] in graph.outputs}


if __name__ == "__main__":
    for net in sys.argv[1:] or [*NETS, *WRITTEN]:
        record_written(net) if net in WRITTEN else record(net)
        print("recorded", net)
