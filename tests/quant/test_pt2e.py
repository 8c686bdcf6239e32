"""PT2E-quantized `torch.export` programs (torchao's prepare_pt2e/convert_pt2e) as a source.

Their quantize/dequantize ops become the IR's QuantizeLinear/DequantizeLinear with the program's own
scales and zero points. The program's arithmetic is a reference one: float convolutions on
dequantized values, then quantization by round(x * (1 / scale)). Generated PyTorch code repeats it
exactly; onnxruntime and LiteRT run integer kernels (int32 accumulation, the float bias quantized to
int32), which round differently near ties, and a flip of 1 LSB early in a network can grow to 2 LSB
at the output (measured below).
"""

from __future__ import annotations

import collections

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

import tensorbridge as tb
from tensorbridge.errors import UnsupportedError

torch = pytest.importorskip("torch")
pytest.importorskip("torchao")
from tests.models import torch_zoo  # noqa: E402
from tests.models.quant_zoo import pt2e_program, tflite_kernels  # noqa: E402


def _program_params(path) -> list[tuple[float, int]]:
    """(scale, zero point) of every per-tensor quantize in the program."""
    from tensorbridge.frontends.torch.importer import load_program, pt2e_name

    ep = load_program(path)
    return sorted((float(np.float32(n.args[1])), int(n.args[2])) for n in ep.graph.nodes
                  if n.op == "call_function" and pt2e_name(n.target) == "quantize_per_tensor")


def _onnx_params(path) -> list[tuple[float, int]]:
    model = onnx.load(str(path))
    inits = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    return sorted((float(inits[n.input[1]]), int(inits[n.input[2]])) for n in model.graph.node
                  if n.op_type == "QuantizeLinear")


def _count(path, *aten_ops) -> int:
    from tensorbridge.frontends.torch.importer import load_program, source_op

    return sum((source_op(n.target) or ("", ""))[1] in aten_ops for n in load_program(path).graph.nodes
               if n.op == "call_function")


@pytest.fixture(scope="module")
def mobilenet_int8(tmp_path_factory):
    module, args, _ = torch_zoo.mobilenet_v2(batch=1)
    return pt2e_program(module, args, tmp_path_factory.mktemp("pt2e") / "mobilenet_v2_int8.pt2")


def test_pt2e_int8_to_torch_code_is_bit_exact(mobilenet_int8, tmp_path):
    dst = tb.save(tb.load(mobilenet_int8), tmp_path / "model_torch", to="torch")
    out = tb.verify(mobilenet_int8, dst).outputs[0]
    assert out.step and out.max_abs == 0 and out.exact == 1.0, out
    code = (dst / "model.py").read_text()
    assert "torch.round(" in code and "quantize_per_tensor(" not in code.replace("quantize_per_tensor_", "")


def test_pt2e_int8_to_onnx_keeps_parameters_and_runs_integer(mobilenet_int8, tmp_path):
    dst = tb.save(tb.load(mobilenet_int8), tmp_path / "model.onnx")
    assert _onnx_params(dst) == _program_params(mobilenet_int8)
    out = tb.verify(mobilenet_int8, dst, atol=2).outputs[0]
    assert out.step and out.max_abs <= 2 and out.exact >= 0.5, out  # measured: 1 LSB, 64% of 100 exact

    qlinear = tb.save(tb.load(mobilenet_int8), tmp_path / "model_q.onnx", quant_format="qlinear")
    ops = collections.Counter(n.op_type for n in onnx.load(str(qlinear)).graph.node)
    assert ops["QLinearConv"] == _count(mobilenet_int8, "conv2d") and "Conv" not in ops, ops  # float bias as int32
    out = tb.verify(mobilenet_int8, qlinear, atol=2).outputs[0]
    assert out.max_abs <= 2 and out.exact >= 0.5, out  # measured: 2 LSB, 59% exact


def test_pt2e_int8_to_tflite_writes_int8_kernels(mobilenet_int8, tmp_path):
    dst = tb.save(tb.load(mobilenet_int8), tmp_path / "model.tflite")
    weighted = [k for k in tflite_kernels(dst) if k[0] in ("CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED")]
    assert len(weighted) == _count(mobilenet_int8, "conv2d", "linear"), weighted
    assert all(k[1][:2] == ("int8", "int8") for k in weighted), weighted
    out = tb.verify(mobilenet_int8, dst, atol=2).outputs[0]
    assert out.max_abs <= 2 and out.exact >= 0.5, out  # measured: 2 LSB, 59% exact


def test_pt2e_x86_uint8_resnet_to_torch_and_onnx(tmp_path):
    module, args, _ = torch_zoo.resnet18(batch=1)
    src = pt2e_program(module, args, tmp_path / "resnet18_x86.pt2", quantizer="x86")
    code = tb.save(tb.load(src), tmp_path / "model_torch", to="torch")
    report = tb.verify(src, code, rtol=0, atol=0)
    assert report.ok, report.summary()
    onnx_file = tb.save(tb.load(src), tmp_path / "model.onnx")
    out = tb.verify(src, onnx_file).outputs[0]
    assert out.robust_rel < 1e-2 and out.topk["top10"] == 1.0, out  # float logits after uint8 layers: measured 5.5e-3


def test_narrow_quant_range_is_a_clip(tmp_path):
    class Narrow(torch.nn.Module):
        def forward(self, x):
            q = torch.ops.quantized_decomposed.quantize_per_tensor(x, 0.05, 3, -100, 100, torch.int8)
            return torch.ops.quantized_decomposed.dequantize_per_tensor(q, 0.05, 3, -100, 100, torch.int8)

    from torch.ao.quantization.fx import _decomposed  # noqa: F401 - registers the ops used above

    src = tmp_path / "narrow.pt2"
    torch.export.save(torch.export.export(Narrow(), (torch.randn(2, 64) * 8,)), str(src))
    for dst, to in ((tmp_path / "narrow.onnx", "onnx"), (tmp_path / "narrow_torch", "torch")):
        tb.save(tb.load(src), dst, to=to)
        x = {"x": (np.random.default_rng(0).standard_normal((2, 64)) * 8).astype(np.float32)}
        out = tb.verify(src, dst, inputs=x).outputs[0]
        assert out.max_abs == 0 and out.exact == 1.0, out


def test_dynamic_quantization_is_a_listed_blocker(tmp_path):
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e
    from torchao.testing.pt2e._xnnpack_quantizer import XNNPACKQuantizer, get_symmetric_quantization_config

    module, x = torch.nn.Sequential(torch.nn.Linear(8, 4)).eval(), torch.randn(2, 8)
    quantizer = XNNPACKQuantizer().set_global(get_symmetric_quantization_config(is_dynamic=True))
    prepared = prepare_pt2e(torch.export.export(module, (x,)).module(), quantizer)
    prepared(x)
    src = tmp_path / "dynamic.pt2"
    torch.export.save(torch.export.export(convert_pt2e(prepared), (x,)), str(src))
    with pytest.raises(UnsupportedError) as e:
        tb.load(src)
    assert "choose_qparams" in str(e.value) and "dynamic quantization" in str(e.value)
