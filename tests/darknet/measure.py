"""Measures Debian's stock cfgs against libdarknet for docs/darknet.md (needs `make runtimes`).

For each cfg, with seeded calibrated weights (tests/darknet/models.py): the worst layer of the IR against
libdarknet's (every layer), the outputs of its conversions to ONNX, PyTorch code, Keras code and TFLite run in
their runtimes against libdarknet's, how far libdarknet and the farthest target are from the net's float64
result, and whether Darknet -> IR -> Darknet gives back the weights file byte for byte; then the PyTorch zoo
models Darknet can express, written as Darknet and run in libdarknet.

    python -m tests.darknet.measure [CFG_NAME ...]
"""

from __future__ import annotations

import filecmp
import sys
import tempfile
from pathlib import Path

import numpy as np

import tensorbridge as tb
from tensorbridge.reference.interpreter import run
from tensorbridge.verification.runners.darknet import DarknetRunner
from tests.darknet.models import STOCK, write
from tests.models.faithful import conversion_cells, distance, table_row

CFGS = ("yolov3-tiny", "yolov3", "yolov2-tiny", "darknet53", "resnet18", "densenet201", "alexnet")
def measure(name: str, folder: Path) -> str:
    """The docs table row of the stock cfg `name`."""
    cfg = write(STOCK / f"{name}.cfg", folder / name)
    graph = tb.load(cfg)
    x = np.random.default_rng(5).uniform(0, 1, graph.inputs[0].shape).astype(np.float32)
    feeds = {"input": x}
    layers = DarknetRunner(cfg).run_intermediates(feeds)
    ours = run(graph, feeds, intermediates=True)
    worst = max(distance(ours[k], v) for k, v in layers.items())
    cells = conversion_cells(graph, folder, x, layers)
    tb.save(graph, folder / "again" / f"{name}.cfg")
    same = filecmp.cmp(cfg.with_suffix(".weights"), folder / "again" / f"{name}.weights", shallow=False)
    return table_row(name, len(layers), [worst, *cells], same)


def measure_zoo(name: str, folder: Path, **sizes) -> str:
    """A PyTorch zoo model written as Darknet and run in libdarknet: its distance from PyTorch's output."""
    from tests.models.torch_zoo import imported

    module, args, graph = imported(name, batch=1, **sizes)
    tb.save(graph, folder / f"{name}.cfg")
    out = DarknetRunner(folder / f"{name}.cfg").run({"input": args[0].numpy()})
    return f"{name} {tuple(args[0].shape)}: {distance(next(iter(out.values())), module(*args).detach().numpy()):.1e}"


if __name__ == "__main__":
    for cfg_name in sys.argv[1:] or CFGS:
        with tempfile.TemporaryDirectory() as tmp:
            print(measure(cfg_name, Path(tmp)), flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        for zoo, size in (("resnet18", 64), ("resnet50", 224)):
            print(measure_zoo(zoo, Path(tmp), size=size), flush=True)
