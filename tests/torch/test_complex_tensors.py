"""PyTorch's complex tensors, read as (real, imaginary) pairs: the spectral layers of published models (FNet's
token mixing, Autoformer's autocorrelation, Vocos-style decoders' polar spectrum and inverse real FFT) against
PyTorch, in the IR and in every target."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import tensorbridge as tb
from tensorbridge.errors import UnsupportedError

torch = pytest.importorskip("torch")


class Spectral(torch.nn.Module):
    """FNet's mixing, Autoformer's autocorrelation and a Vocos head on x [batch, time, 2 * bins]."""

    def __init__(self, bins: int = 5):
        super().__init__()
        self.head = torch.nn.Linear(2 * bins, 2 * bins)
        self.samples = 2 * (bins - 1)

    def forward(self, x):
        mixed = torch.fft.fftn(x, dim=(1, 2)).real
        spectrum = torch.fft.rfft(x, dim=1)
        correlation = torch.fft.irfft(spectrum * torch.conj(torch.fft.rfft(mixed, dim=1)), n=x.shape[1], dim=1)
        magnitude, phase = self.head(x).chunk(2, dim=-1)
        magnitude = torch.exp(magnitude).clamp(max=1e2)
        audio = torch.fft.irfft(torch.polar(magnitude, phase), self.samples, dim=-1)
        older = torch.fft.irfft(magnitude * torch.exp(1j * phase), self.samples, dim=-1)  # Vocos before polar
        return mixed, correlation, audio, older


class Arithmetic(torch.nn.Module):
    """Complex weights, sums with real numbers, quotients, magnitudes, slices and the other normalizations."""

    def __init__(self):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.randn(5, 6, dtype=torch.complex64))

    def forward(self, x):
        f = torch.fft.fft2(x, norm="ortho")
        g = (f * self.weight + 1) / (f - 0.5j + 0.5)
        h = torch.fft.ifft(g, norm="forward")
        return (h.abs(), torch.view_as_real(h / 3), h.imag * 2, torch.fft.irfftn(f, s=(5, 4), norm="ortho"),
                torch.fft.ifft(f.transpose(1, 2).reshape(2, 30)[:, 3:9]).real)


def _floats(*shape, seed=0):
    return torch.from_numpy(np.random.default_rng(seed).standard_normal(shape).astype(np.float32))


@pytest.mark.parametrize("module, shape", [(Spectral(), (2, 6, 10)), (Arithmetic(), (2, 5, 6))],
                         ids=["spectral", "arithmetic"])
def test_complex_layers_read_as_pairs(module, shape):
    torch.manual_seed(0)
    x = _floats(*shape)
    graph = tb.load(torch.export.export(module.eval(), (x,)))
    got = tb.run(graph, {graph.inputs[0].name: x.numpy()})
    for value, expected in zip(graph.outputs, module(x)):
        expected = expected.detach().numpy()
        assert np.ptp(expected) > 0.1  # the layer computes something that varies
        np.testing.assert_allclose(got[value.name], expected, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("target, dest", [("onnx", "spectral.onnx"), ("torch", "spectral_torch"),
                                          ("keras", "spectral_keras"), ("tflite", "spectral.tflite")])
def test_spectral_layers_reach_every_target(tmp_path, target, dest):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        src = tmp_path / "spectral.pt2"
        torch.export.save(torch.export.export(Spectral().eval(), (_floats(2, 6, 10),)), str(src))
        out = tb.save(tb.load(src), tmp_path / dest, to=target)
        report = tb.verify(src, out, rtol=1e-4)
    assert report.ok and not any(o.inconclusive for o in report.outputs), report.summary()


def test_complex_boundaries_and_unread_ops_are_listed():
    """A complex result, and an op on complex tensors without a reading, are blockers named together."""
    class Unread(torch.nn.Module):
        def forward(self, x):
            f = torch.fft.fft(x)
            return torch.sigmoid(f).real, f

    with pytest.raises(UnsupportedError) as caught:
        tb.load(torch.export.export(Unread(), (_floats(2, 8),)))
    message = str(caught.value)
    assert "aten.sigmoid" in message and "on complex tensors" in message
    assert "complex tensors at the model's boundary" in message and "view_as_real" in message
