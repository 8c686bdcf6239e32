"""The comparison metrics mean what their docs say."""

import numpy as np

from tensorbridge.verification.compare import compare
from tensorbridge.verification.tolerance import default_tolerance


def test_metrics_on_a_known_difference():
    y = np.array([[1.0, -2.0, 0.0, 4.0]], np.float32)
    z = np.array([[1.1, -2.0, 0.5, 4.0]], np.float32)
    r = compare("o", "o", y, z, rtol=0.2, atol=0.0)
    assert np.isclose(r.max_abs, 0.5)
    assert np.isclose(r.mean_rel, (0.1 / 1 + 0 + 0) / 3, rtol=1e-5)  # zero reference left out
    assert np.isclose(r.robust_rel, 0.5 / 4)
    assert r.ok
    assert not compare("o", "o", y, z, rtol=0.1, atol=0.0).ok


def test_topk_agreement_for_class_scores():
    rng = np.random.default_rng(0)
    y = rng.standard_normal((4, 20)).astype(np.float32)
    z = y.copy()
    z[0, np.argmax(y[0])] -= 100  # row 0 loses its best class
    r = compare("o", "o", y, z)
    assert r.topk["top5"] == 0.75 and not r.ok


def test_shape_nan_and_integer_rules():
    assert not compare("o", "o", np.zeros(3), np.zeros(4)).ok
    assert not compare("o", "o", np.array([np.nan, 1.0]), np.array([1.0, 1.0])).ok
    assert compare("o", "o", np.array([np.nan, 1.0]), np.array([np.nan, 1.0])).ok
    assert not compare("o", "o", np.array([1, 2]), np.array([1, 3])).ok
    assert default_tolerance(np.int64) == (0.0, 0.0)
