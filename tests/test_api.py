"""The public Python API and the generated support matrix."""

from pathlib import Path

import numpy as np

import tensorbridge as tb
from tensorbridge import support


def test_public_surface_is_pinned():
    assert sorted(tb.__all__) == sorted(["load", "save", "convert", "verify", "run", "transpile", "LayoutOptions",
                                         "errors", "__version__"])


def test_load_save_convert_verify_run(small_cnn, small_cnn_path, tmp_path):
    g = tb.load(small_cnn)
    x = np.random.default_rng(0).standard_normal((3, 3, 8, 8)).astype(np.float32)
    probs = tb.run(g, {"x": x})["probs"]
    assert probs.shape == (3, 10) and np.allclose(probs.sum(axis=1), 1, atol=1e-5)
    report = tb.convert(small_cnn_path, tmp_path / "c.tbir", verify=True)
    assert report.ok and report.outputs[0].topk["top10"] == 1.0
    assert tb.verify(tmp_path / "c.tbir", small_cnn_path).ok


def test_support_doc_is_current():
    assert Path("docs/support.md").read_text() == support.markdown(), \
        "docs/support.md is stale: run `python -m tensorbridge.support`"
