"""Runs a Caffe model in Caffe 1.0 (BVLC, CPU), inside the Debian 11 chroot that `make runtimes` builds
(scripts/runtimes/caffe.sh): Debian 12 has no Caffe package, and bullseye's `python3-caffe` is the real library.

The model files and the input go into a folder inside the chroot; `chroot ROOT python3` runs the net there and
writes the blobs asked for. The model is read by the Caffe frontend first: its inputs, outputs and the IR value
each blob ends as come from there. Layers of Caffe forks (SSD, segmentation, YOLO ports) that Caffe 1.0 does not
have are refused with the list before anything runs. Running a chroot needs root.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np

from tensorbridge.errors import ModelError
from tensorbridge.verification.runners.venv import runtime_path

ROOT = runtime_path("TB_CAFFE_ROOT", "caffe", "root")
SETUP = "run `make runtimes`, which builds a Debian 11 chroot with Caffe 1.0"
#: layer types that BVLC Caffe 1.0 does not have (they come from forks)
NOT_IN_CAFFE = frozenset({"Permute", "PriorBox", "DetectionOutput", "Normalize", "Interp", "Upsample"})
SECONDS = 1200

_CHILD = """
import os, sys
os.environ["GLOG_minloglevel"] = "2"
import numpy as np
import caffe
caffe.set_mode_cpu()
proto, model, feeds, out = sys.argv[1:5]
net = caffe.Net(proto, caffe.TEST, weights=model)
with np.load(feeds) as given:
    for name in net.inputs:
        net.blobs[name].reshape(*given[name].shape)
        net.blobs[name].data[...] = given[name]
net.forward()
np.savez(out, **{"b%d" % i: net.blobs[name].data for i, name in enumerate(sys.argv[5:])})
"""


def missing() -> str | None:
    """Why Caffe cannot run here (None: it can)."""
    if not (ROOT / "usr/lib/python3/dist-packages/caffe/__init__.py").is_file():
        return f"the Caffe chroot is not set up; {SETUP}"
    if os.geteuid() != 0 or shutil.which("chroot") is None:
        return "running the Caffe chroot needs root and chroot"
    return None


class CaffeRunner:
    name = "Caffe 1.0"

    def __init__(self, source, **_options):
        from tensorbridge.formats.caffe import read_weights
        from tensorbridge.frontends.caffe.importer import Importer, paths, read_net

        why = missing()
        if why:
            raise ModelError(f"cannot run {source} in Caffe: {why}")
        self.prototxt, self.caffemodel = paths(source)
        net = read_net(self.prototxt)
        forks = sorted({f"{lay.name} ({lay.type})" for lay in net.layer if lay.type in NOT_IN_CAFFE})
        if forks:
            raise ModelError(f"Caffe 1.0 does not have the layers of Caffe forks that {self.prototxt.name} uses: "
                             f"{', '.join(forks)}")
        graph = Importer(net, read_weights(self.caffemodel), {}, None).run()
        self.inputs = [(v.name, "float32", tuple(v.shape)) for v in graph.inputs]
        self.outputs = [v.name for v in graph.outputs]
        self.shapes = {v.name: tuple(v.shape) for v in graph.values() if v.shape is not None}
        self.blob_of: dict[str, str] = {}  # IR value -> a blob holding it (Split tops and in-place layers share)
        for blob, value in graph.metadata["caffe"]["blobs"].items():
            self.blob_of.setdefault(value, blob)

    def _run(self, feeds, names: list[str]) -> dict[str, np.ndarray]:
        wanted = [(name, self.blob_of[name]) for name in names if name in self.blob_of]
        (ROOT / "tb").mkdir(exist_ok=True)
        with tempfile.TemporaryDirectory(dir=ROOT / "tb") as tmp:
            folder = Path(tmp)
            inside = Path("/tb") / folder.name
            for src, dst in ((self.prototxt, "net.prototxt"), (self.caffemodel, "net.caffemodel")):
                _place(src, folder / dst)
            np.savez(folder / "in.npz", **{name: np.asarray(feeds[name], np.float32) for name, _, _ in self.inputs})
            args = [str(inside / "net.prototxt"), str(inside / "net.caffemodel"), str(inside / "in.npz"),
                    str(inside / "out.npz"), *(blob for _, blob in wanted)]
            try:
                done = subprocess.run(["chroot", str(ROOT), "python3", "-c", _CHILD, *args], capture_output=True,
                                      text=True, errors="replace", timeout=SECONDS)
            except subprocess.TimeoutExpired:
                raise ModelError(f"Caffe did not finish running {self.prototxt.name} in {SECONDS} s") from None
            if done.returncode:
                lines = [line for line in done.stderr.splitlines() if line.strip()]
                fatal = [line.split("] ", 1)[-1] for line in lines if line.startswith("F")]  # glog's fatal line
                raise ModelError(f"Caffe could not run {self.prototxt.name}: "
                                 f"{(fatal or lines or ['(no message)'])[-1][:300]}")
            with np.load(folder / "out.npz") as got:
                return {name: got[f"b{i}"].reshape(self.shapes.get(name, got[f"b{i}"].shape))
                        for i, (name, _) in enumerate(wanted)}

    def run(self, feeds):
        return self._run(feeds, self.outputs)

    def run_intermediates(self, feeds) -> dict[str, np.ndarray]:
        """Every blob after the forward pass, by the IR value it ends as."""
        return self._run(feeds, list(self.blob_of))


def _place(src: Path, dst: Path) -> None:
    """Put a model file inside the chroot: a hard link when on one file system, else a copy."""
    try:
        os.link(src, dst)
    except OSError:
        shutil.copyfile(src, dst)
