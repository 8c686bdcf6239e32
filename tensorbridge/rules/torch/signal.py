"""PyTorch code for the IR's signal ops: DFT as torch.fft's transforms of the (real, imaginary) pair viewed as
complex; ONNX's mel filter bank, which torch has no call for, as a module-level function (torch's own,
torchaudio's, places its edges differently). A constant filter bank is folded before code is written; the function
computes one whose sizes come in at run time (eager code: torch.export cannot size it from data)."""

from __future__ import annotations

from tensorbridge.codegen import pyast as P
from tensorbridge.ir import dtypes
from tensorbridge.ops.infer import norm_axis
from tensorbridge.rules.torch.base import TORCH_DTYPES, R

MEL_WEIGHT_MATRIX = '''
def mel_weight_matrix(num_mel_bins, dft_length, sample_rate, lower_edge_hertz, upper_edge_hertz, dtype):
    """ONNX's MelWeightMatrix, [dft_length // 2 + 1, num_mel_bins]: triangles between num_mel_bins + 2 edges spaced
    evenly in mels, each edge at the spectrogram bin floor((dft_length + 1) * hz / sample_rate)."""
    bins, n_fft, rate = int(num_mel_bins), int(dft_length), int(sample_rate)
    low, high = (2595 * math.log10(1 + float(hz) / 700) for hz in (lower_edge_hertz, upper_edge_hertz))
    edges = [math.floor((n_fft + 1) * 700 * (10 ** ((low + k * (high - low) / (bins + 2)) / 2595) - 1) / rate)
             for k in range(bins + 2)]
    weights = torch.zeros(n_fft // 2 + 1, bins, dtype=torch.float64)
    for i, (left, centre, right) in enumerate(zip(edges, edges[1:], edges[2:])):
        if centre == left:
            weights[centre, i] = 1
        else:
            weights[left:centre + 1, i] = (torch.arange(left, centre + 1, dtype=torch.float64) - left) / (centre - left)
        if right > centre:
            weights[centre:right, i] = (right - torch.arange(centre, right, dtype=torch.float64)) / (right - centre)
    return weights.to(dtype)
'''


@R.exports("MelWeightMatrix")
def write_mel_weight_matrix(em, node):
    operands = [P.lit(em.scalar(v)) if em.scalar(v) is not None else em.tensor(v) for v in node.inputs]
    dt = dtypes.name(dtypes.dtype(node.attrs.get("output_datatype", "float32")))
    em.out(node, P.call(em.helper(MEL_WEIGHT_MATRIX), *operands, P.name(TORCH_DTYPES[dt])))


def _dft_blocker(node) -> str | None:
    x, length, axis = node.inputs[0], node.input(1), node.input(2)
    if x.shape is None or x.shape[-1] not in (1, 2):
        return "DFT of a signal whose (real, imaginary) axis is not known"
    if any(v is not None and (v.const is None or v.const.size != 1) for v in (length, axis)):
        return "DFT of a length or axis known only at run time"
    if node.attrs.get("onesided") and (node.attrs.get("inverse") or x.shape[-1] == 2):
        return "one-sided DFT of a complex signal or inverse"
    return None


@R.exports("DFT", check=_dft_blocker)
def write_dft(em, node):
    """torch.fft.fft / ifft / rfft of the signal (the pair viewed as complex, or its real part alone), its result
    viewed as the pair again."""
    x, length, axis = node.inputs[0], node.input(1), node.input(2)
    rank = len(x.shape)
    dim = norm_axis(int(em.scalar(axis)) if axis is not None else -2, rank)
    real = x.shape[-1] == 1
    signal = P.method(em.tensor(x), "select", -1, 0) if real else \
        P.call("torch.view_as_complex", P.method(em.tensor(x), "contiguous"))
    fn = "rfft" if node.attrs.get("onesided") else "ifft" if node.attrs.get("inverse") else "fft"
    n = {"n": int(em.scalar(length))} if length is not None else {}
    em.out(node, P.call("torch.view_as_real", P.call(f"torch.fft.{fn}", signal, **n, dim=dim)))
