"""Records the Darknet fixtures `make test` checks against, from the real libdarknet (needs `make runtimes`).

For each cfg in tests/darknet/data: seeded, calibrated weights (tests/darknet/models.py) and, in
`<name>.libdarknet.npz`, the input image and every layer's output as libdarknet computed it, by IR value name.
For the PyTorch zoo's ResNet-18 written as Darknet, `resnet18.written.libdarknet.npz`: libdarknet's output of
the files written and their digest (the tests write them again and check they are the same files).

    python -m tests.darknet.record
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np

from tensorbridge.formats.darknet import write_weights
from tensorbridge.verification.runners.darknet import DarknetRunner
from tests.darknet.models import build
from tests.models.faithful import digest

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


def written_resnet18(folder: Path) -> tuple[Path, np.ndarray, np.ndarray]:
    """The zoo's ResNet-18 (strided 1x1 shortcut convolutions) written as Darknet into `folder`: (the cfg, the
    input, PyTorch's output)."""
    import tensorbridge as tb
    from tests.models.torch_zoo import imported

    module, args, graph = imported("resnet18", batch=1, size=32)
    tb.save(graph, folder / "resnet18.cfg")
    return folder / "resnet18.cfg", args[0].numpy(), module(*args).detach().numpy()


def record_written() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        cfg, x, _ = written_resnet18(Path(tmp))
        out = next(iter(DarknetRunner(cfg).run({"input": x}).values()))
        np.savez_compressed(DATA / "resnet18.written.libdarknet.npz", output=out,
                            digest=digest(cfg, cfg.with_suffix(".weights")))


if __name__ == "__main__":
    for fixture in RECORDED:
        record(fixture)
        print("recorded", fixture)
    record_written()
    print("recorded resnet18 written as Darknet")
