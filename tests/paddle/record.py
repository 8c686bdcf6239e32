"""Records the Paddle fixtures `make test` checks against, from real PaddlePaddle 3.3.1 (needs `make runtimes`).

For each model of tests/paddle/models.py (and paddle.vision's MobileNetV3-Small), in both of Paddle's saved
formats: `<name>.json` (PIR, Paddle 3's default) and `<name>.pdmodel` (the legacy ProgramDesc, saved with
FLAGS_enable_pir_api=0; Paddle 3.3 cannot save every op that way, and such models are saved by Paddle 2.6 when its
venv is there, `PADDLE2`), and in `<name>.paddle.npz` the inputs, the outputs `paddle.inference` 3.3 computed from
each format, and the BatchNorm statistics (calibrated on data, so no layer is degenerate). The other parameters are
not committed: they are regenerated from their names (`weights.parameter`).

    ~/.cache/tensorbridge/runtimes/paddle/venv/bin/python -m tests.paddle.record [NAME ...]
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from tests.paddle.weights import image, is_statistic, parameter

DATA = Path(__file__).with_name("data")
#: PaddlePaddle 2.6.2 (a venv of its own: scripts/runtimes/paddle2.sh), which saves in the legacy form the models
#: Paddle 3.3 cannot (optional: without it those models are recorded in the PIR form only)
PADDLE2 = Path(os.environ.get("TB_PADDLE2_PYTHON",
                              Path.home() / ".cache/tensorbridge/runtimes/paddle2/venv/bin/python"))
CHILD = Path(__file__).resolve().parents[2] / "tensorbridge" / "verification" / "runners" / "paddle_child.py"
NAMES = ("pplcnet", "resnet50_vd", "mobilenet_v3_small", "ocr_det", "ocr_rec", "svtr_block", "recurrent", "layers")


def build(name: str):
    """(model in eval mode with its weights, {input name: array})."""
    import paddle

    from tests.paddle import models

    paddle.seed(0)
    if name == "layers":
        net = models.Layers()
        feeds = {"x": image((1, 4, 12, 12)), "ids": np.random.default_rng(3).integers(0, 10, (1, 5)).astype("int64")}
    elif name == "mobilenet_v3_small":
        from paddle.vision.models import mobilenet_v3_small

        net, feeds = mobilenet_v3_small(num_classes=100), {"x": image((1, 3, 64, 64))}
    else:
        cls, shape = models.ARCHITECTURES[name]
        net, feeds = cls(), {"x": image(shape)}
    for p in net.parameters():
        if not is_statistic(p.name):
            p.set_value(parameter(p.name, p.shape))
    norms = [m for m in net.sublayers() if isinstance(m, paddle.nn.layer.norm._BatchNormBase)]
    for m in norms:
        m._momentum = 0.0  # the statistics of the calibration batch itself
    net.train()
    with paddle.no_grad():
        net(*[paddle.to_tensor(image((4, *v.shape[1:]), seed=11)) if v.dtype.kind == "f" else paddle.to_tensor(v)
              for v in feeds.values()])
    net.eval()
    return net, feeds


def save(name: str, folder: Path) -> None:
    """The model saved by paddle.jit.save in the format the environment selects (FLAGS_enable_pir_api)."""
    import paddle

    net, feeds = build(name)
    specs = [paddle.static.InputSpec([None, *v.shape[1:]], str(v.dtype), k) for k, v in feeds.items()]
    paddle.jit.save(net, str(folder / "model"), input_spec=specs)
    statistics = {p.name: p.numpy() for p in net.parameters() if is_statistic(p.name)}
    np.savez(folder / "extra.npz", **feeds, **statistics)


def infer(model: Path, params: Path, feeds: dict) -> tuple[list[np.ndarray], bool]:
    """The outputs as `paddle.inference` computes them, by the Paddle runner's own child script, and whether
    oneDNN ran them."""
    with tempfile.TemporaryDirectory() as tmp:
        np.savez(Path(tmp) / "in.npz", **feeds)
        subprocess.run([sys.executable, "-P", str(CHILD), str(model), str(params), f"{tmp}/in.npz", f"{tmp}/out.npz"],
                       check=True)
        with np.load(Path(tmp) / "out.npz") as got:
            return [got[f"o{i}"] for i in range(len(got.files) - 1)], bool(got["__onednn__"])


def _save(python: str, name: str, folder: Path, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([python, "-m", "tests.paddle.record", "--save", name, str(folder)], env=env,
                          cwd=Path(__file__).resolve().parents[2], capture_output=True, text=True)


def record(name: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        found, outputs = {}, {}
        for kind, suffix in (("pir", ".json"), ("legacy", ".pdmodel")):
            folder = Path(tmp) / kind
            folder.mkdir()
            env = dict(os.environ, FLAGS_enable_pir_api="1" if kind == "pir" else "0")
            saved = _save(sys.executable, name, folder, env)
            if saved.returncode and kind == "legacy" and PADDLE2.is_file():
                # Paddle 3.3's legacy mode cannot save sigmoid, exp, gelu, softplus ...: Paddle 2.6 saves them, as
                # the published PP-OCR inference models were saved
                saved = _save(str(PADDLE2), name, folder, env)
            if saved.returncode:
                print(f"{name}: not saved as {kind}: {saved.stderr.strip().splitlines()[-1][:200]}")
                continue
            with np.load(folder / "extra.npz") as extra:
                found.update({k: extra[k] for k in extra.files})
            (DATA / f"{name}{suffix}").write_bytes((folder / f"model{suffix}").read_bytes())
            feeds = {k: found[k] for k in ("x", "ids") if k in found}
            got, onednn = infer(folder / f"model{suffix}", folder / "model.pdiparams", feeds)
            outputs.update({f"{kind}_output{i}": out for i, out in enumerate(got)}, **{f"{kind}_onednn": onednn})
    np.savez_compressed(DATA / f"{name}.paddle.npz", **found, **outputs)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--save"]:
        save(sys.argv[2], Path(sys.argv[3]))
    else:
        for model in sys.argv[1:] or NAMES:
            record(model)
            print("recorded", model, json.dumps(sorted(np.load(DATA / f"{model}.paddle.npz").files)[:6]))
