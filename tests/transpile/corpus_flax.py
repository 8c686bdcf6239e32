"""Flax NNX model classes written in the styles real projects use, for the transpiler's Flax -> PyTorch and
Flax -> Keras tests and benchmark (the counterpart of corpus_torch.py and corpus_keras.py).

`CASES` lists (class, constructor arguments, input shape(s), input dtype); `tests/transpile/test_corpus.py`
translates each class, ports its weights and compares outputs. Images are channels-last, as Flax's layers are.
Every constructor takes `rngs`, as NNX modules do; the harness passes `nnx.Rngs(0)`.
"""

from functools import partial

import jax
import jax.numpy as jnp
from flax import nnx


class Mlp(nnx.Module):
    def __init__(self, din, hidden, dout, dropout=0.1, *, rngs: nnx.Rngs):
        self.fc1 = nnx.Linear(din, hidden, rngs=rngs)
        self.drop = nnx.Dropout(dropout, rngs=rngs)
        self.fc2 = nnx.Linear(hidden, dout, rngs=rngs)

    def __call__(self, x):
        return self.fc2(self.drop(nnx.gelu(self.fc1(x))))


class ConvBNReLU(nnx.Module):
    def __init__(self, cin, cout, kernel_size=3, *, rngs: nnx.Rngs):
        self.conv = nnx.Conv(cin, cout, (kernel_size, kernel_size), use_bias=False, rngs=rngs)
        self.bn = nnx.BatchNorm(cout, momentum=0.9, epsilon=1e-5, rngs=rngs)

    def __call__(self, x):
        return nnx.relu(self.bn(self.conv(x)))


class ResidualBlock(nnx.Module):
    """A ResNet basic block as the Flax examples write it: strided "SAME" convolution, projection shortcut."""

    def __init__(self, cin, cout, strides=1, *, rngs: nnx.Rngs):
        self.conv1 = nnx.Conv(cin, cout, (3, 3), strides=strides, use_bias=False, rngs=rngs)
        self.bn1 = nnx.BatchNorm(cout, rngs=rngs)
        self.conv2 = nnx.Conv(cout, cout, (3, 3), use_bias=False, rngs=rngs)
        self.bn2 = nnx.BatchNorm(cout, rngs=rngs)
        if strides != 1 or cin != cout:
            self.shortcut = nnx.Sequential(nnx.Conv(cin, cout, (1, 1), strides=strides, use_bias=False, rngs=rngs),
                                           nnx.BatchNorm(cout, rngs=rngs))
        else:
            self.shortcut = None

    def __call__(self, x):
        y = nnx.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        identity = x if self.shortcut is None else self.shortcut(x)
        return nnx.relu(y + identity)


class Bottleneck(nnx.Module):
    expansion = 4

    def __init__(self, cin, width, *, rngs: nnx.Rngs):
        out = width * self.expansion
        self.conv1 = nnx.Conv(cin, width, (1, 1), use_bias=False, rngs=rngs)
        self.bn1 = nnx.BatchNorm(width, rngs=rngs)
        self.conv2 = nnx.Conv(width, width, (3, 3), padding=((1, 1), (1, 1)), use_bias=False, rngs=rngs)
        self.bn2 = nnx.BatchNorm(width, rngs=rngs)
        self.conv3 = nnx.Conv(width, out, (1, 1), use_bias=False, rngs=rngs)
        self.bn3 = nnx.BatchNorm(out, rngs=rngs)
        self.proj = nnx.Conv(cin, out, (1, 1), rngs=rngs) if cin != out else None

    def __call__(self, x):
        y = nnx.relu(self.bn1(self.conv1(x)))
        y = nnx.relu(self.bn2(self.conv2(y)))
        y = self.bn3(self.conv3(y))
        if self.proj is not None:
            x = self.proj(x)
        return nnx.relu(x + y)


class TinyResNet(nnx.Module):
    def __init__(self, num_classes=10, widths=(8, 16), *, rngs: nnx.Rngs):
        self.stem = nnx.Conv(3, widths[0], (3, 3), use_bias=False, rngs=rngs)
        self.bn = nnx.BatchNorm(widths[0], rngs=rngs)
        blocks = []
        cin = widths[0]
        for i, width in enumerate(widths):
            blocks.append(ResidualBlock(cin, width, strides=1 if i == 0 else 2, rngs=rngs))
            cin = width
        self.blocks = nnx.List(blocks)
        self.head = nnx.Linear(cin, num_classes, rngs=rngs)

    def __call__(self, x):
        x = nnx.relu(self.bn(self.stem(x)))
        x = nnx.max_pool(x, (2, 2), strides=(2, 2))
        for block in self.blocks:
            x = block(x)
        return self.head(jnp.mean(x, axis=(1, 2)))


class SqueezeExcite(nnx.Module):
    def __init__(self, channels, reduction=4, *, rngs: nnx.Rngs):
        self.fc1 = nnx.Linear(channels, channels // reduction, rngs=rngs)
        self.fc2 = nnx.Linear(channels // reduction, channels, rngs=rngs)

    def __call__(self, x):
        s = jnp.mean(x, axis=(1, 2), keepdims=True)
        return x * nnx.sigmoid(self.fc2(nnx.relu(self.fc1(s))))


class SEConvBlock(nnx.Module):
    def __init__(self, cin, cout, *, rngs: nnx.Rngs):
        self.conv = nnx.Conv(cin, cout, (3, 3), rngs=rngs)
        self.se = SqueezeExcite(cout, rngs=rngs)

    def __call__(self, x):
        return self.se(nnx.silu(self.conv(x)))


class GroupedConvBlock(nnx.Module):
    def __init__(self, channels, groups=2, *, rngs: nnx.Rngs):
        self.conv = nnx.Conv(channels, channels, (3, 3), feature_group_count=groups, use_bias=False, rngs=rngs)
        self.norm = nnx.GroupNorm(channels, num_groups=groups, rngs=rngs)

    def __call__(self, x):
        return nnx.relu(self.norm(self.conv(x))) + x


class InvertedResidual(nnx.Module):
    """MobileNetV2's block: expand, depthwise, project."""

    def __init__(self, channels, expand=4, *, rngs: nnx.Rngs):
        hidden = channels * expand
        self.expand = nnx.Conv(channels, hidden, (1, 1), use_bias=False, rngs=rngs)
        self.bn1 = nnx.BatchNorm(hidden, rngs=rngs)
        self.depthwise = nnx.Conv(hidden, hidden, (3, 3), feature_group_count=hidden, use_bias=False, rngs=rngs)
        self.bn2 = nnx.BatchNorm(hidden, rngs=rngs)
        self.project = nnx.Conv(hidden, channels, (1, 1), use_bias=False, rngs=rngs)
        self.bn3 = nnx.BatchNorm(channels, rngs=rngs)

    def __call__(self, x):
        y = nnx.relu6(self.bn1(self.expand(x)))
        y = nnx.relu6(self.bn2(self.depthwise(y)))
        return x + self.bn3(self.project(y))


class DoubleConv(nnx.Module):
    def __init__(self, cin, cout, *, rngs: nnx.Rngs):
        self.block = nnx.Sequential(
            nnx.Conv(cin, cout, (3, 3), padding=1, use_bias=False, rngs=rngs), nnx.BatchNorm(cout, rngs=rngs),
            nnx.relu,
            nnx.Conv(cout, cout, (3, 3), padding=1, use_bias=False, rngs=rngs), nnx.BatchNorm(cout, rngs=rngs),
            nnx.relu)

    def __call__(self, x):
        return self.block(x)


class TinyUNet(nnx.Module):
    def __init__(self, cin=3, base=4, num_classes=2, *, rngs: nnx.Rngs):
        self.down1 = DoubleConv(cin, base, rngs=rngs)
        self.down2 = DoubleConv(base, base * 2, rngs=rngs)
        self.up = nnx.ConvTranspose(base * 2, base, (2, 2), strides=(2, 2), rngs=rngs)
        self.fuse = DoubleConv(base * 2, base, rngs=rngs)
        self.out = nnx.Conv(base, num_classes, (1, 1), rngs=rngs)

    def __call__(self, x):
        skip = self.down1(x)
        y = self.down2(nnx.max_pool(skip, (2, 2), strides=(2, 2)))
        y = self.fuse(jnp.concatenate([self.up(y), skip], axis=-1))
        return self.out(y)


class StridedDecoder(nnx.Module):
    """Transposed convolutions in both of Flax's kernel conventions and paddings."""

    def __init__(self, cin, cout, *, rngs: nnx.Rngs):
        self.up1 = nnx.ConvTranspose(cin, cout, (3, 3), strides=(2, 2), padding="VALID", rngs=rngs)
        self.up2 = nnx.ConvTranspose(cout, cout, (4, 4), strides=(2, 2), transpose_kernel=True, rngs=rngs)

    def __call__(self, x):
        return self.up2(nnx.relu(self.up1(x)))


class MultiHeadSelfAttention(nnx.Module):
    def __init__(self, dim, num_heads=4, *, rngs: nnx.Rngs):
        self.num_heads = num_heads
        self.head_dim = dim // num_heads
        self.scale = self.head_dim ** -0.5
        self.qkv = nnx.Linear(dim, dim * 3, rngs=rngs)
        self.proj = nnx.Linear(dim, dim, rngs=rngs)

    def __call__(self, x):
        batch, length, dim = x.shape
        qkv = self.qkv(x).reshape(batch, length, 3, self.num_heads, self.head_dim)
        qkv = qkv.transpose(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        attn = nnx.softmax((q @ k.swapaxes(-2, -1)) * self.scale, axis=-1)
        out = (attn @ v).transpose(0, 2, 1, 3)
        return self.proj(out.reshape(batch, length, dim))


class TransformerBlock(nnx.Module):
    def __init__(self, dim, num_heads, mlp_ratio=2, *, rngs: nnx.Rngs):
        self.norm1 = nnx.LayerNorm(dim, rngs=rngs)
        self.attn = MultiHeadSelfAttention(dim, num_heads, rngs=rngs)
        self.norm2 = nnx.LayerNorm(dim, rngs=rngs)
        self.mlp = Mlp(dim, dim * mlp_ratio, dim, rngs=rngs)

    def __call__(self, x):
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class PatchEmbedding(nnx.Module):
    def __init__(self, cin, patch_size, dim, num_patches, *, rngs: nnx.Rngs):
        self.proj = nnx.Conv(cin, dim, (patch_size, patch_size), strides=patch_size, padding="VALID", rngs=rngs)
        self.position = nnx.Param(jax.random.normal(rngs.params(), (1, num_patches, dim)) * 0.02)

    def __call__(self, images):
        x = self.proj(images)
        batch, height, width, channels = x.shape
        return x.reshape(batch, height * width, channels) + self.position[...]


class TinyViT(nnx.Module):
    def __init__(self, image_size=16, patch_size=4, dim=16, depth=2, num_heads=2, num_classes=5, *, rngs: nnx.Rngs):
        self.embed = PatchEmbedding(3, patch_size, dim, (image_size // patch_size) ** 2, rngs=rngs)
        self.blocks = nnx.List([TransformerBlock(dim, num_heads, rngs=rngs) for _ in range(depth)])
        self.norm = nnx.LayerNorm(dim, rngs=rngs)
        self.head = nnx.Linear(dim, num_classes, rngs=rngs)

    def __call__(self, images):
        x = self.embed(images)
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x).mean(axis=1))


class TokenAndPositionEmbedding(nnx.Module):
    def __init__(self, maxlen, vocab_size, embed_dim, *, rngs: nnx.Rngs):
        self.token_emb = nnx.Embed(vocab_size, embed_dim, rngs=rngs)
        self.pos_emb = nnx.Embed(maxlen, embed_dim, rngs=rngs)

    def __call__(self, x):
        positions = jnp.arange(0, x.shape[-1])
        return self.token_emb(x) + self.pos_emb(positions)


class TextTransformer(nnx.Module):
    def __init__(self, maxlen=12, vocab_size=50, embed_dim=16, num_heads=2, num_classes=3, *, rngs: nnx.Rngs):
        self.embedding = TokenAndPositionEmbedding(maxlen, vocab_size, embed_dim, rngs=rngs)
        self.block = TransformerBlock(embed_dim, num_heads, rngs=rngs)
        self.dropout = nnx.Dropout(0.1, rngs=rngs)
        self.classifier = nnx.Linear(embed_dim, num_classes, rngs=rngs)

    def __call__(self, tokens):
        x = self.block(self.embedding(tokens))
        return self.classifier(self.dropout(jnp.mean(x, axis=1)))


class TextCNN(nnx.Module):
    def __init__(self, vocab_size=60, embed_dim=12, filters=8, kernel_sizes=(2, 3, 4), num_classes=4, *,
                 rngs: nnx.Rngs):
        self.embedding = nnx.Embed(vocab_size, embed_dim, rngs=rngs)
        self.convs = nnx.List([nnx.Conv(embed_dim, filters, (k,), padding="VALID", rngs=rngs) for k in kernel_sizes])
        self.fc = nnx.Linear(filters * len(kernel_sizes), num_classes, rngs=rngs)

    def __call__(self, tokens):
        x = self.embedding(tokens)
        pooled = [jnp.max(nnx.relu(conv(x)), axis=1) for conv in self.convs]
        return self.fc(jnp.concatenate(pooled, axis=-1))


class Conv1DClassifier(nnx.Module):
    def __init__(self, cin=3, num_classes=4, *, rngs: nnx.Rngs):
        self.conv1 = nnx.Conv(cin, 8, 5, rngs=rngs)
        self.conv2 = nnx.Conv(8, 8, 3, strides=2, rngs=rngs)
        self.bn = nnx.BatchNorm(8, rngs=rngs)
        self.fc = nnx.Linear(8, num_classes, rngs=rngs)

    def __call__(self, x):
        x = nnx.relu(self.conv1(x))
        x = nnx.relu(self.bn(self.conv2(x)))
        return self.fc(x.mean(axis=1))


class LeNet(nnx.Module):
    """The Flax MNIST tutorial's CNN."""

    def __init__(self, *, rngs: nnx.Rngs):
        self.conv1 = nnx.Conv(1, 8, kernel_size=(3, 3), rngs=rngs)
        self.conv2 = nnx.Conv(8, 16, kernel_size=(3, 3), rngs=rngs)
        self.avg_pool = partial(nnx.avg_pool, window_shape=(2, 2), strides=(2, 2))
        self.linear1 = nnx.Linear(7 * 7 * 16, 32, rngs=rngs)
        self.linear2 = nnx.Linear(32, 10, rngs=rngs)

    def __call__(self, x):
        x = self.avg_pool(nnx.relu(self.conv1(x)))
        x = self.avg_pool(nnx.relu(self.conv2(x)))
        x = x.reshape(x.shape[0], -1)
        x = nnx.relu(self.linear1(x))
        return self.linear2(x)


class Autoencoder(nnx.Module):
    def __init__(self, din=20, latent=4, *, rngs: nnx.Rngs):
        self.encoder = nnx.Sequential(nnx.Linear(din, 12, rngs=rngs), nnx.relu, nnx.Linear(12, latent, rngs=rngs))
        self.decoder = nnx.Sequential(nnx.Linear(latent, 12, rngs=rngs), nnx.relu, nnx.Linear(12, din, rngs=rngs),
                                      nnx.sigmoid)

    def __call__(self, x):
        return self.decoder(self.encoder(x))


class VAEHead(nnx.Module):
    def __init__(self, din, latent, *, rngs: nnx.Rngs):
        self.mean = nnx.Linear(din, latent, rngs=rngs)
        self.log_var = nnx.Linear(din, latent, rngs=rngs)

    def __call__(self, x):
        return self.mean(x), jnp.exp(0.5 * self.log_var(x))


class GatedLinearUnit(nnx.Module):
    def __init__(self, din, dim, *, rngs: nnx.Rngs):
        self.proj = nnx.Linear(din, dim * 2, rngs=rngs)

    def __call__(self, x):
        a, b = jnp.split(self.proj(x), 2, axis=-1)
        return a * nnx.sigmoid(b)


class SwiGLU(nnx.Module):
    def __init__(self, dim, hidden, *, rngs: nnx.Rngs):
        self.w1 = nnx.Linear(dim, hidden, use_bias=False, rngs=rngs)
        self.w2 = nnx.Linear(hidden, dim, use_bias=False, rngs=rngs)
        self.w3 = nnx.Linear(dim, hidden, use_bias=False, rngs=rngs)

    def __call__(self, x):
        return self.w2(nnx.silu(self.w1(x)) * self.w3(x))


class RMSNorm(nnx.Module):
    def __init__(self, dim, eps=1e-6, *, rngs: nnx.Rngs):
        self.eps = eps
        self.weight = nnx.Param(jnp.ones((dim,)))

    def __call__(self, x):
        return x * jax.lax.rsqrt(jnp.mean(jnp.square(x), axis=-1, keepdims=True) + self.eps) * self.weight[...]


class LlamaStyleBlock(nnx.Module):
    def __init__(self, dim, hidden, *, rngs: nnx.Rngs):
        self.norm = RMSNorm(dim, rngs=rngs)
        self.ffn = SwiGLU(dim, hidden, rngs=rngs)

    def __call__(self, x):
        return x + self.ffn(self.norm(x))


class LayerScale(nnx.Module):
    def __init__(self, dim, init_values=1e-5, *, rngs: nnx.Rngs):
        self.gamma = nnx.Param(init_values * jnp.ones((dim,)))

    def __call__(self, x):
        return x * self.gamma


class ScaledResidual(nnx.Module):
    def __init__(self, dim, *, rngs: nnx.Rngs):
        self.fc = nnx.Linear(dim, dim, rngs=rngs)
        self.scale = LayerScale(dim, rngs=rngs)

    def __call__(self, x):
        return x + self.scale(nnx.tanh(self.fc(x)))


class Highway(nnx.Module):
    def __init__(self, dim, *, rngs: nnx.Rngs):
        self.transform = nnx.Linear(dim, dim, rngs=rngs)
        self.gate = nnx.Linear(dim, dim, rngs=rngs)

    def __call__(self, x):
        t = nnx.sigmoid(self.gate(x))
        return t * nnx.relu(self.transform(x)) + (1 - t) * x


class ChannelAttention(nnx.Module):
    """CBAM's channel attention: a shared MLP over average- and max-pooled features."""

    def __init__(self, channels, reduction=4, *, rngs: nnx.Rngs):
        self.mlp = nnx.Sequential(nnx.Linear(channels, channels // reduction, rngs=rngs), nnx.relu,
                                  nnx.Linear(channels // reduction, channels, rngs=rngs))

    def __call__(self, x):
        avg = self.mlp(jnp.mean(x, axis=(1, 2)))
        peak = self.mlp(jnp.max(x, axis=(1, 2)))
        return x * nnx.sigmoid(avg + peak)[:, None, None, :]


class SpatialAttention(nnx.Module):
    def __init__(self, kernel_size=5, *, rngs: nnx.Rngs):
        self.conv = nnx.Conv(2, 1, (kernel_size, kernel_size), use_bias=False, rngs=rngs)

    def __call__(self, x):
        pooled = jnp.concatenate([jnp.mean(x, axis=-1, keepdims=True), jnp.max(x, axis=-1, keepdims=True)], axis=-1)
        return x * nnx.sigmoid(self.conv(pooled))


class DenseBlock(nnx.Module):
    def __init__(self, cin, num_layers, growth, *, rngs: nnx.Rngs):
        layers = []
        for i in range(num_layers):
            layers.append(ConvBNReLU(cin + i * growth, growth, rngs=rngs))
        self.layers = nnx.List(layers)

    def __call__(self, x):
        features = [x]
        for layer in self.layers:
            features.append(layer(jnp.concatenate(features, axis=-1)))
        return jnp.concatenate(features, axis=-1)


class InceptionModule(nnx.Module):
    def __init__(self, cin, c1, c3, c5, cp, *, rngs: nnx.Rngs):
        self.branch1 = nnx.Conv(cin, c1, (1, 1), rngs=rngs)
        self.branch3 = nnx.Sequential(nnx.Conv(cin, c3, (1, 1), rngs=rngs), nnx.relu,
                                      nnx.Conv(c3, c3, (3, 3), rngs=rngs))
        self.branch5 = nnx.Sequential(nnx.Conv(cin, c5, (1, 1), rngs=rngs), nnx.relu,
                                      nnx.Conv(c5, c5, (5, 5), rngs=rngs))
        self.pool_proj = nnx.Conv(cin, cp, (1, 1), rngs=rngs)

    def __call__(self, x):
        pooled = nnx.max_pool(x, (3, 3), strides=(1, 1), padding=((1, 1), (1, 1)))
        branches = [self.branch1(x), self.branch3(x), self.branch5(x), self.pool_proj(pooled)]
        return nnx.relu(jnp.concatenate(branches, axis=-1))


class FireModule(nnx.Module):
    """SqueezeNet's fire module."""

    def __init__(self, cin, squeeze, expand, *, rngs: nnx.Rngs):
        self.squeeze = nnx.Conv(cin, squeeze, (1, 1), rngs=rngs)
        self.expand1 = nnx.Conv(squeeze, expand, (1, 1), rngs=rngs)
        self.expand3 = nnx.Conv(squeeze, expand, (3, 3), padding=1, rngs=rngs)

    def __call__(self, x):
        s = nnx.relu(self.squeeze(x))
        return jnp.concatenate([nnx.relu(self.expand1(s)), nnx.relu(self.expand3(s))], axis=-1)


class L2NormEmbedding(nnx.Module):
    def __init__(self, din=6, dim=8, *, rngs: nnx.Rngs):
        self.fc = nnx.Linear(din, dim, rngs=rngs)

    def __call__(self, x):
        y = self.fc(x)
        return y * jax.lax.rsqrt(jnp.sum(y * y, axis=-1, keepdims=True) + 1e-12)


class ClampedHead(nnx.Module):
    def __init__(self, din, dout, *, rngs: nnx.Rngs):
        self.fc = nnx.Linear(din, dout, rngs=rngs)

    def __call__(self, x):
        return jnp.clip(self.fc(x), -0.5, 0.5)


class EinsumAttention(nnx.Module):
    def __init__(self, dim, *, rngs: nnx.Rngs):
        self.q = nnx.Linear(dim, dim, rngs=rngs)
        self.k = nnx.Linear(dim, dim, rngs=rngs)
        self.v = nnx.Linear(dim, dim, rngs=rngs)
        self.scale = dim ** -0.5

    def __call__(self, x):
        scores = jnp.einsum("bqd,bkd->bqk", self.q(x), self.k(x)) * self.scale
        return jnp.einsum("bqk,bkd->bqd", nnx.softmax(scores, axis=-1), self.v(x))


class CausalSelfAttention(nnx.Module):
    def __init__(self, dim, *, rngs: nnx.Rngs):
        self.qkv = nnx.Linear(dim, 3 * dim, rngs=rngs)
        self.out = nnx.Linear(dim, dim, rngs=rngs)

    def __call__(self, x):
        length = x.shape[1]
        q, k, v = jnp.split(self.qkv(x), 3, axis=-1)
        scores = q @ jnp.swapaxes(k, 1, 2) / jnp.sqrt(q.shape[-1] * 1.0)
        mask = jnp.tril(jnp.ones((length, length)))
        scores = jnp.where(mask == 0, -1e9, scores)
        return self.out(nnx.softmax(scores, axis=-1) @ v)


class OptionalProjection(nnx.Module):
    def __init__(self, din, dout, use_norm=True, *, rngs: nnx.Rngs):
        self.fc = nnx.Linear(din, dout, rngs=rngs)
        self.norm = nnx.LayerNorm(dout, rngs=rngs) if use_norm else None
        self.skip = nnx.Linear(din, dout, use_bias=False, rngs=rngs) if din != dout else None

    def __call__(self, x):
        y = self.fc(x)
        if self.norm is not None:
            y = self.norm(y)
        skip = x if self.skip is None else self.skip(x)
        return y + skip


class LeakyNet(nnx.Module):
    def __init__(self, din=5, *, rngs: nnx.Rngs):
        self.fc1 = nnx.Linear(din, 8, rngs=rngs)
        self.fc2 = nnx.Linear(8, 8, rngs=rngs)
        self.fc3 = nnx.Linear(8, 3, rngs=rngs)

    def __call__(self, x):
        x = nnx.leaky_relu(self.fc1(x), negative_slope=0.2)
        x = nnx.elu(self.fc2(x))
        return nnx.log_softmax(self.fc3(x), axis=-1)


class MultiTaskHeads(nnx.Module):
    def __init__(self, din=7, *, rngs: nnx.Rngs):
        self.trunk = nnx.Linear(din, 16, rngs=rngs)
        self.heads = nnx.Dict({"age": nnx.Linear(16, 1, rngs=rngs), "gender": nnx.Linear(16, 2, rngs=rngs)})

    def __call__(self, x):
        h = nnx.relu(self.trunk(x))
        return self.heads["age"](h), nnx.softmax(self.heads["gender"](h), axis=-1)


class Conv3DStem(nnx.Module):
    def __init__(self, cin=2, *, rngs: nnx.Rngs):
        self.conv = nnx.Conv(cin, 4, (3, 3, 3), rngs=rngs)
        self.bn = nnx.BatchNorm(4, rngs=rngs)

    def __call__(self, x):
        return nnx.relu(self.bn(self.conv(x))).mean(axis=(1, 2, 3))


class HardSwishBlock(nnx.Module):
    def __init__(self, cin, cout, *, rngs: nnx.Rngs):
        self.conv = nnx.Conv(cin, cout, (3, 3), rngs=rngs)

    def __call__(self, x):
        return nnx.hard_swish(self.conv(x)) + nnx.hard_sigmoid(x).mean()


class DilatedBlock(nnx.Module):
    def __init__(self, cin, cout, *, rngs: nnx.Rngs):
        self.conv1 = nnx.Conv(cin, cout, (3, 3), kernel_dilation=2, rngs=rngs)
        self.conv2 = nnx.Conv(cout, cout, (3, 3), kernel_dilation=(1, 3), padding=((1, 1), (3, 3)), rngs=rngs)

    def __call__(self, x):
        return self.conv2(nnx.relu(self.conv1(x)))


class StackedFeatures(nnx.Module):
    def __init__(self, dim, *, rngs: nnx.Rngs):
        self.a = nnx.Linear(dim, dim, rngs=rngs)
        self.b = nnx.Linear(dim, dim, rngs=rngs)

    def __call__(self, x):
        stacked = jnp.stack([self.a(x), self.b(x)], axis=1)
        return jnp.sum(stacked, axis=1) + jnp.expand_dims(x, 1).squeeze(1)


class ReshapeHead(nnx.Module):
    def __init__(self, din=5, *, rngs: nnx.Rngs):
        self.fc = nnx.Linear(din, 12, rngs=rngs)

    def __call__(self, x):
        y = self.fc(x).reshape((-1, 3, 4))
        return jnp.transpose(y, (0, 2, 1)).reshape(y.shape[0], -1)


class ConvNeXtBlock(nnx.Module):
    def __init__(self, dim, layer_scale=1e-6, *, rngs: nnx.Rngs):
        self.dwconv = nnx.Conv(dim, dim, (7, 7), feature_group_count=dim, rngs=rngs)
        self.norm = nnx.LayerNorm(dim, epsilon=1e-6, rngs=rngs)
        self.pwconv1 = nnx.Linear(dim, 4 * dim, rngs=rngs)
        self.pwconv2 = nnx.Linear(4 * dim, dim, rngs=rngs)
        self.gamma = nnx.Param(layer_scale * jnp.ones((dim,)))

    def __call__(self, x):
        y = self.dwconv(x)
        y = self.pwconv2(nnx.gelu(self.pwconv1(self.norm(y)), approximate=False))
        return x + self.gamma * y


class MBConv(nnx.Module):
    """EfficientNet's block with squeeze-excitation and a residual."""

    def __init__(self, channels, expand=4, *, rngs: nnx.Rngs):
        hidden = channels * expand
        self.expand = ConvBNReLU(channels, hidden, kernel_size=1, rngs=rngs)
        self.depthwise = nnx.Conv(hidden, hidden, (3, 3), feature_group_count=hidden, use_bias=False, rngs=rngs)
        self.bn = nnx.BatchNorm(hidden, rngs=rngs)
        self.se = SqueezeExcite(hidden, rngs=rngs)
        self.project = nnx.Conv(hidden, channels, (1, 1), use_bias=False, rngs=rngs)
        self.bn_out = nnx.BatchNorm(channels, rngs=rngs)

    def __call__(self, x):
        y = self.expand(x)
        y = self.se(nnx.swish(self.bn(self.depthwise(y))))
        return x + self.bn_out(self.project(y))


class PreActBlock(nnx.Module):
    def __init__(self, channels, *, rngs: nnx.Rngs):
        self.bn1 = nnx.BatchNorm(channels, rngs=rngs)
        self.conv1 = nnx.Conv(channels, channels, (3, 3), use_bias=False, rngs=rngs)
        self.bn2 = nnx.BatchNorm(channels, rngs=rngs)
        self.conv2 = nnx.Conv(channels, channels, (3, 3), use_bias=False, rngs=rngs)

    def __call__(self, x):
        y = self.conv1(nnx.relu(self.bn1(x)))
        return x + self.conv2(nnx.relu(self.bn2(y)))


class VGGish(nnx.Module):
    def __init__(self, cin=3, widths=(8, 16), num_classes=4, *, rngs: nnx.Rngs):
        layers = []
        for width in widths:
            layers += [nnx.Conv(cin, width, (3, 3), rngs=rngs), nnx.relu,
                       partial(nnx.max_pool, window_shape=(2, 2), strides=(2, 2))]
            cin = width
        self.features = nnx.Sequential(*layers)
        self.classifier = nnx.Linear(cin * 4, num_classes, rngs=rngs)

    def __call__(self, x):
        x = self.features(x)
        return self.classifier(x.reshape(x.shape[0], -1))


class MixerBlock(nnx.Module):
    def __init__(self, tokens, channels, *, rngs: nnx.Rngs):
        self.norm1 = nnx.LayerNorm(channels, rngs=rngs)
        self.token_mlp = nnx.Sequential(nnx.Linear(tokens, tokens * 2, rngs=rngs), nnx.gelu,
                                        nnx.Linear(tokens * 2, tokens, rngs=rngs))
        self.norm2 = nnx.LayerNorm(channels, rngs=rngs)
        self.channel_mlp = nnx.Sequential(nnx.Linear(channels, channels * 2, rngs=rngs),
                                          partial(nnx.gelu, approximate=False),
                                          nnx.Linear(channels * 2, channels, rngs=rngs))

    def __call__(self, x):
        y = self.token_mlp(self.norm1(x).swapaxes(1, 2)).swapaxes(1, 2)
        x = x + y
        return x + self.channel_mlp(self.norm2(x))


class TemporalBlock(nnx.Module):
    """A TCN block with dilated 1-D convolutions and a residual."""

    def __init__(self, cin, channels, dilation=2, *, rngs: nnx.Rngs):
        self.conv1 = nnx.Conv(cin, channels, (3,), kernel_dilation=dilation, rngs=rngs)
        self.conv2 = nnx.Conv(channels, channels, (3,), kernel_dilation=dilation, rngs=rngs)
        self.dropout = nnx.Dropout(0.2, rngs=rngs)
        self.downsample = nnx.Conv(cin, channels, (1,), rngs=rngs) if cin != channels else None

    def __call__(self, x):
        y = self.dropout(nnx.relu(self.conv1(x)))
        y = self.dropout(nnx.relu(self.conv2(y)))
        res = x if self.downsample is None else self.downsample(x)
        return nnx.relu(y + res)


class GatedResidualNetwork(nnx.Module):
    """The Temporal Fusion Transformer's GRN."""

    def __init__(self, dim, *, rngs: nnx.Rngs):
        self.fc1 = nnx.Linear(dim, dim, rngs=rngs)
        self.fc2 = nnx.Linear(dim, dim, rngs=rngs)
        self.gate = GatedLinearUnit(dim, dim, rngs=rngs)
        self.norm = nnx.LayerNorm(dim, rngs=rngs)

    def __call__(self, x):
        y = self.fc2(nnx.elu(self.fc1(x)))
        return self.norm(x + self.gate(y))


class AttentionPooling(nnx.Module):
    def __init__(self, dim=6, *, rngs: nnx.Rngs):
        self.score = nnx.Linear(dim, 1, rngs=rngs)

    def __call__(self, x):
        weights = nnx.softmax(self.score(x), axis=1)
        return jnp.sum(weights * x, axis=1)


class ASPP(nnx.Module):
    """DeepLab's atrous spatial pyramid pooling, without the image-level branch."""

    def __init__(self, cin, channels, rates=(1, 2, 3), *, rngs: nnx.Rngs):
        self.branches = nnx.List([nnx.Conv(cin, channels, (3, 3), kernel_dilation=r, rngs=rngs) for r in rates])
        self.project = nnx.Conv(channels * len(rates), channels, (1, 1), rngs=rngs)

    def __call__(self, x):
        return self.project(jnp.concatenate([nnx.relu(b(x)) for b in self.branches], axis=-1))


class SiameseDistance(nnx.Module):
    def __init__(self, din=5, *, rngs: nnx.Rngs):
        self.encoder = nnx.Sequential(nnx.Linear(din, 8, rngs=rngs), nnx.tanh, nnx.Linear(8, 4, rngs=rngs))

    def __call__(self, a, b):
        return jnp.sum(jnp.abs(self.encoder(a) - self.encoder(b)), axis=-1)


class ClassTokenEncoder(nnx.Module):
    def __init__(self, dim=8, num_heads=2, *, rngs: nnx.Rngs):
        self.cls_token = nnx.Param(jnp.zeros((1, 1, dim)))
        self.block = TransformerBlock(dim, num_heads, rngs=rngs)
        self.head = nnx.Linear(dim, 3, rngs=rngs)

    def __call__(self, x):
        batch = x.shape[0]
        cls = jnp.broadcast_to(self.cls_token[...], (batch, 1, x.shape[-1]))
        x = self.block(jnp.concatenate([cls, x], axis=1))
        return self.head(x[:, 0])


class BagOfEmbeddings(nnx.Module):
    def __init__(self, vocab=30, dim=8, *, rngs: nnx.Rngs):
        self.embed = nnx.Embed(vocab, dim, rngs=rngs)
        self.fc = nnx.Linear(dim, 2, rngs=rngs)

    def __call__(self, tokens):
        return self.fc(jnp.mean(self.embed(tokens), axis=1))


class ResidualMLPStack(nnx.Module):
    def __init__(self, dim=8, depth=3, *, rngs: nnx.Rngs):
        self.layers = nnx.List([nnx.Linear(dim, dim, rngs=rngs) for _ in range(depth)])
        self.norms = nnx.List([nnx.LayerNorm(dim, rngs=rngs) for _ in range(depth)])

    def __call__(self, x):
        for layer, norm in zip(self.layers, self.norms):
            x = x + nnx.relu(layer(norm(x)))
        return x


class DCGANGenerator(nnx.Module):
    def __init__(self, latent=6, base=4, *, rngs: nnx.Rngs):
        self.base = base
        self.project = nnx.Linear(latent, 4 * 4 * base, use_bias=False, rngs=rngs)
        self.bn0 = nnx.BatchNorm(4 * 4 * base, rngs=rngs)
        self.up1 = nnx.ConvTranspose(base, base, (4, 4), strides=(2, 2), transpose_kernel=True, use_bias=False,
                                     rngs=rngs)
        self.bn1 = nnx.BatchNorm(base, rngs=rngs)
        self.up2 = nnx.ConvTranspose(base, 3, (4, 4), strides=(2, 2), transpose_kernel=True, rngs=rngs)

    def __call__(self, z):
        x = nnx.relu(self.bn0(self.project(z)))
        x = x.reshape(-1, 4, 4, self.base)
        x = nnx.relu(self.bn1(self.up1(x)))
        return nnx.tanh(self.up2(x))


class GroupNormStem(nnx.Module):
    """Diffusion-U-Net style: GroupNorm with group_size, SiLU, and a time embedding added per channel."""

    def __init__(self, cin, channels, time_dim, *, rngs: nnx.Rngs):
        self.norm = nnx.GroupNorm(cin, num_groups=None, group_size=1, rngs=rngs)
        self.conv = nnx.Conv(cin, channels, (3, 3), rngs=rngs)
        self.time = nnx.Linear(time_dim, channels, rngs=rngs)

    def __call__(self, x, t):
        h = self.conv(nnx.silu(self.norm(x)))
        return h + self.time(nnx.silu(t))[:, None, None, :]


class DownsampleStage(nnx.Module):
    """Strided "SAME" convolutions, even kernels included, as Flax writes downsampling."""

    def __init__(self, cin, channels, *, rngs: nnx.Rngs):
        self.down = nnx.Conv(cin, channels, (4, 4), strides=(2, 2), rngs=rngs)
        self.down2 = nnx.Conv(channels, channels, (3, 3), strides=2, rngs=rngs)
        self.conv = nnx.Conv(channels, channels, (2, 2), rngs=rngs)

    def __call__(self, x):
        return self.conv(nnx.gelu(self.down2(nnx.gelu(self.down(x)))))


class MLPWithBatchNorm(nnx.Module):
    def __init__(self, din=10, hidden=16, dout=3, *, rngs: nnx.Rngs):
        self.fc1 = nnx.Linear(din, hidden, rngs=rngs)
        self.bn = nnx.BatchNorm(hidden, momentum=0.9, rngs=rngs)
        self.fc2 = nnx.Linear(hidden, dout, rngs=rngs)
        self.dropout = nnx.Dropout(0.3, rngs=rngs)

    def __call__(self, x):
        return self.fc2(self.dropout(nnx.relu(self.bn(self.fc1(x)))))


class ConfigurableActivation(nnx.Module):
    """The activation chosen by a constructor argument whose default is a framework function."""

    def __init__(self, din, dout, activation=nnx.gelu, *, rngs: nnx.Rngs):
        self.fc = nnx.Linear(din, dout, rngs=rngs)
        self.activation = activation

    def __call__(self, x):
        return self.activation(self.fc(x))


class FrozenStatistics(nnx.Module):
    """Normalises by fixed statistics held as non-trainable variables."""

    def __init__(self, dim, *, rngs: nnx.Rngs):
        self.mean = nnx.Variable(jnp.zeros((dim,)))
        self.std = nnx.Variable(jnp.ones((dim,)))
        self.fc = nnx.Linear(dim, 2, rngs=rngs)

    def __call__(self, x):
        return self.fc((x - self.mean[...]) / self.std[...])


class SoftplusHead(nnx.Module):
    def __init__(self, din, *, rngs: nnx.Rngs):
        self.fc = nnx.Linear(din, 4, rngs=rngs)

    def __call__(self, x):
        y = self.fc(x)
        return nnx.softplus(y) + jnp.maximum(y, 0.0) - jnp.minimum(y, 0.0) * 0.5


class DataWrappedBlocks(nnx.Module):
    """Layers kept in a plain list marked with nnx.data, and a layer slot filled after construction."""

    def __init__(self, dim, depth=2, *, rngs: nnx.Rngs):
        self.blocks = nnx.data([nnx.Linear(dim, dim, rngs=rngs) for _ in range(depth)])
        self.final = nnx.data(None)
        self.final = nnx.Linear(dim, 3, rngs=rngs)

    def __call__(self, x):
        for block in self.blocks:
            x = nnx.relu(block(x))
        return self.final(x)


class StatsPooling(nnx.Module):
    """x-vector statistics pooling over time (channels-last sequences): mean and standard deviation."""

    def __init__(self, channels=8, embed=6, *, rngs: nnx.Rngs):
        self.tdnn = nnx.Conv(channels, channels, 3, rngs=rngs)
        self.embed = nnx.Linear(2 * channels, embed, rngs=rngs)

    def __call__(self, x):
        h = nnx.relu(self.tdnn(x))
        stats = jnp.concatenate([h.mean(axis=1), jnp.std(h, axis=1, ddof=1)], axis=-1)
        return self.embed(stats) + jnp.var(h, axis=1).sum(axis=-1, keepdims=True)


class TopKPooling(nnx.Module):
    """The k largest activations per channel (jax.lax.top_k) and the index of the largest, as features."""

    def __init__(self, din=3, k=2, units=4, *, rngs: nnx.Rngs):
        self.k = k
        self.fc = nnx.Linear(din, units, rngs=rngs)

    def __call__(self, x):
        h = self.fc(x)
        values, _ = jax.lax.top_k(jnp.swapaxes(h, 1, 2), self.k)
        position = jnp.argmax(h, axis=1).astype(jnp.float32)
        return values.reshape(x.shape[0], -1), position


class GatedUnit(nnx.Module):
    """A gated linear unit over a doubled projection, with log-sigmoid and soft-sign terms."""

    def __init__(self, din=4, hidden=6, *, rngs: nnx.Rngs):
        self.up = nnx.Linear(din, 2 * hidden, rngs=rngs)
        self.down = nnx.Linear(hidden, din, rngs=rngs)

    def __call__(self, x):
        return self.down(jax.nn.glu(self.up(x), axis=-1)) + jax.nn.log_sigmoid(x) - jax.nn.soft_sign(x)


class CyclicShift(nnx.Module):
    """Swin's shift on channels-last maps, plus running sums over the rows in both directions."""

    def __init__(self, dim=8, shift=2, *, rngs: nnx.Rngs):
        self.shift = shift
        self.mix = nnx.Linear(dim, dim, rngs=rngs)

    def __call__(self, x):
        h = jnp.roll(self.mix(jnp.roll(x, (-self.shift, -self.shift), axis=(1, 2))), (self.shift, self.shift),
                     axis=(1, 2))
        backward = jnp.flip(jnp.cumsum(jnp.flip(x, axis=1), axis=1), axis=1)
        return h + jnp.cumsum(x, axis=1) - backward


class CausalScores(nnx.Module):
    """Causal attention written with jax.numpy: an upper-triangular mask, scores masked by where."""

    def __init__(self, dim=8, *, rngs: nnx.Rngs):
        self.qkv = nnx.Linear(dim, 3 * dim, use_bias=False, rngs=rngs)

    def __call__(self, x):
        q, k, v = jnp.split(self.qkv(x), 3, axis=-1)
        scores = q @ jnp.swapaxes(k, 1, 2)
        future = jnp.triu(jnp.ones_like(scores), k=1).astype(jnp.bool)
        scores = jnp.where(future, jnp.full_like(scores, -1e9), scores)
        return nnx.softmax(scores, axis=-1) @ v


class RepeatedFeatures(nnx.Module):
    """Tiles, repeats, unstacks steps, and adds sign, rounding and norm features."""

    def __init__(self, din=6, dim=4, *, rngs: nnx.Rngs):
        self.fc = nnx.Linear(din, dim, rngs=rngs)

    def __call__(self, x):
        h = self.fc(x)
        first, second, *_ = jnp.unstack(h, axis=1)
        tiled = jnp.tile(first, (1, 2)) + jnp.repeat(second, 2, axis=-1)
        steady = jax.lax.stop_gradient(jnp.sign(h) * jnp.round(h))
        return tiled, steady + jnp.linalg.norm(h, axis=-1, keepdims=True) + jnp.zeros_like(h)


class RMSNormBlock(nnx.Module):
    """A LLaMA-style residual MLP on nnx.RMSNorm."""

    def __init__(self, dim=8, hidden=16, *, rngs: nnx.Rngs):
        self.norm = nnx.RMSNorm(dim, rngs=rngs)
        self.up = nnx.Linear(dim, hidden, rngs=rngs)
        self.down = nnx.Linear(hidden, dim, rngs=rngs)

    def __call__(self, x):
        return x + self.down(nnx.silu(self.up(self.norm(x))))


class NnxTransformerBlock(nnx.Module):
    """The NNX examples' encoder block: nnx.MultiHeadAttention with dropout, pre-norm residuals, an MLP."""

    def __init__(self, dim=8, heads=2, hidden=16, *, rngs: nnx.Rngs):
        self.norm1 = nnx.LayerNorm(dim, rngs=rngs)
        self.attention = nnx.MultiHeadAttention(heads, dim, dropout_rate=0.1, decode=False, rngs=rngs)
        self.norm2 = nnx.LayerNorm(dim, rngs=rngs)
        self.mlp = nnx.Sequential(nnx.Linear(dim, hidden, rngs=rngs), nnx.gelu, nnx.Linear(hidden, dim, rngs=rngs))

    def __call__(self, x):
        x = x + self.attention(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class NnxCrossAttention(nnx.Module):
    """Causal self-attention, then attention over a memory of another width with its own sizes, under a padding
    mask broadcast over heads and query steps."""

    def __init__(self, dim=6, memory_dim=5, *, rngs: nnx.Rngs):
        self.causal = nnx.MultiHeadAttention(3, dim, qkv_features=9, decode=False, rngs=rngs)
        self.cross = nnx.MultiHeadAttention(2, dim, qkv_features=4, out_features=7, in_kv_features=memory_dim,
                                            use_bias=False, decode=False, rngs=rngs)

    def __call__(self, x, memory):
        h = self.causal(x, is_causal=True)
        keep = memory[:, :, 0] > 0  # (batch, key steps)
        return self.cross(h, memory, mask=keep[:, None, None, :])


class LinearResidualStack(nnx.Sequential):
    """An nnx.Sequential subclass whose __call__ walks its own layers (self.layers), adding each one's output."""

    def __init__(self, features=6, depth=3, *, rngs: nnx.Rngs):
        super().__init__(*[nnx.Linear(features, features, rngs=rngs) for _ in range(depth)])

    def __call__(self, x):
        for layer in self.layers[:-1]:
            x = x + nnx.tanh(layer(x))
        return self.layers[-1](x) * len(self.layers)


class TiedLM(nnx.Module):
    """An NNX language-model head tied to its embedding: the output is `self.embed.attend(x)`."""

    def __init__(self, vocab=20, dim=8, *, rngs: nnx.Rngs):
        self.embed = nnx.Embed(vocab, dim, rngs=rngs)
        self.norm = nnx.RMSNorm(dim, rngs=rngs)
        self.mlp = nnx.Linear(dim, dim, rngs=rngs)

    def __call__(self, tokens):
        x = self.embed(tokens)
        x = x + jax.nn.gelu(self.mlp(self.norm(x)))
        return self.embed.attend(x)


class LoRALinear(nnx.Module):
    """A LoRA adapter beside a linear layer, as the NNX docs write one: parameters read with `[...]`."""

    def __init__(self, din=6, dout=4, rank=2, *, rngs: nnx.Rngs):
        self.base = nnx.Linear(din, dout, rngs=rngs)
        self.lora_a = nnx.Param(jax.random.normal(rngs.params(), (din, rank)) * 0.1)
        self.lora_b = nnx.Param(jnp.zeros((rank, dout)))

    def __call__(self, x):
        return self.base(x) + x @ self.lora_a[...] @ self.lora_b[...]


class AnyGate(nnx.Module):
    """jnp.any / jnp.all over an axis, gating the features."""

    def __init__(self, dim=6, *, rngs: nnx.Rngs):
        self.fc = nnx.Linear(dim, dim, rngs=rngs)

    def __call__(self, x):
        h = self.fc(x)
        positive = jnp.any(h > 0.5, axis=-1, keepdims=True)
        small = jnp.all(jnp.abs(x) < 2.0, axis=-1, keepdims=True)
        return jnp.where(positive & small, h, -h)


CASES = [
    ("Mlp", (12, 16, 8), (2, 12)),
    ("LinearResidualStack", (), (2, 6)),
    ("TiedLM", (), (2, 5), "int64"),
    ("LoRALinear", (), (3, 6)),
    ("AnyGate", (), (4, 6)),
    ("ConvBNReLU", (3, 8), (2, 10, 10, 3)),
    ("ResidualBlock", (4, 8, 2), (2, 10, 10, 4)),
    ("Bottleneck", (6, 4), (2, 8, 8, 6)),
    ("TinyResNet", (), (2, 16, 16, 3)),
    ("SqueezeExcite", (8,), (2, 6, 6, 8)),
    ("SEConvBlock", (3, 8), (2, 6, 6, 3)),
    ("GroupedConvBlock", (6,), (2, 8, 8, 6)),
    ("InvertedResidual", (4,), (2, 8, 8, 4)),
    ("DoubleConv", (3, 6), (2, 8, 8, 3)),
    ("TinyUNet", (), (2, 16, 16, 3)),
    ("StridedDecoder", (3, 4), (2, 5, 5, 3)),
    ("MultiHeadSelfAttention", (16, 4), (2, 6, 16)),
    ("TransformerBlock", (16, 2), (2, 5, 16)),
    ("PatchEmbedding", (3, 4, 8, 4), (2, 8, 8, 3)),
    ("TinyViT", (), (2, 16, 16, 3)),
    ("TokenAndPositionEmbedding", (10, 30, 8), (2, 10), "int64"),
    ("TextTransformer", (), (2, 12), "int64"),
    ("TextCNN", (), (2, 14), "int64"),
    ("Conv1DClassifier", (), (2, 16, 3)),
    ("LeNet", (), (2, 28, 28, 1)),
    ("Autoencoder", (), (2, 20)),
    ("VAEHead", (10, 4), (2, 10)),
    ("GatedLinearUnit", (8, 6), (2, 3, 8)),
    ("SwiGLU", (8, 12), (2, 4, 8)),
    ("RMSNorm", (8,), (2, 3, 8)),
    ("LlamaStyleBlock", (8, 16), (2, 3, 8)),
    ("LayerScale", (8,), (2, 8)),
    ("ScaledResidual", (8,), (2, 8)),
    ("Highway", (8,), (2, 8)),
    ("ChannelAttention", (8,), (2, 5, 5, 8)),
    ("SpatialAttention", (), (2, 8, 8, 4)),
    ("DenseBlock", (4, 3, 4), (2, 6, 6, 4)),
    ("InceptionModule", (5, 4, 6, 2, 3), (2, 8, 8, 5)),
    ("FireModule", (6, 3, 4), (2, 8, 8, 6)),
    ("L2NormEmbedding", (), (2, 6)),
    ("ClampedHead", (6, 4), (2, 6)),
    ("EinsumAttention", (8,), (2, 5, 8)),
    ("CausalSelfAttention", (8,), (2, 5, 8)),
    ("OptionalProjection", (4, 6), (2, 4)),
    ("LeakyNet", (), (2, 5)),
    ("MultiTaskHeads", (), (2, 7)),
    ("Conv3DStem", (), (2, 6, 6, 6, 2)),
    ("HardSwishBlock", (3, 6), (2, 6, 6, 3)),
    ("DilatedBlock", (3, 5), (2, 9, 9, 3)),
    ("StackedFeatures", (6,), (2, 6)),
    ("ReshapeHead", (), (3, 5)),
    ("ConvNeXtBlock", (8,), (2, 8, 8, 8)),
    ("MBConv", (4,), (2, 6, 6, 4)),
    ("PreActBlock", (4,), (2, 6, 6, 4)),
    ("VGGish", (), (2, 8, 8, 3)),
    ("MixerBlock", (6, 8), (2, 6, 8)),
    ("TemporalBlock", (3, 6), (2, 12, 3)),
    ("GatedResidualNetwork", (6,), (2, 6)),
    ("AttentionPooling", (), (2, 5, 6)),
    ("ASPP", (3, 4), (2, 9, 9, 3)),
    ("SiameseDistance", (), [(2, 5), (2, 5)]),
    ("ClassTokenEncoder", (), (2, 4, 8)),
    ("BagOfEmbeddings", (), (2, 7), "int64"),
    ("ResidualMLPStack", (), (2, 8)),
    ("DCGANGenerator", (), (2, 6)),
    ("GroupNormStem", (4, 6, 5), [(2, 6, 6, 4), (2, 5)]),
    ("DownsampleStage", (3, 6), (2, 11, 9, 3)),
    ("MLPWithBatchNorm", (), (2, 10)),
    ("ConfigurableActivation", (6, 4), (2, 6)),
    ("FrozenStatistics", (5,), (2, 5)),
    ("SoftplusHead", (6,), (2, 6)),
    ("DataWrappedBlocks", (6,), (2, 6)),
    ("StatsPooling", (), (2, 10, 8)),
    ("TopKPooling", (), (2, 5, 3)),
    ("GatedUnit", (), (2, 3, 4)),
    ("CyclicShift", (), (2, 6, 6, 8)),
    ("CausalScores", (), (2, 5, 8)),
    ("RepeatedFeatures", (), (2, 5, 6)),
    ("RMSNormBlock", (), (2, 3, 8)),
    ("NnxTransformerBlock", (), (2, 5, 8)),
    ("NnxCrossAttention", (), [(2, 4, 6), (2, 7, 5)]),
    ("HalfLinear", (4, 6), (2, 4)),
    ("FixedEpsNorm", (8,), (2, 3, 8)),
    ("NnxDocsLinear", (4, 3), (2, 4)),
    ("NnxDocsMLP", (4, 8, 3), (2, 4)),
    ("GemmaRMSNorm", (8,), (2, 3, 8)),
    ("NnxLSTMTagger", (11, 4, 6, 3), (2, 5), "int64"),
    ("NnxBiLSTM", (4, 6), (2, 5, 4)),
    ("GRUCarry", (4, 6), (2, 5, 4)),
    ("ReversedSimple", (4, 6), (2, 5, 4)),
    ("TimeMajorLSTM", (4, 6), (5, 2, 4)),
    ("BiGRUCarry", (4, 6), (2, 5, 4)),
    ("CNN", (), (2, 28, 28, 1)),
    ("TransformerEncoder", (8, 16, 2, 0.1), (2, 5, 8)),
    ("VisionTransformer", (10, 3, 8, 4, 2, 2, 16, 8, 0.1), (2, 8, 8, 3)),
    ("MiniGPTBlock", (8, 2, 16), (2, 5, 8)),
    ("BonsaiBottleneck", (8, 4, 2, True), (2, 6, 6, 8)),
    ("BonsaiBottleneck", (16, 4, 1, False), (2, 6, 6, 16)),
    ("GemmaFeedForward", (8, 16), (2, 5, 8)),
    ("GemmaLM", (), (2, 5), "int64"),
    ("MLPBatchNormDropout", (4, 8, 3), (2, 4)),
    ("TrainFlagCNN", (), (2, 6, 6, 3)),
    ("TrainFlagMLP", (4, 8), (3, 4)),
    ("Upsample2D", (3, 4), (2, 5, 6, 3)),
    ("BilinearSkip", (), [(2, 3, 4, 4), (2, 7, 9, 4)]),
    ("GeneralProjection", (8, 2), (2, 5, 8)),
    ("EinsumMixer", (8, 2, 4), (2, 5, 8)),
    ("CausalMaskAttention", (8, 2), (2, 5, 8)),
    ("DotProductAttention", (8, 2), (2, 5, 8)),
    ("StrictlyCausalAttention", (8, 2), (2, 5, 8)),
]


class HalfLinear(nnx.Linear):
    """A subclass of a framework layer: the parent's call, halved, plus its kernel's sum."""

    def __call__(self, x):
        return super().__call__(x) * 0.5 + jnp.sum(self.kernel[...])


class FixedEpsNorm(nnx.LayerNorm):
    def __init__(self, dim, *, rngs: nnx.Rngs):
        super().__init__(dim, epsilon=1e-6, rngs=rngs)

    def __call__(self, x):
        return super().__call__(x.astype(jnp.float32))




class NnxDocsLinear(nnx.Module):
    """The NNX docs' first module: a weight drawn with a key taken from rngs first."""

    def __init__(self, din: int, dout: int, *, rngs: nnx.Rngs):
        key = rngs.params()
        self.w = nnx.Param(jax.random.uniform(key, (din, dout)))
        self.b = nnx.Param(jnp.zeros((dout,)))
        self.din, self.dout = din, dout

    def __call__(self, x: jax.Array):
        return x @ self.w + self.b


class NnxDocsMLP(nnx.Module):
    def __init__(self, din, dmid, dout, *, rngs: nnx.Rngs):
        self.linear1 = NnxDocsLinear(din, dmid, rngs=rngs)
        self.dropout = nnx.Dropout(rate=0.1, rngs=rngs)
        self.bn = nnx.BatchNorm(dmid, rngs=rngs)
        self.linear2 = NnxDocsLinear(dmid, dout, rngs=rngs)

    def __call__(self, x: jax.Array):
        x = nnx.gelu(self.dropout(self.bn(self.linear1(x))))
        return self.linear2(x)


class GemmaRMSNorm(nnx.Module):
    def __init__(self, dim: int, *, rngs: nnx.Rngs):
        self.scale = nnx.Param(jnp.zeros((dim,)))

    def __call__(self, x):
        var = jnp.mean(jnp.square(x), axis=-1, keepdims=True)
        normed_inputs = jnp.asarray(x * jax.lax.rsqrt(var + 1e-06))
        normed_inputs = normed_inputs * (1 + self.scale.value)
        return jnp.asarray(normed_inputs, dtype=jnp.float32)



# recurrent layers as NNX writes them: nnx.RNN over a cell, nnx.Bidirectional over two
class NnxLSTMTagger(nnx.Module):
    def __init__(self, vocab, dim, hidden, tags, *, rngs: nnx.Rngs):
        self.embed = nnx.Embed(vocab, dim, rngs=rngs)
        self.rnn = nnx.RNN(nnx.LSTMCell(dim, hidden, rngs=rngs))
        self.out = nnx.Linear(hidden, tags, rngs=rngs)

    def __call__(self, tokens):
        return self.out(self.rnn(self.embed(tokens)))


class NnxBiLSTM(nnx.Module):
    def __init__(self, dim, hidden, *, rngs: nnx.Rngs):
        self.bi = nnx.Bidirectional(nnx.RNN(nnx.LSTMCell(dim, hidden, rngs=rngs)),
                                    nnx.RNN(nnx.LSTMCell(dim, hidden, rngs=rngs)))

    def __call__(self, x):
        return self.bi(x)


class GRUCarry(nnx.Module):
    def __init__(self, dim, hidden, *, rngs: nnx.Rngs):
        self.rnn = nnx.RNN(nnx.GRUCell(dim, hidden, rngs=rngs), return_carry=True)

    def __call__(self, x):
        carry, y = self.rnn(x)
        return carry, y


class ReversedSimple(nnx.Module):
    def __init__(self, dim, hidden, *, rngs: nnx.Rngs):
        self.back = nnx.RNN(nnx.SimpleCell(dim, hidden, rngs=rngs), reverse=True, keep_order=True)
        self.back_raw = nnx.RNN(nnx.SimpleCell(dim, hidden, rngs=rngs), reverse=True)

    def __call__(self, x):
        return self.back(x), self.back_raw(x)


class TimeMajorLSTM(nnx.Module):
    def __init__(self, dim, hidden, *, rngs: nnx.Rngs):
        self.rnn = nnx.RNN(nnx.LSTMCell(dim, hidden, rngs=rngs), time_major=True, return_carry=True)

    def __call__(self, x):
        (c, h), y = self.rnn(x)
        return c, h, y


class BiGRUCarry(nnx.Module):
    def __init__(self, dim, hidden, *, rngs: nnx.Rngs):
        self.bi = nnx.Bidirectional(nnx.RNN(nnx.GRUCell(dim, hidden, rngs=rngs)),
                                    nnx.RNN(nnx.GRUCell(dim, hidden, rngs=rngs)), return_carry=True)
        self.head = nnx.Linear(2 * hidden, 3, rngs=rngs)

    def __call__(self, x):
        (fwd, bwd), y = self.bi(x)
        return self.head(y[:, -1]) + jnp.sum(fwd) - jnp.sum(bwd)


#: classes the translation must refuse: (source, a phrase the refusal must contain)
HEADER = "import jax\nimport jax.numpy as jnp\nfrom flax import nnx\n\n\n"


class CNN(nnx.Module):
    """The Flax NNX MNIST tutorial's CNN: a partial of nnx.avg_pool as a layer, an optional rngs in the call
    passed to a dropout."""

    def __init__(self, *, rngs: nnx.Rngs):
        self.conv1 = nnx.Conv(1, 32, kernel_size=(3, 3), rngs=rngs)
        self.batch_norm1 = nnx.BatchNorm(32, rngs=rngs)
        self.dropout1 = nnx.Dropout(rate=0.025, rngs=rngs)
        self.conv2 = nnx.Conv(32, 64, kernel_size=(3, 3), rngs=rngs)
        self.batch_norm2 = nnx.BatchNorm(64, rngs=rngs)
        self.avg_pool = partial(nnx.avg_pool, window_shape=(2, 2), strides=(2, 2))
        self.linear1 = nnx.Linear(3136, 256, rngs=rngs)
        self.dropout2 = nnx.Dropout(rate=0.025, rngs=rngs)
        self.linear2 = nnx.Linear(256, 10, rngs=rngs)

    def __call__(self, x, rngs: nnx.Rngs | None = None):
        x = self.avg_pool(nnx.relu(self.batch_norm1(self.conv1(x))))
        x = self.avg_pool(nnx.relu(self.batch_norm2(self.conv2(x))))
        x = x.reshape(x.shape[0], -1)  # flatten
        x = nnx.relu(self.dropout1(self.linear1(x)))
        x = self.dropout2(x, rngs=rngs)
        x = self.linear2(x)
        return x


class TransformerEncoder(nnx.Module):
    """The JAX AI stack's ViT tutorial: rngs defaulting to nnx.Rngs(0), attention built with
    deterministic=False (dropout while training)."""

    def __init__(self, hidden_size: int, mlp_dim: int, num_heads: int, dropout_rate: float = 0.0, *,
                 rngs: nnx.Rngs = nnx.Rngs(0)) -> None:  # noqa: B008 (as the original writes it)
        self.norm1 = nnx.LayerNorm(hidden_size, rngs=rngs)
        self.attn = nnx.MultiHeadAttention(num_heads=num_heads, in_features=hidden_size, dropout_rate=dropout_rate,
                                           broadcast_dropout=False, decode=False, deterministic=False, rngs=rngs)
        self.norm2 = nnx.LayerNorm(hidden_size, rngs=rngs)
        self.mlp = nnx.Sequential(
            nnx.Linear(hidden_size, mlp_dim, rngs=rngs),
            nnx.gelu,
            nnx.Dropout(dropout_rate, rngs=rngs),
            nnx.Linear(mlp_dim, hidden_size, rngs=rngs),
            nnx.Dropout(dropout_rate, rngs=rngs),
        )

    def __call__(self, x: jax.Array) -> jax.Array:
        x = x + self.attn(self.norm1(x))
        x = x + self.mlp(self.norm2(x))
        return x


class VisionTransformer(nnx.Module):
    """The JAX AI stack's ViT tutorial: a position embedding drawn by a truncated-normal initializer object
    called with rngs.params(), jnp.concat, jnp.tile of a class token."""

    def __init__(self, num_classes: int = 1000, in_channels: int = 3, img_size: int = 224, patch_size: int = 16,
                 num_layers: int = 12, num_heads: int = 12, mlp_dim: int = 3072, hidden_size: int = 768,
                 dropout_rate: float = 0.1, *, rngs: nnx.Rngs = nnx.Rngs(0)):  # noqa: B008 (as written)
        # Patch and position embedding
        n_patches = (img_size // patch_size) ** 2
        self.patch_embeddings = nnx.Conv(in_channels, hidden_size, kernel_size=(patch_size, patch_size),
                                         strides=(patch_size, patch_size), padding="VALID", use_bias=True, rngs=rngs)
        initializer = jax.nn.initializers.truncated_normal(stddev=0.02)
        self.position_embeddings = nnx.Param(
            initializer(rngs.params(), (1, n_patches + 1, hidden_size), jnp.float32)
        )
        self.dropout = nnx.Dropout(dropout_rate, rngs=rngs)
        self.cls_token = nnx.Param(jnp.zeros((1, 1, hidden_size)))
        # Transformer Encoder blocks
        self.encoder = nnx.Sequential(*[
            TransformerEncoder(hidden_size, mlp_dim, num_heads, dropout_rate, rngs=rngs)
            for i in range(num_layers)
        ])
        self.final_norm = nnx.LayerNorm(hidden_size, rngs=rngs)
        # Classification head
        self.classifier = nnx.Linear(hidden_size, num_classes, rngs=rngs)

    def __call__(self, x: jax.Array) -> jax.Array:
        # Patch and position embedding
        patches = self.patch_embeddings(x)
        batch_size = patches.shape[0]
        patches = patches.reshape(batch_size, -1, patches.shape[-1])
        cls_token = jnp.tile(self.cls_token, [batch_size, 1, 1])
        x = jnp.concat([cls_token, patches], axis=1)
        embeddings = x + self.position_embeddings
        embeddings = self.dropout(embeddings)
        # Encoder blocks
        x = self.encoder(embeddings)
        x = self.final_norm(x)
        # fetch the first token
        x = x[:, 0]
        # Classification
        return self.classifier(x)


def causal_attention_mask(seq_len):
    return jnp.tril(jnp.ones((seq_len, seq_len)))


class MiniGPTBlock(nnx.Module):
    """The JAX AI stack's miniGPT block: initializers given to every layer, decode=False and
    deterministic=not training in the calls."""

    def __init__(self, embed_dim: int, num_heads: int, ff_dim: int, *, rngs: nnx.Rngs, rate: float = 0.1):
        self.mha = nnx.MultiHeadAttention(num_heads=num_heads, in_features=embed_dim,
                                          kernel_init=nnx.initializers.xavier_uniform(),
                                          bias_init=nnx.initializers.zeros_init(), rngs=rngs)
        self.dropout1 = nnx.Dropout(rate=rate)
        self.layer_norm1 = nnx.LayerNorm(epsilon=1e-6, num_features=embed_dim,
                                         scale_init=nnx.initializers.ones_init(),
                                         bias_init=nnx.initializers.zeros_init(), rngs=rngs)
        self.linear1 = nnx.Linear(in_features=embed_dim, out_features=ff_dim,
                                  kernel_init=nnx.initializers.xavier_uniform(),
                                  bias_init=nnx.initializers.zeros_init(), rngs=rngs)
        self.linear2 = nnx.Linear(in_features=ff_dim, out_features=embed_dim,
                                  kernel_init=nnx.initializers.xavier_uniform(),
                                  bias_init=nnx.initializers.zeros_init(), rngs=rngs)
        self.dropout2 = nnx.Dropout(rate=rate)
        self.layer_norm2 = nnx.LayerNorm(epsilon=1e-6, num_features=embed_dim,
                                         scale_init=nnx.initializers.ones_init(),
                                         bias_init=nnx.initializers.zeros_init(), rngs=rngs)

    def __call__(self, inputs, training: bool = False):
        input_shape = inputs.shape
        _, seq_len, _ = input_shape
        mask = causal_attention_mask(seq_len)
        attention_output = self.mha(inputs_q=inputs, mask=mask, decode=False)
        attention_output = self.dropout1(attention_output, deterministic=not training)
        out1 = self.layer_norm1(inputs + attention_output)
        ffn_output = self.linear1(out1)
        ffn_output = nnx.relu(ffn_output)
        ffn_output = self.linear2(ffn_output)
        ffn_output = self.dropout2(ffn_output, deterministic=not training)
        return self.layer_norm2(out1 + ffn_output)


class BonsaiBottleneck(nnx.Module):
    """jax-ml/bonsai's ResNet bottleneck: explicit paddings, a downsample made on a flag or None."""

    def __init__(self, in_channels: int, out_channels: int, strides: int = 1, downsample: bool = False, *,
                 rngs: nnx.Rngs):
        self.conv0 = nnx.Conv(in_channels, out_channels, kernel_size=(1, 1), use_bias=False, rngs=rngs)
        self.bn0 = nnx.BatchNorm(out_channels, momentum=0.9, epsilon=1e-5, rngs=rngs)
        self.conv1 = nnx.Conv(out_channels, out_channels, kernel_size=(3, 3), strides=strides,
                              padding=((1, 1), (1, 1)), use_bias=False, rngs=rngs)
        self.bn1 = nnx.BatchNorm(out_channels, momentum=0.9, epsilon=1e-5, rngs=rngs)
        self.conv2 = nnx.Conv(out_channels, out_channels * 4, kernel_size=(1, 1), use_bias=False, rngs=rngs)
        self.bn2 = nnx.BatchNorm(out_channels * 4, momentum=0.9, epsilon=1e-5, rngs=rngs)
        if downsample:
            self.downsample = nnx.Sequential(
                nnx.Conv(in_channels, out_channels * 4, kernel_size=(1, 1), strides=strides, use_bias=False, rngs=rngs),
                nnx.BatchNorm(out_channels * 4, momentum=0.9, epsilon=1e-5, rngs=rngs),
            )
        else:
            self.downsample = None

    def __call__(self, x):
        identity = x
        x = nnx.relu(self.bn0(self.conv0(x)))
        x = nnx.relu(self.bn1(self.conv1(x)))
        x = self.bn2(self.conv2(x))
        if self.downsample is not None:
            identity = self.downsample(identity)
        return nnx.relu(x + identity)


class GemmaEmbedder(nnx.Module):
    """Gemma's embedder (flax/examples/gemma): a parameter drawn by an initializer object, indexed by a 1-tuple,
    encode and decode methods and no __call__."""

    def __init__(self, vocab_size: int, embed_dim: int, *, rngs: nnx.Rngs):
        self.input_embedding = nnx.Param(nnx.initializers.normal()(rngs.params(), (vocab_size, embed_dim)))
        self.embed_dim = embed_dim

    def encode(self, x: jax.Array) -> jax.Array:
        x = self.input_embedding[(x,)]
        x *= jnp.sqrt(self.embed_dim).astype(x.dtype)
        return x

    def decode(self, x: jax.Array) -> jax.Array:
        return jnp.dot(x, self.input_embedding.value.T)


class GemmaFeedForward(nnx.Module):
    """Gemma's feed-forward: jnp.dot with the parameters' .value."""

    def __init__(self, features: int, hidden_dim: int, *, rngs: nnx.Rngs):
        self.gating_einsum = nnx.Param(nnx.initializers.normal()(rngs.params(), (2, features, hidden_dim)))
        self.linear = nnx.Param(nnx.initializers.normal()(rngs.params(), (hidden_dim, features)))

    def __call__(self, x):
        ff_gate = jnp.dot(x, self.gating_einsum.value[0])
        gate_value = nnx.gelu(ff_gate)

        ff1 = jnp.dot(x, self.gating_einsum.value[1])
        activations = gate_value * ff1

        outputs = jnp.dot(activations, self.linear.value)
        return outputs


class GemmaLM(nnx.Module):
    """Tied embedder, a feed-forward and the decode back to logits."""

    def __init__(self, *, rngs: nnx.Rngs):
        self.embedder = GemmaEmbedder(11, 8, rngs=rngs)
        self.ffw = GemmaFeedForward(8, 16, rngs=rngs)

    def __call__(self, tokens):
        x = self.embedder.encode(tokens)
        x = x + self.ffw(x)
        return self.embedder.decode(x)


class MLPBatchNormDropout(nnx.Module):
    """The Flax NNX basics' MLP: BatchNorm and Dropout in line."""

    def __init__(self, din: int, dmid: int, dout: int, *, rngs: nnx.Rngs):
        self.linear1 = nnx.Linear(din, dmid, rngs=rngs)
        self.dropout = nnx.Dropout(rate=0.1, rngs=rngs)
        self.bn = nnx.BatchNorm(dmid, rngs=rngs)
        self.linear2 = nnx.Linear(dmid, dout, rngs=rngs)

    def __call__(self, x: jax.Array):
        x = nnx.gelu(self.dropout(self.bn(self.linear1(x))))
        return self.linear2(x)


class TrainFlagCNN(nnx.Module):
    """The flax examples' style: batch norm and dropout switched by the call's `train` flag."""

    def __init__(self, *, rngs: nnx.Rngs):
        self.conv = nnx.Conv(3, 8, kernel_size=(3, 3), rngs=rngs)
        self.bn = nnx.BatchNorm(8, momentum=0.9, epsilon=1e-5, rngs=rngs)
        self.dropout = nnx.Dropout(0.2, rngs=rngs)
        self.linear = nnx.Linear(8, 4, rngs=rngs)

    def __call__(self, x, train: bool = False):
        x = self.conv(x)
        x = self.bn(x, use_running_average=not train)
        x = nnx.relu(x)
        x = self.dropout(x, deterministic=not train)
        x = jnp.mean(x, axis=(1, 2))
        return self.linear(x)


class TrainFlagMLP(nnx.Module):
    """A batch norm in inference mode unless the call says it trains."""

    def __init__(self, din, dout, *, rngs: nnx.Rngs):
        self.fc = nnx.Linear(din, dout, rngs=rngs)
        self.bn = nnx.BatchNorm(dout, rngs=rngs)

    def __call__(self, x, train=False):
        return nnx.relu(self.bn(self.fc(x), use_running_average=not train))


class Upsample2D(nnx.Module):
    """diffusers' Flax upsampling (nearest to twice the size, then a 3x3 convolution), as an NNX module."""

    def __init__(self, in_channels, out_channels, *, rngs: nnx.Rngs):
        self.conv = nnx.Conv(in_channels, out_channels, kernel_size=(3, 3), strides=(1, 1), padding=((1, 1), (1, 1)),
                             rngs=rngs)

    def __call__(self, hidden_states):
        batch, height, width, channels = hidden_states.shape
        hidden_states = jax.image.resize(
            hidden_states,
            shape=(batch, height * 2, width * 2, channels),
            method="nearest",
        )
        return self.conv(hidden_states)


class BilinearSkip(nnx.Module):
    """A decoder skip resized linearly to the larger map, and one shrunk without antialiasing."""

    def __init__(self, *, rngs: nnx.Rngs):
        self.proj = nnx.Linear(4, 4, rngs=rngs)

    def __call__(self, x, skip):
        up = jax.image.resize(self.proj(x), skip.shape, "bilinear")
        b, h, w, c = skip.shape
        down = jax.image.resize(skip, (b, h // 2 + 1, w // 3, c), "linear", antialias=False)
        return up + skip, down


class ShrinkAntialiased(nnx.Module):
    """A linear resize shrinking with jax's default antialiasing (which the translation does not compute)."""

    def __call__(self, x):
        b, h, w, c = x.shape
        return jax.image.resize(x, (b, h // 2, w // 2, c), "linear")


# flax's lm1b/wmt and Gemma-style layers: nnx.LinearGeneral, nnx.Einsum, nnx.make_causal_mask and
# jax.nn.dot_product_attention (a query masked from every key attends evenly, as in JAX)


class GeneralProjection(nnx.Module):
    """Multi-head projections with nnx.LinearGeneral (as flax's lm1b/wmt examples write attention)."""

    def __init__(self, dim, heads, *, rngs: nnx.Rngs):
        self.heads = heads
        self.query = nnx.LinearGeneral(dim, (heads, dim // heads), rngs=rngs)
        self.out = nnx.LinearGeneral((heads, dim // heads), dim, axis=(-2, -1), rngs=rngs)

    def __call__(self, x):
        q = self.query(x)
        return self.out(jax.nn.relu(q))


class EinsumMixer(nnx.Module):
    """Gemma-style nnx.Einsum projections."""

    def __init__(self, dim, heads, head_dim, *, rngs: nnx.Rngs):
        self.qkv = nnx.Einsum('BTD,SNDH->SBTNH', (3, heads, dim, head_dim), rngs=rngs)
        self.out = nnx.Einsum('BTNH,NHD->BTD', (heads, head_dim, dim), rngs=rngs)

    def __call__(self, x):
        q, k, v = self.qkv(x)
        return self.out(q * k + v)


class CausalMaskAttention(nnx.Module):
    """nnx.MultiHeadAttention given nnx.make_causal_mask's mask."""

    def __init__(self, dim, heads, *, rngs: nnx.Rngs):
        self.attn = nnx.MultiHeadAttention(num_heads=heads, in_features=dim, decode=False, rngs=rngs)

    def __call__(self, x):
        mask = nnx.make_causal_mask(x[..., 0])
        return self.attn(x, mask=mask)


class DotProductAttention(nnx.Module):
    def __init__(self, dim, heads, *, rngs: nnx.Rngs):
        self.heads = heads
        self.qkv = nnx.Linear(dim, 3 * dim, rngs=rngs)

    def split_heads(self, x):
        b, t, d = x.shape
        q, k, v = jnp.split(self.qkv(x), 3, axis=-1)
        return tuple(y.reshape(b, t, self.heads, d // self.heads) for y in (q, k, v))

    def __call__(self, x):
        q, k, v = self.split_heads(x)
        return jax.nn.dot_product_attention(q, k, v, is_causal=True).reshape(x.shape)


class StrictlyCausalAttention(DotProductAttention):
    """jax.nn.dot_product_attention with a mask leaving the first query no key, and an additive bias."""

    def __call__(self, x):
        q, k, v = self.split_heads(x)
        t = x.shape[1]
        mask = jnp.tril(jnp.ones((t, t), dtype=bool), k=-1)
        bias = jnp.arange(t, dtype=jnp.float32) * 0.1
        return jax.nn.dot_product_attention(q, k, v, bias=bias, mask=mask, scale=0.5).reshape(x.shape)


REFUSED = [
    (HEADER + "class DataDependent(nnx.Module):\n    def __init__(self, *, rngs: nnx.Rngs):\n"
     "        self.fc = nnx.Linear(4, 4, rngs=rngs)\n\n    def __call__(self, x):\n        if jnp.sum(x) > 0:\n"
     "            return self.fc(x)\n        return x\n", "data-dependent control flow"),
    (HEADER + "class Attention(nnx.Module):\n    def __init__(self, *, rngs: nnx.Rngs):\n"
     "        self.mha = nnx.MultiHeadAttention(2, 4, normalize_qk=True, rngs=rngs)\n\n    def __call__(self, x):\n"
     "        return self.mha(x)\n", "normalize_qk"),
    (HEADER + "class PerCallMode(nnx.Module):\n    def __init__(self, *, rngs: nnx.Rngs):\n"
     "        self.drop = nnx.Dropout(0.5, rngs=rngs)\n        self.frozen = True\n\n    def __call__(self, x):\n"
     "        return self.drop(x, deterministic=self.frozen)\n", "model.train() / model.eval()"),
    (HEADER + "class Noisy(nnx.Module):\n    def __init__(self, *, rngs: nnx.Rngs):\n        self.rngs = rngs\n\n"
     "    def __call__(self, x):\n        return x + jax.random.normal(self.rngs.noise(), x.shape)\n",
     "rngs used other than passed on"),
    (HEADER + "class Circular(nnx.Module):\n    def __init__(self, *, rngs: nnx.Rngs):\n"
     "        self.conv = nnx.Conv(3, 4, (3, 3), padding='CIRCULAR', rngs=rngs)\n\n    def __call__(self, x):\n"
     "        return self.conv(x)\n", "padding='CIRCULAR'"),
    (HEADER + "class OddTranspose(nnx.Module):\n    def __init__(self, *, rngs: nnx.Rngs):\n"
     "        self.up = nnx.ConvTranspose(3, 4, (3, 3), strides=(2, 2), rngs=rngs)\n\n    def __call__(self, x):\n"
     "        return self.up(x)\n", "cannot express"),
    (HEADER + "class HalfPrecision(nnx.Module):\n    def __init__(self, *, rngs: nnx.Rngs):\n"
     "        self.fc = nnx.Linear(4, 4, dtype=jnp.bfloat16, rngs=rngs)\n\n    def __call__(self, x):\n"
     "        return self.fc(x)\n", "dtype="),
    (HEADER + "class KeptKey(nnx.Module):\n    def __init__(self, *, rngs: nnx.Rngs):\n"
     "        key = rngs.params()\n        self.key = key\n\n    def __call__(self, x):\n        return x\n",
     "random key used other than"),
    (HEADER + "class OwnCell(nnx.Module):\n    def __init__(self, *, rngs: nnx.Rngs):\n"
     "        self.cell = nnx.LSTMCell(4, 6, rngs=rngs)\n\n    def __call__(self, x):\n"
     "        carry = self.cell.initialize_carry(x.shape)\n        return self.cell(carry, x)[1]\n", "RecurrentCell"),
]
