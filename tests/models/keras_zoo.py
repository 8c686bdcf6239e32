"""keras.applications architectures with seeded random weights (no downloads), and small
Keras text/attention models, plus their TFLite conversions made by TF's own converter."""

from __future__ import annotations

import os

APPS = {"MobileNetV2": (96, 96, 3), "ResNet50": (96, 96, 3), "InceptionV3": (139, 139, 3),
        "EfficientNetB0": (96, 96, 3), "DenseNet121": (96, 96, 3), "NASNetMobile": (224, 224, 3)}


def application(name: str):
    """(model, input shape) with logits output, so numerical comparisons are not hidden by softmax."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import keras

    keras.utils.set_random_seed(0)
    shape = APPS[name]
    return getattr(keras.applications, name)(weights=None, classifier_activation=None, input_shape=shape), shape


def text_model(kind: str = "lstm"):
    """Embedding -> (Bidirectional LSTM | GRU) -> Dense classifier."""
    import keras
    from keras import layers

    keras.utils.set_random_seed(0)
    tokens = keras.Input((12,), dtype="int32", name="tokens")
    x = layers.Embedding(300, 16)(tokens)
    if kind == "lstm":
        x = layers.Bidirectional(layers.LSTM(24, return_sequences=True))(x)
        x = layers.LSTM(20)(x)
    else:
        x = layers.GRU(24, return_sequences=True)(x)
        x = layers.GRU(20)(x)
    out = layers.Dense(10)(x)
    return keras.Model(tokens, out, name=f"text_{kind}"), (12,)


def attention_model(causal: bool = False):
    import keras
    from keras import layers

    keras.utils.set_random_seed(0)
    x_in = keras.Input((10, 32), name="sequence")
    att = layers.MultiHeadAttention(num_heads=4, key_dim=8)(x_in, x_in, use_causal_mask=causal)
    x = layers.LayerNormalization()(layers.Add()([x_in, att]))
    x = layers.Dense(64, activation="gelu")(x)
    x = layers.GlobalAveragePooling1D()(x)
    return keras.Model(x_in, layers.Dense(10)(x), name="attention"), (10, 32)


def to_tflite(model, path) -> None:
    import tensorflow as tf

    with open(path, "wb") as f:
        f.write(tf.lite.TFLiteConverter.from_keras_model(model).convert())
