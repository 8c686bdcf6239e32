"""Runs a CNTK v2 model in CNTK 2.7, in the venv that `make runtimes` builds (scripts/runtimes/cntk.sh): CNTK's
last wheels are for Python 3.6, so it runs in a child process of that venv, with the folder of Open MPI soname links
the script makes on LD_LIBRARY_PATH.

Inputs and outputs come from the model as the CNTK frontend reads it; the child (cntk_child.py) feeds each input by
its CNTK uid, evaluates the outputs asked for and writes them to an npz. For `--per-layer`, the outputs CNTK can
evaluate on their own (those outside blocks, and the blocks') are compared with the IR values the frontend read
them as.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import numpy as np

from tensorbridge.errors import InputShapesNeeded, ModelError
from tensorbridge.verification.runners.venv import Venv, runtime_path

HOME = runtime_path("TB_CNTK_HOME", "cntk")
VENV = Venv(HOME / "venv", "cntk", "CNTK", "run `make runtimes`, which makes a Python 3.6 venv with CNTK 2.7")
CHILD = Path(__file__).with_name("cntk_child.py")
SECONDS = 1200


def missing() -> str | None:
    """Why CNTK cannot run here (None: it can)."""
    return VENV.missing()


class CNTKRunner:
    name = "CNTK 2.7"

    def __init__(self, source, input_shapes: dict | None = None, **_options):
        from tensorbridge.frontends.cntk.importer import load

        why = missing()
        if why:
            raise ModelError(f"cannot run {source} in CNTK: {why}")
        self.model = Path(source)
        try:
            graph = load(self.model, input_shapes=input_shapes)
        except InputShapesNeeded as e:
            raise ModelError(f"cannot run {source} in CNTK: {e}") from None
        self.inputs = [(v.name, str(v.dtype), tuple(v.shape)) for v in graph.inputs]
        self.uids = {v.name: v.meta["cntk_uid"] for v in graph.inputs}
        self.outputs = [v.name for v in graph.outputs]
        self.visible = graph.metadata["cntk"]["outputs"]  # CNTK output uid -> IR value

    def _run(self, feeds, uids: list[str]) -> list[np.ndarray]:
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            np.savez(folder / "in.npz", **{self.uids[name]: np.asarray(feeds[name], dtype)
                                           for name, dtype, _ in self.inputs})
            library = os.pathsep.join(filter(None, [str(HOME / "mpi"), os.environ.get("LD_LIBRARY_PATH")]))
            args = [str(CHILD), str(self.model.resolve()), str(folder / "in.npz"), str(folder / "out.npz"), *uids]
            VENV.run(["-I", *args], self.model.name, SECONDS, {"LD_LIBRARY_PATH": library})
            with np.load(folder / "out.npz") as got:
                return [got[f"o{i}"] for i in range(len(got.files))]

    def run(self, feeds):
        return dict(zip(self.outputs, self._run(feeds, [])))

    def run_intermediates(self, feeds) -> dict[str, np.ndarray]:
        """The outputs CNTK can evaluate on their own, by the IR value each is."""
        uids = list(self.visible)
        return {self.visible[uid]: value for uid, value in zip(uids, self._run(feeds, uids))}
