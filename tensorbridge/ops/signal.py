"""Signal-processing ops: DFT, STFT, window functions, MelWeightMatrix (ONNX semantics).

Complex values travel as a trailing axis of size 2 (real, imaginary), as in ONNX.
"""

from __future__ import annotations

import numpy as np

from tensorbridge.ir import dtypes
from tensorbridge.ir.builder import Builder
from tensorbridge.ops.infer import const_ints, norm_axis
from tensorbridge.ops.layout_classes import TERMINATE
from tensorbridge.ops.schema import Attr, op, set_decomposition

F = "signal"


#: each window as cosine terms: w[k] = sum_j c[j] * cos(j * 2 pi k / d), d = n (periodic) or n - 1
COSINES = {"Hann": (0.5, -0.5), "Hamming": (25 / 46, -(1 - 25 / 46)), "Blackman": (0.42, -0.5, 0.08)}


def _window(kind):
    def ref(size, output_datatype, periodic):
        n = int(np.asarray(size).ravel()[0])
        denom = n if periodic else n - 1
        ang = 2 * np.pi * np.arange(n, dtype=np.float64) / max(denom, 1)
        w = sum(c * np.cos(j * ang) for j, c in enumerate(COSINES[kind]))
        return w.astype(dtypes.dtype(output_datatype))
    return ref


def _decompose_window(graph, node) -> bool:
    """The window of a size known only when the model runs: the positions (an integer Range, as every target
    counts one), their cosines summed with the window's weights (in float32, then cast)."""
    b = Builder.replacing(node)
    size = b.op("Cast", node.inputs[0], to="int64", suffix="size")
    count = b.op("Cast", size, to="float32", suffix="count")
    positions = b.op("Range", b.named(0, "start", np.int64), size, b.named(1, "delta", np.int64), suffix="positions")
    positions = b.op("Cast", positions, to="float32", suffix="float_positions")
    denom = count if node.attrs.get("periodic", 1) else b.op("Sub", count, b.named(1.0, "one", np.float32))
    denom = b.op("Max", denom, b.named(1.0, "least", np.float32), suffix="denominator")  # one point: angle 0
    angle = b.op("Mul", positions, b.op("Div", b.named(2 * np.pi, "turn", np.float32), denom), suffix="angle")
    terms = COSINES[node.op.removesuffix("Window")]
    w = b.op("Mul", b.op("Cos", angle), b.named(terms[1], "c1", np.float32))
    if len(terms) > 2:
        twice = b.op("Mul", angle, b.named(2.0, "two", np.float32))
        w = b.op("Add", w, b.op("Mul", b.op("Cos", twice), b.named(terms[2], "c2", np.float32)))
    w = b.op("Add", w, b.named(terms[0], "c0", np.float32), suffix="window")
    dtype = dtypes.name(dtypes.dtype(node.attrs.get("output_datatype", "float32")))
    graph.replace_node(node, [w if dtype == "float32" else b.op("Cast", w, to=dtype)])
    return True


for _kind, _eq in (("Hann", "torch.hann_window, tf.signal.hann_window"),
                   ("Hamming", "torch.hamming_window, tf.signal.hamming_window"),
                   ("Blackman", "torch.blackman_window")):
    op(f"{_kind}Window", inputs="size", outputs="output", family=F, layout=TERMINATE,
       attrs={"output_datatype": Attr("dtype", "float32"), "periodic": Attr("int", 1)},
       doc=f"{_kind} window. Equivalents: {_eq}.")(_window(_kind))
    set_decomposition(f"{_kind}Window", _decompose_window)


def _complex(x):
    return x[..., 0] + 1j * x[..., 1] if x.shape[-1] == 2 else x[..., 0].astype(np.complex128)


def _dft_infer(inputs, attrs):
    """The input's shape with the signal axis dft_length long (its first half and one when onesided) and a last
    axis of 2 (real, imaginary)."""
    x, length, axis = (list(inputs) + [None, None])[:3]
    if x.shape is None or axis is not None and axis.const is None:  # which axis is known only when it runs
        return [(x.dtype, None)]
    axis = norm_axis(const_ints(axis)[0] if axis is not None else -2, len(x.shape))
    shape = list(x.shape[:-1]) + [2]
    signal = axis if axis < len(x.shape) - 1 else axis - 1
    n = const_ints(length)[0] if length is not None and const_ints(length) else x.shape[signal]
    if attrs.get("onesided"):
        n = n // 2 + 1 if isinstance(n, int) else None
    shape[signal] = n
    return [(x.dtype, tuple(shape))]


@op("DFT", inputs="input dft_length? axis?", outputs="output", family=F, layout=TERMINATE, infer=_dft_infer,
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
    """As ONNX defines it (and onnxruntime computes it): num_mel_bins + 2 edges a mel step of
    (mel(high) - mel(low)) / (num_mel_bins + 2) apart, each at spectrogram bin floor((dft_length + 1) * hz /
    sample_rate); triangles rise from the left edge to 1 at the centre (a zero-width rise: just the 1) and fall
    to the right edge."""
    bins, n_fft, sr = int(num_mel_bins), int(dft_length), int(sample_rate)
    mel = lambda f: 2595 * np.log10(1 + f / 700)  # noqa: E731
    low, high = mel(float(lower_edge_hertz)), mel(float(upper_edge_hertz))
    edges_mel = low + np.arange(bins + 2) * (high - low) / (bins + 2)
    edges = np.floor((n_fft + 1) * 700 * (10 ** (edges_mel / 2595) - 1) / sr).astype(np.int64)
    out = np.zeros((n_fft // 2 + 1, bins))
    for i, (left, centre, right) in enumerate(zip(edges, edges[1:], edges[2:])):
        if centre == left:
            out[centre, i] = 1
        for j in range(left, centre + 1 if centre > left else left):
            out[j, i] = (j - left) / (centre - left)
        for j in range(centre, right):
            out[j, i] = (right - j) / (right - centre)
    return out.astype(dtypes.dtype(output_datatype))


def _constant_int(v) -> int | None:
    values = const_ints(v)
    return values[0] if values else None


def _fourier_matrix(n_in: int, n: int, bins: int, parts: int, inverse: bool) -> np.ndarray:
    """[n_in * parts, bins * 2]: (real, imaginary) samples along the rows, (real, imaginary) bins along the
    columns. Samples past n are dropped (zero rows) and missing ones count as zeros, as a DFT of length n
    truncates or pads; the inverse's 1/n is folded in."""
    sign = -1.0 if inverse else 1.0
    theta = 2 * np.pi * np.outer(np.arange(n_in), np.arange(bins)) / n
    cos, sin = np.cos(theta), np.sin(theta)
    cos[n:], sin[n:] = 0, 0
    m = np.zeros((n_in, parts, bins, 2))
    m[:, 0, :, 0], m[:, 0, :, 1] = cos, -sign * sin
    if parts == 2:
        m[:, 1, :, 0], m[:, 1, :, 1] = sign * sin, cos
    return (m / n if inverse else m).reshape(n_in * parts, bins * 2)


def _decompose_dft(graph, node) -> bool:
    """One MatMul with the transform's matrix (constant length and axis, static sizes along the way): the
    signal axis is moved next to the (real, imaginary) axis, both are flattened, and the product is reshaped
    back into bins and parts."""
    x = node.inputs[0]
    rank = len(x.shape) if x.shape is not None else None
    axis = _constant_int(node.input(2)) if node.input(2) is not None else -2
    length = _constant_int(node.input(1)) if node.input(1) is not None else None
    if rank is None or axis is None or (node.input(1) is not None and length is None):
        return False
    axis = norm_axis(axis, rank)
    lead = [d for i, d in enumerate(x.shape[:-1]) if i != axis]
    n_in, parts = x.shape[axis], x.shape[-1]
    if not isinstance(n_in, int) or parts not in (1, 2) or sum(not isinstance(d, int) for d in lead) > 1:
        return False
    n = length or n_in
    bins = n // 2 + 1 if node.attrs.get("onesided") else n
    b = Builder.replacing(node)
    perm = [i for i in range(rank - 1) if i != axis] + [axis, rank - 1]
    moved = x if perm == list(range(rank)) else b.op("Transpose", x, perm=perm, suffix="signal_last")
    dims = [d if isinstance(d, int) else -1 for d in lead]
    flat = b.op("Reshape", moved, b.named(dims + [n_in * parts], "flat_shape", np.int64),
                suffix="flat")
    matrix = _fourier_matrix(n_in, n, bins, parts, bool(node.attrs.get("inverse"))).astype(x.dtype)
    y = b.op("MatMul", flat, b.named(matrix, "fourier_matrix"), suffix="transform")
    y = b.op("Reshape", y, b.named(dims + [bins, 2], "bins_shape", np.int64), suffix="bins")
    back = [perm.index(i) for i in range(rank)]
    if back != list(range(rank)):
        y = b.op("Transpose", y, perm=back, suffix="signal_back")
    graph.replace_node(node, [y])
    return True


def _decompose_stft(graph, node) -> bool:
    """Frames gathered at constant offsets, times the window, then a DFT along the frame axis."""
    x, window = node.inputs[0], node.input(2)
    step, flen = _constant_int(node.inputs[1]), _constant_int(node.input(3))
    flen = flen or (window.shape[0] if window is not None and window.shape is not None else None)
    if x.shape is None or len(x.shape) != 3 or not isinstance(x.shape[1], int) or not step or not flen:
        return False
    count = (x.shape[1] - flen) // step + 1
    b = Builder.replacing(node)
    offsets = np.arange(count)[:, None] * step + np.arange(flen)[None, :]
    frames = b.op("Gather", x, b.named(offsets, "frame_offsets", np.int64), axis=1, suffix="frames")
    if window is not None:
        column = b.op("Unsqueeze", window, b.named([-1], "window_axes", np.int64),
                      suffix="window_column")
        frames = b.op("Mul", frames, column, suffix="windowed")
    y = b.op("DFT", frames, None, b.named(2, "frame_axis", np.int64),
             onesided=node.attrs.get("onesided", 1), suffix="dft")
    graph.replace_node(node, [y])
    return True


set_decomposition("DFT", _decompose_dft)
set_decomposition("STFT", _decompose_stft)
