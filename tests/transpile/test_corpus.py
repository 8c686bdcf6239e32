"""The transpiler on the corpora: every PyTorch class translated to Keras and to Flax NNX, and every Keras class
translated to PyTorch, either runs with the ported weights and matches its source within 1e-5, or is refused;
never a different output. Refusals name their reason."""

import ast

import pytest

import tensorbridge as tb
from tensorbridge.errors import UnsupportedError
from tests.transpile import corpus_flax, corpus_keras
from tests.transpile.check import CORPORA, CORPUS, build, check, load_module
from tests.transpile.corpus_torch import CASES, HEADER, REFUSED

pytest.importorskip("keras")
torch = pytest.importorskip("torch")

#: classes the translation refuses today, with the reason (a refusal that goes away fails the test: update it)
KNOWN_REFUSALS: dict = {}
#: classes one target refuses, with the reason
KNOWN_TARGET_REFUSALS = {"keras": {"CLIPResidualAttentionBlock": "set and read in the forward pass",
                                   "CLIPTextEncoder": "set and read in the forward pass",
                                   "PositionalLambda": "take only tensors positionally",
                                   "TransformerModel": "set and read in the forward pass",
                                   "FNetLayer": "a complex tensor"},
                         "flax": {}}
#: classes that translate but whose target cannot be fully ported, per target, with the reason
KNOWN_ERRORS = {"keras": {"ModuleDictRouter": "never called"},
                "flax": {}}
TARGETS = ("keras", "flax")


def _each_case(cases, targets):
    """Every case for every target; Flax's every other case behind the slow marker (`make test-all` runs them):
    JAX compiles each new shape, weights' initialisers too, ~10 s a class."""
    return [pytest.param(case, to, id=f"{case[0]}-{to}",
                         marks=[pytest.mark.slow] if to == "flax" and i % 2 else [])
            for to in targets for i, case in enumerate(cases)]


@pytest.fixture(scope="module")
def source_module():
    return load_module(CORPUS, "corpus_torch")


@pytest.mark.parametrize("case, to", _each_case(CASES, TARGETS))
def test_translation_matches_source(case, to, source_module, tmp_path):
    if to == "flax":
        pytest.importorskip("flax")
    name, args, shapes = case[:3]
    outcome = check(name, args, shapes, case[3] if len(case) > 3 else "float32", source_module, tmp_path, to=to)
    assert outcome.status != "wrong", f"{name}: silently wrong translation (max rel err {outcome.error})"
    refusal = KNOWN_REFUSALS.get(name) or KNOWN_TARGET_REFUSALS[to].get(name)
    if refusal:
        assert outcome.status == "refused" and refusal in outcome.detail, outcome
    elif name in KNOWN_ERRORS[to]:
        assert outcome.status == "error" and KNOWN_ERRORS[to][name] in outcome.detail, outcome
    else:
        assert outcome.status == "equal", outcome


@pytest.fixture(scope="module")
def keras_module():
    return load_module(CORPORA["keras"], "corpus_keras")


@pytest.mark.parametrize("case, to", _each_case(corpus_keras.CASES, ("torch", "flax")))
def test_keras_translation_matches_source(case, to, keras_module, tmp_path):
    name, args, shapes = case[:3]
    if to == "flax":
        pytest.importorskip("flax")
    outcome = check(name, args, shapes, case[3] if len(case) > 3 else "float32", keras_module, tmp_path, to=to,
                    source="keras")
    assert outcome.status == "equal", outcome


@pytest.mark.parametrize("source,reason", corpus_keras.REFUSED,
                         ids=[s.split("class ")[1].split("(")[0] for s, _ in corpus_keras.REFUSED])
def test_keras_refusal_names_file_line_and_reason(source, reason):
    with pytest.raises(UnsupportedError) as e:
        tb.transpile(source, to="torch", filename="model.py")
    assert reason in str(e.value)
    assert "model.py:" in str(e.value)


def test_keras_translation_is_lint_clean_and_lazy(tmp_path):
    from tests.generated_lint import ruff_check

    text = tb.transpile(CORPORA["keras"].read_text(), to="torch", cls="TinyResNet")
    assert "nn.LazyConv2d" in text and "ChannelsLast(" in text and "def forward(self, x):" in text
    assert "training" not in text.split("class TinyResNet")[1]  # layers read self.training themselves
    (tmp_path / "resnet.py").write_text(text)
    result = ruff_check(tmp_path)
    assert result.returncode == 0, result.stdout


def test_keras_to_flax_builds_lazily_and_says_so(keras_module, tmp_path):
    import numpy as np
    from flax import nnx

    text = tb.transpile(CORPORA["keras"].read_text(), to="flax", cls="ConvBNReLU")
    assert "Lazy(partial(nnx.BatchNorm" in text and "class Lazy(nnx.Module)" in text
    (tmp_path / "f_conv.py").write_text(text)
    translated = load_module(tmp_path / "f_conv.py", "f_conv")
    src = keras_module.ConvBNReLU(8)
    src(np.zeros((1, 6, 6, 3), "float32"))
    dst = translated.ConvBNReLU(8, rngs=nnx.Rngs(0))
    with pytest.raises(tb.transpile.weights.PortError, match="call it once"):
        tb.transpile.port_weights(src, dst)
    dst.eval()  # before the layers exist: they are built in inference mode all the same
    dst(np.zeros((1, 6, 6, 3), "float32"))
    assert tb.transpile.port_weights(src, dst) == 5
    assert dst.bn.layer.use_running_average is True


def test_keras_port_weights_needs_a_built_target(keras_module, tmp_path):
    text = tb.transpile(CORPORA["keras"].read_text(), to="torch", cls="Mlp")
    (tmp_path / "t_mlp.py").write_text(text)
    translated = load_module(tmp_path / "t_mlp.py", "t_mlp")
    import numpy as np

    src = keras_module.Mlp(16, 8)
    src(np.zeros((1, 12), "float32"))
    with pytest.raises(tb.transpile.weights.PortError, match="call it once"):
        tb.transpile.port_weights(src, translated.Mlp(16, 8))


@pytest.fixture(scope="module")
def flax_module():
    pytest.importorskip("flax")
    return load_module(CORPORA["flax"], "corpus_flax")


@pytest.mark.parametrize("to", ("torch", "keras"))
@pytest.mark.parametrize("case", corpus_flax.CASES, ids=[c[0] for c in corpus_flax.CASES])
def test_flax_translation_matches_source(case, to, flax_module, tmp_path):
    name, args, shapes = case[:3]
    outcome = check(name, args, shapes, case[3] if len(case) > 3 else "float32", flax_module, tmp_path, to=to,
                    source="flax")
    assert outcome.status == "equal", outcome


@pytest.mark.parametrize("to", ("torch", "keras"))
def test_flax_resize_refuses_antialiased_shrinking_when_it_runs(to, tmp_path):
    """jax.image.resize shrinking linearly antialiases by default, which the `resize` helper does not compute: it
    raises rather than returning something else."""
    import numpy as np

    code = tb.transpile(CORPORA["flax"].read_text(), to=to, cls="ShrinkAntialiased")
    path = tmp_path / f"shrink_{to}.py"
    path.write_text(code)
    layer = load_module(path, f"shrink_{to}").ShrinkAntialiased()
    x = np.ones((1, 4, 4, 2), "float32")
    with pytest.raises(NotImplementedError, match="antialias"):
        layer(torch.from_numpy(x) if to == "torch" else x)


@pytest.mark.parametrize("to", ("torch", "keras"))
def test_flax_batch_norm_switched_per_call_trains_alike(to, flax_module, tmp_path):
    """`self.bn(x, use_running_average=not train)`: with train=True the translation normalises by the batch's
    statistics, with train=False by the running ones; Keras updates the running statistics as NNX does (the
    outputs after the update match too), PyTorch keeps the unbiased batch variance (docs/transpile.md)."""
    import numpy as np

    from tests.transpile.check import calibrated_flax

    src = calibrated_flax(flax_module.TrainFlagMLP(4, 8, rngs=__import__("flax").nnx.Rngs(0)))
    code = tb.transpile(CORPORA["flax"].read_text(), to=to, cls="TrainFlagMLP")
    path = tmp_path / f"train_flag_{to}.py"
    path.write_text(code)
    dst = load_module(path, f"train_flag_{to}").TrainFlagMLP(4, 8)
    x = np.random.default_rng(0).normal(size=(16, 4)).astype("float32")
    if to == "torch":
        dst.eval()
        with torch.no_grad():
            dst(torch.from_numpy(x))
        tb.transpile.port_weights(src, dst)
        run = lambda train: dst(torch.from_numpy(x), train=train).detach().numpy()  # noqa: E731
    else:
        dst(x)
        tb.transpile.port_weights(src, dst)
        run = lambda train: np.asarray(dst(x, train=train))  # noqa: E731
    for train in (False, True, False)[:3 if to == "keras" else 2]:
        expected = np.asarray(src(x, train=train))
        assert np.allclose(run(train), expected, rtol=1e-5, atol=1e-5), train
    assert not np.allclose(np.asarray(src(x, train=True)), np.asarray(src(x, train=False)), atol=1e-3)


@pytest.mark.parametrize("to", ("torch", "keras"))
@pytest.mark.parametrize("source,reason", corpus_flax.REFUSED,
                         ids=[s.split("class ")[1].split("(")[0] for s, _ in corpus_flax.REFUSED])
def test_flax_refusal_names_file_line_and_reason(source, reason, to):
    with pytest.raises(UnsupportedError) as e:
        tb.transpile(source, to=to, filename="model.py")
    assert reason in str(e.value)
    assert "model.py:" in str(e.value)


def test_flax_translation_is_lint_clean_and_keeps_the_layout(tmp_path):
    from tests.generated_lint import ruff_check

    text = tb.transpile(CORPORA["flax"].read_text(), to="torch", cls="TinyResNet")
    assert "ChannelsLast(PadSame(nn.Conv2d(cin, cout, 3, stride=strides, bias=False)))" in text
    assert "rngs" not in text and "super().__init__()" in text and "def forward(self, x):" in text
    (tmp_path / "resnet.py").write_text(text)
    result = ruff_check(tmp_path)
    assert result.returncode == 0, result.stdout


def test_flax_row_signatures_are_the_real_ones():
    """Each Flax reading row declares the callable's parameters in order (positional ones, then keyword-only)."""
    import inspect

    pytest.importorskip("flax")
    from tensorbridge.rules.flax import REGISTRY
    from tensorbridge.transpile.imports import resolve

    checked = 0
    for path, row in {**REGISTRY.code.layers, **REGISTRY.code.functions}.items():
        obj = resolve(path)
        if obj is None and path.startswith("Tensor."):
            continue  # jax array methods take `*args` and parse them themselves
        params = inspect.signature(obj.__init__ if inspect.isclass(obj) else obj).parameters
        real = [n for n, p in params.items() if n != "self" and p.kind != p.VAR_KEYWORD]
        sig, names = row.signature, row.signature.names()
        declared = names[:sig.leading] + [sig.varargs] + names[sig.leading:] if sig.varargs else names
        if any(p.kind == p.VAR_POSITIONAL for p in params.values()) and not row.signature.varargs:
            continue  # NumPy-style ufuncs (`*args`): the declared signature is what binds
        assert [n for n in real if n in declared] == [n for n in declared if n in real], f"{path}: order"
        assert set(declared) <= set(real), f"{path}: declared {declared}, real {real}"
        checked += 1
    assert checked > 40


def test_keras_row_signatures_are_the_real_ones():
    """Each Keras reading row declares the callable's own parameters, then the base Layer's keyword options."""
    import inspect

    from tensorbridge.rules.keras import REGISTRY
    from tensorbridge.transpile.imports import resolve

    checked = 0
    for path, row in {**REGISTRY.code.layers, **REGISTRY.code.functions}.items():
        obj = resolve(path)
        params = inspect.signature(obj.__init__ if inspect.isclass(obj) else obj).parameters
        real = [n for n, p in params.items() if n != "self" and p.kind in (p.POSITIONAL_OR_KEYWORD, p.POSITIONAL_ONLY)]
        declared = row.signature.names()
        assert real == declared[:len(real)], f"{path}: declared {declared}, real {real}"
        checked += 1
    assert checked > 60


@pytest.mark.parametrize("to", TARGETS)
@pytest.mark.parametrize("source,reason", REFUSED, ids=[s.split("class ")[1].split("(")[0] for s, _ in REFUSED])
def test_refusal_names_file_line_and_reason(source, reason, to):
    with pytest.raises(UnsupportedError) as e:
        tb.transpile(source, to=to, filename="model.py")
    assert reason in str(e.value)
    assert "model.py:" in str(e.value)


def test_a_script_refused_for_its_training_loop_points_to_class():
    """A module with a model class and its training loop: the loop's refusals come with the way out (--class)."""
    source = HEADER + ("class Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
                       "        self.fc = nn.Linear(4, 2)\n\n    def forward(self, x):\n        return self.fc(x)\n\n\n"
                       "def train(model, x):\n    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
                       "    model(x).sum().backward()\n    optimizer.step()\n")
    with pytest.raises(UnsupportedError, match="No model class uses train: --class Net"):
        tb.transpile(source, to="keras")
    assert "class Net" in tb.transpile(source, to="keras", cls="Net")


def test_every_blocker_reported_at_once():
    source = REFUSED[0][0] + "\n\n" + REFUSED[4][0].split("\n\n\n", 1)[1]
    with pytest.raises(UnsupportedError) as e:
        tb.transpile(source, to="keras", filename="two.py")
    assert len(e.value.blockers) == 2


def test_port_weights_names_the_mismatching_parameter(source_module, tmp_path):
    text = tb.transpile(CORPUS.read_text(), to="keras", cls="Mlp")
    (tmp_path / "k_mlp.py").write_text(text)
    translated = load_module(tmp_path / "k_mlp.py", "k_mlp")
    src = source_module.Mlp(16, 32)
    dst = translated.Mlp(16, 24)  # another hidden width: shapes cannot match
    import numpy as np

    dst(np.zeros((1, 16), "float32"))
    with pytest.raises(tb.transpile.weights.PortError, match=r"Mlp\.fc1"):
        tb.transpile.port_weights(src, dst)


def test_unbuilt_target_is_a_clear_error(source_module, tmp_path):
    text = tb.transpile(CORPUS.read_text(), to="keras", cls="Mlp")
    (tmp_path / "k_mlp2.py").write_text(text)
    translated = load_module(tmp_path / "k_mlp2.py", "k_mlp2")
    with pytest.raises(tb.transpile.weights.PortError, match="call it once"):
        tb.transpile.port_weights(source_module.Mlp(16, 32), translated.Mlp(16, 32))


def test_functional_dropout_drops_while_training_only(tmp_path):
    """F.dropout(x, p, training=self.training) -> Keras: the identity in inference, a dropout while training."""
    import numpy as np

    code = tb.transpile(CORPUS.read_text(), to="keras", cls="FunctionalDropoutMLP")
    path = tmp_path / "dropout_keras.py"
    path.write_text(code)
    layer = load_module(path, "dropout_keras").FunctionalDropoutMLP()
    x = np.ones((4, 6), "float32")
    inference = [np.asarray(layer(x, training=False)) for _ in range(2)]
    training = np.asarray(layer(x, training=True))
    assert np.array_equal(*inference) and not np.allclose(training, inference[0])


TIMM_CORPUS = CORPUS.with_name("corpus_timm.py")
#: read from the text: importing the corpus needs timm (see timm_module)
TIMM_CASES = ast.literal_eval(TIMM_CORPUS.read_text().split("\nCASES = ", 1)[1])


@pytest.fixture(scope="module")
def timm_module():
    from tests.models.timm_zoo import import_timm

    import_timm()
    return load_module(TIMM_CORPUS, "corpus_timm")


@pytest.mark.parametrize("to", TARGETS)
@pytest.mark.parametrize("case", TIMM_CASES, ids=[c[0] for c in TIMM_CASES])
def test_library_definitions_translate_with_the_module(case, to, timm_module, tmp_path):
    """Classes and functions imported from timm (to_2tuple, DropPath, Mlp, SwiGLU, ...) are read from timm's
    source and translated with the module; the translation matches the source as the corpus classes do."""
    name, args, shapes = case
    outcome = check(name, args, shapes, "float32", timm_module, tmp_path, to=to, corpus=TIMM_CORPUS)
    assert outcome.status == "equal", outcome


@pytest.mark.parametrize("to", TARGETS)
def test_gradient_branch_under_a_setting_raises_when_the_setting_is_on(to, tmp_path):
    """torchvision's `if self.memory_efficient and self.any_requires_grad(x)`: the translation computes the plain
    path when the setting is off (the corpus case) and raises, never guessing, when it is on."""
    import numpy as np

    code = tb.transpile(CORPUS.read_text(), to=to, cls="_DenseLayer")
    assert "branches on whether tensors record gradients" in code
    path = tmp_path / f"dense_layer_{to}.py"
    path.write_text(code)
    module = load_module(path, f"dense_layer_{to}")
    extra = {"rngs": __import__("flax").nnx.Rngs(0)} if to == "flax" else {}
    layer = module._DenseLayer(8, 4, 2, 0.0, memory_efficient=True, **extra)
    with pytest.raises(NotImplementedError, match="memory_efficient"):
        layer(np.ones((1, 8, 6, 6), "float32"))


@pytest.mark.parametrize("to", TARGETS)
def test_channel_dropout_drops_whole_channels_while_training_only(to, tmp_path):
    """nn.Dropout2d -> the ChannelDropout helper: the identity in inference; while training each channel of a
    4-D input, and each row of a 2-D one (as PyTorch reads it), is either all zeros or all scaled by 1 / keep."""
    import numpy as np

    code = tb.transpile(CORPUS.read_text(), to=to, cls="MnistRNN")
    path = tmp_path / f"mnist_rnn_{to}.py"
    path.write_text(code)
    module = load_module(path, f"mnist_rnn_{to}")
    extra = {"rngs": __import__("flax").nnx.Rngs(0)} if to == "flax" else {}
    layer = module.ChannelDropout(0.5, 2, **extra)
    for shape in ((8, 16, 3, 3), (64, 5)):
        x = np.ones(shape, "float32")
        if to == "keras":
            inference, training = np.asarray(layer(x, training=False)), np.asarray(layer(x, training=True))
        else:
            training = np.asarray(layer(x))
            layer.eval()
            inference = np.asarray(layer(x))
            layer.train()
        assert np.array_equal(inference, x)
        kept = 2 if len(shape) == 4 else 1
        per_channel = training.reshape(shape[:kept] + (-1,))
        assert (per_channel.min(-1) == per_channel.max(-1)).all() and set(np.unique(training)) == {0.0, 2.0}


def test_stochastic_depth_drops_whole_samples_while_training_only(tmp_path):
    """timm's drop_path (`x.new_empty(shape).bernoulli_(keep)`, `.div_(keep)`) -> Keras: the identity in
    inference; while training each sample is either zero or scaled by 1 / keep."""
    import numpy as np

    code = tb.transpile(CORPUS.read_text(), to="keras", cls="DropPath")
    path = tmp_path / "drop_path_keras.py"
    path.write_text(code)
    layer = load_module(path, "drop_path_keras").DropPath(0.5)
    x = np.ones((64, 3), "float32")
    assert np.array_equal(np.asarray(layer(x, training=False)), x)
    rows = np.asarray(layer(x, training=True))[:, 0]
    assert set(np.unique(rows)) == {0.0, 2.0}


@pytest.mark.parametrize("to", TARGETS)
@pytest.mark.parametrize("name, args", [("TutorialPositionalEncoding", (16, 0.1, 50)),
                                        ("SwinWindowAttention", (16, (3, 4), 4)), ("InitAliasing", ()),
                                        ("ShiftedWindowMask", ()), ("RotaryEmbedding", (8,))])
def test_constants_computed_in_init_equal_the_source_before_porting(name, args, to, source_module, tmp_path):
    """Buffers the source computes in __init__ (slice writes, views, copies, meshgrid) are computed by the
    translation itself (port_weights would overwrite them, so they are compared unported)."""
    import numpy as np

    code = tb.transpile(CORPUS.read_text(), to=to, cls=name)
    path = tmp_path / f"init_{to}_{name}.py"
    path.write_text(code)
    translated = build(load_module(path, f"init_{to}_{name}"), name, args, to)
    for buffer, expected in getattr(source_module, name)(*args).named_buffers():
        got = np.asarray(getattr(translated, buffer)[...] if to == "flax" else getattr(translated, buffer))
        assert got.shape == tuple(expected.shape) and got.dtype.kind == expected.numpy().dtype.kind, buffer
        np.testing.assert_allclose(got, expected.numpy(), rtol=1e-6, atol=1e-6, err_msg=buffer)


@pytest.mark.parametrize("name, args, dim", [("FunctionalDropoutMLP", (), 6), ("NoisyEncoder", (), 8),
                                             ("NanoGPTAttention", (), 16), ("DropPath", (0.5,), 8)])
def test_flax_translation_draws_while_training_only(name, args, dim, tmp_path):
    """`self.training` -> NNX's `not self.deterministic` (set by model.train() / model.eval()); random numbers are
    drawn from the rngs the module keeps (and passes to the functions that draw them, as timm's drop_path):
    different outputs while training, the same in inference."""
    import numpy as np

    code = tb.transpile(CORPUS.read_text(), to="flax", cls=name)
    assert "deterministic = False" in code and "rngs()" in code
    path = tmp_path / f"random_flax_{name}.py"
    path.write_text(code)
    model = build(load_module(path, f"random_flax_{name}"), name, args, "flax")
    x = np.random.default_rng(0).random((16, 5, dim) if name == "NanoGPTAttention" else (16, dim), "float32")
    training = [np.asarray(model(x)) for _ in range(2)]
    model.eval()
    inference = [np.asarray(model(x)) for _ in range(2)]
    assert not np.allclose(*training) and np.array_equal(*inference)


@pytest.mark.parametrize("to", TARGETS)
def test_pretrained_embeddings_start_from_their_table(to, source_module, tmp_path):
    """nn.Embedding.from_pretrained: the translation starts from the same table (compared before porting) and a
    frozen one stays frozen (Keras: not trainable; NNX: an nnx.Variable, not an nnx.Param)."""
    import numpy as np
    import torch

    path = tmp_path / f"pretrained_{to}.py"
    path.write_text(tb.transpile(CORPUS.read_text(), to=to, cls="GloveClassifier"))
    translated = build(load_module(path, f"pretrained_{to}"), "GloveClassifier", (), to)
    source = source_module.GloveClassifier()
    tokens = np.array([[1, 5, 19]])
    if to == "keras":
        translated(tokens)
    for name in ("static", "tuned"):
        expected = getattr(source, name)(torch.as_tensor(tokens)).detach().numpy()
        np.testing.assert_allclose(np.asarray(getattr(translated, name)(tokens)), expected, rtol=1e-6)
    if to == "keras":
        assert not translated.static.trainable and translated.tuned.trainable
    else:
        from flax import nnx

        assert not isinstance(translated.static.embedding, nnx.Param)
        assert isinstance(translated.tuned.embedding, nnx.Param)


@pytest.mark.parametrize("to", ("torch", "flax"))
def test_keras_regularizers_become_the_same_penalties(to, keras_module, tmp_path):
    """kernel_regularizer= / bias_regularizer=: the translated layers are wrapped in `Penalized`, and after
    port_weights `regularization_loss(model)` equals Keras' sum(model.losses)."""
    import numpy as np

    path = tmp_path / f"penalties_{to}.py"
    path.write_text(tb.transpile(CORPORA["keras"].read_text(), to=to, cls="RegularizedConvNet"))
    module = load_module(path, f"penalties_{to}")
    x = np.random.default_rng(0).standard_normal((2, 8, 8, 3)).astype("float32")
    source = keras_module.RegularizedConvNet()
    source(x)
    source.hidden.bias.assign(np.linspace(-1.0, 1.0, 6))  # an L1 penalty on a bias Keras starts at zero
    expected = float(sum(np.asarray(loss) for loss in source.losses))
    translated = build(module, "RegularizedConvNet", (), to)
    if to == "torch":
        import torch

        translated(torch.from_numpy(x))
    else:
        translated(x)
    tb.transpile.port_weights(source, translated)
    got = float(module.regularization_loss(translated).detach() if to == "torch" else
                module.regularization_loss(translated))
    assert expected > 0.01 and got == pytest.approx(expected, rel=1e-5)


def test_frozen_weights_stay_frozen_in_keras(tmp_path):
    """`for p in self.backbone.parameters(): p.requires_grad = False` -> the Keras layer's `trainable = False`; the
    Flax translation says in its docstring that NNX has no such flag."""
    import numpy as np

    text = tb.transpile(CORPUS.read_text(), to="keras", cls="FrozenBackboneHead")
    path = tmp_path / "frozen_keras.py"
    path.write_text(text)
    layer = load_module(path, "frozen_keras").FrozenBackboneHead()
    layer(np.ones((1, 6), "float32"))
    assert not layer.backbone.trainable and len(layer.trainable_weights) == 2 and len(layer.weights) == 4
    assert "no such flag" in tb.transpile(CORPUS.read_text(), to="flax", cls="FrozenBackboneHead")


@pytest.mark.parametrize("to", ("torch", "flax"))
def test_keras_random_draws_become_the_targets_draws(to, tmp_path):
    """keras.random.normal with a seed generator (keras.io's VAE Sampling) -> the target's standard normal draws
    from its own random source: unit variance around z_mean, a new draw each call; the generator is noted."""
    import numpy as np

    text = tb.transpile(CORPORA["keras"].read_text(), to=to, cls="Sampling")
    code = text.split('"""', 2)[2]  # after the module docstring, which notes the generator left out
    assert "SeedGenerator(...) (bookkeeping" in text and "seed=" not in code and "seed_generator" not in code
    path = tmp_path / f"sampling_{to}.py"
    path.write_text(text)
    layer = build(load_module(path, f"sampling_{to}"), "Sampling", (), to)
    zeros = np.zeros((4000, 3), "float32")
    if to == "torch":
        import torch
        zeros = torch.from_numpy(zeros)
    draws = [np.asarray(layer((zeros, zeros))) for _ in range(2)]
    assert not np.allclose(*draws) and abs(draws[0].mean()) < 0.1 and abs(draws[0].std() - 1) < 0.1


@pytest.mark.parametrize("to", TARGETS)
def test_weight_norm_is_said_in_the_docstring(to):
    """weight_norm's and spectral_norm's layers are translated as the layer holding the weight it computes; the
    written module says so."""
    text = tb.transpile(CORPUS.read_text(), to=to, cls="TCNBlock")
    assert "weight_norm(...) is not kept" in text and "weight_norm(" not in text.split('"""', 2)[2]
    text = tb.transpile(CORPUS.read_text(), to=to, cls="SNDiscriminator")
    assert "spectral_norm(...) is not kept" in text and "largest singular value" in text


def test_translation_keeps_the_source_layout_explicit():
    text = tb.transpile(CORPUS.read_text(), to="keras", cls="DoubleConv")
    assert "data_format='channels_first'" in text and "axis=1" in text
    compile(text, "out.py", "exec")


def test_hostile_names_stay_names():
    source = REFUSED[0][0].replace("DataDependent", "Evil").replace("if x.sum() > 0:", "if True:")
    source = source.replace("self.fc", "self.__import__os")
    text = tb.transpile(source, to="keras")
    assert "import os" not in text.replace("__import__os", "")


def test_cli_transpile_writes_nothing_on_refusal(tmp_path):
    from tensorbridge.cli.main import main

    src = tmp_path / "m.py"
    src.write_text(REFUSED[0][0])
    out = tmp_path / "out.py"
    assert main(["-q", "transpile", str(src), "--to", "keras", "-o", str(out)]) == 2
    assert not out.exists()
    src.write_text(CORPUS.read_text())
    assert main(["-q", "transpile", str(src), "--to", "keras", "--class", "TinyUNet", "-o", str(out)]) == 0
    assert "class TinyUNet(keras.layers.Layer)" in out.read_text()


def _library_object(path: str):
    """A library's object named by a row (transformers' Conv1D)."""
    import importlib

    module, _, name = path.rpartition(".")
    return getattr(importlib.import_module(module), name)


def test_row_signatures_are_the_real_ones():
    """Each torch code row binds arguments with a declared signature: it must be the callable's own."""
    import inspect

    from tensorbridge.rules.torch import REGISTRY
    from tensorbridge.transpile.imports import resolve
    from tests.models.timm_zoo import import_timm

    import_timm()  # rows of timm's layers resolve through it (it needs the test stand-in for torchvision)
    checked = 0
    for path, row in {**REGISTRY.code.layers, **REGISTRY.code.functions}.items():
        obj = resolve(path if not path.startswith("Tensor.") else "torch." + path)
        try:
            params = inspect.signature(obj.__init__ if inspect.isclass(obj) else obj).parameters
        except (TypeError, ValueError):
            continue  # a builtin without a Python signature: the declared one is what binds
        real = [n for n, p in params.items() if n != "self" and p.kind in (p.POSITIONAL_OR_KEYWORD, p.POSITIONAL_ONLY)]
        declared = row.signature.names()[1 if path.startswith("Tensor.") else 0:]  # a method's receiver is `self`
        if not real:  # `(*args)`: the callable parses its arguments itself
            continue
        assert real[:len(declared)] == declared, f"{path}: declared {declared}, real {real}"
        checked += 1
    assert checked > 30
    for path, row in REGISTRY.code.layers.items():
        made = resolve(path) or _library_object(path)  # a class, or a classmethod making one (from_pretrained)
        forward = [n for n in inspect.signature((made if inspect.isclass(made) else made.__self__).forward).parameters
                   if n != "self"]
        assert forward[:len(row.call.names())] == row.call.names(), f"{path}: call {row.call.names()}, {forward}"


def test_flax_translation_is_lint_clean_and_threads_rngs(tmp_path):
    from tests.generated_lint import ruff_check

    text = tb.transpile(CORPUS.read_text(), to="flax", cls="TinyResNet")
    assert "def conv3x3(in_planes, out_planes, stride=1, groups=1, dilation=1, *, rngs: nnx.Rngs)" in text
    assert "BasicBlock(width, width, rngs=rngs)" in text and "class ChannelsFirst(nnx.Module)" in text
    (tmp_path / "resnet.py").write_text(text)
    result = ruff_check(tmp_path)
    assert result.returncode == 0, result.stdout


def test_flax_refuses_what_nnx_cannot_hold():
    source = HEADER + ("class Late(nn.Module):\n    def forward(self, x):\n        fc = nn.Linear(4, 4)\n"
                        "        return fc(x) if self.training else x\n")
    with pytest.raises(UnsupportedError) as e:
        tb.transpile(source, to="flax", filename="late.py")
    text = str(e.value)
    assert "late.py:" in text and "layer built in __call__" in text


def test_flax_port_weights_names_the_mismatching_parameter(source_module, tmp_path):
    from flax import nnx

    (tmp_path / "f_mlp.py").write_text(tb.transpile(CORPUS.read_text(), to="flax", cls="Mlp"))
    translated = load_module(tmp_path / "f_mlp.py", "f_mlp")
    with pytest.raises(tb.transpile.weights.PortError, match=r"Mlp\.fc1"):
        tb.transpile.port_weights(source_module.Mlp(16, 32), translated.Mlp(16, 24, rngs=nnx.Rngs(0)))


def test_reference_metrics_compare_calls_by_what_they_name():
    import ast

    from benchmarks.transpile_reference import api_calls, classes, normalized
    from tensorbridge.transpile.imports import Imports

    one = ("import torch.nn as nn\n\n\nclass A(nn.Module):\n    \"\"\"Doc.\"\"\"\n\n    def f(self):\n"
           "        return nn.ReLU()\n")
    two = "import torch\n\n\nclass A(torch.nn.Module):\n    def f(self):\n        return torch.nn.ReLU()\n"
    a, b = classes(one)["A"], classes(two)["A"]
    assert api_calls(a, Imports(ast.parse(one))) == api_calls(b, Imports(ast.parse(two))) == {"torch.nn.ReLU": 1}
    assert normalized(a) != normalized(b) and "Doc" not in normalized(a)


@pytest.mark.parametrize("source, to, classes", [
    ("torch", "keras", ("PackedBags", "AffineWarp", "Unfolder", "StrideAware", "PPM", "VectorQuantizer")),
    ("torch", "flax", ("PackedBags", "AffineWarp", "Unfolder", "PPM", "VectorQuantizer", "ScatterTopK")),
    ("keras", "torch", ("RegularizedConvNet", "XceptionStyleBlock", "VAEDecoder", "ConvTokenizer", "OneHotMix")),
    ("keras", "flax", ("RegularizedConvNet", "SamePoolMerge", "ConvTokenizer"))])
def test_translations_on_helpers_are_lint_clean(source, to, classes, tmp_path):
    """The helpers written with a translation (EmbeddingBag, affine_grid, unfold, scatter, Penalized, PadSame,
    ...), the imports it keeps (only the names it uses) and long expressions broken at their operators."""
    from tests.generated_lint import ruff_check

    for name in classes:
        (tmp_path / f"{name.lower()}.py").write_text(tb.transpile(CORPORA[source].read_text(), to=to, cls=name))
    result = ruff_check(tmp_path)
    assert result.returncode == 0, result.stdout


def test_library_imports_are_read_as_the_installed_packages_answer_them(tmp_path, monkeypatch):
    """A library's `try: from <package> import kernel / except ImportError: ...` reads the except branch where the
    package is not installed (timm's apex fallbacks); a function reading the kernel, which the library binds only
    where the package is installed, is taken with the name left unbound (and left out when nothing calls it)."""
    import numpy as np

    package = tmp_path / "smalllib"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "norms.py").write_text(
        "try:\n    from not_installed_kernels import fused_scale\n    FACTOR = 3.0\n"
        "except ImportError:\n    FACTOR = 2.0\n\n\ndef fast_scale(x):\n    return fused_scale(x)\n\n\n"
        "def scale(x):\n    return x * FACTOR\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    source = ("import torch.nn as nn\nfrom smalllib.norms import fast_scale, scale\n\n\nclass Scaled(nn.Module):\n"
              "    def __init__(self):\n        super().__init__()\n        self.fc = nn.Linear(3, 3)\n\n"
              "    def forward(self, x):\n        return scale(self.fc(x))\n")
    code = tb.transpile(source, to="keras")
    assert "FACTOR = 2.0" in code and "not_installed_kernels" not in code and "def fast_scale" not in code
    path = tmp_path / "scaled_keras.py"
    path.write_text(code)
    layer = load_module(path, "scaled_keras").Scaled()
    x = np.ones((2, 3), "float32")
    out = np.asarray(layer(x))
    np.testing.assert_allclose(out, (x @ np.asarray(layer.fc.kernel) + np.asarray(layer.fc.bias)) * 2.0, rtol=1e-6)
