"""Records the Darknet fixtures `make test` checks against, from the real libdarknet (needs `make runtimes`).

For each cfg in tests/darknet/data: seeded, calibrated weights (tests/darknet/models.py) and, in
`<name>.libdarknet.npz`, the input image and every layer's output as libdarknet computed it, by IR value name.

    python -m tests.darknet.record
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from tensorbridge.formats.darknet import write_weights
from tensorbridge.verification.runners.darknet import DarknetRunner
from tests.darknet.models import build

DATA = Path(__file__).with_name("data")
#: the fixtures libdarknet can run (the YOLOv4-style cfg uses what the 2018 library lacks)
RECORDED = ("layers",)


def record(name: str) -> None:
    cfg = DATA / f"{name}.cfg"
    graph, weights = build(cfg)
    write_weights(cfg.with_suffix(".weights"), weights.header, weights.arrays)
    shape = graph.inputs[0].shape
    image = np.random.default_rng(5).uniform(0, 1, shape).astype(np.float32)
    layers = DarknetRunner(cfg).run_intermediates({"input": image})
    np.savez_compressed(DATA / f"{name}.libdarknet.npz", input=image, **layers)


if __name__ == "__main__":
    for fixture in RECORDED:
        record(fixture)
        print("recorded", fixture)
