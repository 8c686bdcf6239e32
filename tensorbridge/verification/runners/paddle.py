"""Runs a Paddle model with `paddle.inference` (PaddlePaddle 3.3.1), in the venv that `make runtimes` builds
(scripts/runtimes/paddle.sh): Paddle is 1 GB and pins its own dependencies, so it stays out of the main venv.

Inputs and outputs come from the model as the Paddle frontend reads it; a child process in the Paddle venv
(paddle_child.py) runs the predictor on the CPU with its default passes and writes the outputs to an npz. The
predictor exposes no intermediate values, so `--per-layer` is not offered.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np

from tensorbridge.errors import InputShapesNeeded, ModelError
from tensorbridge.verification.runners.venv import Venv, runtime_path

VENV = Venv(runtime_path("TB_PADDLE_VENV", "paddle", "venv"), "paddle", "Paddle",
            "run `make runtimes`, which makes a venv with PaddlePaddle 3.3.1")
CHILD = Path(__file__).with_name("paddle_child.py")
SECONDS = 1200


def missing() -> str | None:
    """Why Paddle cannot run here (None: it can)."""
    return VENV.missing()


class PaddleRunner:
    name = "PaddlePaddle 3.3.1 (paddle.inference)"

    def __init__(self, source, input_shapes: dict | None = None, **_options):
        from tensorbridge.formats.paddle import paths, read_program

        why = missing()
        if why:
            raise ModelError(f"cannot run {source} in Paddle: {why}")
        from tensorbridge.frontends.paddle.importer import load

        self.model, self.params = paths(source)
        try:
            graph = load(self.model, self.params, input_shapes=input_shapes)
            self.inputs = [(v.name, str(v.dtype), tuple(v.shape)) for v in graph.inputs]
            count = len(graph.outputs)
        except InputShapesNeeded:  # the sizes come with the inputs run
            program = read_program(self.model)
            self.inputs, count = [(v.name, v.dtype, None) for v in program.inputs], len(program.outputs)
        self.outputs = [f"output{i}" for i in range(count)]

    def run(self, feeds):
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            np.savez(folder / "in.npz", **{name: np.asarray(feeds[name], dtype) for name, dtype, _ in self.inputs})
            VENV.run(["-P", str(CHILD), str(self.model), str(self.params), str(folder / "in.npz"),
                      str(folder / "out.npz")], self.model.name, SECONDS, {"GLOG_minloglevel": "2"})
            with np.load(folder / "out.npz") as got:
                return {name: got[f"o{i}"] for i, name in enumerate(self.outputs)}
