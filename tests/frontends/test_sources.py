"""Sources as users have them: formats told by content (whatever the extension), --from where content cannot
tell, TorchScript archives."""

from __future__ import annotations

import shutil
import warnings

import numpy as np
import onnx
import pytest

import tensorbridge as tb
from tensorbridge import frameworks
from tensorbridge.cli.main import main
from tensorbridge.errors import ModelError


class _Net:
    @staticmethod
    def make():
        import torch

        class Net(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.conv = torch.nn.Conv2d(3, 4, 3, padding=1)
                self.fc = torch.nn.Linear(4 * 8 * 8, 5)

            def forward(self, x):
                return self.fc(torch.relu(self.conv(x)).flatten(1))

        torch.manual_seed(0)
        return Net().eval()


@pytest.fixture
def torchscript(tmp_path):
    import torch

    path = tmp_path / "net.pt"  # the extension torch.save uses too: the content tells them apart
    torch.jit.save(torch.jit.trace(_Net.make(), torch.randn(1, 3, 8, 8)), str(path))
    return path


def test_a_torchscript_archive_converts_and_verifies(torchscript, tmp_path, capsys):
    out = tmp_path / "net.onnx"
    assert frameworks.detect(torchscript).name == "torchscript"
    args = ["-q", "convert", str(torchscript), "-o", str(out), "--input-shape", "x=2,3,8,8"]
    assert main(args) == 2 and not out.exists()  # a TorchScript archive is code: it loads only when trusted
    assert "--trust-code" in capsys.readouterr().err
    assert main([*args, "--trust-code"]) == 0
    assert "PASS" in capsys.readouterr().out
    assert [d.dim_value for d in onnx.load(out).graph.input[0].type.tensor_type.shape.dim] == [2, 3, 8, 8]


def test_a_torchscript_archive_without_shapes_asks_for_them(torchscript, tmp_path, capsys):
    out = tmp_path / "net.onnx"
    assert main(["-q", "convert", str(torchscript), "-o", str(out), "--trust-code"]) == 2
    err = capsys.readouterr().err
    assert "--input-shape x=" in err and not out.exists()


def test_scripted_control_flow_reads_as_if(tmp_path, capsys):
    import torch

    class Branchy(torch.nn.Module):
        def forward(self, x):
            if x.sum() > 0:
                return x * 2
            return x - 1

    class Looping(torch.nn.Module):
        def forward(self, x):
            while bool(x.sum() < 10):
                x = x * 2 + 1
            return x

    path = tmp_path / "branchy.pt"
    torch.jit.save(torch.jit.script(Branchy()), str(path))
    graph = tb.load(path, input_shapes={"x": [2, 3]}, trust_code=True)
    assert "If" in graph.op_histogram()
    x = np.random.default_rng(0).standard_normal((2, 3)).astype(np.float32)
    for target, dest in (("onnx", tmp_path / "b.onnx"), ("torch", tmp_path / "b_torch")):
        tb.save(graph, dest, to=target)
        for sample in (np.abs(x), -np.abs(x)):  # both branches
            report = tb.verify(path, dest, inputs={"x": sample}, trust_code=True)
            assert report.ok, report.summary()
    looping = tmp_path / "looping.pt"
    torch.jit.save(torch.jit.script(Looping()), str(looping))
    assert main(["-q", "convert", str(looping), "-o", str(tmp_path / "l.onnx"), "--input-shape", "x=2,3",
                 "--trust-code"]) == 2
    assert "prim::Loop" in capsys.readouterr().err  # beyond PyTorch's own TorchScript converter


@pytest.mark.parametrize("record", ["trace", "script"])
def test_slice_assignments_in_a_torchscript_archive_are_kept(tmp_path, record):
    """`x[:, :, 1:, 1:] = ...` and `x[:, 0] = 3.0` in a traced or scripted program, whose dims TorchScript's
    converter leaves symbolic: written into the tensor as PyTorch does."""
    import torch

    class Assigning(torch.nn.Module):
        def forward(self, x):
            x = x.clone()
            x[:, :, 1:, 1:] = x[:, :, 1:, 1:] * 2
            x[:, 0] = 3.0
            return x

    x = np.random.default_rng(0).standard_normal((2, 3, 4, 5)).astype(np.float32)
    module = Assigning()
    recorded = torch.jit.trace(module, (torch.from_numpy(x),)) if record == "trace" else torch.jit.script(module)
    path = tmp_path / "assigning.pt"
    torch.jit.save(recorded, str(path))
    graph = tb.load(path, input_shapes={"x": list(x.shape)}, trust_code=True)
    got = tb.run(graph, {graph.inputs[0].name: x})[graph.outputs[0].name]
    np.testing.assert_array_equal(got, module(torch.from_numpy(x)).numpy())


def test_traced_size_arithmetic_stays_sizes(tmp_path):
    """A trace records Swin's window padding (`(window - H % window) % window`) as arithmetic on 0-d tensors made
    from sizes; read as the int arithmetic it records (PyTorch's converter would take each for a value from the
    data and fail on the shifted windows)."""
    import torch

    class Windows(torch.nn.Module):
        def forward(self, x):  # [batch, H, W, channels]
            _, h, w, _ = x.shape
            pad_h, pad_w = (4 - h % 4) % 4, (4 - w % 4) % 4
            x = torch.nn.functional.pad(x, (0, 0, 0, pad_w, 0, pad_h))
            x = torch.roll(x, shifts=(-2, -2), dims=(1, 2))
            return x.reshape(x.shape[0], (h + pad_h) // 4, 4, (w + pad_w) // 4, 4, -1).sum(dim=(2, 4))

    x = np.random.default_rng(0).standard_normal((1, 6, 7, 3)).astype(np.float32)
    path = tmp_path / "windows.pt"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the trace's own warnings about sizes turned into tensors
        torch.jit.save(torch.jit.trace(Windows(), (torch.from_numpy(x),)), str(path))
    graph = tb.load(path, input_shapes={"x": list(x.shape)}, trust_code=True)
    got = tb.run(graph, {graph.inputs[0].name: x})[graph.outputs[0].name]
    np.testing.assert_allclose(got, Windows()(torch.from_numpy(x)).numpy(), rtol=1e-6, atol=1e-6)
    dest = tb.save(graph, tmp_path / "windows.onnx")
    assert tb.verify(path, dest, trust_code=True).ok


def test_formats_are_told_by_content(small_cnn_path, tmp_path):
    renamed = tmp_path / "model.bin"
    shutil.copy(small_cnn_path, renamed)
    assert frameworks.detect(renamed).name == "onnx"  # the protobuf's first field, when the name says nothing
    tflite = tb.save(tb.load(small_cnn_path), tmp_path / "m.tflite")
    shutil.copy(tflite, tmp_path / "m.model")
    assert frameworks.detect(tmp_path / "m.model").name == "tflite"
    graph = tb.load(tmp_path / "m.model")
    assert graph.op_histogram()


def test_a_keras_hdf5_file_is_read_whatever_its_extension(tmp_path):
    import keras

    keras.utils.set_random_seed(0)
    inputs = keras.Input((6,))
    model = keras.Model(inputs, keras.layers.Dense(3)(inputs))
    model.save(tmp_path / "m.h5")
    shutil.copy(tmp_path / "m.h5", tmp_path / "m.hdf5")
    graph = tb.load(tmp_path / "m.hdf5")
    x = np.random.default_rng(0).standard_normal((2, 6)).astype(np.float32)
    out = tb.run(graph, {graph.inputs[0].name: x})[graph.outputs[0].name]
    np.testing.assert_allclose(out, model(x), rtol=1e-5, atol=1e-6)


def test_a_file_nothing_tells_names_the_option(tmp_path):
    path = tmp_path / "weights"
    path.write_bytes(b"\xffnot a model")
    with pytest.raises(ModelError, match="--from"):
        tb.load(path)


def test_a_program_writing_its_buffers_carries_them_as_state(tmp_path, capsys):
    """Converted for every call, not only the first: the buffer is state the target takes and returns."""
    import torch

    class Counter(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("count", torch.ones(1))

        def forward(self, x):
            self.count.add_(1)  # the second call computes x * 3: a stateless conversion would keep x * 2
            return x * self.count

    path = tmp_path / "counter.pt2"
    torch.export.save(torch.export.export(Counter(), (torch.randn(2, 3),)), str(path))
    assert main(["convert", str(path), "-o", str(tmp_path / "counter.onnx")]) == 0
    out = capsys.readouterr().out
    assert "carried explicitly: count in" in out and "(call 2)" in out and "PASS" in out
