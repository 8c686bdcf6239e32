"""Keras 3 model classes written in the styles real projects use, for the transpiler's Keras -> PyTorch tests and
benchmark (the counterpart of corpus_torch.py).

`CASES` lists (class, constructor arguments, input shape(s), input dtype); `tests/transpile/test_corpus.py`
translates each class, ports its weights and compares outputs. Images are channels-last, as Keras defaults.
"""

import math
from typing import Optional

import einops.layers.keras
import keras
import numpy as np
import tensorflow as tf
from einops import rearrange, reduce
from keras import layers, ops, regularizers


class Mlp(layers.Layer):
    def __init__(self, hidden, out, dropout=0.1, **kwargs):
        super().__init__(**kwargs)
        self.fc1 = layers.Dense(hidden, activation="gelu")
        self.drop = layers.Dropout(dropout)
        self.fc2 = layers.Dense(out)

    def call(self, x, training=None):
        return self.fc2(self.drop(self.fc1(x), training=training))


class ConvBNReLU(layers.Layer):
    def __init__(self, filters, kernel_size=3, **kwargs):
        super().__init__(**kwargs)
        self.conv = layers.Conv2D(filters, kernel_size, padding="same", use_bias=False)
        self.bn = layers.BatchNormalization(momentum=0.9, epsilon=1e-5)
        self.relu = layers.ReLU()

    def call(self, inputs, training=False):
        return self.relu(self.bn(self.conv(inputs), training=training))


class ResidualBlock(layers.Layer):
    """A ResNet basic block, downsampling the way keras.applications does (explicit padding, valid conv)."""

    def __init__(self, filters, stride=1, **kwargs):
        super().__init__(**kwargs)
        if stride == 1:
            self.pad = None
            self.conv1 = layers.Conv2D(filters, 3, padding="same", use_bias=False)
        else:
            self.pad = layers.ZeroPadding2D(1)
            self.conv1 = layers.Conv2D(filters, 3, strides=stride, use_bias=False)
        self.bn1 = layers.BatchNormalization()
        self.conv2 = layers.Conv2D(filters, 3, padding="same", use_bias=False)
        self.bn2 = layers.BatchNormalization()
        self.shortcut = None
        if stride != 1:
            self.shortcut = keras.Sequential([layers.Conv2D(filters, 1, strides=stride, use_bias=False),
                                              layers.BatchNormalization()])

    def call(self, x, training=None):
        y = x if self.pad is None else self.pad(x)
        y = ops.relu(self.bn1(self.conv1(y), training=training))
        y = self.bn2(self.conv2(y), training=training)
        identity = x if self.shortcut is None else self.shortcut(x, training=training)
        return ops.relu(y + identity)


class Bottleneck(layers.Layer):
    expansion = 4

    def __init__(self, filters, **kwargs):
        super().__init__(**kwargs)
        self.conv1 = layers.Conv2D(filters, 1, use_bias=False)
        self.bn1 = layers.BatchNormalization()
        self.conv2 = layers.Conv2D(filters, 3, padding="same", use_bias=False)
        self.bn2 = layers.BatchNormalization()
        self.conv3 = layers.Conv2D(filters * self.expansion, 1, use_bias=False)
        self.bn3 = layers.BatchNormalization()
        self.project = layers.Conv2D(filters * self.expansion, 1, use_bias=False)

    def call(self, x, training=None):
        out = ops.relu(self.bn1(self.conv1(x), training=training))
        out = ops.relu(self.bn2(self.conv2(out), training=training))
        out = self.bn3(self.conv3(out), training=training)
        return ops.relu(out + self.project(x))


class TinyResNet(keras.Model):
    def __init__(self, num_classes=10, widths=(8, 16)):
        super().__init__()
        self.stem_pad = layers.ZeroPadding2D(3)
        self.stem = layers.Conv2D(widths[0], 7, strides=2, use_bias=False)
        self.stem_bn = layers.BatchNormalization()
        self.pool_pad = layers.ZeroPadding2D(1)
        self.pool = layers.MaxPooling2D(3, strides=2)
        self.stages = [ResidualBlock(w, stride=1 if i == 0 else 2) for i, w in enumerate(widths)]
        self.gap = layers.GlobalAveragePooling2D()
        self.fc = layers.Dense(num_classes)

    def call(self, x, training=False):
        x = ops.relu(self.stem_bn(self.stem(self.stem_pad(x)), training=training))
        x = self.pool(self.pool_pad(x))
        for stage in self.stages:
            x = stage(x, training=training)
        return self.fc(self.gap(x))


class SqueezeExcite(layers.Layer):
    def __init__(self, channels, ratio=4, **kwargs):
        super().__init__(**kwargs)
        self.pool = layers.GlobalAveragePooling2D(keepdims=True)
        self.reduce = layers.Dense(channels // ratio, activation="relu")
        self.expand = layers.Dense(channels, activation="sigmoid")

    def call(self, x):
        return x * self.expand(self.reduce(self.pool(x)))


class SEConvBlock(layers.Layer):
    def __init__(self, filters, **kwargs):
        super().__init__(**kwargs)
        self.conv = layers.Conv2D(filters, 3, padding="same", activation="swish")
        self.se = SqueezeExcite(filters)

    def call(self, x):
        return self.se(self.conv(x))


class GroupedConvBlock(layers.Layer):
    """A depthwise-style 3x3 convolution written with groups (input channels == filters), then a pointwise one."""

    def __init__(self, channels, out_channels, **kwargs):
        super().__init__(**kwargs)
        self.depthwise = layers.Conv2D(channels, 3, padding="same", groups=channels, use_bias=False)
        self.bn1 = layers.BatchNormalization()
        self.pointwise = layers.Conv2D(out_channels, 1, use_bias=False)
        self.bn2 = layers.BatchNormalization()

    def call(self, x, training=None):
        x = ops.relu6(self.bn1(self.depthwise(x), training=training))
        return self.bn2(self.pointwise(x), training=training)


class InvertedResidual(layers.Layer):
    def __init__(self, channels, expansion=4, **kwargs):
        super().__init__(**kwargs)
        hidden = channels * expansion
        self.expand = keras.Sequential([layers.Conv2D(hidden, 1, use_bias=False), layers.BatchNormalization(),
                                        layers.ReLU(max_value=6)])
        self.depthwise = keras.Sequential([
            layers.Conv2D(hidden, 3, padding="same", groups=hidden, use_bias=False),
            layers.BatchNormalization(),
            layers.ReLU(6.0),
        ])
        self.project = layers.Conv2D(channels, 1, use_bias=False)
        self.bn = layers.BatchNormalization()

    def call(self, x, training=None):
        y = self.expand(x, training=training)
        y = self.depthwise(y, training=training)
        return x + self.bn(self.project(y), training=training)


class DoubleConv(layers.Layer):
    def __init__(self, filters, **kwargs):
        super().__init__(**kwargs)
        self.block = keras.Sequential([
            layers.Conv2D(filters, 3, padding="same", use_bias=False),
            layers.BatchNormalization(),
            layers.Activation("relu"),
            layers.Conv2D(filters, 3, padding="same", use_bias=False),
            layers.BatchNormalization(),
            layers.Activation("relu"),
        ])

    def call(self, x, training=None):
        return self.block(x, training=training)


class TinyUNet(keras.Model):
    def __init__(self, base=8, num_classes=3):
        super().__init__()
        self.enc1 = DoubleConv(base)
        self.pool = layers.MaxPooling2D()
        self.enc2 = DoubleConv(base * 2)
        self.up = layers.Conv2DTranspose(base, 2, strides=2, padding="same")
        self.dec1 = DoubleConv(base)
        self.head = layers.Conv2D(num_classes, 1)

    def call(self, x, training=None):
        s1 = self.enc1(x, training=training)
        bottom = self.enc2(self.pool(s1), training=training)
        up = self.up(bottom)
        return self.head(self.dec1(ops.concatenate([up, s1], axis=-1), training=training))


class UpsampleDecoder(layers.Layer):
    def __init__(self, filters, **kwargs):
        super().__init__(**kwargs)
        self.up = layers.UpSampling2D(size=2, interpolation="bilinear")
        self.conv = layers.Conv2D(filters, 3, padding="same", activation="relu")

    def call(self, x):
        return self.conv(self.up(x))


class MultiHeadSelfAttention(layers.Layer):
    def __init__(self, dim, num_heads=4, **kwargs):
        super().__init__(**kwargs)
        self.num_heads = num_heads
        self.head_dim = dim // num_heads
        self.scale = self.head_dim ** -0.5
        self.qkv = layers.Dense(dim * 3)
        self.proj = layers.Dense(dim)

    def call(self, x):
        batch, length, dim = ops.shape(x)
        qkv = ops.reshape(self.qkv(x), (batch, length, 3, self.num_heads, self.head_dim))
        qkv = ops.transpose(qkv, (2, 0, 3, 1, 4))
        q, k, v = qkv[0], qkv[1], qkv[2]
        attn = ops.softmax(ops.matmul(q, ops.swapaxes(k, -2, -1)) * self.scale, axis=-1)
        out = ops.transpose(ops.matmul(attn, v), (0, 2, 1, 3))
        return self.proj(ops.reshape(out, (batch, length, dim)))


class TransformerBlock(layers.Layer):
    def __init__(self, dim, num_heads, mlp_ratio=2, **kwargs):
        super().__init__(**kwargs)
        self.norm1 = layers.LayerNormalization(epsilon=1e-6)
        self.attn = MultiHeadSelfAttention(dim, num_heads)
        self.norm2 = layers.LayerNormalization(epsilon=1e-6)
        self.mlp = Mlp(dim * mlp_ratio, dim)

    def call(self, x, training=None):
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x), training=training)


class PatchEmbedding(layers.Layer):
    def __init__(self, patch_size, dim, num_patches, **kwargs):
        super().__init__(**kwargs)
        self.proj = layers.Conv2D(dim, patch_size, strides=patch_size)
        self.position = self.add_weight(shape=(1, num_patches, dim), initializer="random_normal", name="position")

    def call(self, images):
        x = self.proj(images)
        batch, height, width, channels = ops.shape(x)
        return ops.reshape(x, (batch, height * width, channels)) + self.position


class TinyViT(keras.Model):
    def __init__(self, image_size=16, patch_size=4, dim=16, depth=2, num_heads=2, num_classes=5):
        super().__init__()
        self.embed = PatchEmbedding(patch_size, dim, (image_size // patch_size) ** 2)
        self.blocks = [TransformerBlock(dim, num_heads) for _ in range(depth)]
        self.norm = layers.LayerNormalization(epsilon=1e-6)
        self.head = layers.Dense(num_classes)

    def call(self, images, training=None):
        x = self.embed(images)
        for block in self.blocks:
            x = block(x, training=training)
        return self.head(ops.mean(self.norm(x), axis=1))


class TokenAndPositionEmbedding(layers.Layer):
    """The Keras text-classification tutorial's embedding: token + learned position."""

    def __init__(self, maxlen, vocab_size, embed_dim, **kwargs):
        super().__init__(**kwargs)
        self.token_emb = layers.Embedding(input_dim=vocab_size, output_dim=embed_dim)
        self.pos_emb = layers.Embedding(input_dim=maxlen, output_dim=embed_dim)

    def call(self, x):
        maxlen = ops.shape(x)[-1]
        positions = ops.arange(start=0, stop=maxlen, step=1)
        return self.token_emb(x) + self.pos_emb(positions)


class TextTransformer(keras.Model):
    def __init__(self, maxlen=12, vocab_size=50, embed_dim=16, num_heads=2, num_classes=3):
        super().__init__()
        self.embedding = TokenAndPositionEmbedding(maxlen, vocab_size, embed_dim)
        self.block = TransformerBlock(embed_dim, num_heads)
        self.pool = layers.GlobalAveragePooling1D()
        self.dropout = layers.Dropout(0.1)
        self.classifier = layers.Dense(num_classes)

    def call(self, tokens, training=False):
        x = self.block(self.embedding(tokens), training=training)
        return self.classifier(self.dropout(self.pool(x), training=training))


class TextCNN(keras.Model):
    def __init__(self, vocab_size=60, embed_dim=12, filters=8, kernel_sizes=(2, 3, 4), num_classes=4):
        super().__init__()
        self.embedding = layers.Embedding(vocab_size, embed_dim)
        self.convs = [layers.Conv1D(filters, k, activation="relu") for k in kernel_sizes]
        self.pool = layers.GlobalMaxPooling1D()
        self.fc = layers.Dense(num_classes)

    def call(self, tokens):
        x = self.embedding(tokens)
        pooled = [self.pool(conv(x)) for conv in self.convs]
        return self.fc(ops.concatenate(pooled, axis=-1))


class Conv1DClassifier(keras.Model):
    def __init__(self, num_classes=3):
        super().__init__()
        self.conv1 = layers.Conv1D(8, 5, padding="same", activation="relu")
        self.pool1 = layers.MaxPooling1D(2)
        self.conv2 = layers.Conv1D(16, 3, padding="same", activation="relu")
        self.pool2 = layers.GlobalAveragePooling1D()
        self.out = layers.Dense(num_classes)

    def call(self, x):
        return self.out(self.pool2(self.conv2(self.pool1(self.conv1(x)))))


class LeNet(keras.Model):
    def __init__(self, num_classes=10):
        super().__init__()
        self.conv1 = layers.Conv2D(6, 5, activation="tanh")
        self.pool1 = layers.AveragePooling2D(2)
        self.conv2 = layers.Conv2D(16, 5, activation="tanh")
        self.pool2 = layers.AveragePooling2D(2)
        self.flatten = layers.Flatten()
        self.fc1 = layers.Dense(32, activation="tanh")
        self.fc2 = layers.Dense(num_classes)

    def call(self, x):
        x = self.pool2(self.conv2(self.pool1(self.conv1(x))))
        return self.fc2(self.fc1(self.flatten(x)))


class Autoencoder(keras.Model):
    def __init__(self, input_dim=20, latent_dim=4):
        super().__init__()
        self.encoder = keras.Sequential([layers.Dense(12, activation="relu"), layers.Dense(latent_dim)])
        self.decoder = keras.Sequential([layers.Dense(12, activation="relu"), layers.Dense(input_dim)])

    def call(self, x):
        return self.decoder(self.encoder(x))


class VAEHead(layers.Layer):
    def __init__(self, latent_dim, **kwargs):
        super().__init__(**kwargs)
        self.mean = layers.Dense(latent_dim)
        self.log_var = layers.Dense(latent_dim)

    def call(self, x):
        mean, log_var = self.mean(x), self.log_var(x)
        return mean + ops.exp(0.5 * log_var)


class GatedLinearUnit(layers.Layer):
    def __init__(self, units, **kwargs):
        super().__init__(**kwargs)
        self.linear = layers.Dense(units * 2)

    def call(self, x):
        value, gate = ops.split(self.linear(x), 2, axis=-1)
        return value * ops.sigmoid(gate)


class SwiGLU(layers.Layer):
    def __init__(self, dim, hidden, **kwargs):
        super().__init__(**kwargs)
        self.w1 = layers.Dense(hidden, use_bias=False)
        self.w2 = layers.Dense(dim, use_bias=False)
        self.w3 = layers.Dense(hidden, use_bias=False)

    def call(self, x):
        return self.w2(ops.silu(self.w1(x)) * self.w3(x))


class RMSNorm(layers.Layer):
    def __init__(self, dim, epsilon=1e-6, **kwargs):
        super().__init__(**kwargs)
        self.epsilon = epsilon
        self.scale = self.add_weight(shape=(dim,), initializer="ones", name="scale")

    def call(self, x):
        variance = ops.mean(ops.square(x), axis=-1, keepdims=True)
        return x * ops.rsqrt(variance + self.epsilon) * self.scale


class LlamaStyleBlock(layers.Layer):
    def __init__(self, dim, hidden, **kwargs):
        super().__init__(**kwargs)
        self.norm = RMSNorm(dim)
        self.ffn = SwiGLU(dim, hidden)

    def call(self, x):
        return x + self.ffn(self.norm(x))


class LayerScale(layers.Layer):
    def __init__(self, dim, init_value=1e-5, **kwargs):
        super().__init__(**kwargs)
        self.gamma = self.add_weight(shape=(dim,), initializer="ones", name="gamma")
        self.init_value = init_value

    def call(self, x):
        return x * self.gamma


class ScaledResidual(layers.Layer):
    def __init__(self, dim, **kwargs):
        super().__init__(**kwargs)
        self.fc = layers.Dense(dim, activation="gelu")
        self.scale = LayerScale(dim)

    def call(self, x):
        return x + self.scale(self.fc(x))


class Highway(layers.Layer):
    def __init__(self, units, **kwargs):
        super().__init__(**kwargs)
        self.transform = layers.Dense(units, activation="relu")
        self.gate = layers.Dense(units, activation="sigmoid")

    def call(self, x):
        gate = self.gate(x)
        return gate * self.transform(x) + (1.0 - gate) * x


class ChannelAttention(layers.Layer):
    """CBAM's channel attention: a shared MLP over average- and max-pooled features."""

    def __init__(self, channels, ratio=2, **kwargs):
        super().__init__(**kwargs)
        self.avg = layers.GlobalAveragePooling2D(keepdims=True)
        self.max = layers.GlobalMaxPooling2D(keepdims=True)
        self.mlp = keras.Sequential([layers.Dense(channels // ratio, activation="relu"), layers.Dense(channels)])

    def call(self, x):
        return x * ops.sigmoid(self.mlp(self.avg(x)) + self.mlp(self.max(x)))


class SpatialAttention(layers.Layer):
    def __init__(self, kernel_size=7, **kwargs):
        super().__init__(**kwargs)
        self.conv = layers.Conv2D(1, kernel_size, padding="same", activation="sigmoid")

    def call(self, x):
        avg = ops.mean(x, axis=-1, keepdims=True)
        peak = ops.max(x, axis=-1, keepdims=True)
        return x * self.conv(ops.concatenate([avg, peak], axis=-1))


class DenseBlock(layers.Layer):
    def __init__(self, num_layers, growth_rate, **kwargs):
        super().__init__(**kwargs)
        self.units = []
        for _ in range(num_layers):
            self.units.append(keras.Sequential([layers.BatchNormalization(), layers.ReLU(),
                                                layers.Conv2D(growth_rate, 3, padding="same", use_bias=False)]))

    def call(self, x, training=None):
        features = [x]
        for unit in self.units:
            features.append(unit(ops.concatenate(features, axis=-1), training=training))
        return ops.concatenate(features, axis=-1)


class InceptionModule(layers.Layer):
    def __init__(self, f1, f3, f5, fpool, **kwargs):
        super().__init__(**kwargs)
        self.branch1 = layers.Conv2D(f1, 1, activation="relu")
        self.branch3 = keras.Sequential([layers.Conv2D(f3, 1, activation="relu"),
                                         layers.Conv2D(f3, 3, padding="same", activation="relu")])
        self.branch5 = keras.Sequential([layers.Conv2D(f5, 1, activation="relu"),
                                         layers.Conv2D(f5, 5, padding="same", activation="relu")])
        self.pool_pad = layers.ZeroPadding2D(1)
        self.pool = layers.AveragePooling2D(3, strides=1)
        self.pool_proj = layers.Conv2D(fpool, 1, activation="relu")

    def call(self, x):
        branches = [self.branch1(x), self.branch3(x), self.branch5(x), self.pool_proj(self.pool(self.pool_pad(x)))]
        return ops.concatenate(branches, axis=-1)


class FireModule(layers.Layer):
    def __init__(self, squeeze, expand, **kwargs):
        super().__init__(**kwargs)
        self.squeeze = layers.Conv2D(squeeze, 1, activation="relu")
        self.expand1 = layers.Conv2D(expand, 1, activation="relu")
        self.expand3 = layers.Conv2D(expand, 3, padding="same", activation="relu")

    def call(self, x):
        s = self.squeeze(x)
        return ops.concatenate([self.expand1(s), self.expand3(s)], axis=-1)


class L2NormEmbedding(keras.Model):
    def __init__(self, dim=8):
        super().__init__()
        self.fc = layers.Dense(dim)

    def call(self, x):
        return ops.normalize(self.fc(x), axis=-1)


class ClampedHead(layers.Layer):
    def __init__(self, units, **kwargs):
        super().__init__(**kwargs)
        self.fc = layers.Dense(units)

    def call(self, x):
        return ops.clip(self.fc(x), -0.5, 0.5)


class EinsumAttention(layers.Layer):
    def __init__(self, dim, **kwargs):
        super().__init__(**kwargs)
        self.query = layers.Dense(dim)
        self.key = layers.Dense(dim)
        self.value = layers.Dense(dim)

    def call(self, x):
        scores = ops.einsum("bqd,bkd->bqk", self.query(x), self.key(x))
        return ops.einsum("bqk,bkd->bqd", ops.softmax(scores, axis=-1), self.value(x))


class CausalSelfAttention(layers.Layer):
    def __init__(self, dim, **kwargs):
        super().__init__(**kwargs)
        self.qkv = layers.Dense(3 * dim)
        self.out = layers.Dense(dim)
        self.dim = dim

    def call(self, x):
        q, k, v = ops.split(self.qkv(x), 3, axis=-1)
        length = ops.shape(x)[1]
        scores = ops.matmul(q, ops.transpose(k, (0, 2, 1))) / (self.dim ** 0.5)
        mask = ops.tril(ops.ones((length, length)))
        scores = ops.where(mask > 0, scores, -1e9)
        return self.out(ops.matmul(ops.softmax(scores), v))


class OptionalProjection(layers.Layer):
    def __init__(self, units, project=True, residual=True, **kwargs):
        super().__init__(**kwargs)
        self.fc = layers.Dense(units, activation="elu")
        self.proj = layers.Dense(units) if project else None
        self.residual = residual

    def call(self, x):
        y = self.fc(x)
        if self.proj is not None:
            x = self.proj(x)
        if self.residual:
            y = y + x
        return y


class LeakyNet(keras.Model):
    def __init__(self):
        super().__init__()
        self.fc1 = layers.Dense(16)
        self.act1 = layers.LeakyReLU(negative_slope=0.1)
        self.fc2 = layers.Dense(16)
        self.act2 = layers.ELU(alpha=0.5)
        self.out = layers.Dense(2)

    def call(self, x):
        return self.out(self.act2(self.fc2(self.act1(self.fc1(x)))))


class MultiTaskHeads(keras.Model):
    def __init__(self, tasks=("age", "gender")):
        super().__init__()
        self.trunk = layers.Dense(16, activation="relu")
        self.heads = {name: layers.Dense(1 if name == "age" else 2) for name in tasks}

    def call(self, x):
        h = self.trunk(x)
        return [self.heads[name](h) for name in sorted(self.heads)]


class Conv3DStem(keras.Model):
    def __init__(self):
        super().__init__()
        self.conv = layers.Conv3D(4, 3, padding="same", activation="relu")
        self.pool = layers.GlobalAveragePooling3D()
        self.fc = layers.Dense(3)

    def call(self, x):
        return self.fc(self.pool(self.conv(x)))


class HardSwishBlock(layers.Layer):
    def __init__(self, filters, **kwargs):
        super().__init__(**kwargs)
        self.conv = layers.Conv2D(filters, 3, padding="same")
        self.bn = layers.BatchNormalization()

    def call(self, x, training=None):
        return ops.hard_silu(self.bn(self.conv(x), training=training))


class DilatedBlock(layers.Layer):
    def __init__(self, filters, rate=2, **kwargs):
        super().__init__(**kwargs)
        self.conv = layers.Conv2D(filters, 3, padding="same", dilation_rate=rate, activation="relu")

    def call(self, x):
        return self.conv(x)


class ChannelsFirstConv(keras.Model):
    def __init__(self):
        super().__init__()
        self.conv = layers.Conv2D(6, 3, padding="same", data_format="channels_first")
        self.bn = layers.BatchNormalization(axis=1)
        self.pool = layers.GlobalAveragePooling2D(data_format="channels_first")
        self.fc = layers.Dense(3)

    def call(self, x, training=None):
        return self.fc(self.pool(ops.relu(self.bn(self.conv(x), training=training))))


class StackedFeatures(layers.Layer):
    def __init__(self, dim, **kwargs):
        super().__init__(**kwargs)
        self.a = layers.Dense(dim)
        self.b = layers.Dense(dim)

    def call(self, x):
        stacked = ops.stack([self.a(x), self.b(x)], axis=1)
        return ops.sum(stacked, axis=1) + ops.squeeze(ops.expand_dims(x, 1), axis=1)


class ReshapeHead(layers.Layer):
    def __init__(self, groups=4, **kwargs):
        super().__init__(**kwargs)
        self.groups = groups
        self.fc = layers.Dense(16)

    def call(self, x):
        y = ops.reshape(self.fc(x), (-1, self.groups, 4))
        return ops.reshape(ops.softmax(y, axis=-1), (-1, 16))


class ConvNeXtBlock(layers.Layer):
    def __init__(self, dim, layer_scale=1e-6, **kwargs):
        super().__init__(**kwargs)
        self.dwconv = layers.Conv2D(dim, 7, padding="same", groups=dim)
        self.norm = layers.LayerNormalization(epsilon=1e-6)
        self.pwconv1 = layers.Dense(4 * dim, activation="gelu")
        self.pwconv2 = layers.Dense(dim)
        self.gamma = self.add_weight(shape=(dim,), initializer="ones", name="gamma")

    def call(self, x):
        y = self.pwconv2(self.pwconv1(self.norm(self.dwconv(x))))
        return x + self.gamma * y


class MBConv(layers.Layer):
    def __init__(self, channels, expand=4, **kwargs):
        super().__init__(**kwargs)
        hidden = channels * expand
        self.expand = layers.Conv2D(hidden, 1, use_bias=False)
        self.bn0 = layers.BatchNormalization()
        self.depthwise = layers.Conv2D(hidden, 3, padding="same", groups=hidden, use_bias=False)
        self.bn1 = layers.BatchNormalization()
        self.se = SqueezeExcite(hidden)
        self.project = layers.Conv2D(channels, 1, use_bias=False)
        self.bn2 = layers.BatchNormalization()

    def call(self, x, training=None):
        y = ops.silu(self.bn0(self.expand(x), training=training))
        y = ops.silu(self.bn1(self.depthwise(y), training=training))
        y = self.bn2(self.project(self.se(y)), training=training)
        return x + y


class PreActBlock(layers.Layer):
    def __init__(self, filters, **kwargs):
        super().__init__(**kwargs)
        self.bn1 = layers.BatchNormalization()
        self.conv1 = layers.Conv2D(filters, 3, padding="same", use_bias=False)
        self.bn2 = layers.BatchNormalization()
        self.conv2 = layers.Conv2D(filters, 3, padding="same", use_bias=False)

    def call(self, x, training=None):
        out = self.conv1(ops.relu(self.bn1(x, training=training)))
        out = self.conv2(ops.relu(self.bn2(out, training=training)))
        return out + x


class VGGish(keras.Model):
    def __init__(self, widths=(4, 8), num_classes=5):
        super().__init__()
        self.features = []
        for width in widths:
            self.features.append(layers.Conv2D(width, 3, padding="same", activation="relu"))
            self.features.append(layers.MaxPooling2D(2))
        self.flatten = layers.Flatten()
        self.classifier = keras.Sequential([layers.Dense(16, activation="relu"), layers.Dropout(0.5),
                                            layers.Dense(num_classes)])

    def call(self, x, training=None):
        for layer in self.features:
            x = layer(x)
        return self.classifier(self.flatten(x), training=training)


class StridedConvDecoder(layers.Layer):
    def __init__(self, filters, **kwargs):
        super().__init__(**kwargs)
        self.up = layers.Conv2DTranspose(filters, 3, strides=2)
        self.conv = layers.Conv2D(filters, 3, padding="same", activation="relu")

    def call(self, x):
        return self.conv(self.up(x))


class MixerBlock(layers.Layer):
    """MLP-Mixer: an MLP across tokens (on the transposed sequence), then one across channels."""

    def __init__(self, num_tokens, dim, **kwargs):
        super().__init__(**kwargs)
        self.norm1 = layers.LayerNormalization(epsilon=1e-6)
        self.token_mlp = Mlp(num_tokens * 2, num_tokens, dropout=0.0)
        self.norm2 = layers.LayerNormalization(epsilon=1e-6)
        self.channel_mlp = Mlp(dim * 2, dim, dropout=0.0)

    def call(self, x):
        y = ops.swapaxes(self.norm1(x), 1, 2)
        x = x + ops.swapaxes(self.token_mlp(y), 1, 2)
        return x + self.channel_mlp(self.norm2(x))


class TemporalBlock(layers.Layer):
    """A TCN block: causal dilated 1-D convolutions (left padding) with a 1x1 residual projection."""

    def __init__(self, filters, kernel_size=3, dilation=2, **kwargs):
        super().__init__(**kwargs)
        self.pad = layers.ZeroPadding1D(((kernel_size - 1) * dilation, 0))
        self.conv1 = layers.Conv1D(filters, kernel_size, dilation_rate=dilation, activation="relu")
        self.conv2 = layers.Conv1D(filters, kernel_size, dilation_rate=dilation, activation="relu")
        self.residual = layers.Conv1D(filters, 1)

    def call(self, x):
        y = self.conv2(self.pad(self.conv1(self.pad(x))))
        return ops.relu(y + self.residual(x))


class GatedResidualNetwork(layers.Layer):
    """The Temporal Fusion Transformer's GRN: ELU dense, dense, a gated linear unit, add and norm."""

    def __init__(self, units, **kwargs):
        super().__init__(**kwargs)
        self.elu_dense = layers.Dense(units, activation="elu")
        self.linear = layers.Dense(units)
        self.gate = GatedLinearUnit(units)
        self.norm = layers.LayerNormalization()

    def call(self, x):
        return self.norm(x + self.gate(self.linear(self.elu_dense(x))))


class AttentionPooling(layers.Layer):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.score = layers.Dense(1)

    def call(self, x):
        weights = ops.softmax(self.score(x), axis=1)
        return ops.sum(weights * x, axis=1)


class ASPP(layers.Layer):
    def __init__(self, filters, rates=(1, 2, 3), **kwargs):
        super().__init__(**kwargs)
        self.branches = [layers.Conv2D(filters, 3, padding="same", dilation_rate=r, activation="relu") for r in rates]
        self.project = layers.Conv2D(filters, 1)

    def call(self, x):
        return self.project(ops.concatenate([branch(x) for branch in self.branches], axis=-1))


class SiameseDistance(keras.Model):
    def __init__(self, dim=8):
        super().__init__()
        self.encoder = keras.Sequential([layers.Dense(dim, activation="relu"), layers.Dense(dim)])
        self.head = layers.Dense(1)

    def call(self, left, right):
        return self.head(ops.abs(self.encoder(left) - self.encoder(right)))


class ClassTokenEncoder(keras.Model):
    def __init__(self, dim=8, num_heads=2, num_classes=3):
        super().__init__()
        self.cls_token = self.add_weight(shape=(1, 1, dim), initializer="zeros", name="cls_token")
        self.block = TransformerBlock(dim, num_heads)
        self.head = layers.Dense(num_classes)

    def call(self, x):
        batch = ops.shape(x)[0]
        tokens = ops.broadcast_to(self.cls_token, (batch, 1, ops.shape(x)[-1]))
        x = self.block(ops.concatenate([tokens, x], axis=1))
        return self.head(x[:, 0])


class BagOfEmbeddings(keras.Model):
    def __init__(self, vocab_size=40, dim=8, num_classes=3):
        super().__init__()
        self.embedding = layers.Embedding(vocab_size, dim)
        self.fc = layers.Dense(num_classes)

    def call(self, tokens):
        return self.fc(ops.mean(self.embedding(tokens), axis=1))


class ResidualMLPStack(keras.Model):
    def __init__(self, dim=8, depth=3):
        super().__init__()
        self.blocks = []
        for i in range(depth):
            self.blocks.append(keras.Sequential([layers.LayerNormalization(), layers.Dense(dim, activation="gelu")],
                                                name=f"block_{i}"))
        self.out = layers.Dense(2)

    def call(self, x):
        for block in self.blocks:
            x = x + block(x)
        return self.out(x)


class DCGANGenerator(keras.Model):
    def __init__(self, latent_dim=6, base=8):
        super().__init__()
        self.base = base
        self.project = layers.Dense(4 * 4 * base, use_bias=False)
        self.bn0 = layers.BatchNormalization()
        self.up1 = layers.Conv2DTranspose(base // 2, 4, strides=2, padding="same", use_bias=False)
        self.bn1 = layers.BatchNormalization()
        self.up2 = layers.Conv2DTranspose(1, 4, strides=2, padding="same", activation="tanh")

    def call(self, z, training=None):
        x = ops.relu(self.bn0(self.project(z), training=training))
        x = ops.reshape(x, (-1, 4, 4, self.base))
        x = ops.relu(self.bn1(self.up1(x), training=training))
        return self.up2(x)


class StridedSameStem(keras.Model):
    """Downsampling with strided "same" convolutions, odd and even kernels, as keras.applications' stems do."""

    def __init__(self, filters=6):
        super().__init__()
        self.conv1 = layers.Conv2D(filters, 3, strides=2, padding="same", activation="relu")
        self.conv2 = layers.Conv2D(filters, 4, strides=(2, 3), padding="same", use_bias=False)

    def call(self, x):
        return self.conv2(self.conv1(x))


class LSTMTagger(keras.Model):
    """A sequence tagger: embeddings, two stacked bidirectional LSTMs, a tag per token."""

    def __init__(self, vocab=40, dim=12, hidden=10, tags=5, **kwargs):
        super().__init__(**kwargs)
        self.embed = layers.Embedding(vocab, dim)
        self.encoders = [layers.Bidirectional(layers.LSTM(hidden, return_sequences=True)) for _ in range(2)]
        self.tagger = layers.Dense(tags)

    def call(self, tokens):
        x = self.embed(tokens)
        for encoder in self.encoders:
            x = encoder(x)
        return self.tagger(x)


class LSTMSentiment(keras.Model):
    """A classifier on the final hidden states of both directions."""

    def __init__(self, hidden=12, classes=3, **kwargs):
        super().__init__(**kwargs)
        self.lstm = layers.Bidirectional(layers.LSTM(hidden, return_state=True))
        self.fc = layers.Dense(classes)

    def call(self, x):
        _, forward_h, forward_c, backward_h, backward_c = self.lstm(x)
        return self.fc(ops.concatenate([forward_h, backward_h], axis=-1)) + ops.mean(forward_c + backward_c)


class GRUEncoder(keras.Model):
    """Two GRUs; the second's final state is the encoding."""

    def __init__(self, hidden=16, **kwargs):
        super().__init__(**kwargs)
        self.first = layers.GRU(hidden, return_sequences=True)
        self.second = layers.GRU(hidden, return_state=True)
        self.proj = layers.Dense(hidden, activation="tanh")

    def call(self, x):
        last, state = self.second(self.first(x))
        return self.proj(state) + last


class ReluRNN(keras.Model):
    """An Elman RNN with ReLU, its outputs averaged over time."""

    def __init__(self, hidden=8, **kwargs):
        super().__init__(**kwargs)
        self.rnn = layers.SimpleRNN(hidden, activation="relu", return_sequences=True)

    def call(self, x):
        return ops.mean(self.rnn(x), axis=1)


class MobileNetV1Block(layers.Layer):
    """MobileNet's depthwise-separable block as keras.applications writes it: a strided DepthwiseConv2D, then a
    pointwise Conv2D; a depth multiplier on the first block widens the channels."""

    def __init__(self, filters, stride=2, depth_multiplier=1, **kwargs):
        super().__init__(**kwargs)
        self.depthwise = layers.DepthwiseConv2D((3, 3), strides=stride, padding="same",
                                                depth_multiplier=depth_multiplier, use_bias=False)
        self.bn1 = layers.BatchNormalization()
        self.pointwise = layers.Conv2D(filters, 1, use_bias=False)
        self.bn2 = layers.BatchNormalization()

    def call(self, x, training=None):
        x = ops.relu6(self.bn1(self.depthwise(x), training=training))
        return ops.relu6(self.bn2(self.pointwise(x), training=training))


class StatsPooling(layers.Layer):
    """x-vector statistics pooling over time (channels-last sequences): mean and standard deviation."""

    def __init__(self, channels=8, embed=6, **kwargs):
        super().__init__(**kwargs)
        self.tdnn = layers.Conv1D(channels, 3, padding="same", activation="relu")
        self.embed = layers.Dense(embed)

    def call(self, x):
        h = self.tdnn(x)
        stats = ops.concatenate([ops.mean(h, axis=1), ops.std(h, axis=1)], axis=-1)
        return self.embed(stats) + ops.sum(ops.var(h, axis=1), axis=-1, keepdims=True)


class TopKPooling(layers.Layer):
    """The k largest activations per channel and the index of the largest, as features."""

    def __init__(self, k=2, units=4, **kwargs):
        super().__init__(**kwargs)
        self.k = k
        self.fc = layers.Dense(units)

    def call(self, x):
        h = self.fc(x)
        values, _ = ops.top_k(ops.swapaxes(h, 1, 2), self.k)
        position = ops.cast(ops.argmax(h, axis=1), "float32")
        return ops.reshape(values, (ops.shape(x)[0], -1)), position


class GatedUnit(layers.Layer):
    """A gated linear unit over a doubled projection, with log-sigmoid and softsign terms."""

    def __init__(self, hidden=6, **kwargs):
        super().__init__(**kwargs)
        self.up = layers.Dense(2 * hidden)
        self.down = layers.Dense(4)

    def call(self, x):
        return self.down(ops.glu(self.up(x), axis=-1)) + ops.log_sigmoid(x) - keras.activations.softsign(x)


class CyclicShift(layers.Layer):
    """Swin's shift on channels-last maps, plus running sums over the rows in both directions."""

    def __init__(self, shift=2, **kwargs):
        super().__init__(**kwargs)
        self.shift = shift
        self.mix = layers.Dense(8)

    def call(self, x):
        h = ops.roll(self.mix(ops.roll(x, (-self.shift, -self.shift), axis=(1, 2))), (self.shift, self.shift),
                     axis=(1, 2))
        backward = ops.flip(ops.cumsum(ops.flip(x, axis=1), axis=1), axis=1)
        return h + ops.cumsum(x, axis=1) - backward


class CausalScores(layers.Layer):
    """Causal attention written with keras.ops: an upper-triangular mask from ones_like, scores masked by where."""

    def __init__(self, dim=8, **kwargs):
        super().__init__(**kwargs)
        self.qkv = layers.Dense(3 * dim, use_bias=False)

    def call(self, x):
        q, k, v = ops.split(self.qkv(x), 3, axis=-1)
        scores = ops.matmul(q, ops.swapaxes(k, 1, 2))
        future = ops.cast(ops.triu(ops.ones_like(scores), k=1), "bool")
        scores = ops.where(future, ops.full_like(scores, -1e9), scores)
        return ops.matmul(ops.softmax(scores, axis=-1), v)


class RepeatedFeatures(layers.Layer):
    """Tiles, repeats, picks steps with take, unstacks them, and adds sign, rounding and norm features."""

    def __init__(self, dim=4, **kwargs):
        super().__init__(**kwargs)
        self.fc = layers.Dense(dim)

    def call(self, x):
        h = self.fc(x)
        picked = ops.take(h, ops.arange(0, 4, 2), axis=1)
        first, second = ops.unstack(picked, axis=1)
        tiled = ops.tile(first, (1, 2)) + ops.repeat(second, 2, axis=-1)
        steady = ops.stop_gradient(ops.sign(h) * ops.round(h))
        return tiled, steady + ops.norm(h, axis=-1, keepdims=True) + ops.zeros_like(h)


class Linear(layers.Layer):
    """The Keras guide's custom dense layer: weights made in build() from the input's last axis."""

    def __init__(self, units=32, **kwargs):
        super().__init__(**kwargs)
        self.units = units

    def build(self, input_shape):
        self.w = self.add_weight(shape=(input_shape[-1], self.units), initializer="random_normal", trainable=True)
        self.b = self.add_weight(shape=(self.units,), initializer="zeros", trainable=True)
        super().build(input_shape)

    def call(self, inputs):
        return ops.matmul(inputs, self.w) + self.b


class BuiltLayerScale(layers.Layer):
    """ConvNeXt's LayerScale as keras.applications writes it: one trained scale per channel, made in build()."""

    def __init__(self, init_values=1e-6, **kwargs):
        super().__init__(**kwargs)
        self.init_values = init_values

    def build(self, input_shape):
        self.gamma = self.add_weight(shape=(input_shape[-1],), initializer=keras.initializers.Constant(
            self.init_values), trainable=True, name="gamma")
        self.built = True

    def call(self, x):
        return x * self.gamma


class AdditiveAttention(layers.Layer):
    """Bahdanau attention whose weights are sized from both inputs (build(query_shape, values_shape))."""

    def __init__(self, units, **kwargs):
        super().__init__(**kwargs)
        self.units = units

    def build(self, query_shape, values_shape):
        self.w_query = self.add_weight(shape=(query_shape[-1], self.units), initializer="glorot_uniform")
        self.w_values = self.add_weight(shape=(values_shape[-1], self.units), initializer="glorot_uniform")
        self.score = self.add_weight(shape=(self.units, 1), initializer="glorot_uniform")

    def call(self, query, values):
        hidden = ops.tanh(ops.expand_dims(ops.matmul(query, self.w_query), 1) + ops.matmul(values, self.w_values))
        weights = ops.softmax(ops.matmul(hidden, self.score), axis=1)
        return ops.sum(weights * values, axis=1)


class BuiltGatedBlock(layers.Layer):
    """Sublayers sized from the input in build(), next to a weight of its own and a non-trained counter."""

    def __init__(self, expansion=2, **kwargs):
        super().__init__(**kwargs)
        self.expansion = expansion

    def build(self, input_shape):
        channels = input_shape[-1]
        self.expand = layers.Dense(channels * self.expansion)
        self.project = layers.Dense(channels)
        self.gate = self.add_weight(shape=(channels,), initializer="ones", name="gate")
        self.offset = self.add_weight(shape=(1,), initializer="zeros", trainable=False, name="offset")

    def call(self, x):
        return x + self.gate * self.project(ops.gelu(self.expand(x))) + self.offset


class BuiltModel(keras.Model):
    """A model of layers built on the first call."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.linear = Linear(12)
        self.scale = BuiltLayerScale(0.5)
        self.head = layers.Dense(3)

    def call(self, x):
        return self.head(ops.relu(self.scale(self.linear(x))))


class XceptionBlock(layers.Layer):
    """Xception's residual block: separable convolutions, a strided max pool and a 1x1 strided shortcut."""

    def __init__(self, filters, **kwargs):
        super().__init__(**kwargs)
        self.sep1 = layers.SeparableConv2D(filters, 3, padding="same", use_bias=False)
        self.bn1 = layers.BatchNormalization()
        self.sep2 = layers.SeparableConv2D(filters, 3, padding="same", depth_multiplier=2, use_bias=False)
        self.bn2 = layers.BatchNormalization()
        self.pool = layers.MaxPooling2D(3, strides=2)
        self.shortcut = layers.Conv2D(filters, 1, strides=2, use_bias=False)

    def call(self, x, training=False):
        y = self.bn1(self.sep1(ops.relu(x)), training=training)
        y = self.bn2(self.sep2(ops.relu(y)), training=training)
        return self.pool(y) + self.shortcut(x)[:, :-1, :-1, :]


class SeparableStem(layers.Layer):
    """Strided, dilated and activated separable convolutions in 2-D and 1-D, and a 1-D depthwise one."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.down = layers.SeparableConv2D(6, 3, strides=2, padding="same", activation="relu")
        self.wide = layers.SeparableConv2D(4, 3, dilation_rate=2, depth_multiplier=3)
        self.temporal = layers.SeparableConv1D(5, 3, padding="same", activation="gelu")
        self.depthwise = layers.DepthwiseConv1D(3, depth_multiplier=2)

    def call(self, x):
        y = self.wide(self.down(x))
        return self.depthwise(self.temporal(ops.reshape(y, (ops.shape(y)[0], -1, 4))))


class KerasTutorialTransformer(layers.Layer):
    """The Keras text-classification tutorial's TransformerBlock: MultiHeadAttention, a feed-forward network,
    dropout and post-norm residuals."""

    def __init__(self, embed_dim, num_heads, ff_dim, rate=0.1, **kwargs):
        super().__init__(**kwargs)
        self.att = layers.MultiHeadAttention(num_heads=num_heads, key_dim=embed_dim)
        self.ffn = keras.Sequential([layers.Dense(ff_dim, activation="relu"), layers.Dense(embed_dim)])
        self.layernorm1 = layers.LayerNormalization(epsilon=1e-6)
        self.layernorm2 = layers.LayerNormalization(epsilon=1e-6)
        self.dropout1 = layers.Dropout(rate)
        self.dropout2 = layers.Dropout(rate)

    def call(self, inputs, training=False):
        attn_output = self.att(inputs, inputs)
        attn_output = self.dropout1(attn_output, training=training)
        out1 = self.layernorm1(inputs + attn_output)
        ffn_output = self.dropout2(self.ffn(out1), training=training)
        return self.layernorm2(out1 + ffn_output)


class CrossAttentionDecoder(layers.Layer):
    """Causal self-attention, then cross-attention over a memory of another width with its own key and value
    sizes, returning the cross-attention weights too."""

    def __init__(self, dim=8, **kwargs):
        super().__init__(**kwargs)
        self.self_attention = layers.MultiHeadAttention(2, 4, dropout=0.1)
        self.cross_attention = layers.MultiHeadAttention(3, 5, value_dim=2, use_bias=False)
        self.norm = layers.LayerNormalization()

    def call(self, x, memory):
        h = self.norm(x + self.self_attention(x, x, use_causal_mask=True))
        out, scores = self.cross_attention(h, memory, return_attention_scores=True)
        return out, scores


class MaskedAttentionPool(layers.Layer):
    """Self-attention that skips padded steps (a value mask from the token ids) under an explicit attention
    mask."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.embed = layers.Embedding(20, 6)
        self.attention = layers.MultiHeadAttention(2, 3)

    def call(self, tokens):
        h = self.embed(tokens)
        valid = ops.logical_and(ops.not_equal(tokens, 1), ops.greater(tokens, 2))  # ids 1 and 2 pad
        window = ops.cast(ops.tril(ops.ones((ops.shape(tokens)[1], ops.shape(tokens)[1])), k=2), "bool")
        return self.attention(h, h, value_mask=valid, attention_mask=window[None])


class PreNormMLPBlock(layers.Layer):
    """A pre-norm residual MLP on Keras' own RMSNormalization (its size left to the first call)."""

    def __init__(self, hidden=12, **kwargs):
        super().__init__(**kwargs)
        self.norm = layers.RMSNormalization(epsilon=1e-5)
        self.up = layers.Dense(hidden, activation="silu")
        self.down = layers.Dense(6)

    def call(self, x):
        return x + self.down(self.up(self.norm(x)))


class EinopsMixer(layers.Layer):
    """An MLP-Mixer stem on einops: a patch layer, token mixing across a rearranged axis, a pooling layer."""

    def __init__(self, patch=2, dim=6, **kwargs):
        super().__init__(**kwargs)
        self.patches = einops.layers.keras.Rearrange("b (h p1) (w p2) c -> b (h w) (p1 p2 c)", p1=patch, p2=patch)
        self.embed = layers.Dense(dim)
        self.token_mix = layers.Dense(6)
        self.pool = einops.layers.keras.Reduce("b n d -> b d", "mean")

    def call(self, x):
        h = self.embed(self.patches(x))
        mixed = rearrange(self.token_mix(rearrange(h, "b n d -> b d n")), "b d n -> b n d")
        return self.pool(h + mixed), reduce(h, "b (g n) d -> b g d", "max", g=2)


class TiedDecoder(layers.Layer):
    """Output logits from the token embedding's table (tied weights), a dense layer's kernel and bias reused."""

    def __init__(self, vocab=9, dim=6, **kwargs):
        super().__init__(**kwargs)
        self.embed = layers.Embedding(vocab, dim)
        self.mix = layers.Dense(dim)
        self.norm = layers.LayerNormalization()

    def call(self, ids):
        h = self.mix(self.embed(ids))
        h = ops.matmul(ops.tanh(h), self.mix.kernel) + self.mix.bias
        h = self.norm(h) + self.norm.beta
        return ops.matmul(h, ops.transpose(self.embed.embeddings))


def positional_encoding(length, depth):
    """The TensorFlow transformer tutorial's sinusoidal table, computed with NumPy."""
    depth = depth / 2
    positions = np.arange(length)[:, np.newaxis]
    depths = np.arange(depth)[np.newaxis, :] / depth
    angle_rads = positions * (1 / (10000 ** depths))
    return np.concatenate([np.sin(angle_rads), np.cos(angle_rads)], axis=-1).astype("float32")


class TutorialPositionalEmbedding(keras.layers.Layer):
    """Token embeddings scaled by sqrt(d_model) plus the NumPy table kept as an attribute."""

    def __init__(self, vocab_size=20, d_model=8, max_len=64):
        super().__init__()
        self.d_model = d_model
        self.embedding = layers.Embedding(vocab_size, d_model)
        self.pos_encoding = positional_encoding(max_len, d_model)

    def call(self, x):
        length = ops.shape(x)[1]
        x = self.embedding(x)
        x = x * ops.sqrt(ops.cast(self.d_model, "float32"))
        return x + self.pos_encoding[None, :length, :]


class SequentialConvBlock(keras.Sequential):
    """A subclass of keras.Sequential passing its layers to super().__init__."""

    def __init__(self, filters=8):
        super().__init__([layers.Conv2D(filters, 3, padding="same"), layers.BatchNormalization(), layers.ReLU()])



class DenseResidualStack(keras.Sequential):
    """A keras.Sequential subclass whose call walks its own layers (self.layers), adding each one's output."""

    def __init__(self, units=6, depth=3):
        super().__init__([layers.Dense(units, activation="tanh") for _ in range(depth)])

    def call(self, x):
        for layer in self.layers[:-1]:
            x = x + layer(x)
        return self.layers[-1](x) * len(self.layers)


class XceptionStyleBlock(layers.Layer):
    """An Xception-style block as tf.keras code writes it: separable convs, SpatialDropout2D, a strided max pool
    with padding="same" (which pads by an amount depending on the input size, with -inf) and the functional
    layers.add merge with a strided 1x1 shortcut."""

    def __init__(self, filters=8, **kwargs):
        super().__init__(**kwargs)
        self.filters = filters
        self.sep = layers.SeparableConv2D(filters, 3, padding="same", use_bias=False)
        self.bn = layers.BatchNormalization()
        self.act = layers.Activation("swish")
        self.drop = layers.SpatialDropout2D(0.1)
        self.pool = layers.MaxPooling2D(3, strides=2, padding="same")
        self.shortcut = layers.Conv2D(filters, 1, strides=2, padding="same")

    def call(self, inputs, training=None):
        x = self.act(self.bn(self.sep(inputs), training=training))
        x = self.drop(x, training=training)
        x = self.pool(x)
        return layers.add([x, self.shortcut(inputs)])

    def get_config(self):
        config = super().get_config()
        config.update({"filters": self.filters})
        return config


class SamePoolMerge(layers.Layer):
    """Pools with padding="same" straight on the input (negative values at the border), merged with the
    functional layers.concatenate / layers.maximum / layers.subtract."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.max_pool = layers.MaxPooling2D(2, strides=2, padding="same")
        self.max_pool3 = layers.MaxPooling2D(3, strides=2, padding="same")
        self.pool1d = layers.MaxPooling1D(3, strides=2, padding="same")

    def call(self, x):
        a = self.max_pool(x)
        b = self.max_pool3(x)
        rows = self.pool1d(ops.reshape(x, (ops.shape(x)[0], -1, ops.shape(x)[-1])))
        merged = layers.concatenate([a, layers.maximum([a, b]), layers.subtract([a, b])], axis=-1)
        return ops.mean(merged, axis=(1, 2)) + ops.tile(ops.mean(rows, axis=1), (1, 3))


class VAEDecoder(keras.Model):
    """keras.io's VAE decoder style: Conv2DTranspose with padding="same" and a 3x3 kernel at stride 2 (Keras crops
    the odd extra row at the end), a non-square kernel and stride, and a dilated kernel."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.up1 = layers.Conv2DTranspose(8, 3, activation="relu", strides=2, padding="same")
        self.up2 = layers.Conv2DTranspose(4, 3, activation="relu", strides=2, padding="same")
        self.up3 = layers.Conv2DTranspose(3, (4, 3), strides=(2, 1), padding="same")
        self.up4 = layers.Conv2DTranspose(2, 3, strides=1, padding="same", dilation_rate=2)
        self.out = layers.Conv2DTranspose(1, 3, padding="same")

    def call(self, x):
        return self.out(self.up4(self.up3(self.up2(self.up1(x)))))


class RegularizedConvNet(keras.Model):
    """tf.keras-era code: kernel and bias regularizers (l2 of a constructor argument, L1L2, L1, L2's default), on
    a strided conv, a dense layer with a fused activation and the head."""

    def __init__(self, weight_decay=1e-4, **kwargs):
        super().__init__(**kwargs)
        self.conv = layers.Conv2D(8, 3, strides=2, padding="same", kernel_regularizer=regularizers.l2(weight_decay))
        self.bn = layers.BatchNormalization()
        self.hidden = layers.Dense(6, activation="relu", kernel_regularizer=keras.regularizers.L1L2(l1=1e-3, l2=1e-2),
                                   bias_regularizer=regularizers.L1(0.5))
        self.fc = layers.Dense(3, kernel_regularizer=regularizers.L2())

    def call(self, x):
        h = ops.mean(ops.relu(self.bn(self.conv(x))), axis=(1, 2))
        return self.fc(self.hidden(h))


class OneHotMix(layers.Layer):
    """keras.ops.one_hot and tf.one_hot (float32, where PyTorch's are int64), tf.stop_gradient, a constant from
    ops.convert_to_tensor."""

    def __init__(self, classes=8, **kwargs):
        super().__init__(**kwargs)
        self.classes = classes
        self.proj = layers.Dense(3)

    def call(self, ids):
        feats = ops.cast(ids[..., None], "float32") * ops.linspace(0.5, 1.5, 6)
        hot = ops.one_hot(ids, self.classes)
        hot2 = tf.one_hot(ids, self.classes)
        fixed = ops.convert_to_tensor([[1.0, 2.0, 3.0]])
        return self.proj(tf.stop_gradient(feats)) + ops.sum(hot * 2 + hot2, axis=-1, keepdims=True) * fixed


class ConvTokenizer(layers.Layer):
    """keras.io's CCT tokenizer style: an empty keras.Sequential built with .add() in a loop (convolutions, zero
    padding, strided max pools with padding "same"), flattened to a sequence of tokens."""

    def __init__(self, kernel_size=3, stride=1, pooling_kernel_size=3, pooling_stride=2, num_conv_layers=2,
                 num_output_channels=(8, 16), **kwargs):
        super().__init__(**kwargs)
        self.conv_model = keras.Sequential()
        for i in range(num_conv_layers):
            self.conv_model.add(
                layers.Conv2D(num_output_channels[i], kernel_size, stride, padding="valid", use_bias=False,
                              activation="relu", kernel_initializer="he_normal")
            )
            self.conv_model.add(layers.ZeroPadding2D(1))
            self.conv_model.add(layers.MaxPooling2D(pooling_kernel_size, pooling_stride, "same"))

    def call(self, images):
        outputs = self.conv_model(images)
        return ops.reshape(outputs, (-1, ops.shape(outputs)[1] * ops.shape(outputs)[2], ops.shape(outputs)[-1]))


class Patches(layers.Layer):
    """keras.io's ViT patches: ops.image.extract_patches, reshaped to a sequence."""

    def __init__(self, patch_size=4):
        super().__init__()
        self.patch_size = patch_size

    def call(self, images):
        input_shape = ops.shape(images)
        batch_size = input_shape[0]
        height = input_shape[1]
        width = input_shape[2]
        channels = input_shape[3]
        num_patches_h = height // self.patch_size
        num_patches_w = width // self.patch_size
        patches = keras.ops.image.extract_patches(images, size=self.patch_size)
        patches = ops.reshape(patches, (batch_size, num_patches_h * num_patches_w,
                                        self.patch_size * self.patch_size * channels))
        return patches


class MergeSEBlock(layers.Layer):
    """Squeeze-excitation with Keras' layers: GlobalAveragePooling2D, Reshape, and a Multiply merge that
    broadcasts the gate."""

    def __init__(self, filters=8, ratio=4):
        super().__init__()
        self.gap = layers.GlobalAveragePooling2D()
        self.reshape = layers.Reshape((1, 1, filters))
        self.fc1 = layers.Dense(filters // ratio, activation="relu")
        self.fc2 = layers.Dense(filters, activation="sigmoid")
        self.mul = layers.Multiply()

    def call(self, x):
        s = self.reshape(self.gap(x))
        s = self.fc2(self.fc1(s))
        return self.mul([x, s])


class MergeResBlock(layers.Layer):
    """A residual block joined by Add and Concatenate layers, with swish."""

    def __init__(self, filters=8):
        super().__init__()
        self.c1 = layers.Conv2D(filters, 3, padding="same")
        self.b1 = layers.BatchNormalization()
        self.c2 = layers.Conv2D(filters, 3, padding="same")
        self.b2 = layers.BatchNormalization()
        self.add = layers.Add()
        self.act = layers.Activation("swish")
        self.cat = layers.Concatenate(axis=-1)

    def call(self, x, training=False):
        y = self.act(self.b1(self.c1(x), training=training))
        y = self.b2(self.c2(y), training=training)
        return self.cat([self.act(self.add([x, y])), x])


class RescaledStem(layers.Layer):
    """Rescaling of pixel values before a convolution."""

    def __init__(self):
        super().__init__()
        self.rescale = layers.Rescaling(1.0 / 255, offset=-0.5)
        self.conv = layers.Conv2D(4, 3)
        self.avg = layers.Average()
        self.sub = layers.Subtract()

    def call(self, x):
        y = self.conv(self.rescale(x))
        return self.sub([self.avg([y, y * 2.0]), y])


# keras.io's focal modulation layer as written there (TensorFlow's split into parts of listed sizes, an
# activation given as keras.activations.gelu, layers kept in a list(), values kept on the layer in call)


class FocalModulationLayer(layers.Layer):
    """The Focal Modulation layer includes query projection & context aggregation."""

    def __init__(
        self,
        dim: int,
        focal_window: int,
        focal_level: int,
        focal_factor: int = 2,
        proj_drop_rate: float = 0.0,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.dim = dim
        self.focal_window = focal_window
        self.focal_level = focal_level
        self.focal_factor = focal_factor
        self.proj_drop_rate = proj_drop_rate

        # Project the input feature into a new feature space using a
        # linear layer. Note the `units` used. We will be projecting the input
        # feature all at once and split the projection into query, context,
        # and gates.
        self.initial_proj = layers.Dense(
            units=(2 * self.dim) + (self.focal_level + 1),
            use_bias=True,
        )
        self.focal_layers = list()
        self.kernel_sizes = list()
        for idx in range(self.focal_level):
            kernel_size = (self.focal_factor * idx) + self.focal_window
            depth_gelu_block = keras.Sequential(
                [
                    layers.ZeroPadding2D(padding=(kernel_size // 2, kernel_size // 2)),
                    layers.Conv2D(
                        filters=self.dim,
                        kernel_size=kernel_size,
                        activation=keras.activations.gelu,
                        groups=self.dim,
                        use_bias=False,
                    ),
                ]
            )
            self.focal_layers.append(depth_gelu_block)
            self.kernel_sizes.append(kernel_size)
        self.activation = keras.activations.gelu
        self.gap = layers.GlobalAveragePooling2D(keepdims=True)
        self.modulator_proj = layers.Conv2D(
            filters=self.dim,
            kernel_size=(1, 1),
            use_bias=True,
        )
        self.proj = layers.Dense(units=self.dim)
        self.proj_drop = layers.Dropout(self.proj_drop_rate)

    def call(self, x: tf.Tensor, training: Optional[bool] = None) -> tf.Tensor:
        """Forward pass of the layer.

        Args:
            x: Tensor of shape (B, H, W, C)
        """
        # Apply the linear projecion to the input feature map
        x_proj = self.initial_proj(x)

        # Split the projected x into query, context and gates
        query, context, self.gates = tf.split(
            value=x_proj,
            num_or_size_splits=[self.dim, self.dim, self.focal_level + 1],
            axis=-1,
        )

        # Context aggregation
        context = self.focal_layers[0](context)
        context_all = context * self.gates[..., 0:1]
        for idx in range(1, self.focal_level):
            context = self.focal_layers[idx](context)
            context_all += context * self.gates[..., idx : idx + 1]

        # Build the global context
        context_global = self.activation(self.gap(context))
        context_all += context_global * self.gates[..., self.focal_level :]

        # Focal Modulation
        self.modulator = self.modulator_proj(context_all)
        x_output = query * self.modulator

        # Project the output and apply dropout
        x_output = self.proj(x_output)
        x_output = self.proj_drop(x_output, training=training)

        return x_output


# keras.io's CaiT attentions as written there (a Python scale cast with ops.cast; tuples returned)


class ClassAttention(layers.Layer):
    """Class attention as proposed in CaiT: https://arxiv.org/abs/2103.17239.

    Args:
        projection_dim (int): projection dimension for the query, key, and value
            of attention.
        num_heads (int): number of attention heads.
        dropout_rate (float): dropout rate to be used for dropout in the attention
            scores as well as the final projected outputs.
    """

    def __init__(
        self, projection_dim: int, num_heads: int, dropout_rate: float, **kwargs
    ):
        super().__init__(**kwargs)
        self.num_heads = num_heads

        head_dim = projection_dim // num_heads
        self.scale = head_dim**-0.5

        self.q = layers.Dense(projection_dim)
        self.k = layers.Dense(projection_dim)
        self.v = layers.Dense(projection_dim)
        self.attn_drop = layers.Dropout(dropout_rate)
        self.proj = layers.Dense(projection_dim)
        self.proj_drop = layers.Dropout(dropout_rate)

    def call(self, x, training=False):
        batch_size, num_patches, num_channels = (
            ops.shape(x)[0],
            ops.shape(x)[1],
            ops.shape(x)[2],
        )

        # Query projection. `cls_token` embeddings are queries.
        q = ops.expand_dims(self.q(x[:, 0]), axis=1)
        q = ops.reshape(
            q, (batch_size, 1, self.num_heads, num_channels // self.num_heads)
        )  # Shape: (batch_size, 1, num_heads, dimension_per_head)
        q = ops.transpose(q, axes=[0, 2, 1, 3])
        scale = ops.cast(self.scale, dtype=q.dtype)
        q = q * scale

        # Key projection. Patch embeddings as well the cls embedding are used as keys.
        k = self.k(x)
        k = ops.reshape(
            k, (batch_size, num_patches, self.num_heads, num_channels // self.num_heads)
        )  # Shape: (batch_size, num_tokens, num_heads, dimension_per_head)
        k = ops.transpose(k, axes=[0, 2, 3, 1])

        # Value projection. Patch embeddings as well the cls embedding are used as values.
        v = self.v(x)
        v = ops.reshape(
            v, (batch_size, num_patches, self.num_heads, num_channels // self.num_heads)
        )
        v = ops.transpose(v, axes=[0, 2, 1, 3])

        # Calculate attention scores between cls_token embedding and patch embeddings.
        attn = ops.matmul(q, k)
        attn = ops.nn.softmax(attn, axis=-1)
        attn = self.attn_drop(attn, training=training)

        x_cls = ops.matmul(attn, v)
        x_cls = ops.transpose(x_cls, axes=[0, 2, 1, 3])
        x_cls = ops.reshape(x_cls, (batch_size, 1, num_channels))
        x_cls = self.proj(x_cls)
        x_cls = self.proj_drop(x_cls, training=training)

        return x_cls, attn


class TalkingHeadAttention(layers.Layer):
    """Talking-head attention as proposed in CaiT: https://arxiv.org/abs/2003.02436."""

    def __init__(
        self, projection_dim: int, num_heads: int, dropout_rate: float, **kwargs
    ):
        super().__init__(**kwargs)

        self.num_heads = num_heads

        head_dim = projection_dim // self.num_heads

        self.scale = head_dim**-0.5

        self.qkv = layers.Dense(projection_dim * 3)
        self.attn_drop = layers.Dropout(dropout_rate)

        self.proj = layers.Dense(projection_dim)

        self.proj_l = layers.Dense(self.num_heads)
        self.proj_w = layers.Dense(self.num_heads)

        self.proj_drop = layers.Dropout(dropout_rate)

    def call(self, x, training=False):
        B, N, C = ops.shape(x)[0], ops.shape(x)[1], ops.shape(x)[2]

        # Project the inputs all at once.
        qkv = self.qkv(x)

        # Reshape the projected output so that they're segregated in terms of
        # query, key, and value projections.
        qkv = ops.reshape(qkv, (B, N, 3, self.num_heads, C // self.num_heads))

        # Transpose so that the `num_heads` becomes the leading dimensions.
        # Helps to better segregate the representation sub-spaces.
        qkv = ops.transpose(qkv, axes=[2, 0, 3, 1, 4])
        scale = ops.cast(self.scale, dtype=qkv.dtype)
        q, k, v = qkv[0] * scale, qkv[1], qkv[2]

        # Obtain the raw attention scores.
        attn = ops.matmul(q, ops.transpose(k, axes=[0, 1, 3, 2]))

        # Linear projection of the similarities between the query and key projections.
        attn = self.proj_l(ops.transpose(attn, axes=[0, 2, 3, 1]))

        # Normalize the attention scores.
        attn = ops.transpose(attn, axes=[0, 3, 1, 2])
        attn = ops.nn.softmax(attn, axis=-1)

        # Linear projection on the softmaxed scores.
        attn = self.proj_w(ops.transpose(attn, axes=[0, 2, 3, 1]))
        attn = ops.transpose(attn, axes=[0, 3, 1, 2])
        attn = self.attn_drop(attn, training=training)

        # Final set of projections as done in the vanilla attention mechanism.
        x = ops.matmul(attn, v)
        x = ops.transpose(x, axes=[0, 2, 1, 3])
        x = ops.reshape(x, (B, N, C))

        x = self.proj(x)
        x = self.proj_drop(x, training=training)

        return x, attn


# keras.io's Compact Convolutional Transformer tokenizer: a ZeroPadding2D given by a constructor argument of
# any structure (an int, one width per axis, or pairs), read when it runs.


class CCTTokenizer(layers.Layer):
    def __init__(
        self,
        kernel_size=3,
        stride=1,
        padding=1,
        pooling_kernel_size=3,
        pooling_stride=2,
        num_conv_layers=2,
        num_output_channels=[8, 16],  # noqa: B006 (as keras.io writes it)
        positional_emb=True,
        **kwargs,
    ):
        super().__init__(**kwargs)

        # This is our tokenizer.
        self.conv_model = keras.Sequential()
        for i in range(num_conv_layers):
            self.conv_model.add(
                layers.Conv2D(
                    num_output_channels[i],
                    kernel_size,
                    stride,
                    padding="valid",
                    use_bias=False,
                    activation="relu",
                    kernel_initializer="he_normal",
                )
            )
            self.conv_model.add(layers.ZeroPadding2D(padding))
            self.conv_model.add(
                layers.MaxPooling2D(pooling_kernel_size, pooling_stride, "same")
            )

        self.positional_emb = positional_emb

    def call(self, images):
        outputs = self.conv_model(images)
        # After passing the images through our mini-network the spatial dimensions
        # are flattened to form sequences.
        reshaped = keras.ops.reshape(
            outputs,
            (
                -1,
                keras.ops.shape(outputs)[1] * keras.ops.shape(outputs)[2],
                keras.ops.shape(outputs)[-1],
            ),
        )
        return reshaped


# keras.io's video vision transformer tubelets (padding="VALID" as written) and the VQ-VAE's quantizer
# (a tf.Variable drawn by a TensorFlow initializer, tf.matmul(transpose_b=True), tf.argmin, add_loss).


class TubeletEmbedding(layers.Layer):
    def __init__(self, embed_dim, patch_size, **kwargs):
        super().__init__(**kwargs)
        self.projection = layers.Conv3D(
            filters=embed_dim,
            kernel_size=patch_size,
            strides=patch_size,
            padding="VALID",
        )
        self.flatten = layers.Reshape(target_shape=(-1, embed_dim))

    def call(self, videos):
        projected_patches = self.projection(videos)
        flattened_patches = self.flatten(projected_patches)
        return flattened_patches


class VectorQuantizer(layers.Layer):
    def __init__(self, num_embeddings, embedding_dim, beta=0.25, **kwargs):
        super().__init__(**kwargs)
        self.embedding_dim = embedding_dim
        self.num_embeddings = num_embeddings

        # The `beta` parameter is best kept between [0.25, 2] as per the paper.
        self.beta = beta

        # Initialize the embeddings which we will quantize.
        w_init = tf.random_uniform_initializer()
        self.embeddings = tf.Variable(
            initial_value=w_init(
                shape=(self.embedding_dim, self.num_embeddings), dtype="float32"
            ),
            trainable=True,
            name="embeddings_vqvae",
        )

    def call(self, x):
        # Calculate the input shape of the inputs and
        # then flatten the inputs keeping `embedding_dim` intact.
        input_shape = tf.shape(x)
        flattened = tf.reshape(x, [-1, self.embedding_dim])

        # Quantization.
        encoding_indices = self.get_code_indices(flattened)
        encodings = tf.one_hot(encoding_indices, self.num_embeddings)
        quantized = tf.matmul(encodings, self.embeddings, transpose_b=True)

        # Reshape the quantized values back to the original input shape
        quantized = tf.reshape(quantized, input_shape)

        # Calculate vector quantization loss and add that to the layer. You can learn more
        # about adding losses to different layers here:
        # https://keras.io/guides/making_new_layers_and_models_via_subclassing/. Check
        # the original paper to get a handle on the formulation of the loss function.
        commitment_loss = tf.reduce_mean((tf.stop_gradient(quantized) - x) ** 2)
        codebook_loss = tf.reduce_mean((quantized - tf.stop_gradient(x)) ** 2)
        self.add_loss(self.beta * commitment_loss + codebook_loss)

        # Straight-through estimator.
        quantized = x + tf.stop_gradient(quantized - x)
        return quantized

    def get_code_indices(self, flattened_inputs):
        # Calculate L2-normalized distance between the inputs and the codes.
        similarity = tf.matmul(flattened_inputs, self.embeddings)
        distances = (
            tf.reduce_sum(flattened_inputs**2, axis=1, keepdims=True)
            + tf.reduce_sum(self.embeddings**2, axis=0)
            - 2 * similarity
        )

        # Derive the indices for minimum distances.
        encoding_indices = tf.argmin(distances, axis=1)
        return encoding_indices


CASES = [
    ("Mlp", (16, 8), (2, 12)),
    ("ConvBNReLU", (8,), (2, 10, 10, 3)),
    ("ResidualBlock", (8, 2), (2, 10, 10, 4)),
    ("Bottleneck", (4,), (2, 8, 8, 6)),
    ("TinyResNet", (), (2, 32, 32, 3)),
    ("SqueezeExcite", (8,), (2, 6, 6, 8)),
    ("SEConvBlock", (8,), (2, 6, 6, 3)),
    ("GroupedConvBlock", (6, 10), (2, 8, 8, 6)),
    ("InvertedResidual", (4,), (2, 8, 8, 4)),
    ("DoubleConv", (6,), (2, 8, 8, 3)),
    ("TinyUNet", (), (2, 16, 16, 3)),
    ("UpsampleDecoder", (4,), (2, 5, 5, 3)),
    ("MultiHeadSelfAttention", (16, 4), (2, 6, 16)),
    ("TransformerBlock", (16, 2), (2, 5, 16)),
    ("PatchEmbedding", (4, 8, 4), (2, 8, 8, 3)),
    ("TinyViT", (), (2, 16, 16, 3)),
    ("TokenAndPositionEmbedding", (10, 30, 8), (2, 10), "int64"),
    ("TextTransformer", (), (2, 12), "int64"),
    ("TextCNN", (), (2, 14), "int64"),
    ("Conv1DClassifier", (), (2, 16, 3)),
    ("LeNet", (), (2, 28, 28, 1)),
    ("Autoencoder", (), (2, 20)),
    ("VAEHead", (4,), (2, 10)),
    ("GatedLinearUnit", (6,), (2, 3, 8)),
    ("SwiGLU", (8, 12), (2, 4, 8)),
    ("RMSNorm", (8,), (2, 3, 8)),
    ("LlamaStyleBlock", (8, 16), (2, 3, 8)),
    ("LayerScale", (8,), (2, 8)),
    ("ScaledResidual", (8,), (2, 8)),
    ("Highway", (8,), (2, 8)),
    ("ChannelAttention", (8,), (2, 5, 5, 8)),
    ("SpatialAttention", (), (2, 8, 8, 4)),
    ("DenseBlock", (3, 4), (2, 6, 6, 4)),
    ("InceptionModule", (4, 6, 2, 3), (2, 8, 8, 5)),
    ("FireModule", (3, 4), (2, 8, 8, 6)),
    ("L2NormEmbedding", (), (2, 6)),
    ("ClampedHead", (4,), (2, 6)),
    ("EinsumAttention", (8,), (2, 5, 8)),
    ("CausalSelfAttention", (8,), (2, 5, 8)),
    ("OptionalProjection", (6,), (2, 4)),
    ("LeakyNet", (), (2, 5)),
    ("MultiTaskHeads", (), (2, 7)),
    ("Conv3DStem", (), (2, 6, 6, 6, 2)),
    ("HardSwishBlock", (6,), (2, 6, 6, 3)),
    ("DilatedBlock", (5,), (2, 9, 9, 3)),
    ("ChannelsFirstConv", (), (2, 3, 8, 8)),
    ("StackedFeatures", (6,), (2, 6)),
    ("ReshapeHead", (), (3, 5)),
    ("ConvNeXtBlock", (8,), (2, 8, 8, 8)),
    ("MBConv", (4,), (2, 6, 6, 4)),
    ("PreActBlock", (4,), (2, 6, 6, 4)),
    ("VGGish", (), (2, 8, 8, 3)),
    ("StridedConvDecoder", (4,), (2, 5, 5, 3)),
    ("MixerBlock", (6, 8), (2, 6, 8)),
    ("TemporalBlock", (6,), (2, 12, 3)),
    ("GatedResidualNetwork", (6,), (2, 6)),
    ("AttentionPooling", (), (2, 5, 6)),
    ("ASPP", (4,), (2, 9, 9, 3)),
    ("SiameseDistance", (), [(2, 5), (2, 5)]),
    ("ClassTokenEncoder", (), (2, 4, 8)),
    ("BagOfEmbeddings", (), (2, 7), "int64"),
    ("ResidualMLPStack", (), (2, 8)),
    ("DCGANGenerator", (), (2, 6)),
    ("StridedSameStem", (), (2, 11, 9, 3)),
    ("LSTMTagger", (), (2, 7), "int64"),
    ("LSTMSentiment", (), (2, 6, 8)),
    ("GRUEncoder", (), (2, 6, 8)),
    ("ReluRNN", (), (2, 5, 6)),
    ("MobileNetV1Block", (8, 2, 2), (2, 9, 9, 4)),
    ("StatsPooling", (), (2, 10, 8)),
    ("TopKPooling", (), (2, 5, 3)),
    ("GatedUnit", (), (2, 3, 4)),
    ("CyclicShift", (), (2, 6, 6, 8)),
    ("CausalScores", (), (2, 5, 8)),
    ("RepeatedFeatures", (), (2, 5, 6)),
    ("Linear", (6,), (2, 5)),
    ("BuiltLayerScale", (0.5,), (2, 4, 4, 6)),
    ("AdditiveAttention", (5,), [(2, 4), (2, 6, 4)]),
    ("BuiltGatedBlock", (), (2, 3, 6)),
    ("BuiltModel", (), (2, 5)),
    ("XceptionBlock", (6,), (2, 9, 9, 4)),
    ("SeparableStem", (), (2, 15, 13, 3)),
    ("KerasTutorialTransformer", (8, 2, 16), (2, 5, 8)),
    ("CrossAttentionDecoder", (), [(2, 5, 8), (2, 7, 6)]),
    ("MaskedAttentionPool", (), (2, 6), "int64"),
    ("PreNormMLPBlock", (), (2, 4, 6)),
    ("EinopsMixer", (), (2, 4, 6, 3)),
    ("TiedDecoder", (), (2, 5), "int64"),
    ("TutorialPositionalEmbedding", (), (2, 7), "int64"),
    ("SequentialConvBlock", (), (2, 8, 8, 3)),
    ("DenseResidualStack", (), (2, 6)),
    ("XceptionStyleBlock", (), (2, 9, 9, 3)),
    ("SamePoolMerge", (), (2, 7, 9, 3)),
    ("VAEDecoder", (), (2, 3, 5, 6)),
    ("RegularizedConvNet", (), (2, 8, 8, 3)),
    ("OneHotMix", (), (2, 4), "int64"),
    ("ConvTokenizer", (), (2, 12, 12, 3)),
    ("Patches", (), (2, 9, 8, 3)),
    ("MergeSEBlock", (), (2, 6, 6, 8)),
    ("MergeResBlock", (), (2, 6, 6, 8)),
    ("RescaledStem", (), (2, 7, 7, 3)),
    ("ScaledDense", (6,), (2, 4)),
    ("FloatNorm", (), (2, 3, 8)),
    ("MaskingPositionalEmbedding", (6, 11, 8), (2, 5), "int64"),
    ("MaskedTransformerEncoder", (8, 16, 2), (2, 5, 8)),
    ("MLPMixerLayer", (5, 8, 0.1), (2, 5, 8)),
    ("CustomTrainStepModel", (), (2, 4)),
    ("PatchEncoder", (4, 8), (2, 4, 6)),
    ("StochasticDepth", (0.1,), (2, 4, 6)),
    ("SequencePooling", (), (2, 5, 8)),
    ("TFQuickstartModel", (), (2, 8, 8, 3)),
    ("TFFunctionsLayer", (), (2, 5)),
    ("TFTutorialFeedForward", (8, 16), (2, 5, 8)),
    ("DoubledProjection", (4,), (2, 5)),
    ("TimeDistributedTagger", (), (2, 5), "int64"),
    ("PositionalEmbedding", (5, 8), (2, 5, 8)),
    ("AttentionBlock", (8, 4), (2, 3, 4, 8)),
    ("TimeEmbedding", (8,), (3,)),
    ("ReflectionPadding2D", ((1, 2),), (2, 5, 6, 3)),
    ("TransformerDecoder", (8, 16, 2), [(2, 5, 8), (2, 4, 8)]),
    ("gMLPLayer", (5, 8, 0.1), (2, 5, 8)),
    ("WindowAttention", (8, (2, 2), 2), (3, 4, 8)),
    ("SpeechFeatureEmbedding", (8,), (2, 16, 3)),
    ("TransformerDecoderASR", (8, 2, 16), [(2, 5, 8), (2, 4, 8)]),
    ("DotHead", (3,), (2, 5, 8)),
    ("TubeletEmbedding", (8, (2, 2, 2)), (2, 4, 4, 4, 3)),
    ("VectorQuantizer", (6, 4), (2, 3, 3, 4)),
    ("CCTTokenizer", (), (2, 16, 16, 3)),
    ("CCTTokenizer", (3, 1, ((1, 0), (2, 1))), (2, 16, 16, 3)),
    ("ClassAttention", (8, 2, 0.0), (2, 5, 8)),
    ("TalkingHeadAttention", (8, 2, 0.0), (2, 5, 8)),
    ("FocalModulationLayer", (4, 3, 2), (2, 6, 6, 4)),
    ("TFPatches", (4,), (2, 18, 16, 3)),
    ("ShrinkDenoiser", (6,), (3, 8)),
]


class ScaledDense(layers.Dense):
    """A subclass of a framework layer: the parent's call, scaled, plus its kernel's sum."""

    def call(self, inputs):
        return super().call(inputs) * 0.5 + ops.sum(self.kernel)


class FloatNorm(keras.layers.LayerNormalization):
    """A subclass fixing the parent's epsilon, passing Keras' own options on, reading the epsilon back."""

    def __init__(self, **kwargs):
        super().__init__(epsilon=1e-6, **kwargs)

    def call(self, x):
        return super().call(ops.cast(x, "float32")) * (1.0 + self.epsilon)




class MaskingPositionalEmbedding(layers.Layer):
    """keras.io's English-to-Spanish translation: token and position embeddings, a padding mask computed for
    the layers after it, a config for saving."""

    def __init__(self, sequence_length, vocab_size, embed_dim, **kwargs):
        super().__init__(**kwargs)
        self.token_embeddings = layers.Embedding(input_dim=vocab_size, output_dim=embed_dim)
        self.position_embeddings = layers.Embedding(input_dim=sequence_length, output_dim=embed_dim)
        self.sequence_length = sequence_length
        self.vocab_size = vocab_size
        self.embed_dim = embed_dim

    def call(self, inputs):
        length = ops.shape(inputs)[-1]
        positions = ops.arange(0, length, 1)
        embedded_tokens = self.token_embeddings(inputs)
        embedded_positions = self.position_embeddings(positions)
        return embedded_tokens + embedded_positions

    def compute_mask(self, inputs, mask=None):
        return ops.not_equal(inputs, 0)

    def get_config(self):
        config = super().get_config()
        config.update({"sequence_length": self.sequence_length, "vocab_size": self.vocab_size,
                       "embed_dim": self.embed_dim})
        return config


class MaskedTransformerEncoder(layers.Layer):
    """keras.io's TransformerEncoder: an optional padding mask turned into the attention mask."""

    def __init__(self, embed_dim, dense_dim, num_heads, **kwargs):
        super().__init__(**kwargs)
        self.embed_dim = embed_dim
        self.dense_dim = dense_dim
        self.num_heads = num_heads
        self.attention = layers.MultiHeadAttention(num_heads=num_heads, key_dim=embed_dim)
        self.dense_proj = keras.Sequential([layers.Dense(dense_dim, activation="relu"), layers.Dense(embed_dim)])
        self.layernorm_1 = layers.LayerNormalization()
        self.layernorm_2 = layers.LayerNormalization()
        self.supports_masking = True

    def call(self, inputs, mask=None):
        if mask is not None:
            padding_mask = ops.cast(mask[:, None, :], dtype="int32")
        else:
            padding_mask = None
        attention_output = self.attention(query=inputs, value=inputs, key=inputs, attention_mask=padding_mask)
        proj_input = self.layernorm_1(inputs + attention_output)
        proj_output = self.dense_proj(proj_input)
        return self.layernorm_2(proj_input + proj_output)


class MLPMixerLayer(layers.Layer):
    """keras.io's MLP-Mixer layer, with a build that only marks the layer built."""

    def __init__(self, num_patches, hidden_units, dropout_rate, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.mlp1 = keras.Sequential([layers.Dense(units=num_patches, activation="gelu"),
                                      layers.Dense(units=num_patches), layers.Dropout(rate=dropout_rate)])
        self.mlp2 = keras.Sequential([layers.Dense(units=num_patches, activation="gelu"),
                                      layers.Dense(units=hidden_units), layers.Dropout(rate=dropout_rate)])
        self.normalize = layers.LayerNormalization(epsilon=1e-6)

    def build(self, input_shape):
        return super().build(input_shape)

    def call(self, inputs):
        x = self.normalize(inputs)
        x_channels = ops.transpose(x, axes=(0, 2, 1))
        mlp1_outputs = self.mlp1(x_channels)
        mlp1_outputs = ops.transpose(mlp1_outputs, axes=(0, 2, 1))
        x = mlp1_outputs + inputs
        x_patches = self.normalize(x)
        mlp2_outputs = self.mlp2(x_patches)
        x = x + mlp2_outputs
        return x


class CustomTrainStepModel(keras.Model):
    """A model with its own training step and loss tracker (the Keras guide's "customizing fit")."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.dense1 = layers.Dense(8, activation="relu")
        self.dense2 = layers.Dense(3)
        self.loss_tracker = keras.metrics.Mean(name="loss")

    def call(self, x):
        return self.dense2(self.dense1(x))

    @property
    def metrics(self):
        return [self.loss_tracker]

    def train_step(self, data):
        x, y = data
        return {"loss": self.loss_tracker.result()}


class Sampling(layers.Layer):
    """keras.io's VAE: samples z from (z_mean, z_log_var) with a seed generator."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.seed_generator = keras.random.SeedGenerator(1337)

    def call(self, inputs):
        z_mean, z_log_var = inputs
        batch = ops.shape(z_mean)[0]
        dim = ops.shape(z_mean)[1]
        epsilon = keras.random.normal(shape=(batch, dim), seed=self.seed_generator)
        return z_mean + ops.exp(0.5 * z_log_var) * epsilon



class PatchEncoder(layers.Layer):
    """keras.io's ViT: patches projected, learned positions added."""

    def __init__(self, num_patches, projection_dim):
        super().__init__()
        self.num_patches = num_patches
        self.projection = layers.Dense(units=projection_dim)
        self.position_embedding = layers.Embedding(input_dim=num_patches, output_dim=projection_dim)

    def call(self, patch):
        positions = ops.expand_dims(ops.arange(start=0, stop=self.num_patches, step=1), axis=0)
        projected_patches = self.projection(patch)
        encoded = projected_patches + self.position_embedding(positions)
        return encoded


class StochasticDepth(layers.Layer):
    """keras.io's CCT: whole samples dropped while training, drawn with a seed generator."""

    def __init__(self, drop_prop, **kwargs):
        super().__init__(**kwargs)
        self.drop_prob = drop_prop
        self.seed_generator = keras.random.SeedGenerator(1337)

    def call(self, x, training=None):
        if training:
            keep_prob = 1 - self.drop_prob
            shape = (ops.shape(x)[0],) + (1,) * (len(x.shape) - 1)
            random_tensor = keep_prob + keras.random.uniform(shape, 0, 1, seed=self.seed_generator)
            random_tensor = ops.floor(random_tensor)
            return (x / keep_prob) * random_tensor
        return x


class SequencePooling(layers.Layer):
    """keras.io's CCT: attention-weighted pooling over the sequence."""

    def __init__(self):
        super().__init__()
        self.attention = layers.Dense(1)

    def call(self, x):
        attention_weights = ops.softmax(self.attention(x), axis=1)
        attention_weights = ops.transpose(attention_weights, axes=(0, 2, 1))
        weighted_representation = ops.matmul(attention_weights, x)
        return ops.squeeze(weighted_representation, -2)



# written for TensorFlow's Keras: tf.keras paths (Keras' own) and TensorFlow's functions beside Keras layers
class TFQuickstartModel(tf.keras.Model):
    """TensorFlow's quickstart model."""

    def __init__(self):
        super().__init__()
        self.conv1 = tf.keras.layers.Conv2D(8, 3, activation="relu")
        self.flatten = tf.keras.layers.Flatten()
        self.d1 = tf.keras.layers.Dense(16, activation="relu")
        self.d2 = tf.keras.layers.Dense(10)

    def call(self, x):
        x = self.conv1(x)
        x = self.flatten(x)
        x = self.d1(x)
        return self.d2(x)


class TFFunctionsLayer(tf.keras.layers.Layer):
    """TensorFlow's functions: activations, reductions, matmul, concat, reshape, a cast, newaxis, where."""

    def __init__(self, units=6):
        super().__init__()
        self.d = tf.keras.layers.Dense(units)
        self.units = units

    def call(self, x):
        h = tf.nn.relu(self.d(x)) + tf.reduce_sum(x, axis=-1, keepdims=True)
        g = tf.nn.gelu(h) * tf.math.sigmoid(h) - tf.nn.silu(h)
        scores = tf.nn.softmax(tf.matmul(h[:, :, tf.newaxis], g[:, tf.newaxis, :]), axis=-1)
        flat = tf.reshape(scores, (-1, self.units * self.units))
        both = tf.concat([flat, tf.cast(tf.shape(x)[-1], tf.float32) * tf.ones_like(h)], axis=1)
        return tf.where(both > 0.1, tf.sqrt(tf.abs(both)), tf.square(both)), tf.reduce_mean(g, axis=0)


class TFTutorialFeedForward(tf.keras.layers.Layer):
    """The TensorFlow transformer tutorial's feed-forward block (Add layer named self.add)."""

    def __init__(self, d_model, dff, dropout_rate=0.1):
        super().__init__()
        self.seq = tf.keras.Sequential([
            tf.keras.layers.Dense(dff, activation="relu"),
            tf.keras.layers.Dense(d_model),
            tf.keras.layers.Dropout(dropout_rate)
        ])
        self.add = tf.keras.layers.Add()
        self.layer_norm = tf.keras.layers.LayerNormalization()

    def call(self, x):
        x = self.add([x, self.seq(x)])
        x = self.layer_norm(x)
        return x


class ProjectionBase(tf.keras.layers.Layer):
    """A base class without call, which its subclasses complete."""

    def __init__(self, units):
        super().__init__()
        self.proj = tf.keras.layers.Dense(units)


class DoubledProjection(ProjectionBase):
    def call(self, x):
        return self.proj(x) * 2.0



class TimeDistributedTagger(keras.Model):
    """A Keras 2-style sequence tagger: TimeDistributed(Dense) over an LSTM's sequence."""

    def __init__(self, vocab=11, dim=8, tags=5):
        super().__init__()
        self.embed = layers.Embedding(vocab, dim)
        self.lstm = layers.LSTM(dim, return_sequences=True)
        self.out = layers.TimeDistributed(layers.Dense(tags, activation="softmax"))

    def call(self, x):
        return self.out(self.lstm(self.embed(x)))


#: classes the translation must refuse: (source, a phrase the refusal must contain)
HEADER = "import keras\nfrom keras import layers, ops, regularizers\n\n\n"


class PositionalEmbedding(layers.Layer):
    """keras.io's video transformer: a build that builds the held embedding, self.compute_dtype."""

    def __init__(self, sequence_length, output_dim, **kwargs):
        super().__init__(**kwargs)
        self.position_embeddings = layers.Embedding(input_dim=sequence_length, output_dim=output_dim)
        self.sequence_length = sequence_length
        self.output_dim = output_dim

    def build(self, input_shape):
        self.position_embeddings.build(input_shape)

    def call(self, inputs):
        # The inputs are of shape: `(batch_size, frames, num_features)`
        inputs = keras.ops.cast(inputs, self.compute_dtype)
        length = keras.ops.shape(inputs)[1]
        positions = keras.ops.arange(start=0, stop=length, step=1)
        embedded_positions = self.position_embeddings(positions)
        return inputs + embedded_positions


def kernel_init(scale):
    scale = max(scale, 1e-10)
    return keras.initializers.VarianceScaling(scale, mode="fan_avg", distribution="uniform")


class AttentionBlock(layers.Layer):
    """keras.io's DDPM: written for TensorFlow (tf.shape, tf.einsum with a space in the equation, tf.reshape
    of a list holding tensors), attributes set before super().__init__, kernel initializers from a helper."""

    def __init__(self, units, groups=8, **kwargs):
        self.units = units
        self.groups = groups
        super().__init__(**kwargs)

        self.norm = layers.GroupNormalization(groups=groups)
        self.query = layers.Dense(units, kernel_initializer=kernel_init(1.0))
        self.key = layers.Dense(units, kernel_initializer=kernel_init(1.0))
        self.value = layers.Dense(units, kernel_initializer=kernel_init(1.0))
        self.proj = layers.Dense(units, kernel_initializer=kernel_init(0.0))

    def call(self, inputs):
        batch_size = tf.shape(inputs)[0]
        height = tf.shape(inputs)[1]
        width = tf.shape(inputs)[2]
        scale = tf.cast(self.units, tf.float32) ** (-0.5)

        inputs = self.norm(inputs)
        q = self.query(inputs)
        k = self.key(inputs)
        v = self.value(inputs)

        attn_score = tf.einsum("bhwc, bHWc->bhwHW", q, k) * scale
        attn_score = tf.reshape(attn_score, [batch_size, height, width, height * width])

        attn_score = tf.nn.softmax(attn_score, -1)
        attn_score = tf.reshape(attn_score, [batch_size, height, width, height, width])

        proj = tf.einsum("bhwHW,bHWc->bhwc", attn_score, v)
        proj = self.proj(proj)
        return inputs + proj


class TimeEmbedding(layers.Layer):
    """keras.io's DDPM: an attribute holding a number, then a tf.range constant (float32), tf.sin/tf.cos."""

    def __init__(self, dim, **kwargs):
        super().__init__(**kwargs)
        self.dim = dim
        self.half_dim = dim // 2
        self.emb = math.log(10000) / (self.half_dim - 1)
        self.emb = tf.exp(tf.range(self.half_dim, dtype=tf.float32) * -self.emb)

    def call(self, inputs):
        inputs = tf.cast(inputs, dtype=tf.float32)
        emb = inputs[:, None] * self.emb[None, :]
        emb = tf.concat([tf.sin(emb), tf.cos(emb)], axis=-1)
        return emb


class ReflectionPadding2D(layers.Layer):
    """keras.io's CycleGAN: tf.pad in REFLECT mode of a list of widths bound to a name."""

    def __init__(self, padding=(1, 1), **kwargs):
        self.padding = tuple(padding)
        super().__init__(**kwargs)

    def call(self, input_tensor, mask=None):
        padding_width, padding_height = self.padding
        padding_tensor = [
            [0, 0],
            [padding_height, padding_height],
            [padding_width, padding_width],
            [0, 0],
        ]
        return tf.pad(input_tensor, padding_tensor, mode="REFLECT")


class TransformerDecoder(layers.Layer):
    """keras.io's English-to-Spanish translation: a causal mask tiled by a shape built from ops.shape."""

    def __init__(self, embed_dim, latent_dim, num_heads, **kwargs):
        super().__init__(**kwargs)
        self.embed_dim = embed_dim
        self.latent_dim = latent_dim
        self.num_heads = num_heads
        self.attention_1 = layers.MultiHeadAttention(num_heads=num_heads, key_dim=embed_dim)
        self.attention_2 = layers.MultiHeadAttention(num_heads=num_heads, key_dim=embed_dim)
        self.dense_proj = keras.Sequential(
            [layers.Dense(latent_dim, activation="relu"), layers.Dense(embed_dim)]
        )
        self.layernorm_1 = layers.LayerNormalization()
        self.layernorm_2 = layers.LayerNormalization()
        self.layernorm_3 = layers.LayerNormalization()
        self.supports_masking = True

    def call(self, inputs, encoder_outputs, mask=None):
        causal_mask = self.get_causal_attention_mask(inputs)
        if mask is not None:
            padding_mask = ops.cast(mask[:, None, :], dtype="int32")
            padding_mask = ops.minimum(padding_mask, causal_mask)
        else:
            padding_mask = None

        attention_output_1 = self.attention_1(query=inputs, value=inputs, key=inputs, attention_mask=causal_mask)
        out_1 = self.layernorm_1(inputs + attention_output_1)

        attention_output_2 = self.attention_2(
            query=out_1, value=encoder_outputs, key=encoder_outputs, attention_mask=padding_mask,
        )
        out_2 = self.layernorm_2(out_1 + attention_output_2)

        proj_output = self.dense_proj(out_2)
        return self.layernorm_3(out_2 + proj_output)

    def get_causal_attention_mask(self, inputs):
        input_shape = ops.shape(inputs)
        batch_size, sequence_length = input_shape[0], input_shape[1]
        i = ops.arange(sequence_length)[:, None]
        j = ops.arange(sequence_length)
        mask = ops.cast(i >= j, dtype="int32")
        mask = ops.reshape(mask, (1, input_shape[1], input_shape[1]))
        mult = ops.concatenate(
            [ops.expand_dims(batch_size, -1), ops.convert_to_tensor([1, 1])],
            axis=0,
        )
        return ops.tile(mask, mult)

    def get_config(self):
        config = super().get_config()
        config.update({"embed_dim": self.embed_dim, "latent_dim": self.latent_dim, "num_heads": self.num_heads})
        return config


class gMLPLayer(layers.Layer):
    """keras.io's gMLP: a spatial gating unit (ops.split, transposes), bias_initializer="Ones"."""

    def __init__(self, num_patches, embedding_dim, dropout_rate, *args, **kwargs):
        super().__init__(*args, **kwargs)

        self.channel_projection1 = keras.Sequential(
            [
                layers.Dense(units=embedding_dim * 2, activation="gelu"),
                layers.Dropout(rate=dropout_rate),
            ]
        )

        self.channel_projection2 = layers.Dense(units=embedding_dim)

        self.spatial_projection = layers.Dense(units=num_patches, bias_initializer="Ones")

        self.normalize1 = layers.LayerNormalization(epsilon=1e-6)
        self.normalize2 = layers.LayerNormalization(epsilon=1e-6)

    def spatial_gating_unit(self, x):
        # Split x along the channel dimensions.
        # Tensors u and v will in the shape of [batch_size, num_patchs, embedding_dim].
        u, v = keras.ops.split(x, indices_or_sections=2, axis=2)
        # Apply layer normalization.
        v = self.normalize2(v)
        # Apply spatial projection.
        v_channels = keras.ops.transpose(v, axes=(0, 2, 1))
        v_projected = self.spatial_projection(v_channels)
        v_projected = keras.ops.transpose(v_projected, axes=(0, 2, 1))
        # Apply element-wise multiplication.
        return u * v_projected

    def call(self, inputs):
        # Apply layer normalization.
        x = self.normalize1(inputs)
        # Apply the first channel projection. x_projected shape: [batch_size, num_patches, embedding_dim * 2].
        x_projected = self.channel_projection1(x)
        # Apply the spatial gating unit. x_spatial shape: [batch_size, num_patches, embedding_dim].
        x_spatial = self.spatial_gating_unit(x_projected)
        # Apply the second channel projection. x_projected shape: [batch_size, num_patches, embedding_dim].
        x_projected = self.channel_projection2(x_spatial)
        # Add skip connection.
        return x + x_projected


class WindowAttention(layers.Layer):
    """keras.io's Swin Transformer: a relative-position index computed with NumPy (in-place updates of slices),
    held by a non-trainable keras.Variable; an optional mask in the call."""

    def __init__(self, dim, window_size, num_heads, qkv_bias=True, dropout_rate=0.0, **kwargs):
        super().__init__(**kwargs)
        self.dim = dim
        self.window_size = window_size
        self.num_heads = num_heads
        self.scale = (dim // num_heads) ** -0.5
        self.qkv = layers.Dense(dim * 3, use_bias=qkv_bias)
        self.dropout = layers.Dropout(dropout_rate)
        self.proj = layers.Dense(dim)

        num_window_elements = (2 * self.window_size[0] - 1) * (2 * self.window_size[1] - 1)
        self.relative_position_bias_table = self.add_weight(
            shape=(num_window_elements, self.num_heads),
            initializer=keras.initializers.Zeros(),
            trainable=True,
        )
        coords_h = np.arange(self.window_size[0])
        coords_w = np.arange(self.window_size[1])
        coords_matrix = np.meshgrid(coords_h, coords_w, indexing="ij")
        coords = np.stack(coords_matrix)
        coords_flatten = coords.reshape(2, -1)
        relative_coords = coords_flatten[:, :, None] - coords_flatten[:, None, :]
        relative_coords = relative_coords.transpose([1, 2, 0])
        relative_coords[:, :, 0] += self.window_size[0] - 1
        relative_coords[:, :, 1] += self.window_size[1] - 1
        relative_coords[:, :, 0] *= 2 * self.window_size[1] - 1
        relative_position_index = relative_coords.sum(-1)

        self.relative_position_index = keras.Variable(
            initializer=relative_position_index,
            shape=relative_position_index.shape,
            dtype="int",
            trainable=False,
        )

    def call(self, x, mask=None):
        _, size, channels = x.shape
        head_dim = channels // self.num_heads
        x_qkv = self.qkv(x)
        x_qkv = ops.reshape(x_qkv, (-1, size, 3, self.num_heads, head_dim))
        x_qkv = ops.transpose(x_qkv, (2, 0, 3, 1, 4))
        q, k, v = x_qkv[0], x_qkv[1], x_qkv[2]
        q = q * self.scale
        k = ops.transpose(k, (0, 1, 3, 2))
        attn = q @ k

        num_window_elements = self.window_size[0] * self.window_size[1]
        relative_position_index_flat = ops.reshape(self.relative_position_index, (-1,))
        relative_position_bias = ops.take(
            self.relative_position_bias_table,
            relative_position_index_flat,
            axis=0,
        )
        relative_position_bias = ops.reshape(
            relative_position_bias,
            (num_window_elements, num_window_elements, -1),
        )
        relative_position_bias = ops.transpose(relative_position_bias, (2, 0, 1))
        attn = attn + ops.expand_dims(relative_position_bias, axis=0)

        if mask is not None:
            nW = mask.shape[0]
            mask_float = ops.cast(ops.expand_dims(ops.expand_dims(mask, axis=1), axis=0), "float32")
            attn = ops.reshape(attn, (-1, nW, self.num_heads, size, size)) + mask_float
            attn = ops.reshape(attn, (-1, self.num_heads, size, size))
            attn = keras.activations.softmax(attn, axis=-1)
        else:
            attn = keras.activations.softmax(attn, axis=-1)
        attn = self.dropout(attn)

        x_qkv = attn @ v
        x_qkv = ops.transpose(x_qkv, (0, 2, 1, 3))
        x_qkv = ops.reshape(x_qkv, (-1, size, channels))
        x_qkv = self.proj(x_qkv)
        x_qkv = self.dropout(x_qkv)
        return x_qkv


class SpeechFeatureEmbedding(layers.Layer):
    """keras.io's Transformer ASR: strided "same" Conv1D with activations."""

    def __init__(self, num_hid=64, maxlen=100):
        super().__init__()
        self.conv1 = keras.layers.Conv1D(num_hid, 11, strides=2, padding="same", activation="relu")
        self.conv2 = keras.layers.Conv1D(num_hid, 11, strides=2, padding="same", activation="relu")
        self.conv3 = keras.layers.Conv1D(num_hid, 11, strides=2, padding="same", activation="relu")

    def call(self, x):
        x = self.conv1(x)
        x = self.conv2(x)
        return self.conv3(x)


def causal_attention_mask(batch_size, n_dest, n_src, dtype):
    """Masks the upper half of the dot product matrix in self attention."""
    i = ops.arange(n_dest)[:, None]
    j = ops.arange(n_src)
    m = i >= j - n_src + n_dest
    mask = ops.cast(m, dtype)
    mask = ops.reshape(mask, [1, n_dest, n_src])
    mult = ops.concatenate(
        [ops.expand_dims(batch_size, -1), ops.convert_to_tensor([1, 1])], 0
    )
    return ops.tile(mask, mult)


class TransformerDecoderASR(layers.Layer):
    """keras.io's Transformer ASR decoder: a module function making the causal mask from shape values, tiled."""

    def __init__(self, embed_dim, num_heads, feed_forward_dim, dropout_rate=0.1):
        super().__init__()
        self.layernorm1 = layers.LayerNormalization(epsilon=1e-6)
        self.layernorm2 = layers.LayerNormalization(epsilon=1e-6)
        self.layernorm3 = layers.LayerNormalization(epsilon=1e-6)
        self.self_att = layers.MultiHeadAttention(num_heads=num_heads, key_dim=embed_dim)
        self.enc_att = layers.MultiHeadAttention(num_heads=num_heads, key_dim=embed_dim)
        self.self_dropout = layers.Dropout(0.5)
        self.enc_dropout = layers.Dropout(0.1)
        self.ffn_dropout = layers.Dropout(0.1)
        self.ffn = keras.Sequential(
            [
                layers.Dense(feed_forward_dim, activation="relu"),
                layers.Dense(embed_dim),
            ]
        )

    def call(self, enc_out, target):
        input_shape = ops.shape(target)
        batch_size = input_shape[0]
        seq_len = input_shape[1]
        causal_mask = causal_attention_mask(batch_size, seq_len, seq_len, "bool")
        target_att = self.self_att(target, target, attention_mask=causal_mask)
        target_norm = self.layernorm1(target + self.self_dropout(target_att))
        enc_out = self.enc_att(target_norm, enc_out)
        enc_out_norm = self.layernorm2(self.enc_dropout(enc_out) + target_norm)
        ffn_out = self.ffn(enc_out_norm)
        ffn_out_norm = self.layernorm3(enc_out_norm + self.ffn_dropout(ffn_out))
        return ffn_out_norm


class DotHead(layers.Layer):
    """A projection by ops.dot (NumPy's dot: the input's last axis with the kernel's first), built from the input."""

    def __init__(self, units, **kwargs):
        super().__init__(**kwargs)
        self.units = units

    def build(self, input_shape):
        self.w = self.add_weight(shape=(input_shape[-1], self.units), initializer="random_normal")

    def call(self, x):
        return ops.dot(x, self.w)


class TFPatches(layers.Layer):
    """keras.io's ViT as TensorFlow 2 code wrote it: tf.image.extract_patches of side-by-side patches, reshaped to a
    sequence by the run-time batch size and the patches' static depth, passed through tf.identity."""

    def __init__(self, patch_size):
        super().__init__()
        self.patch_size = patch_size

    def call(self, images):
        batch_size = tf.shape(images)[0]
        patches = tf.image.extract_patches(
            images=images,
            sizes=[1, self.patch_size, self.patch_size, 1],
            strides=[1, self.patch_size, self.patch_size, 1],
            rates=[1, 1, 1, 1],
            padding="VALID",
        )
        patch_dims = patches.shape[-1]
        return tf.identity(tf.reshape(patches, [batch_size, -1, patch_dims]))


class ShrinkDenoiser(layers.Layer):
    """A sparse-coding step: a dense projection, soft and hard shrinkage of its codes, and a log of them whose
    infinities are replaced."""

    def __init__(self, units):
        super().__init__()
        self.proj = layers.Dense(units)

    def call(self, x):
        codes = self.proj(x)
        sparse = ops.soft_shrink(codes, threshold=0.2) + ops.hard_shrink(codes)
        return sparse + ops.nan_to_num(ops.log(ops.maximum(codes, 0.0)), neginf=-4.0)



REFUSED = [
    (HEADER + "class DataDependent(layers.Layer):\n    def __init__(self):\n        super().__init__()\n"
     "        self.fc = layers.Dense(4)\n\n    def call(self, x):\n        if ops.sum(x) > 0:\n"
     "            return self.fc(x)\n        return x\n", "data-dependent control flow"),
    (HEADER + "class Built(layers.Layer):\n    def __init__(self, units):\n        super().__init__()\n"
     "        self.units = units\n\n    def build(self, a_shape, b_shape):\n"
     "        self.w = self.add_weight(shape=(a_shape[-1], self.units))\n\n"
     "    def call(self, x, y):\n        return ops.matmul(x, self.w)\n", "not the shapes of the inputs"),
    (HEADER + "class Attention(layers.Layer):\n    def __init__(self):\n        super().__init__()\n"
     "        self.mha = layers.MultiHeadAttention(2, 4, attention_axes=(1, 2))\n\n    def call(self, x):\n"
     "        return self.mha(x, x)\n", "attention_axes"),
    (HEADER + "class Regularized(layers.Layer):\n    def __init__(self):\n        super().__init__()\n"
     "        self.fc = layers.Dense(4, kernel_regularizer='l2')\n\n    def call(self, x):\n"
     "        return self.fc(x)\n", "kernel_regularizer"),
    (HEADER + "class SamePool(layers.Layer):\n    def __init__(self):\n        super().__init__()\n"
     "        self.pool = layers.AveragePooling2D(2, padding='same')\n\n    def call(self, x):\n"
     "        return self.pool(x)\n", "left out of each average"),
    (HEADER + "class NamedRegularizer(layers.Layer):\n    def __init__(self):\n        super().__init__()\n"
     "        self.fc = layers.Dense(4, kernel_regularizer='l2')\n\n    def call(self, x):\n"
     "        return self.fc(x)\n", "named by a string"),
    (HEADER + "class ActivityRegularized(layers.Layer):\n    def __init__(self):\n        super().__init__()\n"
     "        self.fc = layers.Dense(4, activity_regularizer=regularizers.L2(0.1))\n\n    def call(self, x):\n"
     "        return self.fc(x)\n", "activity_regularizer"),
    (HEADER + "class Mismatched(layers.Layer):\n    def __init__(self):\n        super().__init__()\n"
     "        self.norm = layers.LayerNormalization(center=False)\n\n    def call(self, x):\n"
     "        return self.norm(x)\n", "both or neither"),
    (HEADER + "class QueryMasked(layers.Layer):\n    def __init__(self):\n        super().__init__()\n"
     "        self.mha = layers.MultiHeadAttention(2, 4)\n\n    def call(self, x, valid):\n"
     "        return self.mha(x, x, query_mask=valid)\n", "query_mask"),
    (HEADER + "class RecurrentDropout(layers.Layer):\n    def __init__(self):\n        super().__init__()\n"
     "        self.lstm = layers.LSTM(4, recurrent_dropout=0.2)\n\n    def call(self, x):\n"
     "        return self.lstm(x)\n", "recurrent_dropout"),
    (HEADER + "class Seeded(layers.Layer):\n    def __init__(self):\n        super().__init__()\n"
     "        self.lstm = layers.LSTM(8)\n\n    def call(self, x, h, c):\n"
     "        return self.lstm(x, initial_state=[h, c])\n", "initial_state"),
    (HEADER + "class Tracked(layers.Layer):\n    def __init__(self):\n        super().__init__()\n"
     "        self.total = keras.metrics.Sum()\n\n    def call(self, x):\n"
     "        return x * self.total.result()\n", "training bookkeeping"),
    (HEADER + "import tensorflow as tf\n\n\nclass Sorted(layers.Layer):\n    def call(self, x):\n"
     "        return tf.sort(x)\n", "tensorflow.sort"),
    (HEADER + "import tensorflow as tf\n\n\nclass Overlapping(layers.Layer):\n    def call(self, x):\n"
     "        return tf.image.extract_patches(x, [1, 3, 3, 1], [1, 2, 2, 1], [1, 1, 1, 1], 'SAME')\n",
     "patches that overlap"),
]
