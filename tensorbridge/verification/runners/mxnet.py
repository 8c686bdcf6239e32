"""Runs an MXNet model in MXNet 1.9.1, in the venv that `make runtimes` builds (scripts/runtimes/mxnet.sh):
MXNet needs numpy 1.23, which the main venv cannot hold.

The model is read by the MXNet frontend first: its inputs (with their shapes), outputs and the IR value each
MXNet output name ends as come from there. A child process in the MXNet venv loads the symbol and params,
binds the outputs asked for (`get_internals()` for the intermediates) and writes them to an npz.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

import numpy as np

from tensorbridge.errors import ModelError

VENV = Path(os.environ.get("TB_MXNET_VENV", Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
                           / "tensorbridge" / "runtimes" / "mxnet" / "venv"))
SETUP = "run `make runtimes`, which makes a venv with MXNet 1.9.1"
SECONDS = 1200

_CHILD = """
import sys, warnings
warnings.filterwarnings("ignore")
import numpy as np
import mxnet as mx
symbol_file, params_file, feeds_file, out_file = sys.argv[1:5]
internals = mx.sym.load(symbol_file).get_internals()
outputs = mx.sym.Group([internals[name] for name in sys.argv[5:]])
with np.load(feeds_file) as given:
    names = list(given.files)
    feeds = [mx.nd.array(given[name], dtype=given[name].dtype) for name in names]
block = mx.gluon.SymbolBlock(outputs, [mx.sym.var(name) for name in names])
block.collect_params().load(params_file, ctx=mx.cpu(), ignore_extra=True, allow_missing=False)
results = block(*feeds)
results = results if isinstance(results, (list, tuple)) else [results]
np.savez(out_file, **{"o%d" % i: r.asnumpy() for i, r in enumerate(results)})
"""


def python() -> Path:
    return VENV / "bin" / "python"


def missing() -> str | None:
    """Why MXNet cannot run here (None: it can)."""
    if not python().is_file() or not list((VENV / "lib").glob("python3*/site-packages/mxnet/__init__.py")):
        return f"the MXNet venv is not set up; {SETUP}"
    return None


class MXNetRunner:
    name = "MXNet 1.9.1"

    def __init__(self, source, input_shapes: dict | None = None, **_options):
        from tensorbridge.formats.mxnet import paths
        from tensorbridge.frontends.mxnet.importer import load

        why = missing()
        if why:
            raise ModelError(f"cannot run {source} in MXNet: {why}")
        self.symbol, self.params = paths(source)
        graph = load(self.symbol, self.params, input_shapes=input_shapes)
        self.inputs = [(v.name, str(v.dtype), tuple(v.shape)) for v in graph.inputs]
        self.outputs = [v.name for v in graph.outputs]
        self.shapes = {v.name: tuple(v.shape) for v in graph.values() if v.shape is not None}
        self.name_of: dict[str, str] = {}  # IR value -> an MXNet output holding it
        for mx_name, value in graph.metadata["mxnet"]["outputs"].items():
            self.name_of.setdefault(value, mx_name)

    def _run(self, feeds, names: list[str]) -> dict[str, np.ndarray]:
        wanted = [(name, self.name_of[name]) for name in names if name in self.name_of]
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            np.savez(folder / "in.npz", **{name: np.asarray(feeds[name], dtype) for name, dtype, _ in self.inputs})
            args = [str(self.symbol), str(self.params), str(folder / "in.npz"), str(folder / "out.npz"),
                    *(mx_name for _, mx_name in wanted)]
            env = {**os.environ, "MXNET_SUBGRAPH_VERBOSE": "0", "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS",
                                                                                                  "2")}
            try:
                done = subprocess.run([str(python()), "-c", _CHILD, *args], capture_output=True, text=True,
                                      errors="replace", timeout=SECONDS, env=env)
            except subprocess.TimeoutExpired:
                raise ModelError(f"MXNet did not finish running {self.symbol.name} in {SECONDS} s") from None
            if done.returncode:
                lines = [line for line in done.stderr.splitlines() if line.strip()]
                error = next((line for line in reversed(lines) if "Error" in line), lines[-1] if lines else "")
                raise ModelError(f"MXNet could not run {self.symbol.name}: {error[:400]}")
            with np.load(folder / "out.npz") as got:
                return {name: got[f"o{i}"] for i, (name, _) in enumerate(wanted)}

    def run(self, feeds):
        return self._run(feeds, self.outputs)

    def run_intermediates(self, feeds) -> dict[str, np.ndarray]:
        """Every op's output, by the IR value it ends as."""
        return self._run(feeds, list(self.name_of))

