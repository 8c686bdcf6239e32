"""Models exported by PyTorch's own ONNX exporters import faithfully: IR == PyTorch."""

from __future__ import annotations

import warnings

import pytest

import tensorbridge as tb
from tensorbridge.verification.compare import compare

torch = pytest.importorskip("torch")
nn = torch.nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1, groups=1)
        self.dw = nn.Conv2d(8, 8, 3, padding=1, groups=8)
        self.bn = nn.BatchNorm2d(8)
        self.norm = nn.LayerNorm(16)
        self.fc = nn.Linear(16, 5)

    def forward(self, x):
        y = nn.functional.hardswish(self.bn(self.dw(torch.relu(self.conv(x)))))
        y = nn.functional.adaptive_avg_pool2d(y, 2).flatten(1)
        y = nn.functional.gelu(self.norm(y.reshape(-1, 2, 16)))
        return torch.softmax(self.fc(y).mean(1), -1)


@pytest.mark.parametrize("dynamo", [False, True])
def test_torch_exported_model_matches_torch(dynamo, tmp_path):
    torch.manual_seed(0)
    model = Net().eval()
    x = torch.randn(2, 3, 8, 8)
    path = tmp_path / "net.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (x,), str(path), input_names=["x"], output_names=["y"], dynamo=dynamo,
                          opset_version=18)
    graph = tb.load(path)
    with torch.no_grad():
        expected = model(x).numpy()
    got = tb.run(graph, {graph.inputs[0].name: x.numpy()})[graph.outputs[0].name]
    r = compare("y", "y", expected, got, rtol=1e-5, atol=0)
    assert r.ok, r
    back = tb.save(graph, tmp_path / "back.onnx")
    assert tb.verify(path, back, rtol=1e-5).ok
