"""Runs a Darknet model in libdarknet, the C library of Debian's `darknet` package (pjreddie's Darknet, 2018).

libdarknet ends the process on a file it cannot read, so it runs in a throwaway child process, through ctypes
and a small C shim (`darknet_shim.c`, compiled once into the runtime cache) that reads each layer's output.
The model is read by the Darknet frontend first: its input and output names, and the IR value of each layer,
come from there, and what the 2018 library does not implement (activations and options of the later YOLOv4
line of Darknet, which it would replace by ReLU or ignore) is refused with the list, rather than run wrong.

`make runtimes` (scripts/runtimes/darknet.sh) installs the package and builds the shim.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np

from tensorbridge.errors import ModelError
from tensorbridge.formats.isolated import run_child

LIBRARY = Path(os.environ.get("DARKNET_LIBRARY", "/usr/lib/darknet/libdarknet.so"))
SHIM_SOURCE = Path(__file__).with_name("darknet_shim.c")
CACHE = Path(os.environ.get("TENSORBRIDGE_RUNTIMES", Path.home() / ".cache" / "tensorbridge" / "runtimes"))
SETUP = "`make runtimes`, or apt-get install darknet"
#: memory the libdarknet process may take (a cfg's training batch sizes its buffers before the runner sets 1)
RUN_MEMORY = 16 << 30

#: what pjreddie's 2018 library lacks, by (section kind, option) -> the values it does not implement (None: any
#: value other than the default)
NOT_IN_2018 = {("*", "activation"): {"mish", "swish", "hard_mish", "normalize_channels"},
               ("route", "groups"): None, ("route", "group_id"): None, ("convolutional", "dilation"): None,
               ("yolo", "scale_x_y"): None}
DEFAULTS = {"groups": "1", "group_id": "0", "dilation": "1", "scale_x_y": "1"}
#: sections the 2018 library reads but cannot run on the CPU (it ends the process)
CRASHES = {"batchnorm"}

_CHILD = """
import ctypes, sys
import numpy as np
shim, cfg, weights, feeds, out = sys.argv[1:6]
layers = [int(i) for i in sys.argv[6:]]
lib = ctypes.CDLL(shim)
lib.tb_load.restype = ctypes.c_void_p
lib.tb_load.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
lib.tb_predict.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_float)]
lib.tb_layer_size.argtypes = [ctypes.c_void_p, ctypes.c_int]
lib.tb_layer_output.argtypes = [ctypes.c_void_p, ctypes.c_int]
lib.tb_layer_output.restype = ctypes.POINTER(ctypes.c_float)
net = lib.tb_load(cfg.encode(), weights.encode())
image = np.ascontiguousarray(np.load(feeds)["input"], np.float32)
lib.tb_predict(net, image.ctypes.data_as(ctypes.POINTER(ctypes.c_float)))
result = {}
for i in layers:
    size = lib.tb_layer_size(net, i)
    result[str(i)] = np.ctypeslib.as_array(lib.tb_layer_output(net, i), (size,)).copy()
np.savez(out, **result)
"""


def missing() -> str | None:
    """Why libdarknet cannot run here (None: it can)."""
    if not LIBRARY.is_file():
        return f"libdarknet is not installed ({SETUP})"
    if not _shim_path().is_file() and shutil.which("gcc") is None:
        return f"the libdarknet shim is not built and there is no gcc to build it ({SETUP})"
    return None


def _shim_path() -> Path:
    return CACHE / "darknet" / "libtbdarknet.so"


def build_shim() -> Path:
    """The shim library, compiled from darknet_shim.c against the installed libdarknet when missing or older."""
    path = _shim_path()
    if path.is_file() and path.stat().st_mtime >= SHIM_SOURCE.stat().st_mtime:
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    lib_dir = LIBRARY.parent
    staged = path.with_suffix(".tmp")
    done = subprocess.run(["gcc", "-shared", "-fPIC", "-O2", f"-I{lib_dir / 'include'}", str(SHIM_SOURCE),
                           f"-L{lib_dir}", "-ldarknet", f"-Wl,-rpath,{lib_dir}", "-o", str(staged)],
                          capture_output=True, text=True)
    if done.returncode:
        raise ModelError(f"cannot build the libdarknet shim: {done.stderr.strip()[:300]}")
    os.replace(staged, path)
    return path


def unsupported(sections) -> list[str]:
    """What in the cfg the 2018 library would run differently or not at all."""
    problems = []
    for s in sections:
        if s.kind in CRASHES:
            problems.append(f"{s.where()}: the section itself (the library crashes running it)")
        for (kind, option), values in NOT_IN_2018.items():
            value = s.options.get(option)
            if value is None or kind not in ("*", s.kind):
                continue
            if (values is None and value != DEFAULTS.get(option)) or (values is not None and value.lower() in values):
                problems.append(f"{s.where()}: {option}={value}")
        if s.kind == "convolutional" and s.options.get("size", "1") == "1" and s.options.get("stride", "1") != "1":
            problems.append(f"{s.where()}: a 1x1 convolution with stride={s.options['stride']} (the library "
                            "computes it on the unstrided input)")
    return problems


class DarknetRunner:
    name = "libdarknet"

    def __init__(self, source, **_options):
        from tensorbridge.formats.darknet import read_cfg
        from tensorbridge.frontends.darknet.importer import load, weights_beside

        why = missing()
        if why:
            raise ModelError(f"cannot run {source} in Darknet: {why}")
        path = Path(source)
        self.cfg = path.with_suffix(".cfg") if path.suffix.lower() == ".weights" else path
        self.weights = weights_beside(self.cfg)
        problems = unsupported(read_cfg(self.cfg))
        if problems:
            raise ModelError(f"libdarknet (2018) does not implement what {self.cfg.name} uses, and would run "
                             f"something else: {'; '.join(problems)}")
        graph = load(self.cfg)
        self.inputs = [(v.name, "float32", tuple(v.shape)) for v in graph.inputs]
        self.outputs = [v.name for v in graph.outputs]
        self.shapes = {v.name: tuple(v.shape) for v in graph.values() if v.shape is not None}
        # IR value -> the last layer that outputs it (dropout and single routes pass a value on)
        self.layer_of = {name: i for i, name in enumerate(graph.metadata["darknet_layers"]) if name is not None}
        self.shim = build_shim()

    def _run(self, feeds, names: list[str]) -> dict[str, np.ndarray]:
        wanted = {self.layer_of[name]: name for name in names if name in self.layer_of}
        with tempfile.TemporaryDirectory() as tmp:
            np.savez(Path(tmp) / "in.npz", input=np.asarray(feeds[self.inputs[0][0]], np.float32))
            run_child(_CHILD, [str(self.shim), str(self.cfg), str(self.weights), str(Path(tmp) / "in.npz"),
                               str(Path(tmp) / "out.npz"), *map(str, wanted)], 600,
                      f"libdarknet could not run {self.cfg.name}", memory=RUN_MEMORY)
            with np.load(Path(tmp) / "out.npz") as got:
                return {name: got[str(i)].reshape(self.shapes[name]) for i, name in wanted.items()}

    def run(self, feeds):
        return self._run(feeds, self.outputs)

    def run_intermediates(self, feeds) -> dict[str, np.ndarray]:
        """Every layer's output, by the IR value it is."""
        return self._run(feeds, list(self.layer_of))
