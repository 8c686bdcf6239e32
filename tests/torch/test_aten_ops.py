"""ATen ops the PyTorch frontend reads beyond the per-op corpus: what published models call."""

from __future__ import annotations

import signal

import numpy as np
import pytest

import tensorbridge as tb
from tensorbridge import trust
from tensorbridge.errors import UnsupportedError
from tensorbridge.verification.harness import runner_for

torch = pytest.importorskip("torch")


def _run_written(graph, dest, feeds, to=None):
    tb.save(graph, dest, to=to)
    with trust.trusting(True):  # a code folder this test wrote
        runner = runner_for(str(dest))
    out = runner.run({name: f for (name, _, _), f in zip(runner.inputs, feeds)})
    return [np.asarray(out[n]) for n in runner.outputs]


def test_attention_over_more_than_four_dims(tmp_path):
    """Twins-style attention on [batch, windows, heads, time, depth]: the windows fold into the batch."""
    class Windows(torch.nn.Module):
        def forward(self, q, k, v):
            return torch.nn.functional.scaled_dot_product_attention(q, k, v)

    rng = np.random.default_rng(0)
    feeds = [rng.standard_normal((2, 3, 4, 5, 8)).astype(np.float32) for _ in range(3)]
    expected = Windows()(*map(torch.from_numpy, feeds)).numpy()
    graph = tb.load(Windows(), example_inputs=tuple(map(torch.from_numpy, feeds)))
    assert "Attention" in graph.op_histogram()
    (got,) = _run_written(graph, tmp_path / "windows.onnx", feeds)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("descending", [True, False])
def test_sort_and_topk_break_ties_by_index(tmp_path, descending):
    """torch.sort (stable) and topk read as TopK; equal values keep their order in ONNX and in torch code."""
    class Ranks(torch.nn.Module):
        def forward(self, x):
            values, order = torch.sort(x, dim=-1, descending=descending, stable=True)
            best, where = torch.topk(x, 2, dim=-1)
            return values, order, best, where

    x = np.array([[1.0, 3.0, 3.0, 0.5, 3.0], [2.0, 2.0, 1.0, 2.0, 0.0]], np.float32)
    expected = [t.numpy() for t in Ranks()(torch.from_numpy(x))]
    graph = tb.load(Ranks(), example_inputs=(torch.from_numpy(x),))
    assert graph.op_histogram().get("TopK") == 2
    for dest, to in ((tmp_path / "ranks.onnx", None), (tmp_path / "ranks_torch", "torch")):
        got = _run_written(graph, dest, [x], to)
        np.testing.assert_array_equal(got[0], expected[0])
        np.testing.assert_array_equal(got[1], expected[1])  # a stable sort: ties in index order
        np.testing.assert_array_equal(got[2], expected[2])
        np.testing.assert_array_equal(got[3], [[1, 2], [0, 1]])  # ONNX's TopK: the lower index among equals


def test_topk_whose_values_nothing_reads(tmp_path):
    """DeepSeek's router reads only topk's indices: the torch code sorts and cuts the indices alone."""
    module = _Fn(lambda x: torch.topk(x, 2, dim=-1).indices * 10 + torch.topk(x, 1, dim=-1, largest=False)[1])
    x = np.array([[1.0, 3.0, 3.0, 0.5], [2.0, 2.0, 1.0, 2.0]], np.float32)
    graph = tb.load(module, example_inputs=(torch.from_numpy(x),))
    got = _run_written(graph, tmp_path / "indices_torch", [x], "torch")[0]
    np.testing.assert_array_equal(got, [[13, 23], [2, 12]])


def test_a_layer_named_after_a_module_that_holds_layers(tmp_path):
    """BEiT's attention module runs a Linear of its own (F.linear with its qkv weight and a bias it assembles)
    besides its `proj` child: the code generator once looked forever for a free name under the module's path."""
    class Attention(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.qkv = torch.nn.Linear(8, 8, bias=False)
            self.q_bias = torch.nn.Parameter(torch.randn(8))
            self.proj = torch.nn.Linear(8, 8)

        def forward(self, x):
            return self.proj(torch.nn.functional.linear(x, self.qkv.weight, self.q_bias))

    class Block(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.attn = Attention()

        def forward(self, x):
            return self.attn(x)

    torch.manual_seed(0)
    model = Block().eval()
    x = np.random.default_rng(0).standard_normal((2, 8)).astype(np.float32)
    graph = tb.load(model, example_inputs=(torch.from_numpy(x),))

    def hung(*_):
        raise TimeoutError("the code generator did not finish")

    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(120)
    try:
        (got,) = _run_written(graph, tmp_path / "block_torch", [x], "torch")
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    np.testing.assert_allclose(got, model(torch.from_numpy(x)).detach().numpy(), rtol=1e-5, atol=1e-6)


def _ints(low, high, *shape):
    return torch.from_numpy(np.random.default_rng(3).integers(low, high, shape))


def _floats(*shape, seed=4):
    return torch.from_numpy(np.random.default_rng(seed).standard_normal(shape).astype(np.float32))


class _Fn(torch.nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *xs):
        return self.fn(*xs)


def _scatter_max(x, i):
    return x.scatter_reduce(1, i, x[:, :3] * 2, "amax", include_self=False)


def _index_put(x, i, v):
    cache = x[None].repeat(2, 1, 1)
    cache[:, i[:2] % 3, 1:] = v[:2, :2] * 3  # a KV cache's update: the indexed dim after a full slice
    return (torch.index_put(x, (i,), v, accumulate=True) + torch.index_put(x, (i[:2], i[1:3] % 3), v[:2, 0])
            + cache.sum(0))


def _slice_assignments(x, y):
    """`x[...] = value` on slices (MViTv2's relative positions), which functionalization writes as copy: what the
    slice held is replaced, cast to x's dtype and broadcast to the slice's shape."""
    x = x.clone()
    x[:, :, 1:, 1:] = x[:, :, 1:, 1:] * 2
    x[:, :, :, :2] = y
    x[0, 0] = 7
    flags = torch.zeros(2, 3, dtype=torch.int64)
    flags[:, 1:] = (y[:, 1:, 0, 0] > 0)
    return x + flags[..., None, None]


def _antialiased(x):
    """F.interpolate with antialias=True (PIL's filters; NaFlexViT's position embeddings), down and up."""
    down = torch.nn.functional.interpolate(x, size=(5, 7), mode="bilinear", antialias=True)
    up = torch.nn.functional.interpolate(x, size=(14, 8), mode="bicubic", antialias=True)
    return down.sum() + up + torch.nn.functional.interpolate(down, size=(14, 8), mode="bicubic", antialias=True)


#: core ATen ops without a decomposition, as models call them: name -> (function, inputs, the ATen op it holds)
CORE_ATEN = {
    "inverse_hyperbolic": (lambda x: torch.asinh(x) + torch.atanh(x * 0.5) + torch.acosh(x.abs() + 1), [_floats(3, 4)],
                           "acosh"),
    "logs_and_trunc": (lambda x: torch.expm1(x) + torch.log1p(x.abs()) + torch.log2(x.abs() + 1)
                       + torch.log10(x.abs() + 1) + torch.trunc(x * 3), [_floats(3, 4)], "trunc"),
    "atan2": (lambda y, x: torch.atan2(y, x), [_floats(4, 5), torch.cat([_floats(3, 5, seed=5), torch.zeros(1, 5)])],
              "atan2"),
    "isinf": (lambda x: torch.isinf(1.0 / x), [torch.tensor([1.0, 0.0, -2.0, 0.0])], "isinf"),
    "shifts": (lambda a: (a << 2) + (a >> 1), [_ints(-40, 40, 3, 4)], "__lshift__"),
    "floor_divide": (lambda a, b: a // b + torch.div(a, b, rounding_mode="floor") * 10,
                     [_ints(-9, 9, 3, 4), _ints(1, 4, 3, 4) * (_ints(0, 2, 3, 4) * 2 - 1)], "floor_divide"),
    "flip": (lambda x: torch.flip(x, dims=(0, 2)), [_floats(2, 3, 4)], "flip"),
    "scatter": (lambda x, i: x.scatter(1, i, x[:, :3]) + x.scatter_add(1, i, x[:, :3]) + x.scatter(1, i, 2.5),
                [_floats(2, 5), _ints(0, 5, 2, 3)], "scatter"),
    "scatter_reduce": (_scatter_max, [_floats(2, 5), _ints(0, 5, 2, 3)], "scatter_reduce"),
    "index_put": (_index_put, [_floats(5, 3), torch.tensor([4, 0, 4, 2]), _floats(4, 3)], "index_put"),
    "slice_scatter": (lambda x, y: torch.slice_scatter(x, y, dim=1, start=1, end=3), [_floats(2, 5), _floats(2, 2)],
                      "slice_scatter"),
    "diagonal": (lambda x: torch.diagonal(x, offset=1, dim1=0, dim2=2) + torch.diagonal(x, -1, 2, 0),
                 [_floats(4, 2, 4)], "diagonal"),
    "grid_sample": (lambda x, g: torch.nn.functional.grid_sample(x, g, padding_mode="border", align_corners=False),
                    [_floats(1, 2, 5, 6), _floats(1, 3, 4, 2) * 0.8], "grid_sampler_2d"),
    "pool3d": (lambda x: torch.nn.functional.avg_pool3d(x, 2) + torch.nn.functional.max_pool3d(x, 2)
               + torch.nn.functional.adaptive_avg_pool3d(x, 1), [_floats(1, 2, 4, 4, 6)], "avg_pool3d"),
    "group_norm": (torch.nn.GroupNorm(2, 4), [_floats(2, 4, 3, 3)], "native_group_norm"),
    "unfold": (lambda x: x.unfold(2, 3, 2).sum(-1) * x.unfold(-1, 2, 1).mean((-3, -2, -1))[:, :, None, None]
               + x.unfold(1, 2, 2).amax(), [_floats(2, 3, 9, 5)], "unfold"),
    "slice_assignment": (_slice_assignments, [_floats(2, 3, 4, 5), _floats(2, 3, 1, 2)], "copy_"),
    "variance": (lambda x: x.var(dim=(1, 2), keepdim=True, unbiased=False) + x.var(1).mean()  # EvoNorm
                 + torch.std(x, dim=-1, correction=0)[..., None] + x.std() + torch.var(x), [_floats(2, 3, 4)], "var"),
    "index_inner_dims": (lambda x, i, j, k: x[:, i, j] * x[:, :, i, j].sum((1, 2, 3))[:, None, None, None]  # VOLO
                         + x[k, :, :, j].sum((1, 2))[:, None, None, None],
                         [_floats(2, 3, 4, 5), torch.tensor([[0, 2], [1, 2]]), torch.tensor([1, 3]),
                          torch.tensor([1, 0])], "index"),
    "adaptive_average_bins": (lambda x: torch.nn.functional.adaptive_avg_pool2d(x, (3, 4))  # CSATv2: 64 -> 7
                              + torch.nn.functional.adaptive_avg_pool3d(x.reshape(1, 2, 7, 2, 5), (3, 1, 4))[:, :, :, 0]
                              + torch.nn.functional.adaptive_avg_pool1d(x.flatten(2), 12).reshape(1, 2, 3, 4),
                              [_floats(1, 2, 7, 10)], "adaptive_avg_pool2d"),
    "type_promotion": (lambda a, b, x: a / b + a * 0.5 + torch.arange(4) / 4 + (x + (x > 0)) * 2  # BEiT's bool mask
                       + torch.maximum(a, x) + a % 3 + x ** 2, [_ints(-9, 9, 3, 4), _ints(1, 5, 3, 4), _floats(3, 4)],
                       "div"),
    "pad_modes": (lambda x: torch.nn.functional.pad(x, (1, 2, 0, 1), "reflect")  # tresnet's anti-aliasing
                  + torch.nn.functional.pad(x, (1, 2, 0, 1), mode="replicate")
                  + torch.nn.functional.pad(x, (1, 2, 0, 1), value=0.5), [_floats(1, 2, 5, 5)], "pad"),
    "histc": (lambda x, i: torch.histc(i.float(), bins=4, min=0, max=3)  # tokens per expert (Mixtral's routing)
              + torch.histc(x, bins=4) + torch.histc(x, bins=4, min=-0.5, max=0.5) * 10, [_floats(3, 5),
                                                                                         _ints(0, 4, 2, 6)], "histc"),
    "empty": (lambda x: torch.empty_like(x).fill_(1.5) * x + torch.empty(2, 3).copy_(x[:, :3]).sum(),
              [_floats(2, 4)], "empty_like"),
    "determinant": (lambda x: torch.linalg.det(x), [_floats(2, 3, 3)], "linalg_det"),
    "antialiased_resize": (lambda x: _antialiased(x), [_floats(1, 2, 9, 11)], "_upsample_bicubic2d_aa"),
    "one_head_attention": (lambda q, k, m: torch.nn.functional.scaled_dot_product_attention(q, k, k * 2)  # SAM
                           + torch.nn.functional.scaled_dot_product_attention(q, k, k, attn_mask=m),
                           [_floats(2, 5, 4), _floats(2, 6, 4, seed=5), _floats(2, 5, 6, seed=6)],
                           "scaled_dot_product_attention"),
    "mask_counts": (lambda ids: ids.gather(1, ids.ne(1).sum(1, keepdim=True) - 1) * 100  # BART's last real token
                    + ids.ne(1).sum() + (ids > 4).to(torch.int8).sum(1, keepdim=True) * 10
                    + (ids > 3).prod(1, keepdim=True), [torch.tensor([[3, 4, 1, 1], [5, 6, 7, 1]])], "sum"),
    "nonzero": (lambda x: torch.nonzero(x > 0.3).float().sum(0) + torch.nonzero(x > 0.3).shape[0],
                [_floats(3, 4)], "nonzero"),
    "boolean_mask": (lambda x: (x[x > 0] * 2).sum() + x[x[:, 0] > 0].sum(0).sum() + torch.masked_select(x, x < 0).sum(),
                     [_floats(3, 4)], "index"),
}


@pytest.mark.parametrize("sorted_", [True, False])
def test_unique_reads_as_torch_computes(sorted_):
    """torch.unique (its size known only at run time) with the inverse indices in the input's shape and counts;
    the size read on through later ops."""
    module = _Fn(lambda x: tuple(t.float() * 2 for t in torch.unique(x, sorted=sorted_, return_inverse=True,
                                                                       return_counts=True)))
    x = torch.tensor([[3, 1, 3], [2, 1, 5]])
    graph = tb.load(torch.export.export(module, (x,)))
    got = tb.run(graph, {graph.inputs[0].name: x.numpy()})
    for value, expected in zip(graph.outputs, module(x)):
        np.testing.assert_array_equal(got[value.name], expected.numpy())


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_unique_along_a_dim_reads_as_torch_computes(dim):
    """torch.unique(x, dim=d): the distinct slices in lexicographic order, each slice's index, the counts."""
    module = _Fn(lambda x: tuple(t.float() * 2 for t in torch.unique(x, dim=dim, return_inverse=True,
                                                                       return_counts=True)))
    x = torch.tensor([[3, 1, 3, 1], [2, 1, 2, 1], [3, 1, 3, 1], [0, 4, 0, 4]])
    graph = tb.load(torch.export.export(module, (x,)))
    got = tb.run(graph, {graph.inputs[0].name: x.numpy()})
    for value, expected in zip(graph.outputs, module(x)):
        np.testing.assert_array_equal(got[value.name], expected.numpy())


@pytest.mark.parametrize("name", sorted(CORE_ATEN))
def test_core_aten_op_reads_as_torch_computes(name):
    fn, inputs, aten = CORE_ATEN[name]
    module = fn if isinstance(fn, torch.nn.Module) else _Fn(fn)
    exported = torch.export.export(module.eval(), tuple(inputs))
    expected = module(*inputs).detach().numpy()
    called = set()
    for program in (exported, exported.run_decompositions()):  # as exported, and in core ATen
        called |= {getattr(n.target, "__name__", "").split(".")[0] for n in program.graph.nodes
                   if n.op == "call_function"}
        graph = tb.load(program)
        got = tb.run(graph, {v.name: x.numpy() for v, x in zip(graph.inputs, inputs)})[graph.outputs[0].name]
        assert got.dtype == expected.dtype and got.shape == expected.shape
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)
    assert aten in called, sorted(called)


def test_grouped_matrix_product_of_experts():
    """transformers' grouped matmul op (what its mixture-of-experts layers call under torch.export): the rows of
    each expert's group times that expert's matrix, an empty group included."""
    pytest.importorskip("transformers.integrations.moe")  # registers torch.ops.transformers.grouped_mm_fallback
    weight = _floats(4, 6, 5)
    module = _Fn(lambda x, offs: torch.ops.transformers.grouped_mm_fallback(x, weight, offs))
    inputs = (_floats(10, 6, seed=2), torch.tensor([2, 5, 5, 10], dtype=torch.int32))
    graph = tb.load(torch.export.export(module, inputs))
    got = tb.run(graph, {v.name: x.numpy() for v, x in zip(graph.inputs, inputs)})[graph.outputs[0].name]
    np.testing.assert_allclose(got, module(*inputs).numpy(), rtol=1e-5, atol=1e-5)


class _SegNetPooling(torch.nn.Module):
    """SegNet's decoder: max pooling that returns where each maximum was, unpooling back to those positions (to
    the default and to a given size), and a padded ceil-mode pool's indices read as numbers."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3, padding=1)
        self.pool = torch.nn.MaxPool2d(2, 2, return_indices=True)
        self.unpool = torch.nn.MaxUnpool2d(2, 2)
        self.padded = torch.nn.MaxPool2d(3, 2, padding=1, ceil_mode=True, return_indices=True)

    def forward(self, x):
        even, where = self.pool(x[:, :, :8, :8])
        odd, odd_where = self.pool(self.conv(x))
        near, near_where = self.padded(x)
        return (self.unpool(even * 2, where), self.unpool(odd, odd_where, output_size=(9, 9)),
                near + near_where.float())


@pytest.mark.parametrize("to", ["onnx", "torch", "keras", "tflite", "flax"])
def test_max_pool_indices_and_unpooling_reach_every_target(to, tmp_path):
    """PyTorch counts pooling indices within each channel plane, ONNX over the whole tensor: read as ONNX's, the
    indices round-trip through max_unpool, and every target computes them (F.max_pool2d's own in PyTorch code, the
    window's taps elsewhere)."""
    if to == "flax":
        pytest.importorskip("flax")
    module = _SegNetPooling().eval()
    x = _floats(1, 3, 9, 9)
    graph = tb.load(torch.export.export(module, (x,)))
    dest = tmp_path / {"onnx": "model.onnx", "tflite": "model.tflite"}.get(to, f"model_{to}")
    for got, expected in zip(_run_written(graph, dest, [x.numpy()], to), module(x)):
        np.testing.assert_allclose(got, expected.detach().numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("to", ["onnx", "torch", "keras", "tflite", "flax"])
def test_clamp_to_tensor_bounds_reaches_every_target(to, tmp_path):
    """torch.clamp with tensor bounds (PhiMoE's router clamps scores to a per-token threshold): ONNX's Clip takes
    scalar bounds only, so it is written there as Max and Min, which broadcast."""
    if to == "flax":
        pytest.importorskip("flax")
    module = _Fn(lambda x: torch.clamp(x, min=x.amax(-1, keepdim=True) * 0.5) + x.clamp(max=x[:1] * 0.3))
    x = _floats(3, 6)
    graph = tb.load(torch.export.export(module, (x,)))
    dest = tmp_path / {"onnx": "model.onnx", "tflite": "model.tflite"}.get(to, f"model_{to}")
    (got,) = _run_written(graph, dest, [x.numpy()], to)
    np.testing.assert_allclose(got, module(x).numpy(), rtol=1e-6, atol=1e-6)


class _IntegerMasks(torch.nn.Module):
    """LongT5's local attention mask: logical ops and comparisons on int64 masks, a bool mask compared with 0."""

    def forward(self, mask, x):
        both = torch.logical_and(mask[:, :, None], mask[:, None, :])
        scores = torch.where(both > 0, 0.0, -1e4) + x
        kept = (mask > 0) & (x.sum(-1) > 0)
        return scores, torch.logical_not(mask).float() + (mask == True).float() + (kept > False).float()  # noqa: E712


@pytest.mark.parametrize("to", ["onnx", "torch", "keras", "tflite", "flax"])
def test_logic_on_integer_masks_reaches_every_target(to, tmp_path):
    """PyTorch takes a non-zero integer as true in logical ops and compares a bool with a number as numbers; the
    IR's And/Not take booleans and its order comparisons numbers, so operands are cast as PyTorch reads them."""
    if to == "flax":
        pytest.importorskip("flax")
    module = _IntegerMasks()
    mask, x = torch.tensor([[1, 1, 0, 3]]), _floats(1, 4, 4)
    graph = tb.load(torch.export.export(module, (mask, x)))
    dest = tmp_path / {"onnx": "model.onnx", "tflite": "model.tflite"}.get(to, f"model_{to}")
    for got, expected in zip(_run_written(graph, dest, [mask.numpy(), x.numpy()], to), module(mask, x)):
        np.testing.assert_allclose(got, expected.numpy(), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("to", ["onnx", "torch", "keras", "tflite", "flax"])
def test_antialiased_resize_reaches_every_target(to, tmp_path):
    """PyTorch's antialiased resize is PIL's: ONNX's Resize with antialias, taps past the edge excluded and, for
    cubic, a = -0.5; targets without it get the catalogue's taps."""
    if to == "flax":
        pytest.importorskip("flax")
    module, x = _Fn(_antialiased), _floats(1, 2, 9, 11)
    graph = tb.load(torch.export.export(module, (x,)))
    dest = tmp_path / {"onnx": "model.onnx", "tflite": "model.tflite"}.get(to, f"model_{to}")
    (got,) = _run_written(graph, dest, [x.numpy()], to)
    np.testing.assert_allclose(got, module(x).numpy(), rtol=1e-5, atol=1e-5)


class _AutocastBlocks(torch.nn.Module):
    """EfficientViT's attention turns autocast off for a block; a block under bfloat16 autocast computes its linear
    layer in bfloat16 (torch.export keeps each block as a higher-order op)."""

    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(4, 4)

    def forward(self, x):
        with torch.autocast(device_type="cpu", enabled=False):
            full = torch.relu(self.linear(x.float())) + 1
        with torch.autocast(device_type="cpu", dtype=torch.bfloat16):
            half = self.linear(full)
        return full * 3, half


def test_autocast_blocks_read_as_autocast_runs_them():
    module, x = _AutocastBlocks().eval(), _floats(3, 4)
    graph = tb.load(module, example_inputs=(x,))
    got = tb.run(graph, {graph.inputs[0].name: x.numpy()})
    for value, expected in zip(graph.outputs, module(x)):
        assert got[value.name].dtype == np.dtype(str(expected.dtype).removeprefix("torch."))
        np.testing.assert_allclose(np.asarray(got[value.name], np.float32), expected.float().detach().numpy(),
                                   rtol=1e-5, atol=1e-6)


def test_attention_mask_broadcast_over_the_keys():
    """A mask with one column for every key ([B, 1, T, 1]) broadcasts, as torch does (the IR's Attention, like
    ONNX's, would pad a short mask with -inf); bool (a padded query sees every key) and additive."""
    def attend(q, k, v, keep):
        hidden = torch.where(keep, 0.0, -2.0)
        return (torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=keep | True)
                + torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=hidden))
    inputs = (_floats(2, 2, 5, 4), _floats(2, 2, 5, 4, seed=3), _floats(2, 2, 5, 4, seed=4),
              torch.tensor([True, True, True, False, False]).reshape(1, 1, 5, 1).expand(2, 1, 5, 1).clone())
    module = _Fn(attend)
    graph = tb.load(torch.export.export(module, inputs))
    got = tb.run(graph, {v.name: x.numpy() for v, x in zip(graph.inputs, inputs)})[graph.outputs[0].name]
    np.testing.assert_allclose(got, module(*inputs).numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("size", [(3, 2), (5, 7), 4])
def test_adaptive_max_pooling_to_any_size(size):
    """Bins that overlap or differ in size (7 -> 3, BAT's attention pooling), equal bins, and one global bin."""
    module, x = _Fn(lambda t: torch.nn.functional.adaptive_max_pool2d(t, size)), _floats(2, 3, 7, 8)
    graph = tb.load(torch.export.export(module, (x,)))
    got = tb.run(graph, {graph.inputs[0].name: x.numpy()})[graph.outputs[0].name]
    np.testing.assert_array_equal(got, module(x).numpy())


class _CountedExperts(torch.nn.Module):
    """JetMoE's experts: tokens sorted by their expert and split by each expert's count, read with .tolist()."""

    def __init__(self):
        super().__init__()
        rng = np.random.default_rng(2)
        self.router = torch.nn.Linear(4, 3)
        self.weight = torch.nn.Parameter(torch.from_numpy(rng.standard_normal((3, 5, 4)).astype(np.float32)))
        with torch.no_grad():
            self.router.weight.copy_(torch.from_numpy(rng.standard_normal((3, 4)).astype(np.float32)))
            self.router.bias.zero_()

    def forward(self, x):
        expert = self.router(x).argmax(-1)
        counts = (expert[:, None] == torch.arange(3)).long().sum(0).tolist()
        order = expert.sort(stable=True).indices
        parts = x[order].split(counts, 0)
        out = torch.cat([torch.nn.functional.linear(p, self.weight[i]) for i, p in enumerate(parts)], 0)
        return torch.zeros(x.shape[0], 5).index_add(0, order, out)


@pytest.mark.parametrize("to, dest", [(None, "experts.onnx"), ("torch", "experts_torch"), ("keras", "experts_keras"),
                                      ("tflite", "experts.tflite")])
def test_sizes_read_from_the_data_split_on_every_target(tmp_path, to, dest):
    """An integer read into Python (.tolist()) and used as a size is a size computed from the data; a target
    writing splits of constant sizes gets one slice per part instead."""
    module, x = _CountedExperts().eval(), _floats(9, 4)
    expected = module(x).detach().numpy()
    assert len(set(module.router(x).argmax(-1).tolist())) == 3  # every expert has tokens
    graph = tb.load(module, example_inputs=(x,))
    np.testing.assert_allclose(tb.run(graph, {graph.inputs[0].name: x.numpy()})[graph.outputs[0].name], expected,
                               rtol=1e-5, atol=1e-6)
    (got,) = _run_written(graph, tmp_path / dest, [x.numpy()], to)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


def test_sizes_read_from_the_data_are_named_where_a_target_cannot_hold_them(tmp_path):
    pytest.importorskip("flax")
    module, x = _CountedExperts().eval(), _floats(9, 4)
    with pytest.raises(UnsupportedError, match="computed from the data when the model runs"):
        tb.save(tb.load(module, example_inputs=(x,)), tmp_path / "experts_flax", to="flax")


class _MaskedAssignment(torch.nn.Module):
    """X-MOD's per-language adapters (`h[ids == i] = adapter(h[ids == i])`), a masked fill and (`raised`) a masked
    += over every dim."""

    def __init__(self, raised: bool = True):
        super().__init__()
        self.adapter = torch.nn.Linear(4, 4)
        self.raised = raised

    def forward(self, h, ids):
        h = h.clone()
        chosen = ids == 1
        h[chosen] = self.adapter(h[chosen])
        filled, raised = h.clone(), h.clone()
        filled[h > 0.5] = 0.0
        if not self.raised:
            return h, filled
        raised[h > 0] += 2.0
        return h, filled, raised


# TensorFlow's TFLite converter fails on the masked += over every dim (its NonZero of a 3-D mask, decomposed
# for LiteRT, then a scatter): a clean error, listed in issue 14's remains
@pytest.mark.parametrize("to, dest", [(None, "masked.onnx"), ("torch", "masked_torch"), ("keras", "masked_keras"),
                                      ("tflite", "masked.tflite")])
def test_masked_assignments(tmp_path, to, dest):
    torch.manual_seed(0)
    module, h, ids = _MaskedAssignment(raised=to != "tflite").eval(), _floats(3, 5, 4), torch.tensor([1, 0, 1])
    expected = [t.detach().numpy() for t in module(h, ids)]
    graph = tb.load(module, example_inputs=(h, ids))
    for got, want in zip(_run_written(graph, tmp_path / dest, [h.numpy(), ids.numpy()], to), expected):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


class _InterleavedRotary(torch.nn.Module):
    """Wan's rotary embedding: the rotated pairs written into every other element of an empty tensor, and a
    strided write that stops before the end (start, end and step all given)."""

    def forward(self, x, cos, sin):
        x1, x2 = x[..., 0::2], x[..., 1::2]
        out = torch.empty_like(x)
        out[..., 0::2] = x1 * cos - x2 * sin
        out[..., 1::2] = x1 * sin + x2 * cos
        out[:, 1:5:3] = out[:, 1:5:3] * 2
        return out


@pytest.mark.parametrize("to", ["onnx", "torch", "pt2", "keras", "tflite", "flax"])
def test_strided_slice_assignment_reaches_every_target(to, tmp_path):
    if to == "flax":
        pytest.importorskip("flax")
    module = _InterleavedRotary()
    feeds = (_floats(2, 6, 8), _floats(2, 6, 4), _floats(2, 6, 4))
    graph = tb.load(torch.export.export(module, feeds))
    assert "ScatterElements" in graph.op_histogram()
    dest = tmp_path / {"onnx": "model.onnx", "tflite": "model.tflite", "pt2": "model.pt2"}.get(to, f"model_{to}")
    (got,) = _run_written(graph, dest, [f.numpy() for f in feeds], to)
    np.testing.assert_allclose(got, module(*feeds).numpy(), rtol=1e-6, atol=1e-6)


class _Patchify3D(torch.nn.Module):
    """CogVideoX's unpatchify (a 7-dim reshape and permute, flattened back to 5 dims) and Wan's (8 dims, whose
    permutation keeps no neighbours together but moves two axes of size 1)."""

    def forward(self, x):
        batch, frames, channels, height, width = x.shape
        patches = x.permute(0, 1, 3, 4, 2).reshape(batch, frames, height // 2, width // 2, channels, 2, 2)
        cog = patches.permute(0, 1, 4, 2, 5, 3, 6).flatten(5, 6).flatten(3, 4)
        wan = x.reshape(batch, frames, height // 2, width // 2, 1, 2, 2, channels).permute(0, 7, 1, 4, 2, 5, 3, 6)
        return cog * 2, wan.flatten(6, 7).flatten(4, 5).flatten(2, 3)


@pytest.mark.parametrize("to", ["onnx", "keras", "tflite"])
def test_transpose_of_seven_dims_reaches_every_target(to, tmp_path):
    """LiteRT's TRANSPOSE takes 6 dims: the axes that move together move as one, axes of size 1 are dropped, and
    no tensor of more dims is made."""
    x = _floats(1, 2, 3, 4, 4)
    graph = tb.load(torch.export.export(_Patchify3D(), (x,)))
    dest = tmp_path / {"onnx": "model.onnx", "tflite": "model.tflite"}.get(to, f"model_{to}")
    for got, expected in zip(_run_written(graph, dest, [x.numpy()], to), _Patchify3D()(x)):
        np.testing.assert_array_equal(got, expected.numpy())


def test_python_deciding_on_input_values_is_refused_with_what_to_do():
    """Lumina2 hashes lengths read from its mask: torch.export cannot trace it, and the error says what can."""
    from tensorbridge.errors import ModelError

    class LengthsDecide(torch.nn.Module):
        def forward(self, x, mask):
            return x * 2 if len(set(mask.sum(-1).tolist())) > 1 else x

    with pytest.raises(ModelError, match="reads values out of tensors .* torch.cond"):
        tb.load(LengthsDecide(), example_inputs=(_floats(2, 3), torch.ones(2, 3, dtype=torch.int64)))
