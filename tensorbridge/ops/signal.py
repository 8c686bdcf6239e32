"""Signal-processing ops: DFT, STFT, window functions, MelWeightMatrix (ONNX semantics).

Complex values travel as a trailing axis of size 2 (real, imaginary), as in ONNX.
"""

from __future__ import annotations

import numpy as np

from tensorbridge.ir import dtypes
from tensorbridge.ops.layout_classes import TERMINATE
from tensorbridge.ops.schema import Attr, op

F = "signal"


def _window(kind):
    def ref(size, output_datatype, periodic):
        n = int(np.asarray(size).ravel()[0])
        denom = n if periodic else n - 1
        k = np.arange(n, dtype=np.float64)
        ang = 2 * np.pi * k / denom if denom else np.zeros(n)
        if kind == "Hann":
            w = 0.5 - 0.5 * np.cos(ang)
        elif kind == "Hamming":
            w = 25 / 46 - (1 - 25 / 46) * np.cos(ang)
        else:
            w = 0.42 - 0.5 * np.cos(ang) + 0.08 * np.cos(2 * ang)
        return w.astype(dtypes.dtype(output_datatype))
    return ref


for _kind, _eq in (("Hann", "torch.hann_window, tf.signal.hann_window"),
                   ("Hamming", "torch.hamming_window, tf.signal.hamming_window"),
                   ("Blackman", "torch.blackman_window")):
    op(f"{_kind}Window", inputs="size", outputs="output", family=F, layout=TERMINATE,
       attrs={"output_datatype": Attr("dtype", "float32"), "periodic": Attr("int", 1)},
       doc=f"{_kind} window. Equivalents: {_eq}.")(_window(_kind))


def _complex(x):
    return x[..., 0] + 1j * x[..., 1] if x.shape[-1] == 2 else x[..., 0].astype(np.complex128)


@op("DFT", inputs="input dft_length? axis?", outputs="output", family=F, layout=TERMINATE,
    attrs={"inverse": Attr("int", 0), "onesided": Attr("int", 0)},
    doc="Discrete Fourier transform along an axis. Equivalents: torch.fft.fft/rfft, tf.signal.fft.")
def dft(input, dft_length=None, axis=None, *, inverse, onesided):
    ax = int(np.asarray(axis).ravel()[0]) if axis is not None else -2
    x = _complex(input.astype(np.float64))
    ax = ax if ax >= 0 else ax + input.ndim
    ax_c = ax if ax < input.ndim - 1 else ax - 1
    n = int(np.asarray(dft_length).ravel()[0]) if dft_length is not None else x.shape[ax_c]
    y = np.fft.ifft(x, n=n, axis=ax_c) if inverse else np.fft.fft(x, n=n, axis=ax_c)
    if onesided:
        y = np.take(y, np.arange(n // 2 + 1), axis=ax_c)
    return np.stack([y.real, y.imag], axis=-1).astype(input.dtype)


@op("STFT", inputs="signal frame_step window? frame_length?", outputs="output", family=F, layout=TERMINATE,
    attrs={"onesided": Attr("int", 1)}, doc="Short-time Fourier transform. Equivalents: torch.stft, tf.signal.stft.")
def stft(signal, frame_step, window=None, frame_length=None, *, onesided):
    step = int(np.asarray(frame_step).ravel()[0])
    x = _complex(signal.astype(np.float64))  # [batch, length]
    if frame_length is not None:
        flen = int(np.asarray(frame_length).ravel()[0])
    else:
        flen = window.shape[0]
    frames = (x.shape[1] - flen) // step + 1
    w = np.ones(flen) if window is None else window.astype(np.float64)
    segs = np.stack([x[:, i * step:i * step + flen] * w for i in range(frames)], axis=1)
    y = np.fft.fft(segs, axis=-1)
    if onesided:
        y = y[..., :flen // 2 + 1]
    return np.stack([y.real, y.imag], axis=-1).astype(signal.dtype)


@op("MelWeightMatrix", inputs="num_mel_bins dft_length sample_rate lower_edge_hertz upper_edge_hertz",
    outputs="output", family=F, layout=TERMINATE, attrs={"output_datatype": Attr("dtype", "float32")},
    doc="Triangular mel filter bank matrix. Equivalents: tf.signal.linear_to_mel_weight_matrix.")
def mel_weight_matrix(num_mel_bins, dft_length, sample_rate, lower_edge_hertz, upper_edge_hertz, *,
                      output_datatype):
    bins, n_fft, sr = int(num_mel_bins), int(dft_length), int(sample_rate)
    lo, hi = float(lower_edge_hertz), float(upper_edge_hertz)
    spec_bins = n_fft // 2 + 1
    mel = lambda f: 2595 * np.log10(1 + f / 700)  # noqa: E731
    hz = lambda m: 700 * (10 ** (m / 2595) - 1)  # noqa: E731
    pts = np.linspace(mel(lo), mel(hi), bins + 2)
    idx = np.floor((n_fft + 1) * hz(pts) / sr).astype(np.int64)
    out = np.zeros((spec_bins, bins))
    for i in range(bins):
        a, b, c = idx[i], idx[i + 1], idx[i + 2]
        for j in range(a, b):
            out[j, i] = (j - a) / (b - a) if b != a else 0
        if b == c:
            out[b, i] = 1
        for j in range(b, c):
            out[j, i] = (c - j) / (c - b)
    return out.astype(dtypes.dtype(output_datatype))
