"""An ONNX BERT as PyTorch's TorchScript-based exporter writes it with dynamic batch and sequence axes (the form
published ONNX language models take): its shapes are computed when it runs (Shape -> Gather -> Concat, an
`expand` asking which entries are -1, a slice of the position table up to the sequence length), and every code
target keeps them dynamic or, for Flax, takes them fixed with input_shapes."""

from __future__ import annotations

import numpy as np
import pytest

import tensorbridge as tb

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")


@pytest.fixture(scope="module")
def bert(tmp_path_factory):
    torch.manual_seed(0)
    config = transformers.BertConfig(vocab_size=200, hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                                     intermediate_size=64)
    model = transformers.BertModel(config).eval()

    class Hidden(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.bert = model

        def forward(self, input_ids, attention_mask):
            return self.bert(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state

    path = tmp_path_factory.mktemp("bert") / "bert.onnx"
    ids, mask = torch.randint(0, 200, (1, 9)), torch.ones(1, 9, dtype=torch.int64)
    axes = {0: "batch", 1: "sequence"}
    torch.onnx.export(Hidden(), (ids, mask), str(path), dynamo=False, opset_version=17,
                      input_names=["input_ids", "attention_mask"], output_names=["hidden"],
                      dynamic_axes={"input_ids": axes, "attention_mask": axes})
    return path


@pytest.mark.parametrize("to,suffix", [("torch", "_torch"), ("pt2", ".pt2"), ("keras", "_keras")])
def test_dynamic_axes_stay_dynamic(bert, to, suffix, tmp_path):
    dest = tmp_path / f"bert{suffix}"
    assert tb.convert(bert, dest, to=to, verify=True).status == "PASS"
    feeds = {"input_ids": np.arange(2 * 5).reshape(2, 5) % 200, "attention_mask": np.ones((2, 5), np.int64)}
    other = tb.verify(bert, dest, inputs=feeds)  # another batch and length than the export's example
    assert other.status == "PASS"


def test_flax_takes_the_dims_fixed(bert, tmp_path):
    shapes = {"input_ids": [1, 9], "attention_mask": [1, 9]}
    with pytest.raises(tb.errors.UnsupportedError, match="--input-shape"):
        tb.convert(bert, tmp_path / "dynamic_flax", to="flax")
    assert tb.convert(bert, tmp_path / "bert_flax", to="flax", verify=True, input_shapes=shapes).status == "PASS"
