"""Runs a Paddle model with `paddle.inference` (PaddlePaddle 3.3.1), in the venv that `make runtimes` builds
(scripts/runtimes/paddle.sh): Paddle is 1 GB and pins its own dependencies, so it stays out of the main venv.

Inputs and outputs come from the model as the Paddle frontend reads it; a child process in the Paddle venv
(paddle_child.py) runs the predictor on the CPU with its default passes and writes the outputs to an npz. The
predictor exposes no intermediate values, so `--per-layer` is not offered.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

import numpy as np

from tensorbridge.errors import InputShapesNeeded, ModelError

VENV = Path(os.environ.get("TB_PADDLE_VENV", Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
                           / "tensorbridge" / "runtimes" / "paddle" / "venv"))
SETUP = "run `make runtimes`, which makes a venv with PaddlePaddle 3.3.1"
CHILD = Path(__file__).with_name("paddle_child.py")
SECONDS = 1200


def python() -> Path:
    return VENV / "bin" / "python"


def missing() -> str | None:
    """Why Paddle cannot run here (None: it can)."""
    if not python().is_file() or not list((VENV / "lib").glob("python3*/site-packages/paddle/__init__.py")):
        return f"the Paddle venv is not set up; {SETUP}"
    return None


class PaddleRunner:
    name = "PaddlePaddle 3.3.1 (paddle.inference)"

    def __init__(self, source, input_shapes: dict | None = None, **_options):
        from tensorbridge.formats.paddle import paths, read_program

        why = missing()
        if why:
            raise ModelError(f"cannot run {source} in Paddle: {why}")
        self.model, self.params = paths(source)
        program = read_program(self.model)
        try:
            from tensorbridge.frontends.paddle.importer import load

            graph = load(self.model, self.params, input_shapes=input_shapes)
            self.inputs = [(v.name, str(v.dtype), tuple(v.shape)) for v in graph.inputs]
        except InputShapesNeeded:
            self.inputs = [(v.name, v.dtype, None) for v in program.inputs]
        self.outputs = [f"output{i}" for i in range(len(program.outputs))]

    def run(self, feeds):
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            np.savez(folder / "in.npz", **{name: np.asarray(feeds[name], dtype) for name, dtype, _ in self.inputs})
            env = {**os.environ, "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "2"), "GLOG_minloglevel": "2"}
            args = [str(python()), "-P", str(CHILD), str(self.model), str(self.params), str(folder / "in.npz"),
                    str(folder / "out.npz")]
            try:
                done = subprocess.run(args, capture_output=True, text=True, errors="replace", timeout=SECONDS, env=env)
            except subprocess.TimeoutExpired:
                raise ModelError(f"Paddle did not finish running {self.model.name} in {SECONDS} s") from None
            if done.returncode:
                lines = [line for line in done.stderr.splitlines() if line.strip()]
                error = next((line for line in reversed(lines) if "Error" in line), lines[-1] if lines else "")
                raise ModelError(f"Paddle could not run {self.model.name}: {error[:400]}")
            with np.load(folder / "out.npz") as got:
                return {name: got[f"o{i}"] for i, name in enumerate(self.outputs)}
