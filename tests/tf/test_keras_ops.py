"""keras.ops calls in functional models (ops.add, x * 2.0, x[:, ::-1], ops.dot_product_attention ...) are read
by the Keras frontend, so generated Keras code can be a source again. Checked against Keras at 1e-5."""

from __future__ import annotations

import numpy as np
import pytest

import tensorbridge as tb
from tensorbridge.cli.main import main

keras = pytest.importorskip("keras")
torch = pytest.importorskip("torch")
from keras import layers, ops  # noqa: E402
from onnx import TensorProto, helper  # noqa: E402

from tests.ops import onnx_models  # noqa: E402


def _ops_model():
    keras.utils.set_random_seed(0)
    x = keras.Input((4, 6), name="x")
    h = layers.Dense(6)(x)
    y = ops.clip(ops.add(np.ones((6,), np.float32), h), 0.0, 2.0) - ops.relu6(h) * 0.5
    y = ops.mean(ops.expand_dims(ops.reshape(y, (-1, 24)), 1), axis=1) * 2.0
    a, b = ops.split(y, 2, axis=-1)
    z = ops.concatenate([a, ops.take(b, np.array([0, 3]), axis=1), ops.flip(a, axis=1)], axis=-1)
    z = ops.pad(ops.transpose(ops.stack([z, ops.exp(z)], axis=1), (0, 2, 1)), ((0, 0), (1, 1), (0, 0)))
    z = ops.sum(ops.softmax(z, axis=1), axis=-1, keepdims=True) + ops.gelu(z) + ops.cast(ops.greater(z, 0.1), "float32")
    return keras.Model(x, z, name="ops_model"), {"x": np.random.default_rng(0).standard_normal((2, 4, 6), np.float32)}


def _indexing_model():
    img = keras.Input((5, 6, 3), name="img")
    y = img[:, ::-1, 1:5, 0] + img[..., 2][:, :, 1:5] - img[:, -1:, 1:5, None, 1][:, :, :, 0]
    return keras.Model(img, y, name="indexing"), {"img": np.random.default_rng(1).standard_normal((2, 5, 6, 3),
                                                                                                   np.float32)}


def _recurrent_model():
    keras.utils.set_random_seed(0)
    x = keras.Input((7, 5), name="seq")
    seq, h, c = layers.LSTM(8, return_sequences=True, return_state=True, go_backwards=True)(x)
    last = layers.GRU(4, go_backwards=True)(seq)
    return keras.Model(x, [ops.concatenate([h, c, last], axis=-1), seq], name="recurrent"), \
        {"seq": np.random.default_rng(2).standard_normal((2, 7, 5), np.float32)}


def _masked_attention_model():
    """ops.dot_product_attention with a mask that hides every key from one query: Keras averages the values."""
    keras.utils.set_random_seed(0)
    x = keras.Input((5, 2, 4), name="x")
    mask = np.ones((1, 2, 5, 5), bool)
    mask[:, :, 1] = False
    y = ops.dot_product_attention(x, layers.Dense(4)(x), layers.Dense(4)(x), mask=mask)
    return keras.Model(x, y, name="masked_attention"), \
        {"x": np.random.default_rng(3).standard_normal((2, 5, 2, 4), np.float32)}


def _preprocessing_model():
    """keras.io's image classifiers as written: augmentation, Resizing and Rescaling inside the model."""
    keras.utils.set_random_seed(0)
    augment = keras.Sequential([layers.RandomFlip("horizontal"), layers.RandomRotation(0.1), layers.RandomZoom(0.1)])
    x = keras.Input((20, 24, 3), name="image")
    y = layers.Rescaling(1.0 / 255)(layers.Resizing(16, 16)(augment(x)))
    y = layers.MaxPooling2D()(layers.Conv2D(4, 3, padding="same", activation="relu")(y))
    y = layers.Dense(3)(layers.GlobalAveragePooling2D()(y))
    return keras.Model(x, y, name="preprocessing"), \
        {"image": np.random.default_rng(4).uniform(0, 255, (2, 20, 24, 3)).astype(np.float32)}


def _mask_counting_model():
    """Counts and averages of masks and integers, which Keras takes in int32 and float32."""
    x = keras.Input((5,), name="x")
    positive = ops.greater(x, 0.0)
    counts = ops.cast(ops.sum(positive, axis=1, keepdims=True), "float32")
    share = ops.mean(ops.cast(positive, "int32"), axis=1, keepdims=True)
    return keras.Model(x, x * counts + share + ops.cast(ops.prod(positive, axis=1, keepdims=True), "float32"),
                       name="mask_counts"), {"x": np.random.default_rng(5).standard_normal((3, 5), np.float32)}


@pytest.mark.parametrize("build", [_ops_model, _indexing_model, _recurrent_model, _masked_attention_model,
                                   _preprocessing_model, _mask_counting_model])
def test_functional_models_with_ops_convert(build, tmp_path):
    model, feeds = build()
    src = tmp_path / f"{model.name}.keras"
    model.save(src)
    graph = tb.load(src)
    for to in ("onnx", "torch", "keras"):
        dst = tb.save(graph, tmp_path / (f"{model.name}.onnx" if to == "onnx" else f"{model.name}_{to}"), to=to)
        report = tb.verify(src, dst, inputs=feeds, rtol=1e-5)
        assert report.ok, report.summary()


@pytest.mark.parametrize("name", ["mobilenet_v2", "transformer_encoder", "lstm_tagger", "gpt2"])
def test_generated_keras_code_is_a_source_again(name, tmp_path):
    """PyTorch model -> Keras code -> IR -> ONNX, compared with the first ONNX export."""
    from tests.models.torch_zoo import imported

    _, args, graph = imported(name)
    src = tb.save(graph, tmp_path / f"{name}.onnx")
    folder = tb.save(graph, tmp_path / f"{name}_keras", to="keras")
    again = tb.save(tb.load(folder), tmp_path / f"{name}_again.onnx")
    feeds = {v.name: a.numpy() for v, a in zip(graph.inputs, args)}
    report = tb.verify(src, again, inputs=feeds, rtol=1e-5)
    assert report.ok, report.summary()


def test_unsupported_ops_are_all_listed(tmp_path, capsys):
    x = keras.Input((4,), name="x")
    model = keras.Model(x, ops.searchsorted(ops.sort(x)[0], x) + layers.Dense(4)(x))
    src = tmp_path / "sort.keras"
    model.save(src)
    assert main(["-q", "convert", str(src), "-o", str(tmp_path / "out.onnx")]) == 2
    err = capsys.readouterr().err
    assert "SearchSorted" in err and "Sort" in err and "keras.ops call" in err
    assert not (tmp_path / "out.onnx").exists()


def test_layer_names_never_collide_with_the_names_keras_gives_op_calls():
    """Keras names an ops.matmul call "matmul_<n>" from a process-wide counter: a source node so named (Paddle's
    "matmul_33") gets another layer name; other names are kept."""
    from tensorbridge.backends.keras.codegen import LayerNamer

    namer = LayerNamer()
    assert namer.name("matmul_33") == "matmul_33_layer"
    assert namer.name("add") == "add_layer"
    assert namer.name("dense_1") == "dense_1"


@keras.saving.register_keras_serializable(package="tests")
class ClassToken(layers.Layer):
    """keras_hub's ViT class token: tiled by the batch size, read in Python."""

    def build(self, shape):
        self.token = self.add_weight(shape=(1, 1, shape[-1]), initializer="random_normal", name="token")

    def call(self, x):
        return ops.concatenate([ops.tile(self.token, (ops.shape(x)[0], 1, 1)), x], axis=1)


def test_a_layer_computing_with_the_batch_size_is_traced_at_batch_one(tmp_path, caplog):
    """A custom layer that tiles a token by the batch size in Python (keras_hub's ViT) cannot be traced on an open
    batch: it is traced at batch 1, the model's batch is fixed there, and the reading says so."""
    keras.utils.set_random_seed(0)
    x_in = keras.Input((5, 8), name="patches")
    model = keras.Model(x_in, layers.Dense(4)(ClassToken(name="cls")(x_in)))
    src = tmp_path / "token.keras"
    model.save(src)
    x = np.random.default_rng(0).standard_normal((1, 5, 8)).astype(np.float32)
    with caplog.at_level("WARNING"):
        graph = tb.load(model)
    assert graph.inputs[0].shape[0] == 1 and "batch size is fixed at 1" in caplog.text and "cls" in caplog.text
    np.testing.assert_allclose(tb.run(graph, {graph.inputs[0].name: x})[graph.outputs[0].name], np.asarray(model(x)),
                               rtol=1e-5, atol=1e-6)
    dst = tb.save(graph, tmp_path / "token.onnx")
    assert tb.verify(src, dst, inputs={"patches": x}).ok


def test_layers_traced_before_the_batch_is_fixed_are_traced_again_at_batch_one():
    """Swin's patch embedding reshapes by `ops.shape(x)[0]`, read while the batch is open as the input's own dim;
    once a later layer fixes the batch at 1, that reshape (traced as (None, -1, c)) would leave two dims open: the
    layer is traced again at batch 1."""
    @keras.saving.register_keras_serializable(package="tests")
    class Flatten(layers.Layer):
        def call(self, x):
            return ops.reshape(x, (ops.shape(x)[0], -1, ops.shape(x)[-1]))

    keras.utils.set_random_seed(0)
    x_in = keras.Input((4, 2, 8), name="patches")
    model = keras.Model(x_in, layers.Dense(4)(ClassToken()(Flatten()(x_in))))
    x = np.random.default_rng(0).standard_normal((1, 4, 2, 8)).astype(np.float32)
    graph = tb.load(model)
    assert graph.inputs[0].shape[0] == 1
    np.testing.assert_allclose(tb.run(graph, {graph.inputs[0].name: x})[graph.outputs[0].name], np.asarray(model(x)),
                               rtol=1e-5, atol=1e-6)


@keras.saving.register_keras_serializable(package="tests")
def gelu_approximate(x):
    """A custom activation function, as keras_hub registers its own."""
    return keras.activations.gelu(x, approximate=True)


@keras.saving.register_keras_serializable(package="tests")
class PositionTable(layers.Layer):
    """keras_hub's position embedding: a learned table sliced to the sequence length, known only with the input."""

    def build(self, shape):
        self.table = self.add_weight(shape=(32, shape[-1]), initializer="random_normal", name="table")

    def call(self, x):
        return ops.slice(self.table, (0, 0), (ops.shape(x)[1], ops.shape(x)[2]))


def _text_encoder():
    """A keras_hub-style text encoder: open sequence length, a padding mask given by keyword to attention."""
    keras.utils.set_random_seed(0)
    ids, padding = keras.Input((None,), dtype="int32", name="token_ids"), keras.Input((None,), dtype="int32",
                                                                                       name="padding_mask")
    x = layers.Embedding(50, 16)(ids)
    x = x + PositionTable(name="positions")(x)
    mask = ops.expand_dims(ops.cast(padding, "bool"), 1)  # [B, 1, S]: one row for every query
    x = x + layers.MultiHeadAttention(2, 8, name="attention")(query=x, value=x, attention_mask=mask)
    return keras.Model([ids, padding], layers.Dense(16, activation=gelu_approximate)(x), name="text_encoder")


def test_a_keras_hub_style_encoder_converts_once_its_input_shapes_are_given(tmp_path):
    """Custom layers that compute with the open sequence length are traced once the input shapes are given (and
    the refusal without them says so); a custom activation function is traced; attention's keyword arguments are
    matched by identity; a padding mask shared by every query reaches onnxruntime, which takes one row per query."""
    model = _text_encoder()
    src = tmp_path / "encoder.keras"
    model.save(src)
    with pytest.raises(tb.errors.UnsupportedError, match="--input-shape NAME=d0,d1,... for token_ids, padding_mask"):
        tb.load(src)
    feeds = {"token_ids": np.random.default_rng(0).integers(0, 50, (1, 7)).astype(np.int32),
             "padding_mask": np.array([[1, 1, 1, 1, 1, 0, 0]], np.int32)}
    shapes = {k: list(v.shape) for k, v in feeds.items()}
    graph = tb.load(src, input_shapes=shapes)
    expected = np.asarray(model([feeds["token_ids"], feeds["padding_mask"]]))
    np.testing.assert_allclose(tb.run(graph, feeds)[graph.outputs[0].name], expected, rtol=1e-5, atol=1e-6)
    for to in ("onnx", "torch", "keras"):
        dst = tb.save(graph, tmp_path / ("encoder.onnx" if to == "onnx" else f"encoder_{to}"), to=to)
        report = tb.verify(src, dst, inputs=feeds, input_shapes=shapes, rtol=1e-5)
        assert report.ok, report.summary()


@keras.saving.register_keras_serializable(package="tests")
class RMSNormalization(layers.Layer):
    """Gemma's RMS norm as keras_hub writes it, named as Keras's own layer but scaling by 1 + its weight."""

    def build(self, shape):
        self.scale = self.add_weight(shape=(shape[-1],), initializer="random_normal", name="scale")

    def call(self, x):
        return x * ops.rsqrt(ops.mean(ops.square(x), axis=-1, keepdims=True) + 1e-6) * (1.0 + self.scale)


def _read_back_matches(model, tmp_path, x):
    """`model` saved, read by tensorbridge and run on `x` ("x") as Keras runs it; the graph."""
    src = tmp_path / f"{model.name}.keras"
    model.save(src)
    graph = tb.load(src)
    np.testing.assert_allclose(tb.run(graph, {"x": x})[graph.outputs[0].name], np.asarray(model(x)), rtol=1e-5,
                               atol=1e-6)
    return graph


def test_a_library_layer_named_as_a_keras_layer_is_traced_not_misread(tmp_path):
    keras.utils.set_random_seed(0)
    x_in = keras.Input((4, 6), name="x")
    model = keras.Model(x_in, RMSNormalization(name="norm")(layers.Dense(6)(x_in)), name="norm")
    _read_back_matches(model, tmp_path, np.random.default_rng(0).standard_normal((2, 4, 6)).astype(np.float32))


@keras.saving.register_keras_serializable(package="tests")
class CachedAttention(layers.MultiHeadAttention):
    """keras_hub's CachedMultiHeadAttention: Keras's attention whose call takes a cache besides."""

    def call(self, query, value, attention_mask=None, cache=None):
        return super().call(query, value, attention_mask=attention_mask)


@keras.saving.register_keras_serializable(package="tests")
class DecoderBlock(layers.Layer):
    """keras_hub's TransformerDecoder: a causal mask, the cached attention called by keyword, a residual."""

    def build(self, shape):
        self.attention = CachedAttention(2, 4, name="attention")
        self.attention.build(shape, shape)

    def call(self, x):
        length = ops.shape(x)[1]
        causal = ops.expand_dims(ops.tril(ops.ones((length, length), "int32")), 0)
        return x + self.attention(query=x, value=x, attention_mask=causal, cache=None)


def test_a_custom_block_calling_a_subclassed_attention_is_traced(tmp_path):
    """The block is traced; its attention subclass, called with an argument Keras's attention does not take, is
    traced in turn: its einsum projections and masked softmax read as Keras computes them."""
    keras.utils.set_random_seed(0)
    x_in = keras.Input((6, 8), name="x")
    model = keras.Model(x_in, DecoderBlock(name="block")(layers.Dense(8)(x_in)), name="decoder")
    graph = _read_back_matches(model, tmp_path, np.random.default_rng(0).standard_normal((1, 6, 8)).astype(np.float32))
    assert "Einsum" in graph.op_histogram() and all(v.shape is not None for v in graph.values())


@keras.saving.register_keras_serializable(package="tests")
class WeightedNorm(layers.Layer):
    """keras_hub's T5 norm: its weight times the input, written with the variable first."""

    def build(self, shape):
        self.weight = self.add_weight(shape=(shape[-1],), initializer="random_normal", name="weight")

    def call(self, x):
        return self.weight * (x * ops.rsqrt(ops.mean(ops.square(x), axis=-1, keepdims=True) + 1e-6))


@keras.saving.register_keras_serializable(package="tests")
class Projection(layers.Layer):
    """A custom sublayer over a Dense whose name another one shares."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.dense = layers.Dense(4, name="output_projector")

    def build(self, shape):
        self.dense.build(shape)

    def call(self, x):
        return self.dense(x)


@keras.saving.register_keras_serializable(package="tests")
class TwoProjections(layers.Layer):
    def build(self, shape):
        self.first, self.second, self.norm = Projection(name="first"), Projection(name="second"), WeightedNorm()
        for sublayer in (self.first, self.second):
            sublayer.build(shape)
        self.norm.build((*shape[:-1], 4))

    def call(self, x):
        return self.norm(self.first(x) + self.second(x) * 2.0)


def test_custom_sublayers_run_in_place_when_traced(tmp_path):
    """Custom sublayers are traced through (their Dense layers, which share a name, told apart), and a variable
    times a symbolic tensor is a keras.ops call; the names are the model's own again afterwards."""
    keras.utils.set_random_seed(0)
    x_in = keras.Input((3, 6), name="x")
    block = TwoProjections(name="block")
    model = keras.Model(x_in, block(x_in))
    x = np.random.default_rng(0).standard_normal((2, 3, 6)).astype(np.float32)
    graph = tb.load(model)
    np.testing.assert_allclose(tb.run(graph, {"x": x})[graph.outputs[0].name], np.asarray(model(x)), rtol=1e-5,
                               atol=1e-6)
    assert block.first.dense.name == block.second.dense.name == "output_projector"


@keras.saving.register_keras_serializable(package="tests")
class Patches(layers.Layer):
    """SegFormer's (keras_hub MiT's) flattening of patches: a reshape by the batch size read in Python."""

    def call(self, x):
        return ops.reshape(x, (ops.shape(x)[0], -1, ops.shape(x)[-1]))


def test_a_reshape_by_the_traced_batch_keeps_the_batch_open():
    x_in = keras.Input((4, 5, 3), name="x")
    model = keras.Model(x_in, Patches(name="patches")(x_in) * 2.0)
    graph = tb.load(model)
    for batch in (1, 3):
        x = np.random.default_rng(batch).standard_normal((batch, 4, 5, 3)).astype(np.float32)
        np.testing.assert_allclose(tb.run(graph, {"x": x})[graph.outputs[0].name], np.asarray(model(x)), rtol=1e-6)


@keras.saving.register_keras_serializable(package="tests")
class RelativeScores(layers.Layer):
    """keras_hub's DeBERTa-v3 attention under the TensorFlow backend: scores gathered at relative positions with
    tf.gather(batch_dims=...), and columns picked with a plain tf.gather."""

    def call(self, x):
        import tensorflow as tf

        positions = ops.broadcast_to(ops.clip(ops.arange(6)[:, None] - ops.arange(6)[None] + 3, 0, 5), (2, 4, 6, 6))
        gathered = tf.gather(ops.reshape(x, (-1, 4, 6, 6)), indices=positions, batch_dims=3)
        return gathered + tf.gather(x, ops.convert_to_tensor([5, 3, 1, 0, 2, 4]), axis=3)


def test_a_layer_calling_tf_gather_is_traced_as_the_keras_ops_it_equals(tmp_path):
    x_in = keras.Input((4, 6, 6), batch_size=2, name="x")
    model = keras.Model(x_in, RelativeScores(name="scores")(x_in), name="relative")
    graph = _read_back_matches(model, tmp_path, np.random.default_rng(1).standard_normal((2, 4, 6, 6)).astype(
        np.float32))
    assert {"GatherElements", "Gather"} <= set(graph.op_histogram())


def test_fourier_transforms_of_real_and_imaginary_pairs(tmp_path):
    """keras.ops' transforms take and give (real, imaginary) pairs; FNet mixes its tokens with ops.fft2."""
    x_in = keras.Input((6, 8), name="x")
    real, imag = ops.fft2((x_in, ops.zeros_like(x_in)))
    real, imag = ops.ifft2(ops.fft((real, ops.sin(imag))))
    model = keras.Model(x_in, real + 2 * imag, name="fourier")
    x = np.random.default_rng(2).standard_normal((2, 6, 8)).astype(np.float32)
    graph = _read_back_matches(model, tmp_path, x)
    assert graph.op_histogram()["DFT"] == 5
    report = tb.verify(tmp_path / "fourier.keras", tb.save(graph, tmp_path / "fourier.onnx"), inputs={"x": x})
    assert report.ok, report.summary()


def test_an_attention_mask_shared_by_every_key_reaches_onnxruntime(tmp_path):
    """ESM's and RoFormer's query padding, [B, 1, T, 1]: onnxruntime takes one mask entry per query and key, so
    the ONNX file holds the attention's own ops."""
    x_in, padding = keras.Input((6, 2, 4), name="x"), keras.Input((6,), dtype="int32", name="padding")
    mask = ops.reshape(ops.cast(padding, "bool"), (-1, 1, 6, 1))
    model = keras.Model([x_in, padding], ops.dot_product_attention(x_in, x_in * 0.5, x_in, mask=mask), name="qpad")
    src = tmp_path / "qpad.keras"
    model.save(src)
    feeds = {"x": np.random.default_rng(3).standard_normal((2, 6, 2, 4)).astype(np.float32),
             "padding": np.array([[1] * 6, [1, 1, 1, 1, 0, 0]], np.int32)}
    dst = tb.save(tb.load(src), tmp_path / "qpad.onnx")
    report = tb.verify(src, dst, inputs=feeds, rtol=1e-5)
    assert report.ok and not any(o.inconclusive for o in report.outputs), report.summary()


@pytest.mark.parametrize("target", ["keras", "tflite"])
def test_einsum_with_uppercase_subscripts(tmp_path, target):
    """PEGASUS-X writes "BHGF,BHXF->BHGX": Keras's einsum sizes its result from lowercase subscripts only."""
    rng = np.random.default_rng(0)
    nodes = [helper.make_node("Einsum", ["q", "k"], ["scores"], equation="BHGF,BHXF->BHGX")]
    src = onnx_models.save_model(tmp_path / "einsum.onnx", nodes,
                     [helper.make_tensor_value_info("q", TensorProto.FLOAT, [1, 2, 3, 4])],
                     [helper.make_tensor_value_info("scores", TensorProto.FLOAT, [1, 2, 3, 5])],
                     {"k": rng.standard_normal((1, 2, 5, 4)).astype(np.float32)})
    report = onnx_models.convert_and_verify(src, tmp_path, target)
    assert report.ok and not any(o.inconclusive for o in report.outputs), report.summary()


@pytest.mark.parametrize("target", ["keras", "tflite", "torch", "flax"])
def test_a_split_into_one_part(tmp_path, target):
    """Pixtral's patch embedding splits its batch of one image into one part: the tensor itself (TensorFlow's
    split takes no empty cut list; generated code had assigned the one-item list)."""
    nodes = [helper.make_node("Split", ["x", "sizes"], ["part"], axis=0),
             helper.make_node("Relu", ["part"], ["y"])]
    src = onnx_models.save_model(tmp_path / "split.onnx", nodes,
                                 [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 4])],
                                 [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3, 4])],
                                 {"sizes": np.array([1], np.int64)})
    report = onnx_models.convert_and_verify(src, tmp_path, target)
    assert report.ok and not any(o.inconclusive for o in report.outputs), report.summary()


def test_a_tensor_the_layer_computed_meets_a_symbolic_one_in_an_operator():
    """Moonshine's attention mask: `ops.arange` of a known length is a TensorFlow tensor when traced, and its `<`
    with a symbolic tensor is the symbolic tensor's reflected comparison (TensorFlow's own refuses a KerasTensor)."""
    @keras.saving.register_keras_serializable(package="tests")
    class LengthMask(layers.Layer):
        def call(self, x, lengths):
            positions = ops.arange(ops.shape(x)[1], dtype="int32")
            mask = ops.cast(positions[None, :] < lengths[:, None], "float32")[..., None]
            return ops.cast(positions * 2, "float32")[:, None] + mask * x

    x_in, lengths_in = keras.Input((None, 3), name="x"), keras.Input((), dtype="int32", name="lengths")
    model = keras.Model([x_in, lengths_in], LengthMask()(x_in, lengths_in))
    x, lengths = np.random.default_rng(0).standard_normal((2, 5, 3)).astype(np.float32), np.array([2, 4], np.int32)
    graph = tb.load(model, input_shapes={"x": [2, 5, 3], "lengths": [2]})
    got = tb.run(graph, {"x": x, "lengths": lengths})[graph.outputs[0].name]
    np.testing.assert_allclose(got, np.asarray(model([x, lengths])), rtol=1e-6)


def test_a_kernel_the_layer_computes_from_its_weights():
    """Qwen3.5's short convolution: a depthwise kernel reshaped from the layer's weight when traced (a TensorFlow
    tensor, not a symbolic one), and a convolution kernel computed likewise, read as constants."""
    @keras.saving.register_keras_serializable(package="tests")
    class ShortConv(layers.Layer):
        def build(self, shape):
            self.taps = self.add_weight(shape=(shape[-1], 3), initializer="random_normal", name="taps")
            self.mix = self.add_weight(shape=(shape[-1], shape[-1]), initializer="random_normal", name="mix")

        def call(self, x):
            depthwise = ops.depthwise_conv(x, ops.expand_dims(ops.transpose(self.taps), -1), padding="same")
            return ops.conv(depthwise, ops.expand_dims(self.mix * 2, 0))

    keras.utils.set_random_seed(0)
    x_in = keras.Input((6, 4), name="x")
    model = keras.Model(x_in, ShortConv()(x_in))
    x = np.random.default_rng(0).standard_normal((1, 6, 4)).astype(np.float32)
    graph = tb.load(model)
    np.testing.assert_allclose(tb.run(graph, {"x": x})[graph.outputs[0].name], np.asarray(model(x)), rtol=1e-5,
                               atol=1e-6)


def test_a_layer_calling_tensorflow_is_read_through_tensorflow():
    """RWKV-7's recurrence fills a tf.TensorArray in a Python loop, which no keras.ops trace holds: the layer's call
    is traced by tf.function on its inputs' shapes and read by the TensorFlow frontend."""
    import tensorflow as tf

    @keras.saving.register_keras_serializable(package="tests")
    class Recurrence(layers.Layer):
        def build(self, shape):
            self.decay = self.add_weight(shape=(shape[-1],), initializer="random_uniform", name="decay")

        def call(self, x):
            steps = tf.TensorArray(x.dtype, size=x.shape[1])
            state = tf.zeros_like(x[:, 0])
            for t in range(x.shape[1]):
                state = state * tf.sigmoid(self.decay) + x[:, t]
                steps = steps.write(t, state)
            return tf.transpose(steps.stack(), [1, 0, 2])

    keras.utils.set_random_seed(0)
    x_in = keras.Input((5, 3), name="x")
    model = keras.Model(x_in, layers.Dense(2)(Recurrence()(x_in)))
    x = np.random.default_rng(0).standard_normal((2, 5, 3)).astype(np.float32)
    graph = tb.load(model, input_shapes={"x": [2, 5, 3]})
    np.testing.assert_allclose(tb.run(graph, {"x": x})[graph.outputs[0].name], np.asarray(model(x)), rtol=1e-5,
                               atol=1e-6)


def test_a_sublayer_without_a_training_argument_is_called_as_keras_calls_it(caplog):
    """SigLIP's encoder layer calls its MLP with `training=`, which the MLP's call does not take: Keras drops it,
    and so does the trace that runs the sublayer's call in place."""
    @keras.saving.register_keras_serializable(package="tests")
    class Mlp(layers.Layer):
        def build(self, shape):
            self.dense = layers.Dense(shape[-1])
            self.dense.build(shape)

        def call(self, x):
            return ops.gelu(self.dense(x))

    @keras.saving.register_keras_serializable(package="tests")
    class Block(layers.Layer):
        def build(self, shape):
            self.mlp = Mlp()
            self.mlp.build(shape)

        def call(self, x, training=None):
            return x + self.mlp(x, training=training)

    keras.utils.set_random_seed(0)
    x_in = keras.Input((4, 6), name="x")
    model = keras.Model(x_in, Block()(x_in))
    x = np.random.default_rng(0).standard_normal((2, 4, 6)).astype(np.float32)
    with caplog.at_level("INFO"):
        graph = tb.load(model)
    assert "through TensorFlow" not in caplog.text  # traced as keras.ops, its weights a layer's
    np.testing.assert_allclose(tb.run(graph, {"x": x})[graph.outputs[0].name], np.asarray(model(x)), rtol=1e-5,
                               atol=1e-6)
