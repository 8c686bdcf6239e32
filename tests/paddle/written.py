"""Models written as Paddle by tensorbridge (the legacy `model.pdmodel` + `model.pdiparams`), for the tests and to
record what `paddle.inference` computes from them (needs `make runtimes`):

    python -m tests.paddle.written [NAME ...]

- `ZOO`: PyTorch test-zoo models, read through torch.export and written as Paddle; expected: PyTorch's output.
- `BACK`: the Paddle-saved fixtures (tests/paddle/data, Paddle 3's PIR form) read and written back as legacy
  programs; expected: what Paddle computed from the original.

`data/<name>.written.paddle.npz` holds Paddle's output of the files written and their digest: the tests write the
files again, check they are the same bytes, and compare the recorded output, so `make test` needs no Paddle.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import numpy as np

import tensorbridge as tb
from tests.models.faithful import digest

DATA = Path(__file__).with_name("data")
ZOO = ("resnet18", "mobilenet_v2", "transformer_encoder", "bert", "gpt2", "lstm_tagger")
BACK = ("pplcnet", "ocr_det", "ocr_rec", "svtr_block", "layers", "mobilenet_v3_small")


def written(name: str, folder: Path) -> tuple[Path, dict, np.ndarray]:
    """The model `name` written as Paddle into `folder`: (its program, the feeds, the expected first output)."""
    folder.mkdir(parents=True, exist_ok=True)
    if name in ZOO:
        from tests.models.torch_zoo import imported

        module, args, graph = imported(name)
        out = module(*args)
        out = out[0] if isinstance(out, (tuple, list)) else out
        expected = (out if hasattr(out, "detach") else out.logits).detach().numpy()
        feeds = {v.name: a.numpy() for v, a in zip(graph.inputs, args)}
    else:
        from tests.paddle.test_paddle import feeds_of, recorded, saved_model

        theirs = recorded(name)
        (folder / "source").mkdir()
        graph = tb.load(saved_model(name, "pir", folder / "source"))
        feeds, expected = feeds_of(graph, theirs), theirs["pir_output0"]
    return tb.save(graph, folder / "model.pdmodel", to="paddle"), feeds, expected


def files_digest(program: Path) -> str:
    return digest(program, program.with_suffix(".pdiparams"))


def record(name: str) -> None:
    from tensorbridge.verification.runners.paddle import PaddleRunner

    with tempfile.TemporaryDirectory() as tmp:
        program, feeds, _ = written(name, Path(tmp))
        runner = PaddleRunner(program)
        out = runner.run({n: feeds[v] for (n, _, _), v in zip(runner.inputs, feeds)})
        np.savez_compressed(DATA / f"{name}.written.paddle.npz", output=out[runner.outputs[0]],
                            digest=files_digest(program))


if __name__ == "__main__":
    for model in sys.argv[1:] or [*ZOO, *BACK]:
        record(model)
        print("recorded", model)
