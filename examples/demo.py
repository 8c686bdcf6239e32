"""`make demo`: a real conversion with verification, on a model built here.

1. Build a small residual CNN in PyTorch (seeded random weights, eval mode) and export it
   with PyTorch's own ONNX exporter.
2. Convert it with tensorbridge: ONNX -> IR (.tbir) -> ONNX.
3. Verify each step on the same seeded inputs, and compare the final ONNX model (run by
   onnxruntime) with PyTorch itself.
"""

from __future__ import annotations

import logging
import sys
import warnings
from pathlib import Path

import numpy as np

import tensorbridge as tb

OUT = Path("out/demo")


def build_model():
    import torch
    from torch import nn

    class Block(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.conv1 = nn.Conv2d(c, c, 3, padding=1, bias=False)
            self.bn1 = nn.BatchNorm2d(c)
            self.conv2 = nn.Conv2d(c, c, 3, padding=1, bias=False)
            self.bn2 = nn.BatchNorm2d(c)

        def forward(self, x):
            y = torch.relu(self.bn1(self.conv1(x)))
            return torch.relu(x + self.bn2(self.conv2(y)))

    class SmallResNet(nn.Module):
        def __init__(self, classes=10):
            super().__init__()
            self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, stride=2, padding=1), nn.BatchNorm2d(16), nn.ReLU())
            self.layer1 = Block(16)
            self.down = nn.Sequential(nn.Conv2d(16, 32, 3, stride=2, padding=1), nn.BatchNorm2d(32), nn.SiLU())
            self.layer2 = Block(32)
            self.pool = nn.AdaptiveAvgPool2d(1)
            self.head = nn.Linear(32, classes)

        def forward(self, x):
            x = self.layer2(self.down(self.layer1(self.stem(x))))
            return torch.softmax(self.head(torch.flatten(self.pool(x), 1)), dim=-1)

    torch.manual_seed(0)
    model = SmallResNet().eval()
    with torch.no_grad():  # non-trivial BatchNorm statistics
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.running_mean.uniform_(-0.5, 0.5)
                m.running_var.uniform_(0.5, 1.5)
    return model


def main() -> int:
    import torch

    OUT.mkdir(parents=True, exist_ok=True)
    logging.disable(logging.WARNING)
    model = build_model()
    x = torch.randn(2, 3, 32, 32, generator=torch.Generator().manual_seed(1))
    src = OUT / "small_resnet.onnx"
    print(f"[1/4] exporting a PyTorch SmallResNet with torch.onnx.export -> {src}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (x,), str(src), input_names=["image"], output_names=["probs"],
                          dynamo=False, opset_version=17)

    print("[2/4] tensorbridge: ONNX -> IR (.tbir)")
    graph = tb.load(src)
    print(f"      {len(graph.nodes)} nodes, ops: {graph.op_histogram()}")
    tbir = tb.save(graph, OUT / "small_resnet.tbir")
    print(tb.verify(src, tbir).summary())

    print("[3/4] tensorbridge: IR -> ONNX")
    dst = OUT / "small_resnet.converted.onnx"
    report = tb.convert(tbir, dst, verify=True)
    print(report.summary())

    print("[4/4] the converted ONNX model (onnxruntime) against PyTorch itself")
    from tensorbridge.verification.compare import compare
    from tensorbridge.verification.runners.onnxruntime import OnnxRuntimeRunner

    with torch.no_grad():
        expected = model(x).numpy()
    got = OnnxRuntimeRunner(dst).run({"image": x.numpy()})["probs"]
    final = compare("probs", "probs", expected, got, rtol=1e-5)
    print(f"      max|d| = {final.max_abs:.3g}, max|d|/max|y| = {final.robust_rel:.3g}, "
          f"cosine = {final.cosine:.6f}, top-5 agreement = {final.topk.get('top5', 1):.0%} -> "
          f"{'PASS' if final.ok else 'FAIL'}")
    ok = report.ok and final.ok and np.isfinite(got).all()
    print("demo:", "PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
