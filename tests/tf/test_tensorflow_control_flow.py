"""TensorFlow SavedModels with functional control flow (While and If over functions, tensor lists in the loops
Keras's recurrent layers run) read as IR Loop / If and run against TensorFlow, then converted and verified."""

from __future__ import annotations

import numpy as np
import pytest

import tensorbridge as tb
from tensorbridge.cli.main import main
from tensorbridge.reference.interpreter import run

tf = pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")


@pytest.fixture(scope="module")
def recurrent(tmp_path_factory):
    """A Keras LSTM (whole sequence) -> GRU (last step) model exported as TensorFlow runs it: while loops
    over tensor lists whose batch is open."""
    keras.utils.set_random_seed(0)
    x = keras.Input((6, 3))
    h = keras.layers.LSTM(5, return_sequences=True)(x)
    model = keras.Model(x, keras.layers.Dense(2)(keras.layers.GRU(4)(h)))
    path = tmp_path_factory.mktemp("recurrent") / "saved"
    model.export(str(path), verbose=False)
    return path


@pytest.fixture(scope="module")
def branching(tmp_path_factory):
    """tf.cond and a counting tf.while_loop, as a tf.Module."""
    class Branching(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([None, 4], tf.float32, name="x")])
        def __call__(self, x):
            y = tf.cond(tf.reduce_sum(x) > 0, lambda: x * 2.0 + 1.0, lambda: tf.nn.relu(x) - 3.0)
            _, z = tf.while_loop(lambda i, v: i < 3, lambda i, v: (i + 1, v * 0.5 + tf.reduce_mean(v)),
                                 [tf.constant(0), y])
            return {"y": y, "z": z}

    path = tmp_path_factory.mktemp("branching") / "saved"
    module = Branching()
    tf.saved_model.save(module, str(path), signatures=module.__call__.get_concrete_function())
    return path


def _tensorflow(path, x) -> dict:
    outputs = tf.saved_model.load(str(path)).signatures["serving_default"](tf.constant(x))
    return {name: v.numpy() for name, v in outputs.items()}


@pytest.mark.parametrize("batch", [1, 3])
def test_recurrent_loops_read_as_tensorflow_computes(recurrent, batch):
    graph = tb.load(recurrent)
    assert graph.op_histogram()["Loop"] == 2
    x = np.random.default_rng(batch).standard_normal((batch, 6, 3)).astype(np.float32)
    got = run(graph, {graph.inputs[0].name: x})[graph.outputs[0].name]
    expected, = _tensorflow(recurrent, x).values()
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_cond_and_while_read_as_tensorflow_computes(branching, sign):
    graph = tb.load(branching)
    assert {"If", "Loop"} <= set(graph.op_histogram())
    x = (np.abs(np.random.default_rng(0).standard_normal((2, 4))) * sign).astype(np.float32)
    got = run(graph, {graph.inputs[0].name: x})
    expected = _tensorflow(branching, x)
    assert sorted(v.name for v in graph.outputs) == sorted(expected)
    for name, array in expected.items():
        np.testing.assert_allclose(got[name], array, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("source", ["recurrent", "branching"])
@pytest.mark.parametrize("target,suffix", [("onnx", ".onnx"), ("torch", "_torch")])
def test_control_flow_converts_and_verifies(request, source, target, suffix, tmp_path, capsys):
    path = request.getfixturevalue(source)
    assert main(["convert", str(path), "-o", str(tmp_path / f"m{suffix}"), "--to", target]) == 0
    assert "PASS" in capsys.readouterr().out


def test_a_list_whose_items_change_shape_is_refused_where_loops_keep_shapes(recurrent, tmp_path, capsys):
    assert main(["-q", "convert", str(recurrent), "-o", str(tmp_path / "m_keras"), "--to", "keras"]) == 2
    assert "changing shape" in capsys.readouterr().err
    assert not (tmp_path / "m_keras").exists()


@pytest.mark.parametrize("target,suffix", [("keras", "_keras"), ("tflite", ".tflite"), ("flax", "_flax")])
def test_a_fixed_batch_keeps_the_lists_shapes_for_the_traced_targets(recurrent, target, suffix, tmp_path, capsys):
    """With the batch fixed at reading, the lists are reserved at their items' sizes (the loop surely runs), the
    recurrent state is static, and the loops keep their shapes: Keras code, TFLite and Flax take them."""
    name = tb.load(recurrent).inputs[0].name
    if target == "flax":
        pytest.importorskip("flax")
    assert main(["convert", str(recurrent), "-o", str(tmp_path / f"m{suffix}"), "--to", target,
                 "--input-shape", f"{name}=3,6,3"]) == 0
    assert "PASS" in capsys.readouterr().out


def _tf1_graph(build):
    """A frozen TF1 graph (control flow v1: tf.cond as Switch / Merge) of `build(x)`, with its session run."""
    tf.compat.v1.disable_control_flow_v2()
    try:
        graph = tf.Graph()
        with graph.as_default():
            x = tf.compat.v1.placeholder(tf.float32, [2, 5, 5, 3], name="x")
            out = tf.identity(build(x), name="out")
            with tf.compat.v1.Session(graph=graph) as session:
                session.run(tf.compat.v1.global_variables_initializer())
                frozen = tf.compat.v1.graph_util.convert_variables_to_constants(session, graph.as_graph_def(),
                                                                               ["out"])
                feed = np.random.default_rng(0).standard_normal((2, 5, 5, 3)).astype(np.float32)
                expected = session.run(out, {x: feed})
    finally:
        tf.compat.v1.enable_control_flow_v2()
    return frozen, feed, expected


@pytest.mark.parametrize("training", [False, True])
def test_tf1_cond_with_a_constant_predicate_reads_its_taken_branch(training, tmp_path, capsys):
    """A TF1 batch norm switched by `is_training` (a placeholder with a default) and a tf.cond on it: the
    untaken branch is dead and not read; the result matches TensorFlow's session."""
    def build(x):
        is_training = tf.compat.v1.placeholder_with_default(training, [], name="is_training")
        rng = np.random.default_rng(1)
        scale, offset, mean, variance = (tf.compat.v1.get_variable(name, initializer=value.astype(np.float32))
                                         for name, value in (("gamma", rng.uniform(0.5, 1.5, 3)),
                                                             ("beta", rng.standard_normal(3)),
                                                             ("moving_mean", rng.standard_normal(3)),
                                                             ("moving_variance", rng.uniform(0.5, 2.0, 3))))
        batch_mean, batch_variance = tf.nn.moments(x, [0, 1, 2])
        used_mean, used_variance = tf.cond(is_training, lambda: (batch_mean, batch_variance),
                                           lambda: (tf.identity(mean), tf.identity(variance)))
        y = tf.nn.batch_normalization(x, used_mean, used_variance, offset, scale, 1e-3)
        return tf.cond(is_training, lambda: y * 2.0, lambda: tf.nn.relu(y) - 1.0)

    frozen, feed, expected = _tf1_graph(build)
    assert {"Switch", "Merge"} <= {n.op for n in frozen.node}
    path = tmp_path / "tf1.pb"
    path.write_bytes(frozen.SerializeToString())
    graph = tb.load(path)
    assert [v.name for v in graph.inputs] == ["x"]
    got = run(graph, {"x": feed})[graph.outputs[0].name]
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)
    # the command line verifies a frozen graph against TensorFlow running it (a failed check removes the output)
    assert main(["convert", str(path), "-o", str(tmp_path / "tf1.onnx")]) == 0
    assert "PASS" in capsys.readouterr().out and (tmp_path / "tf1.onnx").exists()


def test_tf1_cond_on_a_computed_predicate_is_refused_with_the_reason(tmp_path, capsys):
    frozen, _, _ = _tf1_graph(lambda x: tf.cond(tf.reduce_sum(x) > 0, lambda: x + 1.0, lambda: x * 3.0))
    path = tmp_path / "tf1.pb"
    path.write_bytes(frozen.SerializeToString())
    assert main(["-q", "convert", str(path), "-o", str(tmp_path / "m.onnx")]) == 2
    assert "predicate is computed at run time" in capsys.readouterr().err
    assert not (tmp_path / "m.onnx").exists()
