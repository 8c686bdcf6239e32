"""Runs an MXNet model in MXNet 1.9.1, in the venv that `make runtimes` builds (scripts/runtimes/mxnet.sh):
MXNet needs numpy 1.23, which the main venv cannot hold.

The model is read by the MXNet frontend first: its inputs (with their shapes), outputs and the IR value each
MXNet output name ends as come from there. A child process in the MXNet venv loads the symbol and params,
binds the outputs asked for (`get_internals()` for the intermediates) and writes them to an npz.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np

from tensorbridge.errors import InputShapesNeeded, ModelError
from tensorbridge.verification.runners.venv import Venv, runtime_path

VENV = Venv(runtime_path("TB_MXNET_VENV", "mxnet", "venv"), "mxnet", "MXNet",
            "run `make runtimes`, which makes a venv with MXNet 1.9.1")
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
block.collect_params().load(params_file, ctx=mx.cpu(), ignore_extra=True, allow_missing=False, cast_dtype=True,
                            dtype_source="saved")
results = block(*feeds)
results = results if isinstance(results, (list, tuple)) else [results]
np.savez(out_file, **{"o%d" % i: r.asnumpy() for i, r in enumerate(results)})
"""


def missing() -> str | None:
    """Why MXNet cannot run here (None: it can)."""
    return VENV.missing()


class MXNetRunner:
    name = "MXNet 1.9.1"

    def __init__(self, source, input_shapes: dict | None = None, input_dtypes: dict | None = None, **_options):
        from tensorbridge.formats.mxnet import paths

        why = missing()
        if why:
            raise ModelError(f"cannot run {source} in MXNet: {why}")
        self.symbol, self.params = paths(source)
        self.input_dtypes = input_dtypes or {}
        self.name_of: dict[str, str] = {}  # IR value -> an MXNet output holding it
        try:
            self._read(input_shapes)
        except InputShapesNeeded as e:
            self._unshaped(e.inputs)

    def _read(self, input_shapes) -> None:
        """Inputs, outputs and names from the model as the MXNet frontend reads it."""
        from tensorbridge.frontends.mxnet.importer import load

        graph = load(self.symbol, self.params, input_shapes=input_shapes, input_dtypes=self.input_dtypes)
        self.inputs = [(v.name, str(v.dtype), tuple(v.shape)) for v in graph.inputs]
        self.outputs = [v.name for v in graph.outputs]
        for mx_name, value in graph.metadata["mxnet"]["outputs"].items():
            self.name_of.setdefault(value, mx_name)
        self.heads = dict(zip(self.outputs, self.outputs))

    def _unshaped(self, inputs: list[str]) -> None:
        """A Gluon export records no input shapes: they come with the first inputs run (verify takes the
        converted model's), and the outputs are named by MXNet until then."""
        from tensorbridge.frontends.mxnet.importer import head_names

        self.inputs = [(name, self.input_dtypes.get(name, "float32"), None) for name in inputs]
        self.outputs = head_names(self.symbol)
        self.heads = {}

    def _shaped_by(self, feeds) -> None:
        """Read the model with the shapes of the first inputs given, when it records none."""
        if not self.heads:
            mx_heads = self.outputs
            self._read({name: list(np.shape(feeds[name])) for name, _, _ in self.inputs})
            self.heads, self.outputs = dict(zip(mx_heads, self.outputs)), mx_heads

    def _run(self, feeds, names: list[str]) -> dict[str, np.ndarray]:
        """The IR values `names` as MXNet computes them."""
        wanted = [(name, self.name_of[name]) for name in names if name in self.name_of]
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            np.savez(folder / "in.npz", **{name: np.asarray(feeds[name], dtype) for name, dtype, _ in self.inputs})
            args = [str(self.symbol), str(self.params), str(folder / "in.npz"), str(folder / "out.npz"),
                    *(mx_name for _, mx_name in wanted)]
            VENV.run(["-c", _CHILD, *args], self.symbol.name, SECONDS)
            with np.load(folder / "out.npz") as got:
                return {name: got[f"o{i}"] for i, (name, _) in enumerate(wanted)}

    def run(self, feeds):
        """The outputs, by the names `outputs` gives them."""
        self._shaped_by(feeds)
        got = self._run(feeds, [self.heads[name] for name in self.outputs])
        return {name: got[self.heads[name]] for name in self.outputs}

    def run_intermediates(self, feeds) -> dict[str, np.ndarray]:
        """Every op's output, by the IR value it ends as."""
        self._shaped_by(feeds)
        return self._run(feeds, list(self.name_of))
