"""The reference convolution builds its window columns a band of output rows at a time; the result does not
depend on the band size."""

import numpy as np
import pytest

from tensorbridge.reference.kernels import conv as kernels


@pytest.mark.parametrize("x_shape, w_shape, options", [
    ((1, 3, 40, 9), (4, 3, 3, 3), {}),
    ((2, 6, 17, 5), (6, 2, 3, 3), {"group": 3, "strides": [2, 1]}),
    ((1, 4, 33), (8, 4, 5), {"dilations": [2], "pads": [2, 1]}),
])
def test_banded_convolution_equals_one_band(monkeypatch, x_shape, w_shape, options):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(x_shape).astype(np.float32)
    w = rng.standard_normal(w_shape).astype(np.float32)
    whole = kernels.conv(x, w, **options)
    monkeypatch.setattr(kernels, "COLUMN_ELEMENTS", 7)
    np.testing.assert_array_equal(kernels.conv(x, w, **options), whole)
