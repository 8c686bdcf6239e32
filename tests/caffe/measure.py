"""Measures the architectures of tests/caffe/models.py against Caffe 1.0 for docs/caffe.md (needs `make runtimes`).

For each net: the worst blob of the IR against Caffe's (every blob), the outputs of its conversions to ONNX,
PyTorch code, Keras code and TFLite run in their runtimes against Caffe's, how far Caffe and the farthest target
are from the net's float64 result, and whether Caffe -> IR -> Caffe gives back every blob bit for bit; then the
PyTorch zoo models written as Caffe and run in Caffe.

    python -m tests.caffe.measure [NAME ...]
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import tensorbridge as tb
from tensorbridge.formats.caffe import read_weights
from tensorbridge.reference.interpreter import run
from tensorbridge.verification.runners.caffe import CaffeRunner
from tests.caffe.models import NETS, write
from tests.caffe.record import image
from tests.models.faithful import conversion_cells, distance, table_row


def measure(name: str, folder: Path) -> str:
    """The docs table row of the net `name`."""
    prototxt = write(name, folder / name)
    graph, caffe = tb.load(prototxt), CaffeRunner(prototxt)
    x = image(graph.inputs[0].shape)
    feeds = {"data": x}
    blobs = caffe.run_intermediates(feeds)
    ours = run(graph, feeds, intermediates=True)
    worst = max(distance(ours[k], v) for k, v in blobs.items() if k != "data")
    cells = conversion_cells(graph, folder, x, blobs)
    tb.save(graph, folder / "again.prototxt")
    before, after = read_weights(prototxt.with_suffix(".caffemodel")), read_weights(folder / "again.caffemodel")
    same = before.keys() == after.keys() and all(
        a.tobytes() == b.tobytes() for k in before for a, b in zip(before[k], after[k]))
    return table_row(name, len(blobs) - 1, [worst, *cells], same)


def measure_zoo(name: str, folder: Path, **sizes) -> str:
    """A PyTorch zoo model written as Caffe and run in Caffe: its distance from PyTorch's output."""
    from tests.models.torch_zoo import imported

    module, args, graph = imported(name, batch=1, **sizes)
    tb.save(graph, folder / f"{name}.prototxt")
    caffe = CaffeRunner(folder / f"{name}.prototxt")
    got = caffe.run({caffe.inputs[0][0]: args[0].numpy()})[caffe.outputs[0]]
    return f"{name} {tuple(args[0].shape)}: {distance(got, module(*args).detach().numpy()):.1e}"


if __name__ == "__main__":
    for net in sys.argv[1:] or NETS:
        if net != "layers":
            with tempfile.TemporaryDirectory() as tmp:
                print(measure(net, Path(tmp)), flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        for zoo, size in (("resnet18", 64), ("resnet50", 224), ("mobilenet_v2", 64)):
            print(measure_zoo(zoo, Path(tmp), size=size), flush=True)
