"""PyTorch model classes written in the styles real projects use, for the transpiler's tests and benchmark.

`CASES` lists (class, constructor arguments, input shape, input dtype); `tests/transpile/test_corpus.py`
translates each class, ports its weights and compares outputs; `benchmarks/transpile_bench.py` reports the
rates (docs/transpile.md). Classes the translation must refuse live in `REFUSED` (source text, reason).
"""

import collections.abc
import copy
import functools
import math
import warnings
from collections import OrderedDict
from functools import partial
from inspect import isfunction
from typing import Callable, List, Optional, Tuple, Type

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.utils.checkpoint as cp
from einops import rearrange, reduce, repeat
from einops.layers.torch import Rearrange, Reduce
from torch import Tensor
from torch import nn as tnn
from torch.autograd import Variable
from torch.nn import init
from torch.nn.utils import spectral_norm, weight_norm
from torch.utils.checkpoint import checkpoint
from transformers.activations import ACT2FN
from transformers.pytorch_utils import Conv1D, apply_chunking_to_forward


def conv3x3(in_planes, out_planes, stride=1, groups=1, dilation=1):
    """3x3 convolution with padding"""
    return nn.Conv2d(in_planes, out_planes, kernel_size=3, stride=stride, padding=dilation, groups=groups,
                     bias=False, dilation=dilation)


def conv1x1(in_planes, out_planes, stride=1):
    return nn.Conv2d(in_planes, out_planes, kernel_size=1, stride=stride, bias=False)


class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, inplanes, planes, stride=1, downsample=None):
        super().__init__()
        self.conv1 = conv3x3(inplanes, planes, stride)
        self.bn1 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = conv3x3(planes, planes)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = downsample
        self.stride = stride

    def forward(self, x):
        identity = x
        out = self.conv1(x)
        out = self.bn1(out)
        out = self.relu(out)
        out = self.conv2(out)
        out = self.bn2(out)
        if self.downsample is not None:
            identity = self.downsample(x)
        out += identity
        out = self.relu(out)
        return out


class Bottleneck(nn.Module):
    expansion = 4

    def __init__(self, inplanes, planes, stride=1):
        super().__init__()
        width = planes
        self.conv1 = conv1x1(inplanes, width)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = conv3x3(width, width, stride)
        self.bn2 = nn.BatchNorm2d(width)
        self.conv3 = conv1x1(width, planes * self.expansion)
        self.bn3 = nn.BatchNorm2d(planes * self.expansion)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = None
        if stride != 1 or inplanes != planes * self.expansion:
            self.downsample = nn.Sequential(conv1x1(inplanes, planes * self.expansion, stride),
                                            nn.BatchNorm2d(planes * self.expansion))

    def forward(self, x):
        identity = x
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        if self.downsample is not None:
            identity = self.downsample(x)
        return self.relu(out + identity)


class TinyResNet(nn.Module):
    def __init__(self, num_classes=10, width=16):
        super().__init__()
        self.conv1 = nn.Conv2d(3, width, kernel_size=7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        self.layer1 = nn.Sequential(BasicBlock(width, width), BasicBlock(width, width))
        self.layer2 = Bottleneck(width, width, stride=2)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(width * 4, num_classes)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer1(x)
        x = self.layer2(x)
        x = self.avgpool(x)
        x = torch.flatten(x, 1)
        return self.fc(x)


class PreActBlock(nn.Module):
    def __init__(self, in_planes, planes, stride=1):
        super().__init__()
        self.bn1 = nn.BatchNorm2d(in_planes)
        self.conv1 = nn.Conv2d(in_planes, planes, kernel_size=3, stride=stride, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, kernel_size=3, stride=1, padding=1, bias=False)
        if stride != 1 or in_planes != planes:
            self.shortcut = nn.Sequential(nn.Conv2d(in_planes, planes, kernel_size=1, stride=stride, bias=False))

    def forward(self, x):
        out = F.relu(self.bn1(x))
        shortcut = self.shortcut(out) if hasattr(self, "shortcut") else x
        out = self.conv1(out)
        out = self.conv2(F.relu(self.bn2(out)))
        out += shortcut
        return out


class ConvBNReLU(nn.Module):
    def __init__(self, in_ch, out_ch, kernel_size=3, stride=1, groups=1):
        super().__init__()
        padding = (kernel_size - 1) // 2
        self.conv = nn.Conv2d(in_ch, out_ch, kernel_size, stride, padding, groups=groups, bias=False)
        self.bn = nn.BatchNorm2d(out_ch)
        self.act = nn.ReLU6(inplace=True)

    def forward(self, x):
        return self.act(self.bn(self.conv(x)))


class InvertedResidual(nn.Module):
    def __init__(self, inp, oup, stride, expand_ratio):
        super().__init__()
        self.stride = stride
        hidden_dim = int(round(inp * expand_ratio))
        self.use_res_connect = self.stride == 1 and inp == oup
        layers = []
        if expand_ratio != 1:
            layers.append(ConvBNReLU(inp, hidden_dim, kernel_size=1))
        layers.extend([
            ConvBNReLU(hidden_dim, hidden_dim, stride=stride, groups=hidden_dim),
            nn.Conv2d(hidden_dim, oup, 1, 1, 0, bias=False),
            nn.BatchNorm2d(oup),
        ])
        self.conv = nn.Sequential(*layers)

    def forward(self, x):
        if self.use_res_connect:
            return x + self.conv(x)
        else:
            return self.conv(x)


class SqueezeExcitation(nn.Module):
    def __init__(self, channels, reduction=4):
        super().__init__()
        self.avg_pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Sequential(
            nn.Linear(channels, channels // reduction, bias=False),
            nn.ReLU(inplace=True),
            nn.Linear(channels // reduction, channels, bias=False),
            nn.Sigmoid(),
        )

    def forward(self, x):
        b, c, _, _ = x.size()
        y = self.avg_pool(x).view(b, c)
        y = self.fc(y).view(b, c, 1, 1)
        return x * y.expand_as(x)


class SEConv(nn.Module):
    """Squeeze-excitation with 1x1 convolutions, as EfficientNet writes it."""

    def __init__(self, channels, squeeze):
        super().__init__()
        self.reduce = nn.Conv2d(channels, squeeze, 1)
        self.expand = nn.Conv2d(squeeze, channels, 1)

    def forward(self, x):
        s = F.adaptive_avg_pool2d(x, 1)
        s = F.silu(self.reduce(s))
        return x * torch.sigmoid(self.expand(s))


class MBConv(nn.Module):
    def __init__(self, in_ch, out_ch, expand=4, stride=1):
        super().__init__()
        mid = in_ch * expand
        self.expand_conv = nn.Sequential(nn.Conv2d(in_ch, mid, 1, bias=False), nn.BatchNorm2d(mid), nn.SiLU())
        self.dw = nn.Sequential(nn.Conv2d(mid, mid, 3, stride, 1, groups=mid, bias=False), nn.BatchNorm2d(mid),
                                nn.SiLU())
        self.se = SEConv(mid, max(1, in_ch // 4))
        self.project = nn.Sequential(nn.Conv2d(mid, out_ch, 1, bias=False), nn.BatchNorm2d(out_ch))
        self.skip = stride == 1 and in_ch == out_ch

    def forward(self, x):
        y = self.project(self.se(self.dw(self.expand_conv(x))))
        if self.skip:
            y = y + x
        return y


class DoubleConv(nn.Module):
    """(convolution => [BN] => ReLU) * 2"""

    def __init__(self, in_channels, out_channels, mid_channels=None):
        super().__init__()
        if not mid_channels:
            mid_channels = out_channels
        self.double_conv = nn.Sequential(
            nn.Conv2d(in_channels, mid_channels, kernel_size=3, padding=1, bias=False),
            nn.BatchNorm2d(mid_channels),
            nn.ReLU(inplace=True),
            nn.Conv2d(mid_channels, out_channels, kernel_size=3, padding=1, bias=False),
            nn.BatchNorm2d(out_channels),
            nn.ReLU(inplace=True),
        )

    def forward(self, x):
        return self.double_conv(x)


class Down(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.maxpool_conv = nn.Sequential(nn.MaxPool2d(2), DoubleConv(in_channels, out_channels))

    def forward(self, x):
        return self.maxpool_conv(x)


class Up(nn.Module):
    def __init__(self, in_channels, out_channels, bilinear=False):
        super().__init__()
        if bilinear:
            self.up = nn.Upsample(scale_factor=2, mode="bilinear", align_corners=False)
            self.conv = DoubleConv(in_channels, out_channels, in_channels // 2)
        else:
            self.up = nn.ConvTranspose2d(in_channels, in_channels // 2, kernel_size=2, stride=2)
            self.conv = DoubleConv(in_channels, out_channels)

    def forward(self, x1, x2):
        x1 = self.up(x1)
        x = torch.cat([x2, x1], dim=1)
        return self.conv(x)


class UpBilinear(Up):
    def __init__(self, in_channels, out_channels):
        super().__init__(in_channels, out_channels, bilinear=True)


class TinyUNet(nn.Module):
    def __init__(self, n_channels=3, n_classes=2, base=8):
        super().__init__()
        self.inc = DoubleConv(n_channels, base)
        self.down1 = Down(base, base * 2)
        self.down2 = Down(base * 2, base * 4)
        self.up1 = Up(base * 4, base * 2)
        self.up2 = Up(base * 2, base)
        self.outc = nn.Conv2d(base, n_classes, kernel_size=1)

    def forward(self, x):
        x1 = self.inc(x)
        x2 = self.down1(x1)
        x3 = self.down2(x2)
        x = self.up1(x3, x2)
        x = self.up2(x, x1)
        return self.outc(x)


class MultiHeadSelfAttention(nn.Module):
    def __init__(self, dim, num_heads=4, qkv_bias=True):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = dim // num_heads
        self.scale = self.head_dim ** -0.5
        self.qkv = nn.Linear(dim, dim * 3, bias=qkv_bias)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        B, N, C = x.shape
        qkv = self.qkv(x).reshape(B, N, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        attn = (q @ k.transpose(-2, -1)) * self.scale
        attn = attn.softmax(dim=-1)
        x = (attn @ v).transpose(1, 2).reshape(B, N, C)
        return self.proj(x)


class Mlp(nn.Module):
    def __init__(self, in_features, hidden_features=None, out_features=None, drop=0.0):
        super().__init__()
        out_features = out_features or in_features
        hidden_features = hidden_features or in_features
        self.fc1 = nn.Linear(in_features, hidden_features)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(hidden_features, out_features)
        self.drop = nn.Dropout(drop)

    def forward(self, x):
        x = self.drop(self.act(self.fc1(x)))
        return self.drop(self.fc2(x))


class LayerScale(nn.Module):
    """timm's: multiplies in place when asked."""

    def __init__(self, dim, init_values=1e-5, inplace=False):
        super().__init__()
        self.inplace = inplace
        self.gamma = nn.Parameter(init_values * torch.ones(dim))

    def forward(self, x):
        return x.mul_(self.gamma) if self.inplace else x * self.gamma


class Conv2dSame(nn.Conv2d):
    """timm's: TensorFlow's "SAME" padding computed from the input size, the layer's settings and weight read."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1,
                 bias=True):
        super().__init__(in_channels, out_channels, kernel_size, stride, 0, dilation, groups, bias)

    def forward(self, x):
        ih, iw = x.size()[-2:]
        kh, kw = self.weight.size()[-2:]
        pad_h = max((math.ceil(ih / self.stride[0]) - 1) * self.stride[0] + (kh - 1) * self.dilation[0] + 1 - ih, 0)
        pad_w = max((math.ceil(iw / self.stride[1]) - 1) * self.stride[1] + (kw - 1) * self.dilation[1] + 1 - iw, 0)
        if pad_h > 0 or pad_w > 0:
            x = F.pad(x, [pad_w // 2, pad_w - pad_w // 2, pad_h // 2, pad_h - pad_h // 2])
        return F.conv2d(x, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups)


class Conv2dDynamicSamePadding(nn.Conv2d):
    """EfficientNet-PyTorch's: a setting replaced in __init__ after reading it."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, dilation=1, groups=1, bias=True):
        super().__init__(in_channels, out_channels, kernel_size, stride, 0, dilation, groups, bias)
        self.stride = self.stride if len(self.stride) == 2 else [self.stride[0]] * 2

    def forward(self, x):
        ih, iw = x.size()[-2:]
        kh, kw = self.weight.size()[-2:]
        sh, sw = self.stride
        oh, ow = math.ceil(ih / sh), math.ceil(iw / sw)
        pad_h = max((oh - 1) * self.stride[0] + (kh - 1) * self.dilation[0] + 1 - ih, 0)
        pad_w = max((ow - 1) * self.stride[1] + (kw - 1) * self.dilation[1] + 1 - iw, 0)
        if pad_h > 0 or pad_w > 0:
            x = F.pad(x, [pad_w // 2, pad_w - pad_w // 2, pad_h // 2, pad_h - pad_h // 2])
        return F.conv2d(x, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups)


class StdConv2d(nn.Conv2d):
    """BiT's weight-standardised convolution."""

    def forward(self, x):
        w = self.weight
        v, m = torch.var_mean(w, dim=[1, 2, 3], keepdim=True, unbiased=False)
        w = (w - m) / torch.sqrt(v + 1e-10)
        return F.conv2d(x, w, self.bias, self.stride, self.padding, self.dilation, self.groups)


class SamePadStem(nn.Module):
    """The three convolution subclasses in one stem, grouped and dilated."""

    def __init__(self):
        super().__init__()
        self.same = Conv2dSame(3, 8, 3, stride=2)
        self.dynamic = Conv2dDynamicSamePadding(8, 8, 5, stride=2, groups=4)
        self.std = StdConv2d(8, 6, 3, padding=2, dilation=2, bias=False)

    def forward(self, x):
        return self.std(F.relu(self.dynamic(self.same(x))))


class NanoGPTTied(nn.Module):
    """nanoGPT's embeddings and head: the token embedding tied to the head by assignment, in a ModuleDict."""

    def __init__(self, vocab_size=50, n_embd=16, block_size=8):
        super().__init__()
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(vocab_size, n_embd),
            wpe=nn.Embedding(block_size, n_embd),
            ln_f=nn.LayerNorm(n_embd),
        ))
        self.lm_head = nn.Linear(n_embd, vocab_size, bias=False)
        self.transformer.wte.weight = self.lm_head.weight  # https://paperswithcode.com/method/weight-tying

    def forward(self, idx):
        b, t = idx.size()
        pos = torch.arange(0, t, dtype=torch.long)
        x = self.transformer.wte(idx) + self.transformer.wpe(pos)
        return self.lm_head(self.transformer.ln_f(x))


class HeadTiedToEmbedding(nn.Module):
    """The other direction: the head's weight is the embedding's."""

    def __init__(self, vocab_size=40, dim=12):
        super().__init__()
        self.tok_emb = nn.Embedding(vocab_size, dim)
        self.head = nn.Linear(dim, vocab_size, bias=False)
        self.head.weight = self.tok_emb.weight

    def forward(self, idx):
        return self.head(torch.tanh(self.tok_emb(idx)))


class InPlaceResidual(nn.Module):
    """In-place methods on a name whose result is bound, then the name read again (it holds the result)."""

    def __init__(self, dim):
        super().__init__()
        self.fc = nn.Linear(dim, dim)
        self.scale = LayerScale(dim, 0.5, inplace=True)

    def forward(self, x):
        h = self.fc(x)
        y = h.add_(1.0)
        out = self.scale(y * 2.0)
        return torch.cat([h, y, out], dim=-1)


class ViTBlock(nn.Module):
    def __init__(self, dim, num_heads, mlp_ratio=4.0, layer_scale=None):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim, eps=1e-6)
        self.attn = MultiHeadSelfAttention(dim, num_heads)
        self.ls1 = LayerScale(dim, layer_scale) if layer_scale else nn.Identity()
        self.norm2 = nn.LayerNorm(dim, eps=1e-6)
        self.mlp = Mlp(dim, int(dim * mlp_ratio))
        self.ls2 = LayerScale(dim, layer_scale) if layer_scale else nn.Identity()

    def forward(self, x):
        x = x + self.ls1(self.attn(self.norm1(x)))
        x = x + self.ls2(self.mlp(self.norm2(x)))
        return x


class PatchEmbed(nn.Module):
    def __init__(self, img_size=16, patch_size=4, in_chans=3, embed_dim=32):
        super().__init__()
        self.num_patches = (img_size // patch_size) ** 2
        self.proj = nn.Conv2d(in_chans, embed_dim, kernel_size=patch_size, stride=patch_size)

    def forward(self, x):
        x = self.proj(x)
        x = x.flatten(2).transpose(1, 2)
        return x


class TinyViT(nn.Module):
    def __init__(self, img_size=16, patch_size=4, dim=32, depth=2, heads=4, num_classes=5):
        super().__init__()
        self.patch_embed = PatchEmbed(img_size, patch_size, 3, dim)
        self.pos_embed = nn.Parameter(torch.zeros(1, self.patch_embed.num_patches, dim))
        self.blocks = nn.ModuleList([ViTBlock(dim, heads, layer_scale=0.1) for _ in range(depth)])
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, num_classes)

    def forward(self, x):
        x = self.patch_embed(x) + self.pos_embed
        for blk in self.blocks:
            x = blk(x)
        x = self.norm(x)
        return self.head(x.mean(dim=1))


class TransformerEncoderLayer(nn.Module):
    """Post-norm encoder layer written out (as in the original Transformer)."""

    def __init__(self, d_model, nhead, dim_feedforward=64, dropout=0.1):
        super().__init__()
        self.nhead = nhead
        self.q = nn.Linear(d_model, d_model)
        self.k = nn.Linear(d_model, d_model)
        self.v = nn.Linear(d_model, d_model)
        self.o = nn.Linear(d_model, d_model)
        self.linear1 = nn.Linear(d_model, dim_feedforward)
        self.linear2 = nn.Linear(dim_feedforward, d_model)
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)
        self.dropout = nn.Dropout(dropout)

    def split_heads(self, x):
        b, t, d = x.shape
        return x.view(b, t, self.nhead, d // self.nhead).transpose(1, 2)

    def forward(self, src, mask=None):
        q, k, v = self.split_heads(self.q(src)), self.split_heads(self.k(src)), self.split_heads(self.v(src))
        scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(q.size(-1))
        if mask is not None:
            scores = scores.masked_fill(mask == 0, -1e9)
        attn = F.softmax(scores, dim=-1)
        ctx = torch.matmul(attn, v).transpose(1, 2).contiguous()
        b, t = ctx.shape[0], ctx.shape[1]
        ctx = ctx.view(b, t, -1)
        src = self.norm1(src + self.dropout(self.o(ctx)))
        ff = self.linear2(self.dropout(F.relu(self.linear1(src))))
        return self.norm2(src + self.dropout(ff))


class CausalSelfAttention(nn.Module):
    def __init__(self, n_embd=32, n_head=4, block_size=8):
        super().__init__()
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)
        self.n_head = n_head
        self.n_embd = n_embd
        self.register_buffer("bias", torch.ones(block_size, block_size))

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).chunk(3, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        mask = torch.tril(self.bias[:T, :T])
        att = att.masked_fill(mask == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        y = att @ v
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.c_proj(y)


class GPTBlock(nn.Module):
    def __init__(self, n_embd=32, n_head=4):
        super().__init__()
        self.ln_1 = nn.LayerNorm(n_embd)
        self.attn = MultiHeadSelfAttention(n_embd, n_head)
        self.ln_2 = nn.LayerNorm(n_embd)
        self.mlp = nn.Sequential(nn.Linear(n_embd, 4 * n_embd), nn.GELU(approximate="none"),
                                 nn.Linear(4 * n_embd, n_embd))

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        x = x + self.mlp(self.ln_2(x))
        return x


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def _norm(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)

    def forward(self, x):
        return self._norm(x) * self.weight


class SwiGLU(nn.Module):
    def __init__(self, dim, hidden_dim):
        super().__init__()
        self.w1 = nn.Linear(dim, hidden_dim, bias=False)
        self.w2 = nn.Linear(hidden_dim, dim, bias=False)
        self.w3 = nn.Linear(dim, hidden_dim, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class LlamaStyleBlock(nn.Module):
    def __init__(self, dim=32, heads=4):
        super().__init__()
        self.attention_norm = RMSNorm(dim)
        self.attention = MultiHeadSelfAttention(dim, heads, qkv_bias=False)
        self.ffn_norm = RMSNorm(dim)
        self.feed_forward = SwiGLU(dim, 64)

    def forward(self, x):
        h = x + self.attention(self.attention_norm(x))
        return h + self.feed_forward(self.ffn_norm(h))


class GroupNormConv(nn.Module):
    def __init__(self, in_ch, out_ch, groups=4):
        super().__init__()
        self.conv = nn.Conv2d(in_ch, out_ch, 3, padding=1)
        self.norm = nn.GroupNorm(groups, out_ch)
        self.act = nn.SiLU()

    def forward(self, x):
        return self.act(self.norm(self.conv(x)))


class ResnetBlockGN(nn.Module):
    """A diffusion-model residual block: GroupNorm, SiLU, conv, with a 1x1 skip when widths differ."""

    def __init__(self, in_channels, out_channels=None, groups=4):
        super().__init__()
        out_channels = in_channels if out_channels is None else out_channels
        self.norm1 = nn.GroupNorm(num_groups=groups, num_channels=in_channels, eps=1e-6, affine=True)
        self.conv1 = nn.Conv2d(in_channels, out_channels, kernel_size=3, stride=1, padding=1)
        self.norm2 = nn.GroupNorm(num_groups=groups, num_channels=out_channels, eps=1e-6, affine=True)
        self.conv2 = nn.Conv2d(out_channels, out_channels, kernel_size=3, stride=1, padding=1)
        if in_channels != out_channels:
            self.nin_shortcut = nn.Conv2d(in_channels, out_channels, kernel_size=1, stride=1, padding=0)
        else:
            self.nin_shortcut = None

    def forward(self, x):
        h = self.conv1(F.silu(self.norm1(x)))
        h = self.conv2(F.silu(self.norm2(h)))
        if self.nin_shortcut is not None:
            x = self.nin_shortcut(x)
        return x + h


class LeNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 6, 5)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1 = nn.Linear(16 * 4 * 4, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), (2, 2))
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = x.view(x.size(0), -1)
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        return self.fc3(x)


class VGGish(nn.Module):
    def __init__(self, cfg=(8, "M", 16, "M"), num_classes=10, batch_norm=True):
        super().__init__()
        layers = []
        in_channels = 3
        for v in cfg:
            if v == "M":
                layers += [nn.MaxPool2d(kernel_size=2, stride=2)]
            else:
                conv2d = nn.Conv2d(in_channels, v, kernel_size=3, padding=1)
                if batch_norm:
                    layers += [conv2d, nn.BatchNorm2d(v), nn.ReLU(inplace=True)]
                else:
                    layers += [conv2d, nn.ReLU(inplace=True)]
                in_channels = v
        self.features = nn.Sequential(*layers)
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.classifier = nn.Sequential(nn.Linear(in_channels, 32), nn.ReLU(True), nn.Dropout(),
                                        nn.Linear(32, num_classes))
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, nn.Linear):
                nn.init.normal_(m.weight, 0, 0.01)

    def forward(self, x):
        x = self.features(x)
        x = self.avgpool(x)
        x = torch.flatten(x, 1)
        return self.classifier(x)


class DenseLayer(nn.Module):
    def __init__(self, num_input_features, growth_rate, bn_size=2):
        super().__init__()
        self.norm1 = nn.BatchNorm2d(num_input_features)
        self.relu1 = nn.ReLU(inplace=True)
        self.conv1 = nn.Conv2d(num_input_features, bn_size * growth_rate, kernel_size=1, stride=1, bias=False)
        self.norm2 = nn.BatchNorm2d(bn_size * growth_rate)
        self.relu2 = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(bn_size * growth_rate, growth_rate, kernel_size=3, stride=1, padding=1, bias=False)

    def forward(self, x):
        bottleneck = self.conv1(self.relu1(self.norm1(x)))
        new = self.conv2(self.relu2(self.norm2(bottleneck)))
        return torch.cat([x, new], 1)


class DenseBlock(nn.Module):
    def __init__(self, num_layers, num_input_features, growth_rate):
        super().__init__()
        self.layers = nn.ModuleList()
        for i in range(num_layers):
            self.layers.append(DenseLayer(num_input_features + i * growth_rate, growth_rate))

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


class Transition(nn.Module):
    def __init__(self, num_input_features, num_output_features):
        super().__init__()
        self.norm = nn.BatchNorm2d(num_input_features)
        self.conv = nn.Conv2d(num_input_features, num_output_features, kernel_size=1, bias=False)
        self.pool = nn.AvgPool2d(kernel_size=2, stride=2)

    def forward(self, x):
        return self.pool(self.conv(F.relu(self.norm(x))))


class InceptionA(nn.Module):
    def __init__(self, in_channels, pool_features):
        super().__init__()
        self.branch1x1 = ConvBNReLU(in_channels, 8, kernel_size=1)
        self.branch5x5_1 = ConvBNReLU(in_channels, 6, kernel_size=1)
        self.branch5x5_2 = ConvBNReLU(6, 8, kernel_size=5)
        self.branch3x3dbl_1 = ConvBNReLU(in_channels, 8, kernel_size=1)
        self.branch3x3dbl_2 = ConvBNReLU(8, 12, kernel_size=3)
        self.branch_pool = ConvBNReLU(in_channels, pool_features, kernel_size=1)

    def forward(self, x):
        branch1x1 = self.branch1x1(x)
        branch5x5 = self.branch5x5_2(self.branch5x5_1(x))
        branch3x3dbl = self.branch3x3dbl_2(self.branch3x3dbl_1(x))
        branch_pool = F.avg_pool2d(x, kernel_size=3, stride=1, padding=1)
        branch_pool = self.branch_pool(branch_pool)
        outputs = [branch1x1, branch5x5, branch3x3dbl, branch_pool]
        return torch.cat(outputs, 1)


class FireModule(nn.Module):
    def __init__(self, inplanes, squeeze_planes, expand1x1_planes, expand3x3_planes):
        super().__init__()
        self.squeeze = nn.Conv2d(inplanes, squeeze_planes, kernel_size=1)
        self.squeeze_activation = nn.ReLU(inplace=True)
        self.expand1x1 = nn.Conv2d(squeeze_planes, expand1x1_planes, kernel_size=1)
        self.expand1x1_activation = nn.ReLU(inplace=True)
        self.expand3x3 = nn.Conv2d(squeeze_planes, expand3x3_planes, kernel_size=3, padding=1)
        self.expand3x3_activation = nn.ReLU(inplace=True)

    def forward(self, x):
        x = self.squeeze_activation(self.squeeze(x))
        return torch.cat([self.expand1x1_activation(self.expand1x1(x)),
                          self.expand3x3_activation(self.expand3x3(x))], 1)


class ShuffleUnit(nn.Module):
    def __init__(self, channels, groups=2):
        super().__init__()
        self.groups = groups
        self.conv = nn.Conv2d(channels, channels, 1, groups=groups, bias=False)
        self.bn = nn.BatchNorm2d(channels)

    def channel_shuffle(self, x):
        batchsize, num_channels, height, width = x.size()
        channels_per_group = num_channels // self.groups
        x = x.view(batchsize, self.groups, channels_per_group, height, width)
        x = torch.transpose(x, 1, 2).contiguous()
        return x.view(batchsize, -1, height, width)

    def forward(self, x):
        return F.relu(self.channel_shuffle(self.bn(self.conv(x))))


class DepthwiseSeparable(nn.Module):
    def __init__(self, in_ch, out_ch, stride=1):
        super().__init__()
        self.depthwise = nn.Conv2d(in_ch, in_ch, 3, stride=stride, padding=1, groups=in_ch, bias=False)
        self.pointwise = nn.Conv2d(in_ch, out_ch, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(in_ch)
        self.bn2 = nn.BatchNorm2d(out_ch)

    def forward(self, x):
        x = F.relu(self.bn1(self.depthwise(x)))
        return F.relu(self.bn2(self.pointwise(x)))


class HardSwishBlock(nn.Module):
    def __init__(self, ch):
        super().__init__()
        self.conv = nn.Conv2d(ch, ch, 3, padding=1)
        self.act = nn.Hardswish()
        self.gate = nn.Hardsigmoid()

    def forward(self, x):
        y = self.act(self.conv(x))
        return y * self.gate(y)


class DilatedBlock(nn.Module):
    def __init__(self, ch, dilation=2):
        super().__init__()
        self.conv = nn.Conv2d(ch, ch, 3, padding=dilation, dilation=dilation)
        self.act = nn.LeakyReLU(0.2)

    def forward(self, x):
        return x + self.act(self.conv(x))


class StridedConvDecoder(nn.Module):
    def __init__(self, ch=8):
        super().__init__()
        self.up1 = nn.ConvTranspose2d(ch, ch // 2, kernel_size=4, stride=2, padding=1)
        self.up2 = nn.ConvTranspose2d(ch // 2, 3, kernel_size=3, stride=2, padding=1, output_padding=1)
        self.act = nn.ELU()

    def forward(self, x):
        return torch.tanh(self.up2(self.act(self.up1(x))))


class Conv1dClassifier(nn.Module):
    def __init__(self, in_ch=4, n_classes=3):
        super().__init__()
        self.conv1 = nn.Conv1d(in_ch, 8, kernel_size=5, padding=2)
        self.bn1 = nn.BatchNorm1d(8)
        self.conv2 = nn.Conv1d(8, 16, kernel_size=3, stride=2)
        self.pool = nn.AdaptiveAvgPool1d(1)
        self.fc = nn.Linear(16, n_classes)

    def forward(self, x):
        x = F.relu(self.bn1(self.conv1(x)))
        x = F.relu(self.conv2(x))
        x = self.pool(x).squeeze(-1)
        return F.log_softmax(self.fc(x), dim=-1)


class TemporalBlock(nn.Module):
    """A TCN block with symmetric padding (the chomp variant needs slicing, below)."""

    def __init__(self, n_inputs, n_outputs, kernel_size=3, dilation=1):
        super().__init__()
        padding = (kernel_size - 1) * dilation
        self.conv1 = nn.Conv1d(n_inputs, n_outputs, kernel_size, padding=padding, dilation=dilation)
        self.relu = nn.ReLU()
        self.downsample = nn.Conv1d(n_inputs, n_outputs, 1) if n_inputs != n_outputs else None
        self.chomp = padding

    def forward(self, x):
        out = self.conv1(x)
        out = out[:, :, :-self.chomp] if self.chomp > 0 else out
        res = x if self.downsample is None else self.downsample(x)
        return self.relu(self.relu(out) + res)


class Conv3dStem(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv3d(2, 4, kernel_size=3, padding=1, bias=False)
        self.bn = nn.BatchNorm3d(4)
        self.pool = nn.MaxPool3d(2)

    def forward(self, x):
        return self.pool(F.relu(self.bn(self.conv(x))))


class TextCNN(nn.Module):
    def __init__(self, vocab_size=50, embed_dim=16, num_filters=8, kernel_sizes=(2, 3), num_classes=4):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, embed_dim, padding_idx=0)
        self.convs = nn.ModuleList([nn.Conv1d(embed_dim, num_filters, k) for k in kernel_sizes])
        self.dropout = nn.Dropout(0.5)
        self.fc = nn.Linear(num_filters * len(kernel_sizes), num_classes)

    def forward(self, tokens):
        x = self.embedding(tokens).permute(0, 2, 1)
        pooled = [torch.amax(F.relu(conv(x)), dim=2) for conv in self.convs]
        return self.fc(self.dropout(torch.cat(pooled, dim=1)))


class BagOfEmbeddings(nn.Module):
    def __init__(self, vocab=40, dim=12, classes=3):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.norm = nn.LayerNorm(dim)
        self.out = nn.Linear(dim, classes)

    def forward(self, ids):
        h = self.norm(self.emb(ids))
        return self.out(h.mean(1))


class PositionalEmbeddingModel(nn.Module):
    def __init__(self, vocab=30, max_len=16, dim=16):
        super().__init__()
        self.tok = nn.Embedding(vocab, dim)
        self.pos = nn.Embedding(max_len, dim)
        self.register_buffer("positions", torch.zeros(max_len, dtype=torch.long))
        self.ln = nn.LayerNorm(dim)

    def forward(self, ids):
        x = self.tok(ids) + self.pos.weight[: ids.shape[1]]
        return self.ln(x)


class MLPClassifier(nn.Module):
    def __init__(self, in_dim=20, hidden=(32, 16), n_classes=5, dropout=0.1, use_bn=True):
        super().__init__()
        layers = []
        prev = in_dim
        for h in hidden:
            layers.append(nn.Linear(prev, h))
            if use_bn:
                layers.append(nn.BatchNorm1d(h))
            layers.append(nn.ReLU())
            layers.append(nn.Dropout(dropout))
            prev = h
        self.body = nn.Sequential(*layers)
        self.head = nn.Linear(prev, n_classes)

    def forward(self, x):
        return self.head(self.body(x))


class Autoencoder(nn.Module):
    def __init__(self, dim=24, latent=4):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(dim, 12), nn.Tanh(), nn.Linear(12, latent))
        self.decoder = nn.Sequential(nn.Linear(latent, 12), nn.Tanh(), nn.Linear(12, dim), nn.Sigmoid())

    def forward(self, x):
        z = self.encoder(x)
        return self.decoder(z), z


class VAEHead(nn.Module):
    def __init__(self, dim=16, latent=4):
        super().__init__()
        self.fc_mu = nn.Linear(dim, latent)
        self.fc_logvar = nn.Linear(dim, latent)

    def forward(self, h):
        mu = self.fc_mu(h)
        logvar = self.fc_logvar(h)
        std = torch.exp(0.5 * logvar)
        return mu, std


class GatedResidual(nn.Module):
    def __init__(self, dim, use_gate=True):
        super().__init__()
        self.use_gate = use_gate
        self.fc = nn.Linear(dim, dim)
        if use_gate:
            self.gate = nn.Linear(dim, dim)

    def forward(self, x):
        h = self.fc(x)
        if self.use_gate:
            h = h * torch.sigmoid(self.gate(x))
        return x + h


class Highway(nn.Module):
    def __init__(self, size, num_layers=2):
        super().__init__()
        self.nonlinear = nn.ModuleList([nn.Linear(size, size) for _ in range(num_layers)])
        self.gate = nn.ModuleList([nn.Linear(size, size) for _ in range(num_layers)])

    def forward(self, x):
        for layer in range(len(self.gate)):
            gate = torch.sigmoid(self.gate[layer](x))
            nonlinear = F.relu(self.nonlinear[layer](x))
            x = gate * nonlinear + (1 - gate) * x
        return x


class FeaturePyramidTop(nn.Module):
    def __init__(self, c_low=8, c_high=16, out=8):
        super().__init__()
        self.lateral = nn.Conv2d(c_low, out, 1)
        self.top = nn.Conv2d(c_high, out, 1)
        self.smooth = nn.Conv2d(out, out, 3, padding=1)

    def forward(self, low, high):
        up = F.interpolate(self.top(high), scale_factor=2, mode="nearest")
        return self.smooth(self.lateral(low) + up)


class ASPPPooling(nn.Module):
    def __init__(self, in_ch, out_ch):
        super().__init__()
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.conv = nn.Conv2d(in_ch, out_ch, 1, bias=False)
        self.bn = nn.BatchNorm2d(out_ch)

    def forward(self, x):
        y = F.relu(self.bn(self.conv(self.pool(x))))
        return F.interpolate(y, scale_factor=8, mode="nearest")


class ChannelAttention(nn.Module):
    """CBAM channel attention: shared MLP over average- and max-pooled features."""

    def __init__(self, in_planes, ratio=4):
        super().__init__()
        self.avg_pool = nn.AdaptiveAvgPool2d(1)
        self.max_pool = nn.AdaptiveMaxPool2d(1)
        self.fc1 = nn.Conv2d(in_planes, in_planes // ratio, 1, bias=False)
        self.relu1 = nn.ReLU()
        self.fc2 = nn.Conv2d(in_planes // ratio, in_planes, 1, bias=False)

    def forward(self, x):
        avg_out = self.fc2(self.relu1(self.fc1(self.avg_pool(x))))
        max_out = self.fc2(self.relu1(self.fc1(self.max_pool(x))))
        return torch.sigmoid(avg_out + max_out) * x


class SpatialAttention(nn.Module):
    def __init__(self, kernel_size=7):
        super().__init__()
        self.conv1 = nn.Conv2d(2, 1, kernel_size, padding=kernel_size // 2, bias=False)

    def forward(self, x):
        avg_out = torch.mean(x, dim=1, keepdim=True)
        max_out = torch.amax(x, dim=1, keepdim=True)
        y = torch.cat([avg_out, max_out], dim=1)
        return x * torch.sigmoid(self.conv1(y))


class L2NormEmbedding(nn.Module):
    def __init__(self, in_dim=16, dim=8):
        super().__init__()
        self.fc = tnn.Linear(in_dim, dim)

    def forward(self, x):
        return F.normalize(self.fc(x), p=2, dim=1)


class ClampedHead(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.fc = nn.Linear(dim, dim)
        self.softplus = nn.Softplus()

    def forward(self, x):
        y = self.fc(x)
        return torch.clamp(y, min=-1.0, max=1.0) + self.softplus(y) + torch.clamp(y, min=0.0)


class EinsumAttention(nn.Module):
    def __init__(self, dim=16):
        super().__init__()
        self.q = nn.Linear(dim, dim, bias=False)
        self.k = nn.Linear(dim, dim, bias=False)

    def forward(self, x):
        scores = torch.einsum("bid,bjd->bij", self.q(x), self.k(x))
        return torch.softmax(scores / 4.0, dim=-1)


class MishNet(nn.Module):
    def __init__(self, ch=4):
        super().__init__()
        self.conv = nn.Conv2d(ch, ch, 3, padding=1)
        self.act = nn.Mish()

    def forward(self, x):
        return self.act(self.conv(x)) + F.gelu(x, approximate="tanh")


class PaddedPoolNet(nn.Module):
    def __init__(self, ch=3):
        super().__init__()
        self.pool = nn.AvgPool2d(3, stride=2, padding=1)
        self.conv = nn.Conv2d(ch, 6, kernel_size=(3, 5), padding=(1, 2))

    def forward(self, x):
        return self.conv(self.pool(x))


class StackedHeads(nn.Module):
    def __init__(self, dim=8, n=3):
        super().__init__()
        self.heads = nn.ModuleList([nn.Linear(dim, 2) for _ in range(n)])

    def forward(self, x):
        return torch.stack([h(x) for h in self.heads], dim=1)


class ModuleDictRouter(nn.Module):
    def __init__(self, dim=8, kind="relu"):
        super().__init__()
        self.kind = kind
        self.branches = nn.ModuleDict({"relu": nn.Sequential(nn.Linear(dim, dim), nn.ReLU()),
                                       "tanh": nn.Sequential(nn.Linear(dim, dim), nn.Tanh())})

    def forward(self, x):
        return self.branches[self.kind](x)


class ReshapeHead(nn.Module):
    def __init__(self, ch=4, classes=3):
        super().__init__()
        self.conv = nn.Conv2d(ch, classes, 1)

    def forward(self, x):
        y = self.conv(x)
        n = y.shape[0]
        return y.permute(0, 2, 3, 1).reshape(n, -1, y.shape[1])


class Unsqueezer(nn.Module):
    def __init__(self, dim=6):
        super().__init__()
        self.fc = nn.Linear(dim, dim)

    def forward(self, x):
        y = self.fc(x).unsqueeze(1)
        return torch.cat([y, y * 2], dim=1).sum(dim=1)


class PaddedSequence(nn.Module):
    def __init__(self, ch=4):
        super().__init__()
        self.conv = nn.Conv1d(ch, ch, 3)

    def forward(self, x):
        return self.conv(F.pad(x, (1, 1)))


class SplitMerge(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.fc = nn.Linear(dim, dim * 2)

    def forward(self, x):
        a, b = torch.chunk(self.fc(x), 2, dim=-1)
        return a * torch.sigmoid(b)


class WeightedSum(nn.Module):
    def __init__(self, n=3, dim=5):
        super().__init__()
        self.weights = nn.Parameter(torch.randn(n) * 0.1)
        self.proj = nn.Linear(dim, dim)
        self.n = n

    def forward(self, x):
        out = 0
        for i in range(self.n):
            out = out + self.weights[i] * self.proj(x) ** (i + 1)
        return out


class TutorialPositionalEncoding(nn.Module):
    """The PyTorch tutorial's sinusoidal table: a buffer written into slices in __init__."""

    def __init__(self, d_model, dropout=0.1, max_len=5000):
        super().__init__()
        self.dropout = nn.Dropout(p=dropout)
        position = torch.arange(max_len).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, d_model, 2) * (-math.log(10000.0) / d_model))
        pe = torch.zeros(max_len, 1, d_model)
        pe[:, 0, 0::2] = torch.sin(position * div_term)
        pe[:, 0, 1::2] = torch.cos(position * div_term)
        self.register_buffer("pe", pe)

    def forward(self, x):
        x = x + self.pe[:x.size(0)]
        return self.dropout(x)


class SwinWindowAttention(nn.Module):
    """Swin's window attention: a relative-position index computed in __init__ (meshgrid, in-place updates of a
    view) and a bias table gathered by it."""

    def __init__(self, dim, window_size, num_heads, qkv_bias=True):
        super().__init__()
        self.window_size = window_size
        self.num_heads = num_heads
        self.scale = (dim // num_heads) ** -0.5
        self.relative_position_bias_table = nn.Parameter(
            torch.zeros((2 * window_size[0] - 1) * (2 * window_size[1] - 1), num_heads))
        coords = torch.stack(torch.meshgrid([torch.arange(window_size[0]), torch.arange(window_size[1])],
                                            indexing="ij"))
        coords_flatten = torch.flatten(coords, 1)
        relative_coords = coords_flatten[:, :, None] - coords_flatten[:, None, :]
        relative_coords = relative_coords.permute(1, 2, 0).contiguous()
        relative_coords[:, :, 0] += window_size[0] - 1
        relative_coords[:, :, 1] += window_size[1] - 1
        relative_coords[:, :, 0] *= 2 * window_size[1] - 1
        self.register_buffer("relative_position_index", relative_coords.sum(-1), persistent=False)
        self.qkv = nn.Linear(dim, dim * 3, bias=qkv_bias)
        self.proj = nn.Linear(dim, dim)
        nn.init.trunc_normal_(self.relative_position_bias_table, std=0.02)

    def forward(self, x):
        B_, N, C = x.shape
        qkv = self.qkv(x).reshape(B_, N, 3, self.num_heads, C // self.num_heads).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        attn = (q * self.scale) @ k.transpose(-2, -1)
        n = self.window_size[0] * self.window_size[1]
        bias = self.relative_position_bias_table[self.relative_position_index.view(-1)].view(n, n, -1)
        attn = attn + bias.permute(2, 0, 1).contiguous().unsqueeze(0)
        x = (attn.softmax(dim=-1) @ v).transpose(1, 2).reshape(B_, N, C)
        return self.proj(x)


class CBAM(nn.Module):
    """Convolutional block attention: channel attention from average- and max-pooled features, then spatial."""

    def __init__(self, channels, reduction=4, kernel_size=7):
        super().__init__()
        self.mlp = nn.Sequential(nn.Conv2d(channels, channels // reduction, 1, bias=False), nn.ReLU(),
                                 nn.Conv2d(channels // reduction, channels, 1, bias=False))
        self.conv = nn.Conv2d(2, 1, kernel_size, padding=kernel_size // 2, bias=False)

    def forward(self, x):
        x = x * torch.sigmoid(self.mlp(F.adaptive_avg_pool2d(x, 1)) + self.mlp(F.adaptive_max_pool2d(x, 1)))
        s = torch.cat([torch.mean(x, dim=1, keepdim=True), torch.max(x, dim=1, keepdim=True)[0]], dim=1)
        return x * torch.sigmoid(self.conv(s))


class ECALayer(nn.Module):
    def __init__(self, channel, k_size=3):
        super(ECALayer, self).__init__()  # noqa: UP008 (as the ECA-Net code writes it)
        self.avg_pool = nn.AdaptiveAvgPool2d(1)
        self.conv = nn.Conv1d(1, 1, kernel_size=k_size, padding=(k_size - 1) // 2, bias=False)
        self.sigmoid = nn.Sigmoid()

    def forward(self, x):
        y = self.avg_pool(x)
        y = self.conv(y.squeeze(-1).transpose(-1, -2)).transpose(-1, -2).unsqueeze(-1)
        return x * self.sigmoid(y).expand_as(x)


def drop_path(x, drop_prob: float = 0., training: bool = False, scale_by_keep: bool = True):
    """timm's stochastic depth: whole samples dropped while training."""
    if drop_prob == 0. or not training:
        return x
    keep_prob = 1 - drop_prob
    shape = (x.shape[0],) + (1,) * (x.ndim - 1)
    random_tensor = x.new_empty(shape).bernoulli_(keep_prob)
    if keep_prob > 0.0 and scale_by_keep:
        random_tensor.div_(keep_prob)
    return x * random_tensor


class DropPath(nn.Module):
    def __init__(self, drop_prob: float = 0., scale_by_keep: bool = True):
        super(DropPath, self).__init__()  # noqa: UP008 (as timm writes it)
        self.drop_prob = drop_prob
        self.scale_by_keep = scale_by_keep

    def forward(self, x):
        return drop_path(x, self.drop_prob, self.training, self.scale_by_keep)


class ConvNeXtBlock(nn.Module):
    """The ConvNeXt paper's block: an optional layer-scale parameter and stochastic depth."""

    def __init__(self, dim, drop_path=0.1, layer_scale_init_value=1e-6):
        super().__init__()
        self.dwconv = nn.Conv2d(dim, dim, kernel_size=7, padding=3, groups=dim)
        self.norm = nn.LayerNorm(dim, eps=1e-6)
        self.pwconv1 = nn.Linear(dim, 4 * dim)
        self.act = nn.GELU()
        self.pwconv2 = nn.Linear(4 * dim, dim)
        self.gamma = nn.Parameter(layer_scale_init_value * torch.ones(dim),
                                  requires_grad=True) if layer_scale_init_value > 0 else None
        self.drop_path = DropPath(drop_path) if drop_path > 0. else nn.Identity()

    def forward(self, x):
        input = x
        x = self.dwconv(x)
        x = x.permute(0, 2, 3, 1)
        x = self.pwconv2(self.act(self.pwconv1(self.norm(x))))
        if self.gamma is not None:
            x = self.gamma * x
        x = x.permute(0, 3, 1, 2)
        return input + self.drop_path(x)


def autopad(k, p=None, d=1):
    """YOLO's 'same' padding."""
    if d > 1:
        k = d * (k - 1) + 1 if isinstance(k, int) else [d * (x - 1) + 1 for x in k]
    if p is None:
        p = k // 2 if isinstance(k, int) else [x // 2 for x in k]
    return p


class YoloConv(nn.Module):
    """YOLO's Conv: a layer shared by the class, and `act` either True, a layer, or anything else (none)."""

    default_act = nn.SiLU()

    def __init__(self, c1, c2, k=1, s=1, p=None, g=1, d=1, act=True):
        super().__init__()
        self.conv = nn.Conv2d(c1, c2, k, s, autopad(k, p, d), groups=g, dilation=d, bias=False)
        self.bn = nn.BatchNorm2d(c2)
        self.act = self.default_act if act is True else act if isinstance(act, nn.Module) else nn.Identity()

    def forward(self, x):
        return self.act(self.bn(self.conv(x)))


class YoloBottleneck(nn.Module):
    def __init__(self, c1, c2, shortcut=True, g=1, e=0.5):
        super().__init__()
        c_ = int(c2 * e)
        self.cv1 = YoloConv(c1, c_, 1, 1)
        self.cv2 = YoloConv(c_, c2, 3, 1, g=g, act=nn.ReLU())
        self.add = shortcut and c1 == c2

    def forward(self, x):
        return x + self.cv2(self.cv1(x)) if self.add else self.cv2(self.cv1(x))


class YoloC3(nn.Module):
    def __init__(self, c1, c2, n=1, shortcut=True, g=1, e=0.5):
        super().__init__()
        c_ = int(c2 * e)
        self.cv1 = YoloConv(c1, c_, 1, 1)
        self.cv2 = YoloConv(c1, c_, 1, 1)
        self.cv3 = YoloConv(2 * c_, c2, 1, act=False)
        self.m = nn.Sequential(*(YoloBottleneck(c_, c_, shortcut, g, e=1.0) for _ in range(n)))

    def forward(self, x):
        return self.cv3(torch.cat((self.m(self.cv1(x)), self.cv2(x)), 1))


class YoloSPPF(nn.Module):
    """Spatial pyramid pooling (fast): one max pool whose padding is computed, applied three times, in the
    `warnings.catch_warnings()` block YOLOv5 writes around it."""

    def __init__(self, c1, c2, k=5):
        super().__init__()
        c_ = c1 // 2
        self.cv1 = YoloConv(c1, c_, 1, 1)
        self.cv2 = YoloConv(c_ * 4, c2, 1, 1)
        self.m = nn.MaxPool2d(kernel_size=k, stride=1, padding=k // 2)

    def forward(self, x):
        x = self.cv1(x)
        with warnings.catch_warnings():
            warnings.simplefilter('ignore')  # suppress torch 1.9.0 max_pool2d() warning
            y1 = self.m(x)
            y2 = self.m(y1)
            return self.cv2(torch.cat((x, y1, y2, self.m(y2)), 1))


class YoloFocus(nn.Module):
    def __init__(self, c1, c2, k=1):
        super().__init__()
        self.conv = YoloConv(c1 * 4, c2, k)

    def forward(self, x):
        return self.conv(torch.cat((x[..., ::2, ::2], x[..., 1::2, ::2], x[..., ::2, 1::2], x[..., 1::2, 1::2]), 1))


class InitAliasing(nn.Module):
    """Constants built in __init__ through copies and views: a clone's writes leave its source alone, a view's
    reach its base (and in-place methods and += on the base reach the view), a contiguous copy of a transposed view
    is its own."""

    def __init__(self, n=4):
        super().__init__()
        base = torch.zeros(n, n)
        copy = base.clone()
        copy[0] = 1.0
        view = base.view(-1)
        view[1:3] = 2.0
        grid = base.t().contiguous()
        grid[0] += 5.0
        base.add_(0.25)  # in place: the view sees it
        view *= 2
        self.register_buffer("base", base)
        self.register_buffer("copy", copy)
        self.register_buffer("grid", grid)
        self.register_buffer("causal", torch.tril(torch.ones(n, n)).view(1, n, n))  # minGPT's mask
        scales = [0.5 * (i + 1) for i in range(n)]
        self.register_buffer("scales", torch.FloatTensor(scales))  # a legacy constructor given values by a name

    def forward(self, x):
        return x @ self.base + x @ self.copy + x @ self.grid + (x[:, None, :] @ self.causal)[:, 0] * self.scales


class NoisyEncoder(nn.Module):
    """A denoising encoder: Gaussian noise on the input and stochastic depth in the forward pass, while training."""

    def __init__(self, dim=8, noise=0.1, drop=0.2):
        super().__init__()
        self.noise, self.drop = noise, drop
        self.fc = nn.Linear(dim, dim)

    def forward(self, x):
        if self.training:
            x = x + self.noise * torch.randn_like(x)
        h = F.gelu(self.fc(x))
        if self.drop == 0. or not self.training:
            return x + h
        keep = 1 - self.drop
        mask = x.new_empty((x.shape[0],) + (1,) * (x.ndim - 1)).bernoulli_(keep)
        return x + h * mask / keep


class ConvNeXtModel(nn.Module):
    """The ConvNeXt paper's model (two small stages): drop-path rates from torch.linspace in __init__, the head's
    initial weights scaled in place, weight initialisation by self.apply."""

    def __init__(self, in_chans=3, num_classes=10, depths=[1, 1], dims=[8, 16], drop_path_rate=0.1,  # noqa: B006
                 layer_scale_init_value=1e-6, head_init_scale=1.):
        super().__init__()
        self.downsample_layers = nn.ModuleList()
        stem = nn.Sequential(nn.Conv2d(in_chans, dims[0], kernel_size=4, stride=4),
                             ConvNeXtLayerNorm(dims[0], eps=1e-6, data_format="channels_first"))
        self.downsample_layers.append(stem)
        for i in range(len(dims) - 1):
            downsample_layer = nn.Sequential(ConvNeXtLayerNorm(dims[i], eps=1e-6, data_format="channels_first"),
                                             nn.Conv2d(dims[i], dims[i + 1], kernel_size=2, stride=2))
            self.downsample_layers.append(downsample_layer)
        self.stages = nn.ModuleList()
        dp_rates = [x.item() for x in torch.linspace(0, drop_path_rate, sum(depths))]
        cur = 0
        for i in range(len(dims)):
            stage = nn.Sequential(*[ConvNeXtBlock(dim=dims[i], drop_path=dp_rates[cur + j],
                                                  layer_scale_init_value=layer_scale_init_value)
                                    for j in range(depths[i])])
            self.stages.append(stage)
            cur += depths[i]
        self.norm = nn.LayerNorm(dims[-1], eps=1e-6)
        self.head = nn.Linear(dims[-1], num_classes)
        self.apply(self._init_weights)
        self.head.weight.data.mul_(head_init_scale)
        self.head.bias.data.mul_(head_init_scale)

    def _init_weights(self, m):
        if isinstance(m, (nn.Conv2d, nn.Linear)):
            nn.init.trunc_normal_(m.weight, std=.02)
            nn.init.constant_(m.bias, 0)

    def forward_features(self, x):
        for i in range(len(self.stages)):
            x = self.downsample_layers[i](x)
            x = self.stages[i](x)
        return self.norm(x.mean([-2, -1]))

    def forward(self, x):
        return self.head(self.forward_features(x))


class RotaryEmbedding(nn.Module):
    """Rotary position embedding: inverse frequencies as a buffer, cos/sin tables computed in the call."""

    def __init__(self, dim, base=10000):
        super().__init__()
        inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2).float() / dim))
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    def forward(self, x):
        seq_len = x.shape[1]
        t = torch.arange(seq_len, device=x.device).type_as(self.inv_freq)
        freqs = torch.einsum("i,j->ij", t, self.inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        return emb.cos()[None, :, :], emb.sin()[None, :, :]


def rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


class RotaryAttention(nn.Module):
    def __init__(self, dim, heads=2):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, dim * 3, bias=False)
        self.rotary = RotaryEmbedding(dim // heads)
        self.out = nn.Linear(dim, dim)

    def forward(self, x):
        b, n, d = x.shape
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        q, k, v = [t.view(b, n, self.heads, -1).transpose(1, 2) for t in (q, k, v)]
        cos, sin = self.rotary(x)
        cos, sin = cos[:, None], sin[:, None]
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        att = (q @ k.transpose(-2, -1)) / math.sqrt(q.size(-1))
        y = att.softmax(dim=-1) @ v
        return self.out(y.transpose(1, 2).reshape(b, n, d))


class LlamaRMSNorm(nn.Module):
    """Hugging Face Llama's RMSNorm: computed in float32, cast back to the input's dtype."""

    def __init__(self, hidden_size, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        input_dtype = hidden_states.dtype
        hidden_states = hidden_states.to(torch.float32)
        variance = hidden_states.pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
        return self.weight * hidden_states.to(input_dtype)


class NewGELUActivation(nn.Module):
    """GPT-2's tanh GELU written out."""

    def forward(self, input):
        return 0.5 * input * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (input + 0.044715 * torch.pow(input, 3.0))))


def window_partition(x, window_size):
    B, H, W, C = x.shape
    x = x.view(B, H // window_size, window_size, W // window_size, window_size, C)
    windows = x.permute(0, 1, 3, 2, 4, 5).contiguous().view(-1, window_size, window_size, C)
    return windows


def window_reverse(windows, window_size, H, W):
    B = int(windows.shape[0] / (H * W / window_size / window_size))
    x = windows.view(B, H // window_size, W // window_size, window_size, window_size, -1)
    x = x.permute(0, 1, 3, 2, 4, 5).contiguous().view(B, H, W, -1)
    return x


class ShiftedWindowMask(nn.Module):
    """Swin's attention mask for shifted windows, built in __init__ by writing region ids into slices."""

    def __init__(self, H=8, W=8, window_size=4, shift_size=2):
        super().__init__()
        self.window_size = window_size
        img_mask = torch.zeros((1, H, W, 1))
        h_slices = (slice(0, -window_size), slice(-window_size, -shift_size), slice(-shift_size, None))
        w_slices = (slice(0, -window_size), slice(-window_size, -shift_size), slice(-shift_size, None))
        cnt = 0
        for h in h_slices:
            for w in w_slices:
                img_mask[:, h, w, :] = cnt
                cnt += 1
        mask_windows = window_partition(img_mask, window_size)
        mask_windows = mask_windows.view(-1, window_size * window_size)
        attn_mask = mask_windows.unsqueeze(1) - mask_windows.unsqueeze(2)
        attn_mask = attn_mask.masked_fill(attn_mask != 0, -100.0).masked_fill(attn_mask == 0, 0.0)
        self.register_buffer("attn_mask", attn_mask)
        self.proj = nn.Linear(3, 3)

    def forward(self, x):
        B, H, W, C = x.shape
        shifted = torch.roll(x, shifts=(-2, -2), dims=(1, 2))
        windows = window_partition(shifted, self.window_size).view(-1, self.window_size * self.window_size, C)
        scores = windows @ windows.transpose(1, 2) + self.attn_mask.repeat(B, 1, 1)
        out = scores.softmax(-1) @ self.proj(windows)
        return window_reverse(out.view(-1, self.window_size, self.window_size, C), self.window_size, H, W)


class ConformerConvModule(nn.Module):
    """Conformer's convolution module: pointwise, GLU, depthwise, BatchNorm, SiLU, pointwise."""

    def __init__(self, dim, kernel_size=7, expansion=2, dropout=0.1):
        super().__init__()
        inner = dim * expansion
        self.norm = nn.LayerNorm(dim)
        self.pw1 = nn.Conv1d(dim, inner * 2, 1)
        self.glu = nn.GLU(dim=1)
        self.dw = nn.Conv1d(inner, inner, kernel_size, padding=kernel_size // 2, groups=inner)
        self.bn = nn.BatchNorm1d(inner)
        self.act = nn.SiLU()
        self.pw2 = nn.Conv1d(inner, dim, 1)
        self.drop = nn.Dropout(dropout)

    def forward(self, x):
        x = self.norm(x).transpose(1, 2)
        x = self.glu(self.pw1(x))
        x = self.act(self.bn(self.dw(x)))
        return self.drop(self.pw2(x)).transpose(1, 2)


class EfficientSE(nn.Module):
    """EfficientNet's squeeze-excitation: mean over the spatial axes, SiLU, sigmoid gate."""

    def __init__(self, c, r=4):
        super().__init__()
        self.fc1 = nn.Conv2d(c, c // r, 1)
        self.fc2 = nn.Conv2d(c // r, c, 1)

    def forward(self, x):
        s = x.mean((2, 3), keepdim=True)
        s = self.fc2(F.silu(self.fc1(s)))
        return x * s.sigmoid()


class TimmAttention(nn.Module):
    """timm's Attention: optional q/k norms, fused attention whose dropout reads the Dropout layer's p."""

    def __init__(self, dim, num_heads=2, qkv_bias=False, qk_norm=False, attn_drop=0.1, proj_drop=0.,
                 norm_layer=nn.LayerNorm):
        super().__init__()
        assert dim % num_heads == 0, 'dim should be divisible by num_heads'
        self.num_heads = num_heads
        self.head_dim = dim // num_heads
        self.scale = self.head_dim ** -0.5
        self.fused_attn = True
        self.qkv = nn.Linear(dim, dim * 3, bias=qkv_bias)
        self.q_norm = norm_layer(self.head_dim) if qk_norm else nn.Identity()
        self.k_norm = norm_layer(self.head_dim) if qk_norm else nn.Identity()
        self.attn_drop = nn.Dropout(attn_drop)
        self.proj = nn.Linear(dim, dim)
        self.proj_drop = nn.Dropout(proj_drop)

    def forward(self, x):
        B, N, C = x.shape
        qkv = self.qkv(x).reshape(B, N, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)
        q, k = self.q_norm(q), self.k_norm(k)
        if self.fused_attn:
            x = F.scaled_dot_product_attention(q, k, v, dropout_p=self.attn_drop.p if self.training else 0.)
        else:
            q = q * self.scale
            attn = q @ k.transpose(-2, -1)
            attn = attn.softmax(dim=-1)
            attn = self.attn_drop(attn)
            x = attn @ v
        x = x.transpose(1, 2).reshape(B, N, C)
        x = self.proj(x)
        x = self.proj_drop(x)
        return x


class LayerSettingsHead(nn.Module):
    """Reads its layers' settings (out_features, embedding_dim) in the forward pass."""

    def __init__(self, dim=8, classes=3):
        super().__init__()
        self.fc = nn.Linear(dim, classes)
        self.embed = nn.Embedding(10, dim)

    def forward(self, ids):
        h = self.embed(ids).mean(1)
        return self.fc(h).view(-1, self.fc.out_features) * (self.embed.embedding_dim ** -0.5)


class BertConfig:
    """A Hugging Face-style configuration object (a plain class) passed to the layers."""

    hidden_size = 16
    num_attention_heads = 4
    attention_probs_dropout_prob = 0.1
    hidden_dropout_prob = 0.1
    vocab_size = 30
    max_position_embeddings = 12
    type_vocab_size = 2
    layer_norm_eps = 1e-12
    pad_token_id = 0
    intermediate_size = 32
    hidden_act = "gelu"


BERT_CONFIG = BertConfig()


class BertSelfAttention(nn.Module):
    """Hugging Face BERT's self-attention: transpose_for_scores, size() tuples, an additive mask."""

    def __init__(self, config=BERT_CONFIG):
        super().__init__()
        self.num_attention_heads = config.num_attention_heads
        self.attention_head_size = int(config.hidden_size / config.num_attention_heads)
        self.all_head_size = self.num_attention_heads * self.attention_head_size
        self.query = nn.Linear(config.hidden_size, self.all_head_size)
        self.key = nn.Linear(config.hidden_size, self.all_head_size)
        self.value = nn.Linear(config.hidden_size, self.all_head_size)
        self.dropout = nn.Dropout(config.attention_probs_dropout_prob)

    def transpose_for_scores(self, x):
        new_x_shape = x.size()[:-1] + (self.num_attention_heads, self.attention_head_size)
        x = x.view(new_x_shape)
        return x.permute(0, 2, 1, 3)

    def forward(self, hidden_states, attention_mask=None):
        query_layer = self.transpose_for_scores(self.query(hidden_states))
        key_layer = self.transpose_for_scores(self.key(hidden_states))
        value_layer = self.transpose_for_scores(self.value(hidden_states))
        attention_scores = torch.matmul(query_layer, key_layer.transpose(-1, -2))
        attention_scores = attention_scores / math.sqrt(self.attention_head_size)
        if attention_mask is not None:
            attention_scores = attention_scores + attention_mask
        attention_probs = nn.functional.softmax(attention_scores, dim=-1)
        attention_probs = self.dropout(attention_probs)
        context_layer = torch.matmul(attention_probs, value_layer)
        context_layer = context_layer.permute(0, 2, 1, 3).contiguous()
        new_context_layer_shape = context_layer.size()[:-2] + (self.all_head_size,)
        context_layer = context_layer.view(new_context_layer_shape)
        return context_layer


class BertEmbeddings(nn.Module):
    """Hugging Face BERT's embeddings: position and token-type id buffers sliced to the sequence length."""

    def __init__(self, config=BERT_CONFIG):
        super().__init__()
        self.word_embeddings = nn.Embedding(config.vocab_size, config.hidden_size, padding_idx=config.pad_token_id)
        self.position_embeddings = nn.Embedding(config.max_position_embeddings, config.hidden_size)
        self.token_type_embeddings = nn.Embedding(config.type_vocab_size, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)
        self.register_buffer("position_ids", torch.arange(config.max_position_embeddings).expand((1, -1)),
                             persistent=False)
        self.register_buffer("token_type_ids", torch.zeros(self.position_ids.size(), dtype=torch.long),
                             persistent=False)

    def forward(self, input_ids, past_key_values_length=0):
        input_shape = input_ids.size()
        seq_length = input_shape[1]
        position_ids = self.position_ids[:, past_key_values_length: seq_length + past_key_values_length]
        token_type_ids = self.token_type_ids[:, :seq_length].expand(input_shape[0], seq_length)
        inputs_embeds = self.word_embeddings(input_ids)
        token_type_embeddings = self.token_type_embeddings(token_type_ids)
        embeddings = inputs_embeds + token_type_embeddings
        position_embeddings = self.position_embeddings(position_ids)
        embeddings += position_embeddings
        embeddings = self.LayerNorm(embeddings)
        embeddings = self.dropout(embeddings)
        return embeddings


class ConvNormAct(nn.Sequential):
    """torchvision's style of block: a subclass of nn.Sequential passing its layers to super().__init__."""

    def __init__(self, in_planes, out_planes, kernel_size=3, stride=1, groups=1):
        padding = (kernel_size - 1) // 2
        super().__init__(
            nn.Conv2d(in_planes, out_planes, kernel_size, stride, padding, groups=groups, bias=False),
            nn.BatchNorm2d(out_planes),
            nn.ReLU6(inplace=True),
        )


class DenseNetLayer(nn.Module):
    """torchvision's DenseNet layer: takes a tensor or a list of them (isinstance(input, torch.Tensor))."""

    def __init__(self, num_input_features, growth_rate=4, bn_size=2, drop_rate=0.0):
        super().__init__()
        self.norm1 = nn.BatchNorm2d(num_input_features)
        self.relu1 = nn.ReLU(inplace=True)
        self.conv1 = nn.Conv2d(num_input_features, bn_size * growth_rate, kernel_size=1, stride=1, bias=False)
        self.norm2 = nn.BatchNorm2d(bn_size * growth_rate)
        self.relu2 = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(bn_size * growth_rate, growth_rate, kernel_size=3, stride=1, padding=1, bias=False)
        self.drop_rate = float(drop_rate)

    def bn_function(self, inputs):
        concated_features = torch.cat(inputs, 1)
        bottleneck_output = self.conv1(self.relu1(self.norm1(concated_features)))
        return bottleneck_output

    def forward(self, input):
        if isinstance(input, torch.Tensor):
            prev_features = [input]
        else:
            prev_features = input
        bottleneck_output = self.bn_function(prev_features)
        new_features = self.conv2(self.relu2(self.norm2(bottleneck_output)))
        if self.drop_rate > 0:
            new_features = F.dropout(new_features, p=self.drop_rate, training=self.training)
        return new_features


def clones(module, N):
    "Produce N identical layers."
    return nn.ModuleList([copy.deepcopy(module) for _ in range(N)])


def attention(query, key, value, mask=None, dropout=None):
    "Compute 'Scaled Dot Product Attention'"
    d_k = query.size(-1)
    scores = torch.matmul(query, key.transpose(-2, -1)) / math.sqrt(d_k)
    if mask is not None:
        scores = scores.masked_fill(mask == 0, -1e9)
    p_attn = scores.softmax(dim=-1)
    if dropout is not None:
        p_attn = dropout(p_attn)
    return torch.matmul(p_attn, value), p_attn


class MultiHeadedAttention(nn.Module):
    """The Annotated Transformer's attention: clones() by copy.deepcopy, a helper taking the dropout layer, the
    weights kept as self.attn, del statements."""

    def __init__(self, h=2, d_model=8, dropout=0.1):
        super(MultiHeadedAttention, self).__init__()  # noqa: UP008 (as the original writes it)
        assert d_model % h == 0
        self.d_k = d_model // h
        self.h = h
        self.linears = clones(nn.Linear(d_model, d_model), 4)
        self.attn = None
        self.dropout = nn.Dropout(p=dropout)

    def forward(self, query, key, value, mask=None):
        if mask is not None:
            mask = mask.unsqueeze(1)
        nbatches = query.size(0)
        query, key, value = [
            lin(x).view(nbatches, -1, self.h, self.d_k).transpose(1, 2)
            for lin, x in zip(self.linears, (query, key, value))
        ]
        x, self.attn = attention(query, key, value, mask=mask, dropout=self.dropout)
        x = x.transpose(1, 2).contiguous().view(nbatches, -1, self.h * self.d_k)
        del query
        del key
        del value
        return self.linears[-1](x)


class AnnotatedLayerNorm(nn.Module):
    """The Annotated Transformer's LayerNorm (a_2, b_2, the unbiased std)."""

    def __init__(self, features, eps=1e-6):
        super(AnnotatedLayerNorm, self).__init__()  # noqa: UP008 (as the original writes it)
        self.a_2 = nn.Parameter(torch.ones(features))
        self.b_2 = nn.Parameter(torch.zeros(features))
        self.eps = eps

    def forward(self, x):
        mean = x.mean(-1, keepdim=True)
        std = x.std(-1, keepdim=True)
        return self.a_2 * (x - mean) / (std + self.eps) + self.b_2


class SublayerConnection(nn.Module):
    """A residual connection around any sublayer (a function argument)."""

    def __init__(self, size, dropout):
        super(SublayerConnection, self).__init__()  # noqa: UP008 (as the original writes it)
        self.norm = AnnotatedLayerNorm(size)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, sublayer):
        return x + self.dropout(sublayer(self.norm(x)))


class PositionwiseFeedForward(nn.Module):
    """The position-wise feed-forward block."""

    def __init__(self, d_model, d_ff, dropout=0.1):
        super(PositionwiseFeedForward, self).__init__()  # noqa: UP008 (as the original writes it)
        self.w_1 = nn.Linear(d_model, d_ff)
        self.w_2 = nn.Linear(d_ff, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        return self.w_2(self.dropout(self.w_1(x).relu()))


class AnnotatedEncoderLayer(nn.Module):
    """The Annotated Transformer's encoder layer: sublayers called with a lambda and with a layer."""

    def __init__(self, size=8, dropout=0.1):
        super(AnnotatedEncoderLayer, self).__init__()  # noqa: UP008 (as the original writes it)
        self.self_attn = MultiHeadedAttention(2, size, dropout)
        self.feed_forward = PositionwiseFeedForward(size, 16, dropout)
        self.sublayer = clones(SublayerConnection(size, dropout), 2)
        self.size = size

    def forward(self, x, mask=None):
        x = self.sublayer[0](x, lambda x: self.self_attn(x, x, x, mask))
        return self.sublayer[1](x, self.feed_forward)


class STN3d(nn.Module):
    """PointNet's input transform: Variable(torch.from_numpy(...)), .is_cuda / .cuda()."""

    def __init__(self):
        super(STN3d, self).__init__()  # noqa: UP008 (as the original writes it)
        self.conv1 = torch.nn.Conv1d(3, 16, 1)
        self.conv2 = torch.nn.Conv1d(16, 32, 1)
        self.fc1 = nn.Linear(32, 16)
        self.fc2 = nn.Linear(16, 9)
        self.relu = nn.ReLU()
        self.bn1 = nn.BatchNorm1d(16)
        self.bn2 = nn.BatchNorm1d(32)
        self.bn4 = nn.BatchNorm1d(16)

    def forward(self, x):
        batchsize = x.size()[0]
        x = F.relu(self.bn1(self.conv1(x)))
        x = F.relu(self.bn2(self.conv2(x)))
        x = torch.max(x, 2, keepdim=True)[0]
        x = x.view(-1, 32)
        x = F.relu(self.bn4(self.fc1(x)))
        x = self.fc2(x)
        iden = Variable(torch.from_numpy(np.array([1, 0, 0, 0, 1, 0, 0, 0, 1]).astype(np.float32))).view(1, 9).repeat(
            batchsize, 1)
        if x.is_cuda:
            iden = iden.cuda()
        x = x + iden
        x = x.view(-1, 3, 3)
        return x


class SobelEdges(nn.Module):
    """Fixed Sobel kernels built in __init__ as a buffer, applied per channel by F.conv2d(groups=channels)."""

    def __init__(self, channels=3):
        super().__init__()
        kx = torch.tensor([[-1., 0., 1.], [-2., 0., 2.], [-1., 0., 1.]])
        kernel = torch.stack([kx, kx.t()]).unsqueeze(1).repeat(channels, 1, 1, 1)
        self.register_buffer("kernel", kernel)
        self.channels = channels

    def forward(self, x):
        g = F.conv2d(x, self.kernel, padding=1, groups=self.channels)
        return torch.sqrt(g[:, 0::2] ** 2 + g[:, 1::2] ** 2 + 1e-6)


class WeightStandardizedConv(nn.Module):
    """A convolution whose weight is standardised in the forward pass (BiT's StdConv), by F.conv2d."""

    def __init__(self, cin=4, cout=8, k=3):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(cout, cin, k, k) * 0.1)
        self.bias = nn.Parameter(torch.zeros(cout))

    def forward(self, x):
        w = self.weight
        m = w.mean(dim=(1, 2, 3), keepdim=True)
        v = w.var(dim=(1, 2, 3), keepdim=True, unbiased=False)
        w = (w - m) / torch.sqrt(v + 1e-5)
        return F.conv2d(x, w, self.bias, stride=2, padding=1)


class GroupedKernelConv1d(nn.Module):
    """F.conv1d with a held kernel: dilated, grouped, padding="same"."""

    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(6, 2, 3))

    def forward(self, x):
        return F.conv1d(x, self.weight, dilation=2, groups=2, padding="same")


class SinusoidalPosEmb(nn.Module):
    """denoising-diffusion-pytorch's time embedding: an integer arange times a float (PyTorch promotes)."""

    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        half_dim = self.dim // 2
        emb = math.log(10000) / (half_dim - 1)
        emb = torch.exp(torch.arange(half_dim, device=x.device) * -emb)
        emb = x[:, None] * emb[None, :]
        emb = torch.cat((emb.sin(), emb.cos()), dim=-1)
        return emb


class TimeMLP(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.time_mlp = nn.Sequential(SinusoidalPosEmb(dim), nn.Linear(dim, dim * 4), nn.GELU(),
                                      nn.Linear(dim * 4, dim))

    def forward(self, t):
        return self.time_mlp(t)


class GraphConvolution(nn.Module):
    """pygcn's GraphConvolution: legacy torch.FloatTensor(shape) weights, register_parameter('bias', None),
    torch.mm / torch.spmm."""

    def __init__(self, in_features=6, out_features=4, bias=True):
        super(GraphConvolution, self).__init__()  # noqa: UP008 (as pygcn writes it)
        self.in_features = in_features
        self.out_features = out_features
        self.weight = nn.Parameter(torch.FloatTensor(in_features, out_features))
        if bias:
            self.bias = nn.Parameter(torch.FloatTensor(out_features))
        else:
            self.register_parameter('bias', None)
        self.reset_parameters()

    def reset_parameters(self):
        stdv = 1. / math.sqrt(self.weight.size(1))
        self.weight.data.uniform_(-stdv, stdv)
        if self.bias is not None:
            self.bias.data.uniform_(-stdv, stdv)

    def forward(self, input, adj):
        support = torch.mm(input, self.weight)
        output = torch.spmm(adj, support)
        if self.bias is not None:
            return output + self.bias
        else:
            return output


class ScalarMix(nn.Module):
    """AllenNLP's scalar mix: a ParameterList of legacy torch.FloatTensor([0.0]) weights, softmax-normalised."""

    def __init__(self, mixture_size=3):
        super().__init__()
        self.scalar_parameters = nn.ParameterList(
            [nn.Parameter(torch.FloatTensor([0.0])) for _ in range(mixture_size)])
        self.gamma = nn.Parameter(torch.FloatTensor([1.0]))

    def forward(self, x):
        normed_weights = torch.split(F.softmax(torch.cat([p for p in self.scalar_parameters]), dim=0), 1)
        pieces = [weight * x * (i + 1) for i, weight in enumerate(normed_weights)]
        return self.gamma * sum(pieces)


class TypedBlock(nn.Module):
    """Type-annotated code: Optional[float] and Optional[Tensor] parameters, -> None."""

    def __init__(self, dim: int = 8, dropout: float | None = None) -> None:
        super().__init__()
        self.fc = nn.Linear(dim, dim)
        self.drop = nn.Dropout(dropout) if dropout is not None else None

    def forward(self, x: Tensor, mask: Tensor | None = None) -> Tensor:
        y = F.gelu(self.fc(x), approximate="tanh")
        if self.drop is not None:
            y = self.drop(y)
        if mask is not None:
            y = y * mask
        return x + y


class OneHotFeatures(nn.Module):
    """Labels as one-hot vectors (F.one_hot, int64) through a linear layer."""

    def __init__(self, classes=8, dim=4):
        super().__init__()
        self.classes = classes
        self.fc = nn.Linear(classes, dim)

    def forward(self, labels):
        return self.fc(F.one_hot(labels, num_classes=self.classes).float())


class Chomp1d(nn.Module):
    """Drops the last steps a causal convolution's padding added."""

    def __init__(self, chomp_size):
        super(Chomp1d, self).__init__()  # noqa: UP008 (as the TCN code writes it)
        self.chomp_size = chomp_size

    def forward(self, x):
        return x[:, :, :-self.chomp_size].contiguous()


class TCNBlock(nn.Module):
    """locuslab's TemporalBlock: weight-normalised causal convolutions, chomped."""

    def __init__(self, n_inputs=4, n_outputs=6, kernel_size=3, stride=1, dilation=2, padding=4, dropout=0.2):
        super(TCNBlock, self).__init__()  # noqa: UP008 (as the TCN code writes it)
        self.conv1 = weight_norm(nn.Conv1d(n_inputs, n_outputs, kernel_size, stride=stride, padding=padding,
                                           dilation=dilation))
        self.chomp1 = Chomp1d(padding)
        self.relu1 = nn.ReLU()
        self.dropout1 = nn.Dropout(dropout)
        self.conv2 = weight_norm(nn.Conv1d(n_outputs, n_outputs, kernel_size, stride=stride, padding=padding,
                                           dilation=dilation))
        self.chomp2 = Chomp1d(padding)
        self.relu2 = nn.ReLU()
        self.dropout2 = nn.Dropout(dropout)
        self.net = nn.Sequential(self.conv1, self.chomp1, self.relu1, self.dropout1,
                                 self.conv2, self.chomp2, self.relu2, self.dropout2)
        self.downsample = nn.Conv1d(n_inputs, n_outputs, 1) if n_inputs != n_outputs else None
        self.relu = nn.ReLU()

    def forward(self, x):
        out = self.net(x)
        res = x if self.downsample is None else self.downsample(x)
        return self.relu(out + res)


class HifiResBlock(nn.Module):
    """HiFi-GAN-style residual block on the parametrization API."""

    def __init__(self, channels=4, kernel_size=3, dilation=(1, 3)):
        super().__init__()
        self.convs = nn.ModuleList([
            nn.utils.parametrizations.weight_norm(nn.Conv1d(channels, channels, kernel_size, 1, dilation=d,
                                                            padding=(kernel_size * d - d) // 2))
            for d in dilation])

    def forward(self, x):
        for c in self.convs:
            xt = torch.nn.functional.leaky_relu(x, 0.1)
            x = c(xt) + x
        return x


# torchvision's DenseNet as it writes it: the memory-efficient layer (a branch on a setting and on
# whether inputs record gradients, checkpointing), the block deriving from nn.ModuleDict, the transition
# deriving from nn.Sequential, and the model adding layers by name to an nn.Sequential of an OrderedDict;
# and a class deriving from nn.ModuleList.


class _DenseLayer(nn.Module):
    def __init__(
        self, num_input_features: int, growth_rate: int, bn_size: int, drop_rate: float, memory_efficient: bool = False
    ) -> None:
        super().__init__()
        self.norm1 = nn.BatchNorm2d(num_input_features)
        self.relu1 = nn.ReLU(inplace=True)
        self.conv1 = nn.Conv2d(num_input_features, bn_size * growth_rate, kernel_size=1, stride=1, bias=False)

        self.norm2 = nn.BatchNorm2d(bn_size * growth_rate)
        self.relu2 = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(bn_size * growth_rate, growth_rate, kernel_size=3, stride=1, padding=1, bias=False)

        self.drop_rate = float(drop_rate)
        self.memory_efficient = memory_efficient

    def bn_function(self, inputs: List[Tensor]) -> Tensor:
        concated_features = torch.cat(inputs, 1)
        bottleneck_output = self.conv1(self.relu1(self.norm1(concated_features)))  # noqa: T484
        return bottleneck_output

    # todo: rewrite when torchscript supports any
    def any_requires_grad(self, input: List[Tensor]) -> bool:
        for tensor in input:
            if tensor.requires_grad:
                return True
        return False

    @torch.jit.unused  # noqa: T484
    def call_checkpoint_bottleneck(self, input: List[Tensor]) -> Tensor:
        def closure(*inputs):
            return self.bn_function(inputs)

        return cp.checkpoint(closure, *input, use_reentrant=False)

    @torch.jit._overload_method  # noqa: F811
    def forward(self, input: List[Tensor]) -> Tensor:  # noqa: F811
        pass

    @torch.jit._overload_method  # noqa: F811
    def forward(self, input: Tensor) -> Tensor:  # noqa: F811
        pass

    # torchscript does not yet support *args, so we overload method
    # allowing it to take either a List[Tensor] or single Tensor
    def forward(self, input: Tensor) -> Tensor:  # noqa: F811
        if isinstance(input, Tensor):
            prev_features = [input]
        else:
            prev_features = input

        if self.memory_efficient and self.any_requires_grad(prev_features):
            if torch.jit.is_scripting():
                raise Exception("Memory Efficient not supported in JIT")

            bottleneck_output = self.call_checkpoint_bottleneck(prev_features)
        else:
            bottleneck_output = self.bn_function(prev_features)

        new_features = self.conv2(self.relu2(self.norm2(bottleneck_output)))
        if self.drop_rate > 0:
            new_features = F.dropout(new_features, p=self.drop_rate, training=self.training)
        return new_features


class _DenseBlock(nn.ModuleDict):
    _version = 2

    def __init__(
        self,
        num_layers: int,
        num_input_features: int,
        bn_size: int,
        growth_rate: int,
        drop_rate: float,
        memory_efficient: bool = False,
    ) -> None:
        super().__init__()
        for i in range(num_layers):
            layer = _DenseLayer(
                num_input_features + i * growth_rate,
                growth_rate=growth_rate,
                bn_size=bn_size,
                drop_rate=drop_rate,
                memory_efficient=memory_efficient,
            )
            self.add_module("denselayer%d" % (i + 1), layer)

    def forward(self, init_features: Tensor) -> Tensor:
        features = [init_features]
        for name, layer in self.items():  # noqa: B007 (as torchvision writes it)
            new_features = layer(features)
            features.append(new_features)
        return torch.cat(features, 1)


class _Transition(nn.Sequential):
    def __init__(self, num_input_features: int, num_output_features: int) -> None:
        super().__init__()
        self.norm = nn.BatchNorm2d(num_input_features)
        self.relu = nn.ReLU(inplace=True)
        self.conv = nn.Conv2d(num_input_features, num_output_features, kernel_size=1, stride=1, bias=False)
        self.pool = nn.AvgPool2d(kernel_size=2, stride=2)


class DenseNet(nn.Module):
    def __init__(
        self,
        growth_rate: int = 32,
        block_config: Tuple[int, int, int, int] = (6, 12, 24, 16),
        num_init_features: int = 64,
        bn_size: int = 4,
        drop_rate: float = 0,
        num_classes: int = 1000,
        memory_efficient: bool = False,
    ) -> None:

        super().__init__()

        # First convolution
        self.features = nn.Sequential(
            OrderedDict(
                [
                    ("conv0", nn.Conv2d(3, num_init_features, kernel_size=7, stride=2, padding=3, bias=False)),
                    ("norm0", nn.BatchNorm2d(num_init_features)),
                    ("relu0", nn.ReLU(inplace=True)),
                    ("pool0", nn.MaxPool2d(kernel_size=3, stride=2, padding=1)),
                ]
            )
        )

        # Each denseblock
        num_features = num_init_features
        for i, num_layers in enumerate(block_config):
            block = _DenseBlock(
                num_layers=num_layers,
                num_input_features=num_features,
                bn_size=bn_size,
                growth_rate=growth_rate,
                drop_rate=drop_rate,
                memory_efficient=memory_efficient,
            )
            self.features.add_module("denseblock%d" % (i + 1), block)
            num_features = num_features + num_layers * growth_rate
            if i != len(block_config) - 1:
                trans = _Transition(num_input_features=num_features, num_output_features=num_features // 2)
                self.features.add_module("transition%d" % (i + 1), trans)
                num_features = num_features // 2

        # Final batch norm
        self.features.add_module("norm5", nn.BatchNorm2d(num_features))

        # Linear layer
        self.classifier = nn.Linear(num_features, num_classes)

        # Official init from torch repo.
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight)
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.constant_(m.weight, 1)
                nn.init.constant_(m.bias, 0)
            elif isinstance(m, nn.Linear):
                nn.init.constant_(m.bias, 0)

    def forward(self, x: Tensor) -> Tensor:
        features = self.features(x)
        out = F.relu(features, inplace=True)
        out = F.adaptive_avg_pool2d(out, (1, 1))
        out = torch.flatten(out, 1)
        out = self.classifier(out)
        return out


class Blocks(nn.ModuleList):
    """A list of residual layers that is itself the model (as some projects write their stages)."""

    def __init__(self, depth, dim):
        super().__init__([nn.Linear(dim, dim) for _ in range(depth)])
        self.append(nn.LayerNorm(dim))

    def forward(self, x):
        for i, layer in enumerate(self):
            x = layer(x) + x if i < len(self) - 1 else layer(x)
        return self[0](x)


class TopKAlongChannels(nn.Module):
    """The strongest channels at each position (dim=1) and the weakest features (largest=False)."""

    def __init__(self):
        super().__init__()
        self.proj = nn.Conv1d(6, 6, 1)

    def forward(self, x):
        y = self.proj(x)
        values, indices = torch.topk(y, 2, dim=1)
        low = y.topk(3, largest=False).values
        return values * 2, indices, low


class PatchNorm(nn.Module):
    """A layer norm over the last two dims (as some audio and patch models normalise a whole frame)."""

    def __init__(self, frames, dim):
        super().__init__()
        self.norm = nn.LayerNorm([frames, dim])
        self.plain = nn.LayerNorm((frames, dim), elementwise_affine=False)

    def forward(self, x):
        return self.norm(x) + F.layer_norm(x, x.shape[-2:]) + self.plain(x)


# transformers' classes as the library writes them: T5's gated feed-forward (a dtype check before its output
# projection), RoBERTa's classification head (**kwargs), wav2vec 2.0's feature convolution and its
# positional convolution (weight norm chosen by what the installed torch has).


class HFSmallConfig:
    """The configuration attributes the transformers classes below read (a plain class)."""

    hidden_size = 8
    intermediate_size = 16
    hidden_dropout_prob = 0.1
    d_model = 8
    d_ff = 16
    dropout_rate = 0.1
    dense_act_fn = "gelu_new"
    num_labels = 3
    classifier_dropout = None
    conv_dim = (8, 8)
    conv_kernel = (3, 3)
    conv_stride = (2, 1)
    conv_bias = False
    feat_extract_activation = "gelu"
    num_conv_pos_embeddings = 4
    num_conv_pos_embedding_groups = 2


HF_SMALL = HFSmallConfig()


class T5DenseGatedActDense(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.wi_0 = nn.Linear(config.d_model, config.d_ff, bias=False)
        self.wi_1 = nn.Linear(config.d_model, config.d_ff, bias=False)
        self.wo = nn.Linear(config.d_ff, config.d_model, bias=False)
        self.dropout = nn.Dropout(config.dropout_rate)
        self.act = ACT2FN[config.dense_act_fn]

    def forward(self, hidden_states):
        hidden_gelu = self.act(self.wi_0(hidden_states))
        hidden_linear = self.wi_1(hidden_states)
        hidden_states = hidden_gelu * hidden_linear
        hidden_states = self.dropout(hidden_states)

        # To make 8bit quantization work for google/flan-t5-xxl, self.wo is kept in float32.
        # See https://github.com/huggingface/transformers/issues/20287
        # we also make sure the weights are not in `int8` in case users will force `_keep_in_fp32_modules` to be `None``
        if (
            isinstance(self.wo.weight, torch.Tensor)
            and hidden_states.dtype != self.wo.weight.dtype
            and self.wo.weight.dtype != torch.int8
        ):
            hidden_states = hidden_states.to(self.wo.weight.dtype)

        hidden_states = self.wo(hidden_states)
        return hidden_states


class RobertaClassificationHead(nn.Module):
    """Head for sentence-level classification tasks."""

    def __init__(self, config):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        classifier_dropout = (
            config.classifier_dropout if config.classifier_dropout is not None else config.hidden_dropout_prob
        )
        self.dropout = nn.Dropout(classifier_dropout)
        self.out_proj = nn.Linear(config.hidden_size, config.num_labels)

    def forward(self, features, **kwargs):
        x = features[:, 0, :]  # take <s> token (equiv. to [CLS])
        x = self.dropout(x)
        x = self.dense(x)
        x = torch.tanh(x)
        x = self.dropout(x)
        x = self.out_proj(x)
        return x


class Wav2Vec2GroupNormConvLayer(nn.Module):
    def __init__(self, config, layer_id=0):
        super().__init__()
        self.in_conv_dim = config.conv_dim[layer_id - 1] if layer_id > 0 else 1
        self.out_conv_dim = config.conv_dim[layer_id]

        self.conv = nn.Conv1d(
            self.in_conv_dim,
            self.out_conv_dim,
            kernel_size=config.conv_kernel[layer_id],
            stride=config.conv_stride[layer_id],
            bias=config.conv_bias,
        )
        self.activation = ACT2FN[config.feat_extract_activation]

        self.layer_norm = nn.GroupNorm(num_groups=self.out_conv_dim, num_channels=self.out_conv_dim, affine=True)

    def forward(self, hidden_states):
        hidden_states = self.conv(hidden_states)
        hidden_states = self.layer_norm(hidden_states)
        hidden_states = self.activation(hidden_states)
        return hidden_states


class Wav2Vec2SamePadLayer(nn.Module):
    def __init__(self, num_conv_pos_embeddings):
        super().__init__()
        self.num_pad_remove = 1 if num_conv_pos_embeddings % 2 == 0 else 0

    def forward(self, hidden_states):
        if self.num_pad_remove > 0:
            hidden_states = hidden_states[:, :, : -self.num_pad_remove]
        return hidden_states


class Wav2Vec2PositionalConvEmbedding(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.conv = nn.Conv1d(
            config.hidden_size,
            config.hidden_size,
            kernel_size=config.num_conv_pos_embeddings,
            padding=config.num_conv_pos_embeddings // 2,
            groups=config.num_conv_pos_embedding_groups,
        )

        weight_norm = nn.utils.weight_norm
        if hasattr(nn.utils.parametrizations, "weight_norm"):
            weight_norm = nn.utils.parametrizations.weight_norm

        self.conv = weight_norm(self.conv, name="weight", dim=2)

        self.padding = Wav2Vec2SamePadLayer(config.num_conv_pos_embeddings)
        self.activation = ACT2FN[config.feat_extract_activation]

    def forward(self, hidden_states):
        hidden_states = hidden_states.transpose(1, 2)

        hidden_states = self.conv(hidden_states)
        hidden_states = self.padding(hidden_states)
        hidden_states = self.activation(hidden_states)

        hidden_states = hidden_states.transpose(1, 2)
        return hidden_states


class MnistRNN(nn.Module):
    """pytorch/examples' MNIST RNN as written there (a Dropout2d on the LSTM's last output, a 2-D input)."""

    def __init__(self):
        super(MnistRNN, self).__init__()  # noqa: UP008 (as the example writes it)
        self.rnn = nn.LSTM(input_size=28, hidden_size=64, batch_first=True)
        self.batchnorm = nn.BatchNorm1d(64)
        self.dropout1 = nn.Dropout2d(0.25)
        self.dropout2 = nn.Dropout2d(0.5)
        self.fc1 = nn.Linear(64, 32)
        self.fc2 = nn.Linear(32, 10)

    def forward(self, input):
        # Shape of input is (batch_size,1, 28, 28)
        # converting shape of input to (batch_size, 28, 28)
        # as required by RNN when batch_first is set True
        input = input.reshape(-1, 28, 28)
        output, hidden = self.rnn(input)

        # RNN output shape is (seq_len, batch, input_size)
        # Get last output of RNN
        output = output[:, -1, :]
        output = self.batchnorm(output)
        output = self.dropout1(output)
        output = self.fc1(output)
        output = F.relu(output)
        output = self.dropout2(output)
        output = self.fc2(output)
        output = F.log_softmax(output, dim=1)
        return output


# pytorch/examples' vision transformer as written there: patches by Tensor.unfold, a device chosen by
# torch.cuda.is_available(), parameters moved with .to(self.device), a layer made in forward.


class ViTArgs:
    """The command-line arguments pytorch/examples' vision transformer passes its classes (argparse's namespace)."""

    patch_size = 4
    n_channels = 3
    latent_size = 16
    no_cuda = True
    batch_size = 2
    num_heads = 2
    dropout = 0.1


class PatchExtractor(nn.Module):
    def __init__(self, patch_size=16):
        super().__init__()
        self.patch_size = patch_size

    def forward(self, input_data):
        batch_size, channels, height, width = input_data.size()
        assert height % self.patch_size == 0 and width % self.patch_size == 0, \
            f"Input height ({height}) and width ({width}) must be divisible by patch size ({self.patch_size})"

        num_patches_h = height // self.patch_size
        num_patches_w = width // self.patch_size
        num_patches = num_patches_h * num_patches_w

        patches = input_data.unfold(2, self.patch_size, self.patch_size). \
            unfold(3, self.patch_size, self.patch_size). \
            permute(0, 2, 3, 1, 4, 5). \
            contiguous(). \
            view(batch_size, num_patches, -1)

        # Expected shape of a patch on default settings is (4, 196, 768)

        return patches


class InputEmbedding(nn.Module):

    def __init__(self, args):
        super(InputEmbedding, self).__init__()  # noqa: UP008 (as the example writes it)
        self.patch_size = args.patch_size
        self.n_channels = args.n_channels
        self.latent_size = args.latent_size
        use_cuda = not args.no_cuda and torch.cuda.is_available()
        self.device = torch.device("cuda" if use_cuda else "cpu")
        self.batch_size = args.batch_size
        self.input_size = self.patch_size * self.patch_size * self.n_channels

        # Linear projection
        self.LinearProjection = nn.Linear(self.input_size, self.latent_size)
        # Class token
        self.class_token = nn.Parameter(torch.randn(self.batch_size, 1, self.latent_size)).to(self.device)
        # Positional embedding
        self.pos_embedding = nn.Parameter(torch.randn(self.batch_size, 1, self.latent_size)).to(self.device)

    def forward(self, input_data):
        input_data = input_data.to(self.device)
        # Patchifying the Image
        patchify = PatchExtractor(patch_size=self.patch_size)
        patches = patchify(input_data)

        linear_projection = self.LinearProjection(patches).to(self.device)
        b, n, _ = linear_projection.shape
        linear_projection = torch.cat((self.class_token, linear_projection), dim=1)
        pos_embed = self.pos_embedding[:, :n + 1, :]
        linear_projection += pos_embed

        return linear_projection


class OverlappingWindows(nn.Module):
    """Tensor.unfold with windows overlapping (step below size) along the last axis."""

    def forward(self, x):
        return x.unfold(-1, 3, 2).sum(-1)


# packed sequences: nn.utils.rnn.pack_padded_sequence / pad_packed_sequence around recurrent layers


class LSTM(nn.Module):
    """bentrevett's sentiment-analysis LSTM as written there: packed sequences of the given lengths."""

    def __init__(
        self,
        vocab_size,
        embedding_dim,
        hidden_dim,
        output_dim,
        n_layers,
        bidirectional,
        dropout_rate,
        pad_index,
    ):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, embedding_dim, padding_idx=pad_index)
        self.lstm = nn.LSTM(
            embedding_dim,
            hidden_dim,
            n_layers,
            bidirectional=bidirectional,
            dropout=dropout_rate,
            batch_first=True,
        )
        self.fc = nn.Linear(hidden_dim * 2 if bidirectional else hidden_dim, output_dim)
        self.dropout = nn.Dropout(dropout_rate)

    def forward(self, ids, length):
        # ids = [batch size, seq len]
        # length = [batch size]
        embedded = self.dropout(self.embedding(ids))
        # embedded = [batch size, seq len, embedding dim]
        packed_embedded = nn.utils.rnn.pack_padded_sequence(
            embedded, length, batch_first=True, enforce_sorted=False
        )
        packed_output, (hidden, cell) = self.lstm(packed_embedded)
        # hidden = [n layers * n directions, batch size, hidden dim]
        # cell = [n layers * n directions, batch size, hidden dim]
        output, output_length = nn.utils.rnn.pad_packed_sequence(packed_output)
        # output = [batch size, seq len, hidden dim * n directions]
        if self.lstm.bidirectional:
            hidden = self.dropout(torch.cat([hidden[-1], hidden[-2]], dim=-1))
            # hidden = [batch size, hidden dim * 2]
        else:
            hidden = self.dropout(hidden[-1])
            # hidden = [batch size, hidden dim]
        prediction = self.fc(hidden)
        # prediction = [batch size, output dim]
        return prediction


class PackedGRUEncoder(nn.Module):
    """A time-major GRU over packed sequences, returning the padded outputs and the final state."""

    def __init__(self, vocab, dim):
        super().__init__()
        self.embedding = nn.Embedding(vocab, dim)
        self.gru = nn.GRU(dim, dim)

    def forward(self, src, src_len):
        embedded = self.embedding(src)
        packed = nn.utils.rnn.pack_padded_sequence(embedded, src_len, enforce_sorted=False)
        packed_outputs, hidden = self.gru(packed)
        outputs, _ = nn.utils.rnn.pad_packed_sequence(packed_outputs, total_length=src.shape[0])
        return outputs, hidden


# transformers' apply_chunking_to_forward, read from the library's source (transpile/library_code.py)


class ChunkedFeedForward(nn.Module):
    """transformers' BertLayer feed-forward, applied in chunks along the sequence (chunk_size 0: at once)."""

    def __init__(self, chunk_size):
        super().__init__()
        self.chunk_size_feed_forward = chunk_size
        self.seq_len_dim = 1
        self.intermediate = nn.Linear(8, 16)
        self.output = nn.Linear(16, 8)

    def feed_forward_chunk(self, attention_output):
        intermediate_output = torch.relu(self.intermediate(attention_output))
        return self.output(intermediate_output) + attention_output

    def forward(self, attention_output):
        return apply_chunking_to_forward(
            self.feed_forward_chunk, self.chunk_size_feed_forward, self.seq_len_dim, attention_output
        )


# as their projects write them: latent diffusion's CrossAttention (exists/default helpers, einsum, a mask
# filled in place), diffusers' get_timestep_embedding and Timesteps, Segment Anything's attention with
# decomposed relative positions (get_rel_pos resizing its table linearly when the input size differs)


def exists(val):
    return val is not None


def default(val, d):
    if exists(val):
        return val
    return d() if isfunction(d) else d


class CrossAttention(nn.Module):
    def __init__(self, query_dim, context_dim=None, heads=8, dim_head=64, dropout=0.):
        super().__init__()
        inner_dim = dim_head * heads
        context_dim = default(context_dim, query_dim)

        self.scale = dim_head ** -0.5
        self.heads = heads

        self.to_q = nn.Linear(query_dim, inner_dim, bias=False)
        self.to_k = nn.Linear(context_dim, inner_dim, bias=False)
        self.to_v = nn.Linear(context_dim, inner_dim, bias=False)

        self.to_out = nn.Sequential(
            nn.Linear(inner_dim, query_dim),
            nn.Dropout(dropout)
        )

    def forward(self, x, context=None, mask=None):
        h = self.heads

        q = self.to_q(x)
        context = default(context, x)
        k = self.to_k(context)
        v = self.to_v(context)

        q, k, v = map(lambda t: rearrange(t, 'b n (h d) -> (b h) n d', h=h), (q, k, v))

        sim = torch.einsum('b i d, b j d -> b i j', q, k) * self.scale

        if exists(mask):
            mask = rearrange(mask, 'b ... -> b (...)')
            max_neg_value = -torch.finfo(sim.dtype).max
            mask = repeat(mask, 'b j -> (b h) () j', h=h)
            sim.masked_fill_(~mask, max_neg_value)

        # attention, what we cannot get enough of
        attn = sim.softmax(dim=-1)

        out = torch.einsum('b i j, b j d -> b i d', attn, v)
        out = rearrange(out, '(b h) n d -> b n (h d)', h=h)
        return self.to_out(out)


def get_timestep_embedding(
    timesteps: torch.Tensor,
    embedding_dim: int,
    flip_sin_to_cos: bool = False,
    downscale_freq_shift: float = 1,
    scale: float = 1,
    max_period: int = 10000,
) -> torch.Tensor:
    assert len(timesteps.shape) == 1, "Timesteps should be a 1d-array"

    half_dim = embedding_dim // 2
    exponent = -math.log(max_period) * torch.arange(
        start=0, end=half_dim, dtype=torch.float32, device=timesteps.device
    )
    exponent = exponent / (half_dim - downscale_freq_shift)

    emb = torch.exp(exponent)
    emb = timesteps[:, None].float() * emb[None, :]

    # scale embeddings
    emb = scale * emb

    # concat sine and cosine embeddings
    emb = torch.cat([torch.sin(emb), torch.cos(emb)], dim=-1)

    # flip sine and cosine embeddings
    if flip_sin_to_cos:
        emb = torch.cat([emb[:, half_dim:], emb[:, :half_dim]], dim=-1)

    # zero pad
    if embedding_dim % 2 == 1:
        emb = torch.nn.functional.pad(emb, (0, 1, 0, 0))
    return emb


class Timesteps(nn.Module):
    def __init__(self, num_channels: int, flip_sin_to_cos: bool, downscale_freq_shift: float, scale: int = 1):
        super().__init__()
        self.num_channels = num_channels
        self.flip_sin_to_cos = flip_sin_to_cos
        self.downscale_freq_shift = downscale_freq_shift
        self.scale = scale

    def forward(self, timesteps):
        t_emb = get_timestep_embedding(
            timesteps,
            self.num_channels,
            flip_sin_to_cos=self.flip_sin_to_cos,
            downscale_freq_shift=self.downscale_freq_shift,
            scale=self.scale,
        )
        return t_emb


def get_rel_pos(q_size: int, k_size: int, rel_pos: torch.Tensor) -> torch.Tensor:
    max_rel_dist = int(2 * max(q_size, k_size) - 1)
    # Interpolate rel pos if needed.
    if rel_pos.shape[0] != max_rel_dist:
        # Interpolate rel pos.
        rel_pos_resized = F.interpolate(
            rel_pos.reshape(1, rel_pos.shape[0], -1).permute(0, 2, 1),
            size=max_rel_dist,
            mode="linear",
        )
        rel_pos_resized = rel_pos_resized.reshape(-1, max_rel_dist).permute(1, 0)
    else:
        rel_pos_resized = rel_pos

    # Scale the coords with short length if shapes for q and k are different.
    q_coords = torch.arange(q_size)[:, None] * max(k_size / q_size, 1.0)
    k_coords = torch.arange(k_size)[None, :] * max(q_size / k_size, 1.0)
    relative_coords = (q_coords - k_coords) + (k_size - 1) * max(q_size / k_size, 1.0)

    return rel_pos_resized[relative_coords.long()]


def add_decomposed_rel_pos(
    attn: torch.Tensor,
    q: torch.Tensor,
    rel_pos_h: torch.Tensor,
    rel_pos_w: torch.Tensor,
    q_size: Tuple[int, int],
    k_size: Tuple[int, int],
) -> torch.Tensor:
    q_h, q_w = q_size
    k_h, k_w = k_size
    Rh = get_rel_pos(q_h, k_h, rel_pos_h)
    Rw = get_rel_pos(q_w, k_w, rel_pos_w)

    B, _, dim = q.shape
    r_q = q.reshape(B, q_h, q_w, dim)
    rel_h = torch.einsum("bhwc,hkc->bhwk", r_q, Rh)
    rel_w = torch.einsum("bhwc,wkc->bhwk", r_q, Rw)

    attn = (
        attn.view(B, q_h, q_w, k_h, k_w) + rel_h[:, :, :, :, None] + rel_w[:, :, :, None, :]
    ).view(B, q_h * q_w, k_h * k_w)

    return attn


class Attention(nn.Module):
    """Multi-head Attention block with relative position embeddings."""

    def __init__(
        self,
        dim: int,
        num_heads: int = 8,
        qkv_bias: bool = True,
        use_rel_pos: bool = False,
        rel_pos_zero_init: bool = True,
        input_size: Optional[Tuple[int, int]] = None,
    ) -> None:
        super().__init__()
        self.num_heads = num_heads
        head_dim = dim // num_heads
        self.scale = head_dim**-0.5

        self.qkv = nn.Linear(dim, dim * 3, bias=qkv_bias)
        self.proj = nn.Linear(dim, dim)

        self.use_rel_pos = use_rel_pos
        if self.use_rel_pos:
            assert (
                input_size is not None
            ), "Input size must be provided if using relative positional encoding."
            # initialize relative positional embeddings
            self.rel_pos_h = nn.Parameter(torch.zeros(2 * input_size[0] - 1, head_dim))
            self.rel_pos_w = nn.Parameter(torch.zeros(2 * input_size[1] - 1, head_dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, H, W, _ = x.shape
        # qkv with shape (3, B, nHead, H * W, C)
        qkv = self.qkv(x).reshape(B, H * W, 3, self.num_heads, -1).permute(2, 0, 3, 1, 4)
        # q, k, v with shape (B * nHead, H * W, C)
        q, k, v = qkv.reshape(3, B * self.num_heads, H * W, -1).unbind(0)

        attn = (q * self.scale) @ k.transpose(-2, -1)

        if self.use_rel_pos:
            attn = add_decomposed_rel_pos(attn, q, self.rel_pos_h, self.rel_pos_w, (H, W), (H, W))

        attn = attn.softmax(dim=-1)
        x = (attn @ v).view(B, self.num_heads, H, W, -1).permute(0, 2, 3, 1, 4).reshape(B, H, W, -1)
        x = self.proj(x)

        return x


# pytorch/examples' word language model's transformer, as written there: a subclass of nn.Transformer whose
# decoder is its own Linear, a square subsequent mask kept on the model between calls


class PositionalEncoding(nn.Module):
    r"""Inject some information about the relative or absolute position of the tokens in the sequence."""

    def __init__(self, d_model, dropout=0.1, max_len=5000):
        super(PositionalEncoding, self).__init__()  # noqa: UP008 (as the example writes it)
        self.dropout = nn.Dropout(p=dropout)

        pe = torch.zeros(max_len, d_model)
        position = torch.arange(0, max_len, dtype=torch.float).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, d_model, 2).float() * (-math.log(10000.0) / d_model))
        pe[:, 0::2] = torch.sin(position * div_term)
        pe[:, 1::2] = torch.cos(position * div_term)
        pe = pe.unsqueeze(0).transpose(0, 1)
        self.register_buffer('pe', pe)

    def forward(self, x):
        r"""Inputs of forward function
        Args:
            x: the sequence fed to the positional encoder model (required).
        Shape:
            x: [sequence length, batch size, embed dim]
            output: [sequence length, batch size, embed dim]
        Examples:
            >>> output = pos_encoder(x)
        """

        x = x + self.pe[:x.size(0), :]
        return self.dropout(x)


class TransformerModel(nn.Transformer):
    """Container module with an encoder, a recurrent or transformer module, and a decoder."""

    def __init__(self, ntoken, ninp, nhead, nhid, nlayers, dropout=0.5):
        super(TransformerModel, self).__init__(  # noqa: UP008 (as the example writes it)
            d_model=ninp, nhead=nhead, dim_feedforward=nhid, num_encoder_layers=nlayers)
        self.model_type = 'Transformer'
        self.src_mask = None
        self.pos_encoder = PositionalEncoding(ninp, dropout)

        self.input_emb = nn.Embedding(ntoken, ninp)
        self.ninp = ninp
        self.decoder = nn.Linear(ninp, ntoken)

        self.init_weights()

    def _generate_square_subsequent_mask(self, sz):
        return torch.log(torch.tril(torch.ones(sz,sz)))

    def init_weights(self):
        initrange = 0.1
        nn.init.uniform_(self.input_emb.weight, -initrange, initrange)
        nn.init.zeros_(self.decoder.bias)
        nn.init.uniform_(self.decoder.weight, -initrange, initrange)

    def forward(self, src, has_mask=True):
        if has_mask:
            device = src.device
            if self.src_mask is None or self.src_mask.size(0) != len(src):
                mask = self._generate_square_subsequent_mask(len(src)).to(device)
                self.src_mask = mask
        else:
            self.src_mask = None

        src = self.input_emb(src) * math.sqrt(self.ninp)
        src = self.pos_encoder(src)
        output = self.encoder(src, mask=self.src_mask)
        output = self.decoder(output)
        return F.log_softmax(output, dim=-1)


CASES = [
    ("BasicBlock", (8, 8), (2, 8, 8, 8)),
    ("Bottleneck", (8, 4, 2), (2, 8, 8, 8)),
    ("TinyResNet", (), (2, 3, 32, 32)),
    ("PreActBlock", (8, 16, 2), (2, 8, 8, 8)),
    ("ConvBNReLU", (3, 8), (2, 3, 9, 9)),
    ("InvertedResidual", (8, 8, 1, 4), (2, 8, 8, 8)),
    ("SqueezeExcitation", (8,), (2, 8, 6, 6)),
    ("SEConv", (8, 2), (2, 8, 6, 6)),
    ("MBConv", (8, 8, 4, 1), (2, 8, 8, 8)),
    ("DoubleConv", (3, 8), (2, 3, 8, 8)),
    ("Down", (4, 8), (2, 4, 8, 8)),
    ("TinyUNet", (), (2, 3, 16, 16)),
    ("MultiHeadSelfAttention", (16, 4), (2, 5, 16)),
    ("Mlp", (16, 32), (2, 5, 16)),
    ("LayerScale", (16,), (2, 5, 16)),
    ("InPlaceResidual", (8,), (2, 5, 8)),
    ("NanoGPTTied", (), (2, 7), "int64"),
    ("SamePadStem", (), (2, 3, 17, 15)),
    ("HeadTiedToEmbedding", (), (2, 7), "int64"),
    ("ViTBlock", (16, 4), (2, 5, 16)),
    ("PatchEmbed", (), (2, 3, 16, 16)),
    ("TinyViT", (), (2, 3, 16, 16)),
    ("TransformerEncoderLayer", (16, 4), (2, 6, 16)),
    ("CausalSelfAttention", (), (2, 8, 32)),
    ("GPTBlock", (), (2, 6, 32)),
    ("RMSNorm", (16,), (2, 5, 16)),
    ("SwiGLU", (16, 24), (2, 5, 16)),
    ("LlamaStyleBlock", (), (2, 6, 32)),
    ("GroupNormConv", (4, 8), (2, 4, 8, 8)),
    ("ResnetBlockGN", (8, 16), (2, 8, 8, 8)),
    ("LeNet", (), (2, 1, 28, 28)),
    ("VGGish", (), (2, 3, 16, 16)),
    ("DenseLayer", (8, 4), (2, 8, 8, 8)),
    ("DenseBlock", (3, 8, 4), (2, 8, 8, 8)),
    ("Transition", (8, 4), (2, 8, 8, 8)),
    ("InceptionA", (8, 4), (2, 8, 9, 9)),
    ("FireModule", (8, 4, 8, 8), (2, 8, 8, 8)),
    ("ShuffleUnit", (8,), (2, 8, 6, 6)),
    ("DepthwiseSeparable", (8, 16, 2), (2, 8, 8, 8)),
    ("HardSwishBlock", (4,), (2, 4, 8, 8)),
    ("DilatedBlock", (4,), (2, 4, 9, 9)),
    ("StridedConvDecoder", (), (2, 8, 5, 5)),
    ("Conv1dClassifier", (), (2, 4, 20)),
    ("TemporalBlock", (4, 6, 3, 2), (2, 4, 16)),
    ("Conv3dStem", (), (2, 2, 6, 6, 6)),
    ("TextCNN", (), (2, 10), "int64"),
    ("BagOfEmbeddings", (), (2, 7), "int64"),
    ("PositionalEmbeddingModel", (), (2, 9), "int64"),
    ("MLPClassifier", (), (4, 20)),
    ("Autoencoder", (), (3, 24)),
    ("VAEHead", (), (3, 16)),
    ("GatedResidual", (8,), (3, 8)),
    ("Highway", (8,), (3, 8)),
    ("FeaturePyramidTop", (), [(2, 8, 8, 8), (2, 16, 4, 4)]),
    ("ASPPPooling", (8, 4), (2, 8, 8, 8)),
    ("ChannelAttention", (8,), (2, 8, 6, 6)),
    ("SpatialAttention", (), (2, 8, 6, 6)),
    ("L2NormEmbedding", (), (3, 16)),
    ("ClampedHead", (), (3, 8)),
    ("EinsumAttention", (), (2, 5, 16)),
    ("MishNet", (), (2, 4, 6, 6)),
    ("PaddedPoolNet", (), (2, 3, 9, 9)),
    ("StackedHeads", (), (3, 8)),
    ("ModuleDictRouter", (), (3, 8)),
    ("ReshapeHead", (), (2, 4, 5, 5)),
    ("Unsqueezer", (), (3, 6)),
    ("PaddedSequence", (), (2, 4, 10)),
    ("SplitMerge", (), (3, 8)),
    ("WeightedSum", (), (3, 5)),
    ("UpBilinear", (8, 4), [(2, 4, 4, 4), (2, 4, 8, 8)]),
    ("PReLUConvNet", (), (2, 3, 6, 6)),
    ("ClassTokenEncoder", (), (2, 5, 8)),
    ("NamedFeatures", (), (2, 3, 8, 8)),
    ("LSTMTagger", (), (2, 7), "int64"),
    ("LSTMSentiment", (), (2, 6, 8)),
    ("GRUEncoder", (), (6, 2, 8)),
    ("ReluRNN", (), (2, 5, 6)),
    ("MHABlock", (), (2, 6, 16)),
    ("CrossAttentionPooling", (), (7, 2, 8)),
    ("NanoGPTAttention", (), (2, 5, 16)),
    ("MaskedAttention", (), (2, 5, 8)),
    ("ConvNeXtStem", (), (2, 3, 8, 8)),
    ("ShiftedWindowMixer", (), (2, 6, 6, 8)),
    ("StatsPooling", (), (2, 8, 10)),
    ("TextCNNMaxOverTime", (), (2, 9), "int64"),
    ("NormalizedEmbedding", (), (3, 8)),
    ("GLUFeedForward", (), (2, 3, 8)),
    ("ReflectPadGenerator", (), (2, 4, 6, 6)),
    ("FunctionalLinearHead", (), (3, 6)),
    ("CumulativeFeatures", (), (2, 5, 4)),
    ("IndexSelectPooling", (), (2, 7, 6)),
    ("CastingGate", (), (3, 5)),
    ("TransformerClassifier", (), (2, 7), "int64"),
    ("PreNormEncoderLayer", (), (5, 2, 8)),
    ("RMSNormBlock", (), (2, 3, 8)),
    ("MaskedMultiheadAttention", (), (2, 6, 16)),
    ("CausalEncoder", (), (2, 6), "int64"),
    ("SeededRecurrent", (), (2, 5, 6)),
    ("PaddedQueryAttention", (), (2, 5, 8)),
    ("ReflectResidualBlock", (), (2, 4, 6, 6)),
    ("SubPixelUpsampler", (), (2, 3, 4, 4)),
    ("AdaptivePoolHead", (), (2, 3, 8, 7)),
    ("GatheredFeatures", (), (2, 6, 5)),
    ("EdgePadding", (), (2, 3, 5, 5)),
    ("FeaturePyramidMerge", (), [(2, 4, 8, 8), (2, 4, 5, 5)]),
    ("ResizedSequence", (), (2, 3, 7)),
    ("ChannelShuffleUnit", (), (2, 4, 5, 5)),
    ("PrototypeDistances", (), (2, 6, 4)),
    ("ReflectConvBlock", (), (2, 4, 7, 9)),
    ("WrappedConv", (), (2, 3, 5, 5)),
    ("Seq2SeqTransformer", (), [(2, 7), (2, 5)], "int64"),
    ("PreNormDecoderLayer", (), [(5, 2, 8), (6, 2, 8)]),
    ("EinopsViT", (), (2, 3, 6, 4)),
    ("TiedEmbeddingLM", (), (2, 7), "int64"),
    ("FunctionalDropoutMLP", (), (2, 6)),
    ("TimmMlp", (6, 10, 4), (2, 3, 6)),
    ("TimmBlock", (), (2, 5, 8)),
    ("InPlaceSteps", (), (2, 6)),
    ("TutorialPositionalEncoding", (16,), (7, 2, 16)),
    ("SwinWindowAttention", (16, (3, 3), 4), (2, 9, 16)),
    ("CBAM", (8,), (2, 8, 7, 7)),
    ("ECALayer", (8,), (2, 8, 5, 5)),
    ("ConvNeXtBlock", (8,), (2, 8, 9, 9)),
    ("YoloConv", (3, 8, 3, 2), (2, 3, 8, 8)),
    ("YoloConv", (3, 8, 3, 2, None, 1, 1, False), (2, 3, 8, 8)),
    ("YoloC3", (8, 8, 2), (2, 8, 8, 8)),
    ("YoloSPPF", (8, 8), (2, 8, 9, 9)),
    ("YoloFocus", (3, 8), (2, 3, 8, 8)),
    ("InitAliasing", (), (2, 4)),
    ("NoisyEncoder", (), (3, 8)),
    ("ConvNeXtModel", (), (2, 3, 16, 16)),
    ("RotaryAttention", (8,), (2, 5, 8)),
    ("LlamaRMSNorm", (8,), (2, 5, 8)),
    ("NewGELUActivation", (), (2, 5)),
    ("ShiftedWindowMask", (), (2, 8, 8, 3)),
    ("ConformerConvModule", (8,), (2, 9, 8)),
    ("EfficientSE", (8,), (2, 8, 5, 5)),
    ("TimmAttention", (8,), (2, 5, 8)),
    ("LayerSettingsHead", (), (2, 5), "int64"),
    ("BertSelfAttention", (), (2, 5, 16)),
    ("BertEmbeddings", (), (2, 7), "int64"),
    ("ConvNormAct", (3, 8), (2, 3, 8, 8)),
    ("DenseNetLayer", (8,), (2, 8, 6, 6)),
    ("MultiHeadedAttention", (), [(2, 5, 8), (2, 5, 8), (2, 5, 8)]),
    ("AnnotatedLayerNorm", (8,), (2, 5, 8)),
    ("AnnotatedEncoderLayer", (), (2, 5, 8)),
    ("STN3d", (), (2, 3, 10)),
    ("SobelEdges", (), (2, 3, 8, 8)),
    ("WeightStandardizedConv", (), (2, 4, 9, 9)),
    ("GroupedKernelConv1d", (), (2, 4, 11)),
    ("TimeMLP", (), (3,)),
    ("GraphConvolution", (), [(5, 6), (5, 5)]),
    ("GraphConvolution", (6, 4, False), [(5, 6), (5, 5)]),
    ("ScalarMix", (), (2, 4)),
    ("TypedBlock", (), (2, 8)),
    ("OneHotFeatures", (), (2, 5), "int64"),
    ("TCNBlock", (), (2, 4, 12)),
    ("HifiResBlock", (), (2, 4, 12)),
    ("QuickGELU", (), (2, 5)),
    ("CLIPLayerNorm", (8,), (2, 3, 8)),
    ("GroupNorm32", (2, 8), (2, 8, 5)),
    ("WhisperLinear", (4, 6), (2, 4)),
    ("ScaledLayerNorm", (8,), (2, 3, 8)),
    ("CLIPResidualAttentionBlock", (8, 2), (5, 2, 8)),
    ("CLIPTextEncoder", (), (2, 5), "int64"),
    ("TutorialRNN", (4, 8, 2, 3), (2, 5, 4)),
    ("DeviceMoves", (), (2, 6)),
    ("DCGANGenerator", (1,), (2, 16, 1, 1)),
    ("DCGANDiscriminator", (1,), (2, 3, 16, 16)),
    ("StyleResidualBlock", (4,), (1, 4, 6, 6)),
    ("StyleUpsampleConvLayer", (3, 4, 3, 1, 2), (1, 3, 6, 6)),
    ("ConvPadFromKernel", (3, 4, 5), (1, 3, 9, 9)),
    ("MaxLikelihoodHead", (4, 5), (2, 4)),
    ("GPT2Conv1D", (6, 4), (2, 3, 4)),
    ("GPT2Attention", (), (2, 5, 8)),
    ("T5LayerNorm", (8,), (2, 3, 8)),
    ("LlamaRotaryApplied", (8,), [(2, 5, 8), (2, 5)]),
    ("GRN", (4,), (2, 3, 3, 4)),
    ("AttentionGate", (4, 4, 2), [(2, 4, 6, 6), (2, 4, 6, 6)]),
    ("CycleGANResnetBlock", (4,), (1, 4, 6, 6)),
    ("CycleGANResnetBlock", (4, "replicate"), (1, 4, 6, 6)),
    ("CycleGANResnetBlock", (4, "zero"), (1, 4, 6, 6)),
    ("LdmDownsample", (4, True), (1, 4, 6, 6)),
    ("LdmDownsample", (4, False), (1, 4, 6, 6)),
    ("LdmResnetStage", (), [(1, 4, 6, 6), (1, 6)]),
    ("LdmAttnBlock", (8,), (2, 8, 4, 4)),
    ("FrozenBatchNorm2d", (4,), (2, 4, 3, 3)),
    ("MeanShift", (255,), (1, 3, 5, 5)),
    ("FrozenBackboneHead", (), (2, 6)),
    ("ResidualDenseBlock", (), (1, 8, 5, 5)),
    ("TvResNet", (), (2, 3, 32, 32)),
    ("TvMobileNetV2", (), (2, 3, 32, 32)),
    ("GraphAttentionLayer", (6, 4, 0.5, 0.2), [(5, 6), (5, 5)]),
    ("GAT", (), [(5, 6), (5, 5)]),
    ("MinGPTBlock", (), (2, 5, 8)),
    ("MinGPT", (), (2, 5), "int64"),
    ("CrossEntropyHead", (), (8, 6)),
    ("ReservedArgOuter", (), (2, 4)),
    ("WhisperMultiHeadAttention", (8, 2), (2, 5, 8)),
    ("WhisperResidualAttentionBlock", (8, 2, True), [(2, 5, 8), (2, 3, 8)]),
    ("DetrMLP", (4, 8, 3, 3), (2, 4)),
    ("PositionEmbeddingSine", (), (2, 3, 4, 5)),
    ("DetrEncoder", (), (2, 5, 8)),
    ("PositionalLambda", (), (2, 5, 8)),
    ("NLayerDiscriminator", (), (1, 3, 32, 32)),
    ("InstanceNLayer", (), (1, 3, 32, 32)),
    ("CycleGANUnetGenerator", (), (1, 3, 32, 32)),
    ("BertIntermediate", (), (2, 5, 16)),
    ("BertOutput", (), [(2, 5, 32), (2, 5, 16)]),
    ("LlamaMLP", (), (2, 5, 8)),
    ("LlamaMLP", (8, 16, "gelu_pytorch_tanh"), (2, 5, 8)),
    ("GeluNewMLP", (), (2, 8)),
    ("CausalConv1d", (4, 6, 3, 1, 2), (2, 4, 10)),
    ("MaxPool2dSame", (), (1, 3, 7, 7)),
    ("WaveNetBlock", (), (2, 8, 10)),
    ("ScaledOutputLinear", (4, 3), (2, 4)),
    ("CheckpointedBlocks", (), (2, 8)),
    ("EDSR", (), (1, 3, 6, 6)),
    ("LlamaAttention", (), [(2, 5, 16), (2, 5, 4), (2, 5, 4)]),
    ("ShuffleV2Block", (), (2, 8, 6, 6)),
    ("ShuffleV2Block", (8, 8, 2), (2, 8, 6, 6)),
    ("NonLocalBlock", (), (2, 8, 6, 6)),
    ("AddCoords", (True,), (2, 3, 5, 4)),
    ("GhostModule", (), (2, 8, 6, 6)),
    ("Bottle2neck", (), (2, 32, 6, 6)),
    ("Bottle2neck", (32, 8, 1, None, 26, 4, "stage"), (2, 32, 6, 6)),
    ("ChannelGate", (), (2, 16, 5, 5)),
    ("ChannelPool", (), (2, 16, 5, 5)),
    ("SinusoidPositionalEncoding", (), (2, 7, 8)),
    ("DeepLabASPP", (), (2, 8, 9, 9)),
    ("ConvLSTM", (), (2, 3, 3, 6, 6)),
    ("RCAB", (), (2, 16, 6, 6)),
    ("Hourglass", (), (2, 8, 8, 8)),
    ("Seq2SeqAttention", (), [(3, 5), (7, 3, 12)]),
    ("Seq2SeqEncoder", (), (7, 3), "int64"),
    ("GloveClassifier", (), (2, 7), "int64"),
    ("StrideAware", (), (2, 4, 8, 8)),
    ("StrideAware", (4, 8, 1), (2, 4, 8, 8)),
    ("Unfolder", (), (2, 3, 6, 6)),
    ("Involution", (), (2, 8, 6, 6)),
    ("Involution", (8, 3, 2), (2, 8, 6, 6)),
    ("SNDiscriminator", (), (2, 3, 8, 8)),
    ("DenseTransition", (), (2, 8, 6, 6)),
    ("AddModuleTransition", (), (2, 8, 6, 6)),
    ("OverloadedForward", (), (2, 4, 5, 5)),
    ("T5RelativeBias", (), (2, 2, 5, 6)),
    ("T5RelativeBias", (8, 16, 2, False), (2, 2, 5, 6)),
    ("CLIPVisionEmbeddings", (), (2, 3, 8, 8)),
    ("PairwiseExtrema", (), [(2, 5), (2, 5)]),
    ("SpatialTransformerNet", (), (2, 1, 28, 28)),
    ("AffineWarp", (), (2, 3, 7, 9)),
    ("PackedBags", (), (4, 5), "int64"),
    ("PackedBags", (30, 8, "sum"), (4, 5), "int64"),
    ("TutorialTextBatch", (), (3, 6), "int64"),
    ("LucidViT", (), (2, 3, 16, 16)),
    ("DDPMResnetBlock", (), [(2, 8, 6, 6), (2, 6)]),
    ("DDPMLinearAttention", (), (2, 8, 4, 6)),
    ("DDPMUpDown", (), (2, 4, 6, 6)),
    ("ModulatedConv2d", (), [(2, 4, 6, 6), (2, 5)]),
    ("PPM", (), (2, 8, 8, 8)),
    ("FCOSOnTwo", (), [(2, 8, 6, 6), (2, 8, 3, 3)]),
    ("GPT2MLP", (), (2, 5, 16)),
    ("AppendedStack", (), (2, 3, 9, 9)),
    ("VectorQuantizer", (), (2, 4, 3, 3)),
    ("ScatterTopK", (), (2, 3, 5)),
    ("Seq2SeqDecoderStep", (), [(3, 5), (7, 3, 12)]),
    ("CharRNNStep", (), (3,), "int64"),
    ("M5", (), (2, 1, 800)),
    ("SincConv_fast", (), (2, 1, 60)),
    ("SAB", (), (2, 5, 6)),
    ("ISAB", (), (2, 5, 6)),
    ("PMA", (), (2, 5, 8)),
    ("WithProperty", (), (2, 6)),
    ("RNNModel", ("LSTM", 20, 8, 8, 2, 0.2, True), (5, 2), "int64"),
    ("RNNModel", ("GRU", 20, 8, 12, 1, 0.2, False), (5, 2), "int64"),
    ("RNNModel", ("RNN_RELU", 20, 8, 12, 1, 0.2, False), (5, 2), "int64"),
    ("MobileV3Pair", (), (2, 16, 9, 9)),
    ("CNDownsample", (8,), (2, 8, 8, 8)),
    ("InceptionB", (8,), (1, 8, 9, 9)),
    ("InceptionE", (8,), (1, 8, 5, 5)),
    ("EncoderBlock", (2, 8, 16, 0.1, 0.1), (2, 5, 8)),
    ("Encoder", (5, 2, 2, 8, 16, 0.1, 0.1), (2, 5, 8)),
    ("SimpleStemIN", (3, 8), (2, 3, 8, 8)),
    ("SqueezeNetSmall", (10,), (1, 3, 33, 33)),
    ("BertPooler", (), (2, 5, 16)),
    ("ViTSelfAttention", (), (2, 5, 16)),
    ("Conv", (3, 8, 3, 2), (2, 3, 9, 9)),
    ("C2f", (8, 16, 2, True), (2, 8, 6, 6)),
    ("DFL", (4,), (2, 16, 5)),
    ("SamBlock", (8, 2, 4.0, True), (2, 5, 5, 8)),
    ("SamWindowedBlocks", (), (2, 5, 5, 8)),
    ("SamLayerNorm2d", (4,), (2, 4, 3, 3)),
    ("MobileNetV2", (), (2, 3, 8, 8)),
    ("PreActBlockSE", (16, 32, 2), (2, 16, 8, 8)),
    ("PreActBlockSE", (32, 32, 1), (2, 32, 8, 8)),
    ("GraphConv", (6, 4, True), [(5, 6), (5, 5)]),
    ("Sequence", (), (3, 6)),
    ("Normalization", (), (2, 3, 4, 4)),
    ("GramFeatures", (), (2, 3, 5, 5)),
    ("SmallConvMixer", (), (2, 3, 8, 8)),
    ("SmallMLPMixer", (), (2, 3, 8, 8)),
    ("SuperResolutionNet", (2,), (2, 1, 6, 6)),
    ("CellDecoder", (), (4, 2, 6)),
    ("ActivationZoo", (), (2, 8)),
    ("FunctionalZoo", (), (2, 8)),
    ("NormZoo", (), (2, 4, 5)),
    ("UpDown", (), (2, 4, 6, 6)),
    ("Indexing", (), (2, 6)),
    ("ViTPatchEmbeddings", (), (2, 3, 8, 8)),
    ("SwinMergeOdd", (), (2, 25, 4)),
    ("SegformerBlockLite", (), (2, 16, 8)),
    ("FNetLayer", (8, 16), (2, 5, 8)),
    ("TemporalShift", (4, 4), (8, 8, 3, 3)),
    ("EdgeTokens", (6,), (2, 5, 6)),
    ("ShrinkActivations", (8,), (2, 8)),
    ("SiameseDistances", (8, 6), (3, 8)),
    ("UnflattenDecoder", (8,), (2, 8)),
    ("SparseTopFeatures", (8,), (2, 8)),
    ("BilinearFusion", (5, 7, 4), (2, 3, 12)),
    ("SegNetStage", (3, 6), (2, 3, 8, 8)),
    ("AlexNetFeatures", (), (1, 3, 32, 32)),
    ("_DenseLayer", (8, 4, 2, 0.0), (1, 8, 6, 6)),
    ("_DenseBlock", (2, 8, 2, 4, 0.0), (1, 8, 6, 6)),
    ("_Transition", (8, 4), (1, 8, 6, 6)),
    ("DenseNet", (8, (2, 2), 16, 2, 0, 10), (1, 3, 32, 32)),
    ("Blocks", (2, 8), (3, 8)),
    ("TopKAlongChannels", (), (2, 6, 5)),
    ("PatchNorm", (3, 4), (2, 5, 3, 4)),
    ("T5DenseGatedActDense", (HF_SMALL,), (2, 5, 8)),
    ("RobertaClassificationHead", (HF_SMALL,), (2, 5, 8)),
    ("Wav2Vec2GroupNormConvLayer", (HF_SMALL, 0), (2, 1, 20)),
    ("Wav2Vec2PositionalConvEmbedding", (HF_SMALL,), (2, 10, 8)),
    ("MnistRNN", (), (2, 1, 28, 28)),
    ("PatchExtractor", (4,), (2, 3, 8, 8)),
    ("InputEmbedding", (ViTArgs(),), (2, 3, 8, 8)),
    ("OverlappingWindows", (), (2, 3, 9)),
    ("LSTM", (8, 6, 5, 3, 2, True, 0.0, 0), [(3, 7), (3,)], "int64"),
    ("LSTM", (8, 6, 5, 3, 1, False, 0.0, 0), [(3, 7), (3,)], "int64"),
    ("PackedGRUEncoder", (8, 4), [(7, 3), (3,)], "int64"),
    ("ChunkedFeedForward", (0,), (2, 6, 8)),
    ("ChunkedFeedForward", (2,), (2, 6, 8)),
    ("CrossAttention", (8, None, 2, 4), (2, 5, 8)),
    ("Timesteps", (8, True, 0), (3,)),
    ("Attention", (8, 2, True, True, True, (3, 3)), (2, 3, 3, 8)),
    ("Attention", (8, 2, True, True, True, (2, 2)), (2, 3, 3, 8)),
    ("TransformerModel", (20, 8, 2, 16, 2, 0.0), (5, 2), "int64"),
]


class PReLUConvNet(nn.Module):
    """PReLU with one slope per channel after a convolution, and one shared slope after the head."""

    def __init__(self, ch=4, classes=3):
        super().__init__()
        self.conv = nn.Conv2d(3, ch, 3, padding=1)
        self.act = nn.PReLU(ch)
        self.head = nn.Linear(ch, classes)
        self.out_act = nn.PReLU(init=0.1)

    def forward(self, x):
        x = self.act(self.conv(x)).mean(dim=(2, 3))
        return self.out_act(self.head(x))


class ClassTokenEncoder(nn.Module):
    """A ViT-style stem: a learned class token expanded over the batch and prepended to the patch tokens."""

    def __init__(self, dim=8, heads=2):
        super().__init__()
        self.cls_token = nn.Parameter(torch.randn(1, 1, dim) * 0.02)
        self.proj = nn.Linear(dim, dim)
        self.norm = nn.LayerNorm(dim)

    def forward(self, x):
        cls = self.cls_token.expand(x.shape[0], -1, -1)
        x = torch.cat([cls, self.proj(x)], dim=1)
        return self.norm(x).mean(dim=1) + self.norm(x)[:, 0]


class NamedFeatures(nn.Module):
    """torchvision-style named stages: nn.Sequential over an OrderedDict."""

    def __init__(self, ch=6):
        super().__init__()
        self.features = nn.Sequential(OrderedDict([
            ("conv0", nn.Conv2d(3, ch, 3, padding=1, bias=False)),
            ("norm0", nn.BatchNorm2d(ch)),
            ("relu0", nn.ReLU(inplace=True)),
            ("pool0", nn.MaxPool2d(2)),
        ]))
        self.classifier = nn.Linear(ch, 2)

    def forward(self, x):
        return self.classifier(torch.flatten(F.adaptive_avg_pool2d(self.features(x), 1), 1))


class LSTMTagger(nn.Module):
    """A sequence tagger: embeddings, a two-layer bidirectional LSTM (batch first), a tag per token."""

    def __init__(self, vocab=40, dim=12, hidden=10, tags=5):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.lstm = nn.LSTM(dim, hidden, num_layers=2, batch_first=True, bidirectional=True, dropout=0.2)
        self.tagger = nn.Linear(2 * hidden, tags)

    def forward(self, tokens):
        out, _ = self.lstm(self.embed(tokens))
        return self.tagger(out)


class LSTMSentiment(nn.Module):
    """A classifier on the final hidden states of both directions of the last layer."""

    def __init__(self, dim=8, hidden=12, classes=3):
        super().__init__()
        self.lstm = nn.LSTM(dim, hidden, batch_first=True, bidirectional=True)
        self.fc = nn.Linear(2 * hidden, classes)

    def forward(self, x):
        _, (h, c) = self.lstm(x)
        return self.fc(torch.cat([h[-2], h[-1]], dim=1)) + c.mean()


class GRUEncoder(nn.Module):
    """A time-major GRU (PyTorch's default layout) whose last layer's final state is the encoding."""

    def __init__(self, dim=8, hidden=16, layers=2):
        super().__init__()
        self.gru = nn.GRU(dim, hidden, layers)
        self.proj = nn.Linear(hidden, hidden)

    def forward(self, x):
        out, h = self.gru(x)
        return torch.tanh(self.proj(h[-1])) + out[-1]


class ReluRNN(nn.Module):
    """An Elman RNN with ReLU, its outputs averaged over time."""

    def __init__(self, dim=6, hidden=8):
        super().__init__()
        self.rnn = nn.RNN(dim, hidden, nonlinearity="relu", batch_first=True)

    def forward(self, x):
        out, _ = self.rnn(x)
        return out.mean(dim=1)


class MHABlock(nn.Module):
    """A pre-norm transformer block on nn.MultiheadAttention (batch first), the attention weights not asked for."""

    def __init__(self, dim=16, heads=4):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)
        self.attn = nn.MultiheadAttention(dim, heads, dropout=0.1, batch_first=True)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, dim))

    def forward(self, x):
        h = self.norm1(x)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        return x + self.mlp(self.norm2(x))


class CrossAttentionPooling(nn.Module):
    """Learned queries attend over time-major features of another size (kdim / vdim); the weights are returned."""

    def __init__(self, dim=16, heads=2, queries=3, feature_dim=8):
        super().__init__()
        self.queries = nn.Parameter(torch.randn(queries, 1, dim))
        self.attn = nn.MultiheadAttention(dim, heads, kdim=feature_dim, vdim=feature_dim)

    def forward(self, features):
        q = self.queries.expand(-1, features.shape[1], -1)
        out, weights = self.attn(q, features, features)
        return out.transpose(0, 1), weights


class NanoGPTAttention(nn.Module):
    """nanoGPT's attention: one projection split into q, k, v, heads through view/transpose, and
    F.scaled_dot_product_attention with a causal mask (dropout only while training)."""

    def __init__(self, n_embd=16, n_head=4, dropout=0.1):
        super().__init__()
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)
        self.n_head = n_head
        self.n_embd = n_embd
        self.dropout = dropout

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=None, dropout_p=self.dropout if self.training else 0,
                                           is_causal=True)
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.c_proj(y)


class MaskedAttention(nn.Module):
    """Attention with an explicit upper-triangular mask built on the input's device, scores masked by fill."""

    def __init__(self, dim=8):
        super().__init__()
        self.qkv = nn.Linear(dim, dim * 3, bias=False)
        self.scale = dim ** -0.5

    def forward(self, x):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        T = x.shape[1]
        mask = torch.triu(torch.ones(T, T, dtype=torch.bool, device=x.device), diagonal=1)
        scores = (q @ k.transpose(-2, -1)) * self.scale
        scores = scores.masked_fill(mask, float("-inf"))
        return F.scaled_dot_product_attention(q, k, v, attn_mask=~mask) + scores.softmax(dim=-1) @ v


class ConvNeXtLayerNorm(nn.Module):
    """ConvNeXt's LayerNorm: F.layer_norm for channels-last inputs, the statistics written out for channels-first."""

    def __init__(self, normalized_shape, eps=1e-6, data_format="channels_last"):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(normalized_shape))
        self.bias = nn.Parameter(torch.zeros(normalized_shape))
        self.eps = eps
        self.data_format = data_format
        self.normalized_shape = (normalized_shape, )

    def forward(self, x):
        if self.data_format == "channels_last":
            return F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)
        u = x.mean(1, keepdim=True)
        s = (x - u).pow(2).mean(1, keepdim=True)
        x = (x - u) / torch.sqrt(s + self.eps)
        return self.weight[:, None, None] * x + self.bias[:, None, None]


class ConvNeXtStem(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.conv = nn.Conv2d(3, dim, kernel_size=2, stride=2)
        self.norm_first = ConvNeXtLayerNorm(dim, data_format="channels_first")
        self.norm_last = ConvNeXtLayerNorm(dim)

    def forward(self, x):
        x = self.norm_first(self.conv(x))
        return self.norm_last(x.permute(0, 2, 3, 1))


class ShiftedWindowMixer(nn.Module):
    """Swin's cyclic shift: roll the (B, H, W, C) map, mix channels, roll back."""

    def __init__(self, dim=8, shift=2):
        super().__init__()
        self.shift = shift
        self.mix = nn.Linear(dim, dim)

    def forward(self, x):
        shifted = torch.roll(x, shifts=(-self.shift, -self.shift), dims=(1, 2))
        return torch.roll(self.mix(shifted), shifts=(self.shift, self.shift), dims=(1, 2)) + x.flip(2)


class StatsPooling(nn.Module):
    """x-vector statistics pooling: mean and standard deviation over time, then an embedding."""

    def __init__(self, channels=8, embed=6):
        super().__init__()
        self.tdnn = nn.Conv1d(channels, channels, 3, padding=1)
        self.embed = nn.Linear(2 * channels, embed)

    def forward(self, x):
        h = F.relu(self.tdnn(x))
        stats = torch.cat([h.mean(dim=2), h.std(dim=2)], dim=1)
        return self.embed(stats) + h.var(dim=2, unbiased=False).sum(dim=1, keepdim=True)


class TextCNNMaxOverTime(nn.Module):
    """Kim's text CNN, max over time with torch.max(x, 2)[0] as older code writes it, plus top-k pooling."""

    def __init__(self, vocab=20, dim=8, filters=6, k=2):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.conv = nn.Conv1d(dim, filters, 3)
        self.k = k
        self.fc = nn.Linear(filters * (k + 1), 3)

    def forward(self, tokens):
        h = F.relu(self.conv(self.embed(tokens).transpose(1, 2)))
        top = h.topk(self.k, dim=-1).values.flatten(1)
        return self.fc(torch.cat([torch.max(h, 2)[0], top], dim=1))


class NormalizedEmbedding(nn.Module):
    """An embedding head L2-normalised by hand, with the argmax class's one-hot as a second output."""

    def __init__(self, dim=8, classes=5):
        super().__init__()
        self.fc = nn.Linear(dim, classes)

    def forward(self, x):
        z = self.fc(x)
        z = z / z.norm(dim=-1, keepdim=True).clamp(min=1e-6)
        hot = (torch.arange(z.shape[-1], device=z.device) == z.argmax(dim=-1, keepdim=True)).float()
        return z * torch.linalg.vector_norm(x, dim=-1, keepdim=True), hot


class GLUFeedForward(nn.Module):
    """A gated feed-forward (Dauphin et al.): F.glu over a doubled projection, with a log-sigmoid gate term."""

    def __init__(self, dim=8, hidden=12):
        super().__init__()
        self.up = nn.Linear(dim, 2 * hidden)
        self.down = nn.Linear(hidden, dim)

    def forward(self, x):
        return self.down(F.glu(self.up(x), dim=-1)) + F.logsigmoid(x) - F.softsign(x)


class ReflectPadGenerator(nn.Module):
    """A pix2pix-style block: reflect padding before a valid convolution, hardtanh output."""

    def __init__(self, ch=4):
        super().__init__()
        self.conv = nn.Conv2d(ch, ch, 3)
        self.norm = nn.BatchNorm2d(ch)

    def forward(self, x):
        h = F.relu(self.norm(self.conv(F.pad(x, (1, 1, 1, 1), mode="reflect"))), inplace=True)
        return F.hardtanh(h + x)


class FunctionalLinearHead(nn.Module):
    """Weights held as parameters and applied with F.linear; a scale held as a tensor constant."""

    def __init__(self, dim=6, out=4):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(out, dim) * 0.2)
        self.bias = nn.Parameter(torch.zeros(out))

    def forward(self, x):
        scale = torch.tensor(0.5)
        return F.linear(x, self.weight, self.bias) * scale + F.linear(x.detach(), self.weight)


class CumulativeFeatures(nn.Module):
    """Running sums over time (both directions), repeats and a rounded sign feature."""

    def __init__(self, dim=4):
        super().__init__()
        self.proj = nn.Linear(3 * dim, dim)

    def forward(self, x):
        forward_sum = torch.cumsum(x, dim=1)
        backward_sum = x.flip(1).cumsum(1).flip(1)
        steps = torch.arange(1, x.shape[1] + 1, dtype=torch.float32).view(1, -1, 1)
        features = torch.cat([forward_sum / steps, backward_sum, torch.sign(x) * torch.round(x)], dim=-1)
        return self.proj(features).repeat(1, 2, 1) + x.repeat_interleave(2, dim=1).mean(-1, keepdim=True)


class IndexSelectPooling(nn.Module):
    """Every other time step picked with index_select, the steps then unbound and summed."""

    def __init__(self, dim=6):
        super().__init__()
        self.fc = nn.Linear(dim, dim)

    def forward(self, x):
        idx = torch.arange(0, x.size(1), 2)
        picked = torch.index_select(self.fc(x), 1, idx)
        first, *rest = picked.unbind(dim=1)
        return first + sum(rest) + torch.zeros_like(first).long().float() + torch.full_like(first, 0.5)


class CastingGate(nn.Module):
    """Casts written the ways model code writes them (.float(), .to(dtype), .type_as())."""

    def __init__(self, dim=5):
        super().__init__()
        self.fc = nn.Linear(dim, dim)

    def forward(self, x):
        positive = (x > 0).float()
        gate = (self.fc(x) > 0).to(torch.float32)
        count = positive.sum(-1, keepdim=True).long()
        return x * gate + count.type_as(x) + torch.ones(x.shape[-1]).type_as(x)


class TransformerClassifier(nn.Module):
    """The PyTorch tutorial's encoder: a layer built first and stacked by nn.TransformerEncoder, a final norm,
    batch-first tokens, mean pooling."""

    def __init__(self, vocab=20, d_model=16, nhead=4, d_hid=32, nlayers=2, classes=3, dropout=0.1):
        super().__init__()
        self.embedding = nn.Embedding(vocab, d_model)
        encoder_layer = nn.TransformerEncoderLayer(d_model, nhead, d_hid, dropout, batch_first=True)
        self.encoder = nn.TransformerEncoder(encoder_layer, nlayers, norm=nn.LayerNorm(d_model))
        self.head = nn.Linear(d_model, classes)

    def forward(self, tokens):
        return self.head(self.encoder(self.embedding(tokens)).mean(dim=1))


class Seq2SeqTransformer(nn.Module):
    """An encoder-decoder in the style of the PyTorch translation tutorial: token embeddings, an encoder stack, a
    decoder stack with a final norm under a causal target mask and source / target padding masks, a generator."""

    def __init__(self, vocab=12, d_model=16, nhead=4, d_hid=24, layers=2):
        super().__init__()
        self.embed = nn.Embedding(vocab, d_model)
        self.encoder = nn.TransformerEncoder(nn.TransformerEncoderLayer(d_model, nhead, d_hid, 0.1, batch_first=True),
                                             layers)
        decoder_layer = nn.TransformerDecoderLayer(d_model, nhead, d_hid, 0.1, batch_first=True)
        self.decoder = nn.TransformerDecoder(decoder_layer, layers, norm=nn.LayerNorm(d_model))
        self.generator = nn.Linear(d_model, vocab)

    def forward(self, source, target):
        memory = self.encoder(self.embed(source))
        steps = target.shape[1]
        causal = torch.triu(torch.ones(steps, steps, dtype=torch.bool, device=target.device), diagonal=1)
        out = self.decoder(self.embed(target), memory, tgt_mask=causal, tgt_key_padding_mask=target == 1,
                           memory_key_padding_mask=source == 2)
        return self.generator(out)


class PreNormDecoderLayer(nn.Module):
    """A time-major pre-norm GELU nn.TransformerDecoderLayer attending over a memory of another length, with an
    additive memory mask."""

    def __init__(self, d_model=8):
        super().__init__()
        self.layer = nn.TransformerDecoderLayer(d_model, 2, 16, dropout=0.0, activation="gelu", norm_first=True)

    def forward(self, tgt, memory):
        bias = torch.zeros(tgt.shape[0], memory.shape[0]) - torch.arange(memory.shape[0]).float() * 0.5
        return self.layer(tgt, memory, memory_mask=bias)


class EinopsViT(nn.Module):
    """A ViT in lucidrains' vit-pytorch style: einops layers cut patches and pool, einops functions repeat the
    class token and split heads."""

    def __init__(self, patch=2, channels=3, dim=8, heads=2, classes=3):
        super().__init__()
        self.heads = heads
        self.to_patch_embedding = nn.Sequential(
            Rearrange("b c (h p1) (w p2) -> b (h w) (p1 p2 c)", p1=patch, p2=patch),
            nn.LayerNorm(patch * patch * channels),
            nn.Linear(patch * patch * channels, dim),
        )
        self.cls_token = nn.Parameter(torch.randn(1, 1, dim))
        self.to_qkv = nn.Linear(dim, dim * 3, bias=False)
        self.head = nn.Sequential(Reduce("b n d -> b d", "max"), nn.Linear(dim, classes))

    def forward(self, img):
        x = self.to_patch_embedding(img)
        cls_tokens = repeat(self.cls_token, "1 1 d -> b 1 d", b=x.shape[0])
        x = torch.cat((cls_tokens, x), dim=1)
        q, k, v = (rearrange(t, "b n (h d) -> b h n d", h=self.heads) for t in self.to_qkv(x).chunk(3, dim=-1))
        attn = (q @ k.transpose(-1, -2) * q.shape[-1] ** -0.5).softmax(dim=-1)
        out = rearrange(attn @ v, "b h n d -> b n (h d)")
        return self.head(x + out), reduce(out, "b n d -> b d", "mean")


class TiedEmbeddingLM(nn.Module):
    """A GPT-style head tied to the token embedding (`F.linear(h, self.tok.weight)`), a learned position table
    read by slicing its weight, a projection applied twice through its weights, a norm's scale read."""

    def __init__(self, vocab=11, max_len=9, dim=6):
        super().__init__()
        self.tok = nn.Embedding(vocab, dim)
        self.pos = nn.Embedding(max_len, dim)
        self.proj = nn.Linear(dim, dim)
        self.ln = nn.LayerNorm(dim)

    def forward(self, ids):
        h = self.tok(ids) + self.pos.weight[: ids.shape[1]]
        h = F.linear(torch.tanh(self.proj(h)), self.proj.weight, self.proj.bias)
        h = self.ln(h) * self.ln.weight.abs().mean()
        return F.linear(h, self.tok.weight), h @ self.proj.weight.T


class FunctionalDropoutMLP(nn.Module):
    """Dropout applied functionally with the module's flag, as older code (GCN, AWD-LSTM ports) writes it."""

    def __init__(self, dim=6, p=0.3):
        super().__init__()
        self.p = p
        self.fc1 = nn.Linear(dim, 8)
        self.fc2 = nn.Linear(8, 3)

    def forward(self, x):
        x = F.dropout(x, self.p, training=self.training)
        h = F.dropout(F.relu(self.fc1(x)), 0.5, self.training)
        return self.fc2(h)


class TimmMlp(nn.Module):
    """timm's Mlp: the activation and norm classes are constructor arguments (`act_layer=nn.GELU`)."""

    def __init__(self, in_features, hidden_features=None, out_features=None, act_layer=nn.GELU, norm_layer=None,
                 bias=True, drop=0.0):
        super().__init__()
        out_features = out_features or in_features
        hidden_features = hidden_features or in_features
        self.fc1 = nn.Linear(in_features, hidden_features, bias=bias)
        self.act = act_layer()
        self.norm = norm_layer(hidden_features) if norm_layer is not None else nn.Identity()
        self.fc2 = nn.Linear(hidden_features, out_features, bias=bias)
        self.drop = nn.Dropout(drop)

    def forward(self, x):
        return self.drop(self.fc2(self.norm(self.drop(self.act(self.fc1(x))))))


class TimmBlock(nn.Module):
    """A timm-style pre-norm block: `norm_layer = norm_layer or partial(nn.LayerNorm, eps=1e-6)`, classes passed
    down to a sub-module, a norm with a variable bias flag."""

    def __init__(self, dim=8, mlp_ratio=2.0, norm_layer=None, act_layer=nn.SiLU, proj_bias=False):
        super().__init__()
        norm_layer = norm_layer or partial(nn.LayerNorm, eps=1e-6)
        self.norm1 = norm_layer(dim)
        self.mlp = TimmMlp(dim, int(dim * mlp_ratio), act_layer=act_layer, norm_layer=norm_layer)
        self.norm2 = nn.LayerNorm(dim, bias=proj_bias)

    def forward(self, x):
        return self.norm2(x + self.mlp(self.norm1(x)))


class InPlaceSteps(nn.Module):
    """In-place tensor methods as statements on tensors no other name refers to (`h.mul_(0.5)`)."""

    def __init__(self, dim=6):
        super().__init__()
        self.fc = nn.Linear(dim, dim)
        self.shift = nn.Parameter(torch.randn(dim))

    def forward(self, x):
        h = self.fc(x)
        h.mul_(0.5)
        h.add_(self.shift)
        h.clamp_(-0.3, 0.4)
        g = torch.sigmoid(x)
        g.sub_(0.5)
        g.abs_()
        g.div_(2)
        return h + g


class PreNormEncoderLayer(nn.Module):
    """A time-major pre-norm GELU nn.TransformerEncoderLayer with a projection in front."""

    def __init__(self, dim=8, d_model=12):
        super().__init__()
        self.proj = nn.Linear(dim, d_model)
        self.layer = nn.TransformerEncoderLayer(d_model=d_model, nhead=3, dim_feedforward=24, activation="gelu",
                                                norm_first=True)

    def forward(self, x):
        return self.layer(self.proj(x))


class RMSNormBlock(nn.Module):
    """A LLaMA-style residual MLP on torch's nn.RMSNorm (its default eps, and an explicit one)."""

    def __init__(self, dim=8, hidden=16):
        super().__init__()
        self.norm = nn.RMSNorm(dim)
        self.up = nn.Linear(dim, hidden)
        self.down = nn.Linear(hidden, dim)
        self.out_norm = nn.RMSNorm([dim], eps=1e-6)

    def forward(self, x):
        return self.out_norm(x + self.down(F.silu(self.up(self.norm(x)))))


#: classes the translation must refuse: (source, a phrase the refusal must contain)
HEADER = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\n\n"
class MaskedMultiheadAttention(nn.Module):
    """nn.MultiheadAttention with a boolean causal mask, the last key position padded out, and the weights of
    every head returned."""

    def __init__(self, dim=16, heads=4):
        super().__init__()
        self.attn = nn.MultiheadAttention(dim, heads, batch_first=True)

    def forward(self, x):
        steps = x.shape[1]
        causal = torch.triu(torch.ones(steps, steps, dtype=torch.bool), diagonal=1)
        padding = (torch.arange(steps) >= steps - 1).repeat(x.shape[0], 1)
        out, weights = self.attn(x, x, x, key_padding_mask=padding, attn_mask=causal, average_attn_weights=False)
        return out, weights


class CausalEncoder(nn.Module):
    """A causal language-model encoder: an additive float mask of -inf above the diagonal given to a stack of
    nn.TransformerEncoderLayers, then one more layer with a key padding mask."""

    def __init__(self, vocab=20, d_model=16, nhead=4, nlayers=2):
        super().__init__()
        self.embedding = nn.Embedding(vocab, d_model)
        layer = nn.TransformerEncoderLayer(d_model, nhead, 32, dropout=0.0, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, nlayers)
        self.last = nn.TransformerEncoderLayer(d_model, nhead, 32, dropout=0.0, batch_first=True, norm_first=True)
        self.lm_head = nn.Linear(d_model, vocab)

    def forward(self, tokens):
        steps = tokens.shape[1]
        mask = torch.triu(torch.full((steps, steps), float("-inf")), diagonal=1)
        h = self.encoder(self.embedding(tokens), mask=mask)
        h = self.last(h, src_key_padding_mask=tokens == 1)
        return self.lm_head(h)


class SeededRecurrent(nn.Module):
    """Recurrent layers started from states computed from the input: a 2-layer bidirectional LSTM given (h_0, c_0),
    a GRU given h_0."""

    def __init__(self, dim=6, hidden=8):
        super().__init__()
        self.init_state = nn.Linear(dim, hidden)
        self.lstm = nn.LSTM(dim, hidden, num_layers=2, bidirectional=True, batch_first=True)
        self.gru = nn.GRU(2 * hidden, hidden, batch_first=True)

    def forward(self, x):
        h = torch.tanh(self.init_state(x.mean(dim=1)))
        h0 = h.unsqueeze(0).repeat(4, 1, 1)
        out, (hn, cn) = self.lstm(x, (h0, torch.zeros_like(h0)))
        out, last = self.gru(out, h.unsqueeze(0))
        return out, last[0] + hn[-1] + cn[-1]


class PaddedQueryAttention(nn.Module):
    """F.scaled_dot_product_attention where the first query may attend to no key (PyTorch gives it zeros)."""

    def __init__(self, dim=8):
        super().__init__()
        self.qkv = nn.Linear(dim, dim * 3)

    def forward(self, x):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        steps = x.shape[1]
        keep = torch.arange(steps)[:, None] > 0
        return F.scaled_dot_product_attention(q, k, v, attn_mask=keep)


class ReflectResidualBlock(nn.Module):
    """CycleGAN's generator block: reflection padding, convolution, instance norm (affine in the first, plain in the
    second), a residual sum; a constant pad of its own value and a crop around it."""

    def __init__(self, dim=4):
        super().__init__()
        self.block = nn.Sequential(nn.ReflectionPad2d(1), nn.Conv2d(dim, dim, 3), nn.InstanceNorm2d(dim, affine=True),
                                   nn.ReLU(True), nn.ReflectionPad2d(1), nn.Conv2d(dim, dim, 3),
                                   nn.InstanceNorm2d(dim))
        self.pad = nn.ConstantPad2d((1, 0, 2, 0), 0.5)
        self.norm1d = nn.InstanceNorm1d(dim, eps=1e-3)

    def forward(self, x):
        y = self.pad(x + self.block(x))
        return y, self.norm1d(y.flatten(2))


class SubPixelUpsampler(nn.Module):
    """ESPCN's sub-pixel upsampling: a convolution to r² channels per output channel, nn.PixelShuffle, a hard tanh
    to the pixel range; F.pixel_unshuffle back and nn.PixelUnshuffle of the input."""

    def __init__(self, channels=3, factor=2):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels * factor ** 2, 3, padding=1)
        self.shuffle = nn.PixelShuffle(factor)
        self.clamp = nn.Hardtanh(0.0, 1.0)
        self.unshuffle = nn.PixelUnshuffle(2)

    def forward(self, x):
        up = self.clamp(self.shuffle(self.conv(x)))
        return up, F.pixel_unshuffle(up, 2) + F.pixel_shuffle(self.unshuffle(x).repeat(1, 4, 1, 1), 2).mean()


class AdaptivePoolHead(nn.Module):
    """VGG's head on an input the output size does not divide: nn.AdaptiveAvgPool2d((3, 3)) (overlapping windows),
    an adaptive max pool keeping one axis, F.adaptive_avg_pool2d to 1 and to (2, 3)."""

    def __init__(self, channels=3, classes=5):
        super().__init__()
        self.pool = nn.AdaptiveAvgPool2d((3, 3))
        self.max_rows = nn.AdaptiveMaxPool2d((2, None))
        self.fc = nn.Linear(channels * 9, classes)

    def forward(self, x):
        pooled = torch.flatten(self.pool(x), 1)
        return self.fc(pooled), self.max_rows(x), F.adaptive_avg_pool2d(x, 1), F.adaptive_avg_pool2d(x, (2, 3))


class GatheredFeatures(nn.Module):
    """torch.gather of the features at each row's strongest step, buffers from new_zeros / new_full, the soft
    activations as layers (nn.Softsign, nn.LogSigmoid, nn.GLU)."""

    def __init__(self, dim=5):
        super().__init__()
        self.proj = nn.Linear(dim, 2 * dim)
        self.glu = nn.GLU()
        self.soft = nn.Sequential(nn.Softsign(), nn.LogSigmoid())

    def forward(self, x):
        h = self.glu(self.proj(x))
        best = h.sum(-1).argmax(dim=1, keepdim=True)
        picked = torch.gather(h, 1, best.unsqueeze(-1).repeat(1, 1, h.shape[-1]))
        first = h.gather(2, torch.zeros_like(best).unsqueeze(1))
        base = x.new_zeros(x.shape[0], 1, x.shape[2]) + x.new_full((1, 1, 1), 0.5)
        return self.soft(picked + base), first


class EdgePadding(nn.Module):
    """Replicate and circular padding layers (the 1-D one over a flattened image), a zero pad by a tuple."""

    def __init__(self):
        super().__init__()
        self.replicate = nn.ReplicationPad2d((1, 2, 0, 1))
        self.circular = nn.CircularPad1d(2)
        self.zero = nn.ZeroPad2d((0, 1, 1, 0))

    def forward(self, x):
        return self.replicate(x), self.circular(x.flatten(2)), self.zero(x)


class ReflectConvBlock(nn.Module):
    """A style-transfer residual block whose convolutions pad by reflection (padding_mode), strided and not."""

    def __init__(self, channels=4):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1, padding_mode="reflect")
        self.norm = nn.InstanceNorm2d(channels, affine=True)
        self.conv2 = nn.Conv2d(channels, channels, (3, 5), stride=2, padding=(1, 2), padding_mode="reflect")

    def forward(self, x):
        return self.conv2(x + F.relu(self.norm(self.conv1(x))))


class WrappedConv(nn.Module):
    """Circular (a ring of sensors) and replicate padding modes on 1-D and 2-D convolutions."""

    def __init__(self):
        super().__init__()
        self.ring = nn.Conv1d(3, 4, 5, padding=2, padding_mode="circular")
        self.edge = nn.Conv2d(3, 2, 3, padding=1, padding_mode="replicate", bias=False)

    def forward(self, x):
        return self.ring(x.flatten(2)), self.edge(x)


class FeaturePyramidMerge(nn.Module):
    """FPN's top-down merge: the coarse map resized to the fine one's size (bilinear, half-pixel), a corner-aligned
    bilinear upsampling by 2 (DeepLab), nearest to a size, a fractional scale, nn.Upsample(size=...)."""

    def __init__(self, channels=4):
        super().__init__()
        self.lateral = nn.Conv2d(channels, channels, 1)
        self.up = nn.Upsample(size=(6, 9), mode="bilinear")

    def forward(self, fine, coarse):
        top = F.interpolate(coarse, size=fine.shape[-2:], mode="bilinear", align_corners=False)
        merged = self.lateral(fine) + top
        aligned = F.interpolate(merged, scale_factor=2, mode="bilinear", align_corners=True)
        nearest = F.interpolate(coarse, size=(8, 11))
        fractional = F.interpolate(fine, scale_factor=0.6, mode="bilinear")
        return merged, aligned, nearest, fractional, self.up(coarse)


class ResizedSequence(nn.Module):
    """1-D resizing: linear to a size, nearest-exact by 1.5, corner-aligned linear."""

    def forward(self, x):
        return (F.interpolate(x, size=11, mode="linear"), F.interpolate(x, scale_factor=1.5, mode="nearest-exact"),
                F.interpolate(x, size=4, mode="linear", align_corners=True))


class ChannelShuffleUnit(nn.Module):
    """ShuffleNet's unit: a grouped 1x1 convolution, nn.ChannelShuffle, a depthwise 3x3, a residual sum."""

    def __init__(self, channels=4, groups=2):
        super().__init__()
        self.reduce = nn.Conv2d(channels, channels, 1, groups=groups)
        self.shuffle = nn.ChannelShuffle(groups)
        self.depthwise = nn.Conv2d(channels, channels, 3, padding=1, groups=channels)

    def forward(self, x):
        return x + self.depthwise(self.shuffle(F.relu(self.reduce(x))))


class PrototypeDistances(nn.Module):
    """A prototypical-network head: Euclidean and L1 distances to learned prototypes with torch.cdist, and
    attention scores with a bias through torch.baddbmm / torch.addmm."""

    def __init__(self, dim=4, prototypes=3):
        super().__init__()
        self.prototypes = nn.Parameter(torch.randn(prototypes, dim))
        self.bias = nn.Parameter(torch.randn(prototypes))

    def forward(self, x):
        protos = self.prototypes.unsqueeze(0).repeat(x.shape[0], 1, 1)
        euclid = torch.cdist(x, protos)
        manhattan = torch.cdist(x, protos, p=1)
        scores = torch.baddbmm(euclid, x, protos.transpose(1, 2), beta=0.5, alpha=2.0)
        flat = torch.addmm(self.bias, x.flatten(0, 1), self.prototypes.t())
        return scores - manhattan, flat


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class QuickGELU(nn.Module):
    """CLIP's activation."""

    def forward(self, x: torch.Tensor):
        return x * torch.sigmoid(1.702 * x)


class CLIPLayerNorm(nn.LayerNorm):
    """CLIP's LayerNorm: a subclass of the framework's, computing in float32."""

    def forward(self, x: torch.Tensor):
        orig_type = x.dtype
        ret = super().forward(x.type(torch.float32))
        return ret.type(orig_type)


class GroupNorm32(nn.GroupNorm):
    """Guided diffusion's group norm, subclassed to compute in float32."""

    def forward(self, x):
        return super().forward(x.float()).type(x.dtype)


class WhisperLinear(nn.Linear):
    """Whisper's Linear: the parent's weights cast to the input's dtype, in F.linear."""

    def forward(self, x: Tensor) -> Tensor:
        return F.linear(x, self.weight.to(x.dtype), None if self.bias is None else self.bias.to(x.dtype))


class ScaledLayerNorm(nn.LayerNorm):
    """A subclass with its own constructor, reading the parent's eps."""

    def __init__(self, dim, scale=0.5):
        super().__init__(dim, eps=1e-6)
        self.scale = scale

    def forward(self, x):
        return super().forward(x) * self.scale + self.eps


class CLIPResidualAttentionBlock(nn.Module):
    def __init__(self, d_model: int, n_head: int, attn_mask: torch.Tensor = None):
        super().__init__()
        self.attn = nn.MultiheadAttention(d_model, n_head)
        self.ln_1 = CLIPLayerNorm(d_model)
        self.mlp = nn.Sequential(OrderedDict([
            ("c_fc", WhisperLinear(d_model, d_model * 4)),
            ("gelu", QuickGELU()),
            ("c_proj", nn.Linear(d_model * 4, d_model))
        ]))
        self.ln_2 = CLIPLayerNorm(d_model)
        self.attn_mask = attn_mask

    def attention(self, x: torch.Tensor):
        self.attn_mask = self.attn_mask.to(dtype=x.dtype, device=x.device) if self.attn_mask is not None else None
        return self.attn(x, x, x, need_weights=False, attn_mask=self.attn_mask)[0]

    def forward(self, x: torch.Tensor):
        x = x + self.attention(self.ln_1(x))
        x = x + self.mlp(self.ln_2(x))
        return x


class CLIPTransformer(nn.Module):
    def __init__(self, width: int, layers: int, heads: int, attn_mask: torch.Tensor = None):
        super().__init__()
        self.width = width
        self.layers = layers
        self.resblocks = nn.Sequential(*[CLIPResidualAttentionBlock(width, heads, attn_mask) for _ in range(layers)])

    def forward(self, x: torch.Tensor):
        return self.resblocks(x)


class CLIPTextEncoder(nn.Module):
    """CLIP's text tower: a causal mask built by a method __init__ calls (empty, fill_, triu_), token and position
    embeddings, the end-of-text token's features projected."""

    def __init__(self, context_length=5, width=8, layers=2, heads=2, vocab_size=11, embed_dim=6):
        super().__init__()
        self.context_length = context_length
        self.transformer = CLIPTransformer(width=width, layers=layers, heads=heads,
                                           attn_mask=self.build_attention_mask())
        self.token_embedding = nn.Embedding(vocab_size, width)
        self.positional_embedding = nn.Parameter(torch.empty(self.context_length, width))
        self.ln_final = CLIPLayerNorm(width)
        self.text_projection = nn.Parameter(torch.empty(width, embed_dim))
        nn.init.normal_(self.token_embedding.weight, std=0.02)
        nn.init.normal_(self.positional_embedding, std=0.01)
        nn.init.normal_(self.text_projection, std=width ** -0.5)

    def build_attention_mask(self):
        mask = torch.empty(self.context_length, self.context_length)
        mask.fill_(float("-inf"))
        mask.triu_(1)
        return mask

    def forward(self, text):
        x = self.token_embedding(text)
        x = x + self.positional_embedding
        x = x.permute(1, 0, 2)
        x = self.transformer(x)
        x = x.permute(1, 0, 2)
        x = self.ln_final(x)
        x = x[torch.arange(x.shape[0]), text.argmax(dim=-1)] @ self.text_projection
        return x


class TutorialRNN(nn.Module):
    """The classic tutorials' LSTM classifier: initial states made with a module-level device."""

    def __init__(self, input_size, hidden_size, num_layers, num_classes):
        super(TutorialRNN, self).__init__()  # noqa: UP008 (as the original writes it)
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.lstm = nn.LSTM(input_size, hidden_size, num_layers, batch_first=True)
        self.fc = nn.Linear(hidden_size, num_classes)

    def forward(self, x):
        h0 = torch.zeros(self.num_layers, x.size(0), self.hidden_size).to(device)
        c0 = torch.zeros(self.num_layers, x.size(0), self.hidden_size).to(device)
        out, _ = self.lstm(x, (h0, c0))
        out = self.fc(out[:, -1, :])
        return out


class DeviceMoves(nn.Module):
    """Tensors moved to devices every way model code does it."""

    def __init__(self, n=6):
        super().__init__()
        self.fc = nn.Linear(n, n)
        self.register_buffer("scale", torch.ones(n))

    def forward(self, x):
        dev = x.device
        s = self.scale.to(dtype=x.dtype, device=x.device)
        h = self.fc(x).to(dev) * s
        noise = torch.zeros(x.shape, device=dev).to(device)
        return h.to(torch.device("cpu")) + noise.cpu()


class DCGANGenerator(nn.Module):
    """The PyTorch examples' DCGAN generator, with its data_parallel branch."""

    def __init__(self, ngpu, nz=16, ngf=8, nc=3):
        super(DCGANGenerator, self).__init__()  # noqa: UP008 (as the original writes it)
        self.ngpu = ngpu
        self.main = nn.Sequential(
            nn.ConvTranspose2d(nz, ngf * 8, 4, 1, 0, bias=False),
            nn.BatchNorm2d(ngf * 8),
            nn.ReLU(True),
            nn.ConvTranspose2d(ngf * 8, ngf * 4, 4, 2, 1, bias=False),
            nn.BatchNorm2d(ngf * 4),
            nn.ReLU(True),
            nn.ConvTranspose2d(ngf * 4, nc, 4, 2, 1, bias=False),
            nn.Tanh()
        )

    def forward(self, input):
        if input.is_cuda and self.ngpu > 1:
            output = nn.parallel.data_parallel(self.main, input, range(self.ngpu))
        else:
            output = self.main(input)
        return output


class DCGANDiscriminator(nn.Module):
    def __init__(self, ngpu, nc=3, ndf=8):
        super(DCGANDiscriminator, self).__init__()  # noqa: UP008 (as the original writes it)
        self.ngpu = ngpu
        self.main = nn.Sequential(
            nn.Conv2d(nc, ndf, 4, 2, 1, bias=False),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf, ndf * 2, 4, 2, 1, bias=False),
            nn.BatchNorm2d(ndf * 2),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf * 2, 1, 4, 1, 0, bias=False),
            nn.Sigmoid()
        )

    def forward(self, input):
        if input.is_cuda and self.ngpu > 1:
            output = nn.parallel.data_parallel(self.main, input, range(self.ngpu))
        else:
            output = self.main(input)
        return output.view(-1, 1).squeeze(1)


class StyleConvLayer(torch.nn.Module):
    """fast-neural-style's ConvLayer: a reflection pad sized by the kernel."""

    def __init__(self, in_channels, out_channels, kernel_size, stride):
        super(StyleConvLayer, self).__init__()  # noqa: UP008 (as the original writes it)
        reflection_padding = kernel_size // 2
        self.reflection_pad = torch.nn.ReflectionPad2d(reflection_padding)
        self.conv2d = torch.nn.Conv2d(in_channels, out_channels, kernel_size, stride)

    def forward(self, x):
        out = self.reflection_pad(x)
        out = self.conv2d(out)
        return out


class StyleResidualBlock(torch.nn.Module):
    def __init__(self, channels):
        super(StyleResidualBlock, self).__init__()  # noqa: UP008 (as the original writes it)
        self.conv1 = StyleConvLayer(channels, channels, kernel_size=3, stride=1)
        self.in1 = torch.nn.InstanceNorm2d(channels, affine=True)
        self.conv2 = StyleConvLayer(channels, channels, kernel_size=3, stride=1)
        self.in2 = torch.nn.InstanceNorm2d(channels, affine=True)
        self.relu = torch.nn.ReLU()

    def forward(self, x):
        residual = x
        out = self.relu(self.in1(self.conv1(x)))
        out = self.in2(self.conv2(out))
        out = out + residual
        return out


class StyleUpsampleConvLayer(torch.nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride, upsample=None):
        super(StyleUpsampleConvLayer, self).__init__()  # noqa: UP008 (as the original writes it)
        self.upsample = upsample
        reflection_padding = kernel_size // 2
        self.reflection_pad = torch.nn.ReflectionPad2d(reflection_padding)
        self.conv2d = torch.nn.Conv2d(in_channels, out_channels, kernel_size, stride)

    def forward(self, x):
        x_in = x
        if self.upsample:
            x_in = torch.nn.functional.interpolate(x_in, mode='nearest', scale_factor=self.upsample)
        out = self.reflection_pad(x_in)
        out = self.conv2d(out)
        return out


class ConvPadFromKernel(nn.Module):
    """Paddings computed from the kernel size."""

    def __init__(self, cin, cout, kernel_size=3):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, kernel_size, 1, padding=kernel_size // 2, bias=False)
        self.pool = nn.MaxPool2d(kernel_size, stride=1, padding=(kernel_size - 1) // 2)

    def forward(self, x):
        return self.pool(self.conv(x)).type(torch.float32)


class MaxLikelihoodHead(nn.Module):
    """Log-sum-exp and a dtype kept in a local (x.type(orig))."""

    def __init__(self, dim, n):
        super().__init__()
        self.proj = nn.Linear(dim, n)

    def forward(self, x):
        orig = x.dtype
        logits = self.proj(x).type(torch.float64).type(orig)
        probs = logits.softmax(dim=-1)
        top = probs.argmax(dim=-1, keepdim=True)
        return torch.gather(probs, -1, top).squeeze(-1) + logits.logsumexp(-1) - torch.logsumexp(logits, dim=0).sum()



class GPT2Conv1D(nn.Module):
    """GPT-2's Conv1D: a linear layer with transposed weights, applied with addmm on the flattened input."""

    def __init__(self, nf, nx):
        super().__init__()
        self.nf = nf
        self.weight = nn.Parameter(torch.empty(nx, nf))
        self.bias = nn.Parameter(torch.zeros(nf))
        nn.init.normal_(self.weight, std=0.02)

    def forward(self, x):
        size_out = x.size()[:-1] + (self.nf,)
        x = torch.addmm(self.bias, x.view(-1, x.size(-1)), self.weight)
        x = x.view(size_out)
        return x


class GPT2Attention(nn.Module):
    """GPT-2's attention as transformers writes it: a boolean causal buffer, torch.finfo's minimum as the mask
    value, dtypes carried from tensor to tensor, heads split and merged by methods."""

    def __init__(self, embed_dim=8, num_heads=2, max_positions=16):
        super().__init__()
        self.register_buffer(
            "bias",
            torch.tril(torch.ones((max_positions, max_positions), dtype=torch.bool)).view(
                1, 1, max_positions, max_positions
            ),
            persistent=False,
        )
        self.embed_dim = embed_dim
        self.num_heads = num_heads
        self.head_dim = self.embed_dim // self.num_heads
        self.split_size = self.embed_dim
        self.scale_attn_weights = True
        self.c_attn = GPT2Conv1D(3 * self.embed_dim, self.embed_dim)
        self.c_proj = GPT2Conv1D(self.embed_dim, self.embed_dim)
        self.attn_dropout = nn.Dropout(0.1)
        self.resid_dropout = nn.Dropout(0.1)

    def _attn(self, query, key, value, attention_mask=None):
        attn_weights = torch.matmul(query, key.transpose(-1, -2))
        if self.scale_attn_weights:
            attn_weights = attn_weights / torch.full(
                [], value.size(-1) ** 0.5, dtype=attn_weights.dtype, device=attn_weights.device
            )
        query_length, key_length = query.size(-2), key.size(-2)
        causal_mask = self.bias[:, :, key_length - query_length: key_length, :key_length]
        mask_value = torch.finfo(attn_weights.dtype).min
        mask_value = torch.full([], mask_value, dtype=attn_weights.dtype, device=attn_weights.device)
        attn_weights = torch.where(causal_mask, attn_weights.to(attn_weights.dtype), mask_value)
        attn_weights = nn.functional.softmax(attn_weights, dim=-1)
        attn_weights = attn_weights.type(value.dtype)
        attn_weights = self.attn_dropout(attn_weights)
        attn_output = torch.matmul(attn_weights, value)
        return attn_output, attn_weights

    def _split_heads(self, tensor, num_heads, attn_head_size):
        new_shape = tensor.size()[:-1] + (num_heads, attn_head_size)
        tensor = tensor.view(new_shape)
        return tensor.permute(0, 2, 1, 3)

    def _merge_heads(self, tensor, num_heads, attn_head_size):
        tensor = tensor.permute(0, 2, 1, 3).contiguous()
        new_shape = tensor.size()[:-2] + (num_heads * attn_head_size,)
        return tensor.view(new_shape)

    def forward(self, hidden_states):
        query, key, value = self.c_attn(hidden_states).split(self.split_size, dim=2)
        query = self._split_heads(query, self.num_heads, self.head_dim)
        key = self._split_heads(key, self.num_heads, self.head_dim)
        value = self._split_heads(value, self.num_heads, self.head_dim)
        attn_output, attn_weights = self._attn(query, key, value)
        attn_output = self._merge_heads(attn_output, self.num_heads, self.head_dim)
        attn_output = self.c_proj(attn_output)
        attn_output = self.resid_dropout(attn_output)
        return attn_output


class T5LayerNorm(nn.Module):
    def __init__(self, hidden_size, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        variance = hidden_states.to(torch.float32).pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
        if self.weight.dtype in [torch.float16, torch.bfloat16]:
            hidden_states = hidden_states.to(self.weight.dtype)
        return self.weight * hidden_states


def llama_rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


class LlamaRotaryApplied(nn.Module):
    """transformers' Llama rotary embedding under @torch.no_grad(), applied to its input."""

    def __init__(self, dim, base=10000):
        super().__init__()
        inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim))
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    @torch.no_grad()
    def forward(self, x, position_ids):
        inv_freq_expanded = self.inv_freq[None, :, None].float().expand(position_ids.shape[0], -1, 1)
        position_ids_expanded = position_ids[:, None, :].float()
        freqs = (inv_freq_expanded.float() @ position_ids_expanded.float()).transpose(1, 2)
        emb = torch.cat((freqs, freqs), dim=-1)
        cos = emb.cos()
        sin = emb.sin()
        q = x * cos + llama_rotate_half(x) * sin
        return q.to(dtype=x.dtype)


class GRN(nn.Module):
    """ConvNeXt-V2's global response normalization (channels last)."""

    def __init__(self, dim):
        super().__init__()
        self.gamma = nn.Parameter(torch.zeros(1, 1, 1, dim))
        self.beta = nn.Parameter(torch.zeros(1, 1, 1, dim))

    def forward(self, x):
        Gx = torch.norm(x, p=2, dim=(1, 2), keepdim=True)
        Nx = Gx / (Gx.mean(dim=-1, keepdim=True) + 1e-6)
        return self.gamma * (x * Nx) + self.beta + x


class AttentionGate(nn.Module):
    """Attention U-Net's attention gate."""

    def __init__(self, F_g, F_l, F_int):
        super(AttentionGate, self).__init__()  # noqa: UP008 (as the original writes it)
        self.W_g = nn.Sequential(
            nn.Conv2d(F_g, F_int, kernel_size=1, stride=1, padding=0, bias=True),
            nn.BatchNorm2d(F_int)
        )
        self.W_x = nn.Sequential(
            nn.Conv2d(F_l, F_int, kernel_size=1, stride=1, padding=0, bias=True),
            nn.BatchNorm2d(F_int)
        )
        self.psi = nn.Sequential(
            nn.Conv2d(F_int, 1, kernel_size=1, stride=1, padding=0, bias=True),
            nn.BatchNorm2d(1),
            nn.Sigmoid()
        )
        self.relu = nn.ReLU(inplace=True)

    def forward(self, g, x):
        g1 = self.W_g(g)
        x1 = self.W_x(x)
        psi = self.relu(g1 + x1)
        psi = self.psi(psi)
        return x * psi


class CycleGANResnetBlock(nn.Module):
    """pytorch-CycleGAN-and-pix2pix's ResnetBlock: its layers listed by a method __init__ calls, the norm layer
    class passed on to it."""

    def __init__(self, dim, padding_type='reflect', norm_layer=nn.BatchNorm2d, use_dropout=False, use_bias=True):
        super(CycleGANResnetBlock, self).__init__()  # noqa: UP008 (as the original writes it)
        self.conv_block = self.build_conv_block(dim, padding_type, norm_layer, use_dropout, use_bias)

    def build_conv_block(self, dim, padding_type, norm_layer, use_dropout, use_bias):
        conv_block = []
        p = 0
        if padding_type == 'reflect':
            conv_block += [nn.ReflectionPad2d(1)]
        elif padding_type == 'replicate':
            conv_block += [nn.ReplicationPad2d(1)]
        elif padding_type == 'zero':
            p = 1
        else:
            raise NotImplementedError('padding [%s] is not implemented' % padding_type)  # noqa: UP031 (as the original writes it)

        conv_block += [nn.Conv2d(dim, dim, kernel_size=3, padding=p, bias=use_bias), norm_layer(dim), nn.ReLU(True)]
        if use_dropout:
            conv_block += [nn.Dropout(0.5)]

        p = 0
        if padding_type == 'reflect':
            conv_block += [nn.ReflectionPad2d(1)]
        elif padding_type == 'replicate':
            conv_block += [nn.ReplicationPad2d(1)]
        elif padding_type == 'zero':
            p = 1
        else:
            raise NotImplementedError('padding [%s] is not implemented' % padding_type)  # noqa: UP031 (as the original writes it)
        conv_block += [nn.Conv2d(dim, dim, kernel_size=3, padding=p, bias=use_bias), norm_layer(dim)]

        return nn.Sequential(*conv_block)

    def forward(self, x):
        out = x + self.conv_block(x)
        return out



def ldm_nonlinearity(x):
    # swish
    return x * torch.sigmoid(x)


def LdmNormalize(in_channels, num_groups=4):
    return torch.nn.GroupNorm(num_groups=num_groups, num_channels=in_channels, eps=1e-6, affine=True)


class LdmDownsample(nn.Module):
    """latent-diffusion's Downsample: an asymmetric pad held in a local, then a strided convolution."""

    def __init__(self, in_channels, with_conv):
        super().__init__()
        self.with_conv = with_conv
        if self.with_conv:
            self.conv = torch.nn.Conv2d(in_channels, in_channels, kernel_size=3, stride=2, padding=0)

    def forward(self, x):
        if self.with_conv:
            pad = (0, 1, 0, 1)
            x = torch.nn.functional.pad(x, pad, mode="constant", value=0)
            x = self.conv(x)
        else:
            x = torch.nn.functional.avg_pool2d(x, kernel_size=2, stride=2)
        return x


class LdmResnetBlock(nn.Module):
    """latent-diffusion's ResnetBlock: keyword-only options, a time embedding added per channel."""

    def __init__(self, *, in_channels, out_channels=None, conv_shortcut=False, dropout=0.0, temb_channels=16):
        super().__init__()
        self.in_channels = in_channels
        out_channels = in_channels if out_channels is None else out_channels
        self.out_channels = out_channels
        self.use_conv_shortcut = conv_shortcut
        self.norm1 = LdmNormalize(in_channels)
        self.conv1 = torch.nn.Conv2d(in_channels, out_channels, kernel_size=3, stride=1, padding=1)
        if temb_channels > 0:
            self.temb_proj = torch.nn.Linear(temb_channels, out_channels)
        self.norm2 = LdmNormalize(out_channels)
        self.dropout = torch.nn.Dropout(dropout)
        self.conv2 = torch.nn.Conv2d(out_channels, out_channels, kernel_size=3, stride=1, padding=1)
        if self.in_channels != self.out_channels:
            if self.use_conv_shortcut:
                self.conv_shortcut = torch.nn.Conv2d(in_channels, out_channels, kernel_size=3, stride=1, padding=1)
            else:
                self.nin_shortcut = torch.nn.Conv2d(in_channels, out_channels, kernel_size=1, stride=1, padding=0)

    def forward(self, x, temb):
        h = x
        h = self.norm1(h)
        h = ldm_nonlinearity(h)
        h = self.conv1(h)
        if temb is not None:
            h = h + self.temb_proj(ldm_nonlinearity(temb))[:, :, None, None]
        h = self.norm2(h)
        h = ldm_nonlinearity(h)
        h = self.dropout(h)
        h = self.conv2(h)
        if self.in_channels != self.out_channels:
            if self.use_conv_shortcut:
                x = self.conv_shortcut(x)
            else:
                x = self.nin_shortcut(x)
        return x + h


class LdmAttnBlock(nn.Module):
    """latent-diffusion's spatial self-attention with bmm and int(c) ** -0.5."""

    def __init__(self, in_channels):
        super().__init__()
        self.in_channels = in_channels
        self.norm = LdmNormalize(in_channels)
        self.q = torch.nn.Conv2d(in_channels, in_channels, kernel_size=1, stride=1, padding=0)
        self.k = torch.nn.Conv2d(in_channels, in_channels, kernel_size=1, stride=1, padding=0)
        self.v = torch.nn.Conv2d(in_channels, in_channels, kernel_size=1, stride=1, padding=0)
        self.proj_out = torch.nn.Conv2d(in_channels, in_channels, kernel_size=1, stride=1, padding=0)

    def forward(self, x):
        h_ = x
        h_ = self.norm(h_)
        q = self.q(h_)
        k = self.k(h_)
        v = self.v(h_)
        b, c, h, w = q.shape
        q = q.reshape(b, c, h * w)
        q = q.permute(0, 2, 1)
        k = k.reshape(b, c, h * w)
        w_ = torch.bmm(q, k)
        w_ = w_ * (int(c) ** (-0.5))
        w_ = torch.nn.functional.softmax(w_, dim=2)
        v = v.reshape(b, c, h * w)
        w_ = w_.permute(0, 2, 1)
        h_ = torch.bmm(v, w_)
        h_ = h_.reshape(b, c, h, w)
        h_ = self.proj_out(h_)
        return x + h_


class FrozenBatchNorm2d(nn.Module):
    """torchvision / detectron2's batch norm with fixed statistics, all four held as buffers."""

    def __init__(self, num_features, eps=1e-5):
        super().__init__()
        self.num_features = num_features
        self.eps = eps
        self.register_buffer("weight", torch.ones(num_features))
        self.register_buffer("bias", torch.zeros(num_features))
        self.register_buffer("running_mean", torch.zeros(num_features))
        self.register_buffer("running_var", torch.ones(num_features) - eps)

    def forward(self, x):
        out_dtype = x.dtype
        scale = self.weight * (self.running_var + self.eps).rsqrt()
        bias = self.bias - self.running_mean * scale
        scale = scale.reshape(1, -1, 1, 1)
        bias = bias.reshape(1, -1, 1, 1)
        return x * scale.to(out_dtype) + bias.to(out_dtype)


class MeanShift(nn.Conv2d):
    """EDSR's MeanShift: a 1x1 convolution subclass whose weights __init__ sets and freezes; no forward of its own."""

    def __init__(self, rgb_range, rgb_mean=(0.4488, 0.4371, 0.4040), rgb_std=(1.0, 1.0, 1.0), sign=-1):
        super(MeanShift, self).__init__(3, 3, kernel_size=1)  # noqa: UP008 (as the original writes it)
        std = torch.Tensor(rgb_std)
        self.weight.data = torch.eye(3).view(3, 3, 1, 1) / std.view(3, 1, 1, 1)
        self.bias.data = sign * rgb_range * torch.Tensor(rgb_mean) / std
        for p in self.parameters():
            p.requires_grad = False


class FrozenBackboneHead(nn.Module):
    """Transfer learning: a backbone whose weights are frozen, a head that trains."""

    def __init__(self, n=6):
        super().__init__()
        self.backbone = nn.Sequential(nn.Linear(n, 8), nn.ReLU())
        self.head = nn.Linear(8, 2)
        for param in self.backbone.parameters():
            param.requires_grad = False

    def forward(self, x):
        return self.head(self.backbone(x))


class ResidualDenseBlock(nn.Module):
    """ESRGAN's residual dense block."""

    def __init__(self, num_feat=8, num_grow_ch=4):
        super(ResidualDenseBlock, self).__init__()  # noqa: UP008 (as the original writes it)
        self.conv1 = nn.Conv2d(num_feat, num_grow_ch, 3, 1, 1)
        self.conv2 = nn.Conv2d(num_feat + num_grow_ch, num_grow_ch, 3, 1, 1)
        self.conv3 = nn.Conv2d(num_feat + 2 * num_grow_ch, num_feat, 3, 1, 1)
        self.lrelu = nn.LeakyReLU(negative_slope=0.2, inplace=True)

    def forward(self, x):
        x1 = self.lrelu(self.conv1(x))
        x2 = self.lrelu(self.conv2(torch.cat((x, x1), 1)))
        x3 = self.conv3(torch.cat((x, x1, x2), 1))
        return x3 * 0.2 + x


class LdmResnetStage(nn.Module):
    def __init__(self):
        super().__init__()
        self.block = LdmResnetBlock(in_channels=4, out_channels=8, temb_channels=6)
        self.same = LdmResnetBlock(in_channels=8, temb_channels=0)

    def forward(self, x, temb):
        return self.same(self.block(x, temb), None)



# torchvision's ResNet and MobileNetV2 as torchvision writes them (typed signatures, `_make_layer`, blocks and norm
# layer classes passed around, initialisation loops), at small widths
class TvBasicBlock(nn.Module):
    expansion: int = 1

    def __init__(self, inplanes: int, planes: int, stride: int = 1, downsample: Optional[nn.Module] = None,
                 groups: int = 1, base_width: int = 64, dilation: int = 1,
                 norm_layer: Optional[Callable[..., nn.Module]] = None) -> None:
        super().__init__()
        if norm_layer is None:
            norm_layer = nn.BatchNorm2d
        if groups != 1 or base_width != 64:
            raise ValueError("TvBasicBlock only supports groups=1 and base_width=64")
        if dilation > 1:
            raise NotImplementedError("Dilation > 1 not supported in TvBasicBlock")
        self.conv1 = conv3x3(inplanes, planes, stride)
        self.bn1 = norm_layer(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = conv3x3(planes, planes)
        self.bn2 = norm_layer(planes)
        self.downsample = downsample
        self.stride = stride

    def forward(self, x: Tensor) -> Tensor:
        identity = x
        out = self.conv1(x)
        out = self.bn1(out)
        out = self.relu(out)
        out = self.conv2(out)
        out = self.bn2(out)
        if self.downsample is not None:
            identity = self.downsample(x)
        out += identity
        out = self.relu(out)
        return out


class TvResNet(nn.Module):
    def __init__(self, block: Type[TvBasicBlock] = TvBasicBlock, layers: List[int] = (1, 1, 1, 1),
                 num_classes: int = 10,
                 zero_init_residual: bool = False, groups: int = 1, width_per_group: int = 64,
                 replace_stride_with_dilation: Optional[List[bool]] = None,
                 norm_layer: Optional[Callable[..., nn.Module]] = None) -> None:
        super().__init__()
        if norm_layer is None:
            norm_layer = nn.BatchNorm2d
        self._norm_layer = norm_layer
        self.inplanes = 8
        self.dilation = 1
        if replace_stride_with_dilation is None:
            replace_stride_with_dilation = [False, False, False]
        if len(replace_stride_with_dilation) != 3:
            raise ValueError("replace_stride_with_dilation should be None "
                             f"or a 3-element tuple, got {replace_stride_with_dilation}")
        self.groups = groups
        self.base_width = width_per_group
        self.conv1 = nn.Conv2d(3, self.inplanes, kernel_size=7, stride=2, padding=3, bias=False)
        self.bn1 = norm_layer(self.inplanes)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        self.layer1 = self._make_layer(block, 8, layers[0])
        self.layer2 = self._make_layer(block, 16, layers[1], stride=2, dilate=replace_stride_with_dilation[0])
        self.layer3 = self._make_layer(block, 16, layers[2], stride=2, dilate=replace_stride_with_dilation[1])
        self.layer4 = self._make_layer(block, 32, layers[3], stride=2, dilate=replace_stride_with_dilation[2])
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(32 * block.expansion, num_classes)

        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, (nn.BatchNorm2d, nn.GroupNorm)):
                nn.init.constant_(m.weight, 1)
                nn.init.constant_(m.bias, 0)

        if zero_init_residual:
            for m in self.modules():
                if isinstance(m, TvBasicBlock) and m.bn2.weight is not None:
                    nn.init.constant_(m.bn2.weight, 0)

    def _make_layer(self, block: Type[TvBasicBlock], planes: int, blocks: int, stride: int = 1,
                    dilate: bool = False) -> nn.Sequential:
        norm_layer = self._norm_layer
        downsample = None
        previous_dilation = self.dilation
        if dilate:
            self.dilation *= stride
            stride = 1
        if stride != 1 or self.inplanes != planes * block.expansion:
            downsample = nn.Sequential(
                conv1x1(self.inplanes, planes * block.expansion, stride),
                norm_layer(planes * block.expansion),
            )

        layers = []
        layers.append(block(self.inplanes, planes, stride, downsample, self.groups, self.base_width,
                            previous_dilation, norm_layer))
        self.inplanes = planes * block.expansion
        for _ in range(1, blocks):
            layers.append(block(self.inplanes, planes, groups=self.groups, base_width=self.base_width,
                                dilation=self.dilation, norm_layer=norm_layer))

        return nn.Sequential(*layers)

    def _forward_impl(self, x: Tensor) -> Tensor:
        x = self.conv1(x)
        x = self.bn1(x)
        x = self.relu(x)
        x = self.maxpool(x)

        x = self.layer1(x)
        x = self.layer2(x)
        x = self.layer3(x)
        x = self.layer4(x)

        x = self.avgpool(x)
        x = torch.flatten(x, 1)
        x = self.fc(x)

        return x

    def forward(self, x: Tensor) -> Tensor:
        return self._forward_impl(x)


def tv_make_divisible(v: float, divisor: int, min_value: Optional[int] = None) -> int:
    if min_value is None:
        min_value = divisor
    new_v = max(min_value, int(v + divisor / 2) // divisor * divisor)
    if new_v < 0.9 * v:
        new_v += divisor
    return new_v


class TvConvBNActivation(nn.Sequential):
    def __init__(self, in_planes: int, out_planes: int, kernel_size: int = 3, stride: int = 1, groups: int = 1,
                 norm_layer: Optional[Callable[..., nn.Module]] = None,
                 activation_layer: Optional[Callable[..., nn.Module]] = None, dilation: int = 1) -> None:
        padding = (kernel_size - 1) // 2 * dilation
        if norm_layer is None:
            norm_layer = nn.BatchNorm2d
        if activation_layer is None:
            activation_layer = nn.ReLU6
        super().__init__(
            nn.Conv2d(in_planes, out_planes, kernel_size, stride, padding, dilation=dilation, groups=groups,
                      bias=False),
            norm_layer(out_planes),
            activation_layer(inplace=True)
        )
        self.out_channels = out_planes


class TvInvertedResidual(nn.Module):
    def __init__(self, inp: int, oup: int, stride: int, expand_ratio: int,
                 norm_layer: Optional[Callable[..., nn.Module]] = None) -> None:
        super(TvInvertedResidual, self).__init__()  # noqa: UP008 (as the original writes it)
        self.stride = stride
        assert stride in [1, 2]
        if norm_layer is None:
            norm_layer = nn.BatchNorm2d
        hidden_dim = int(round(inp * expand_ratio))
        self.use_res_connect = self.stride == 1 and inp == oup
        layers: List[nn.Module] = []
        if expand_ratio != 1:
            layers.append(TvConvBNActivation(inp, hidden_dim, kernel_size=1, norm_layer=norm_layer))
        layers.extend([
            TvConvBNActivation(hidden_dim, hidden_dim, stride=stride, groups=hidden_dim, norm_layer=norm_layer),
            nn.Conv2d(hidden_dim, oup, 1, 1, 0, bias=False),
            norm_layer(oup),
        ])
        self.conv = nn.Sequential(*layers)
        self.out_channels = oup
        self._is_cn = stride > 1

    def forward(self, x: Tensor) -> Tensor:
        if self.use_res_connect:
            return x + self.conv(x)
        else:
            return self.conv(x)


class TvMobileNetV2(nn.Module):
    def __init__(self, num_classes: int = 10, width_mult: float = 0.25, inverted_residual_setting=None,
                 round_nearest: int = 8, block=None, norm_layer=None) -> None:
        super(TvMobileNetV2, self).__init__()  # noqa: UP008 (as the original writes it)
        if block is None:
            block = TvInvertedResidual
        if norm_layer is None:
            norm_layer = nn.BatchNorm2d
        input_channel = 32
        last_channel = 1280
        if inverted_residual_setting is None:
            inverted_residual_setting = [
                [1, 16, 1, 1],
                [6, 24, 2, 2],
                [6, 32, 1, 2],
            ]
        input_channel = tv_make_divisible(input_channel * width_mult, round_nearest)
        self.last_channel = tv_make_divisible(last_channel * max(1.0, width_mult), round_nearest)
        features: List[nn.Module] = [TvConvBNActivation(3, input_channel, stride=2, norm_layer=norm_layer)]
        for t, c, n, s in inverted_residual_setting:
            output_channel = tv_make_divisible(c * width_mult, round_nearest)
            for i in range(n):
                stride = s if i == 0 else 1
                features.append(block(input_channel, output_channel, stride, expand_ratio=t, norm_layer=norm_layer))
                input_channel = output_channel
        features.append(TvConvBNActivation(input_channel, self.last_channel, kernel_size=1, norm_layer=norm_layer))
        self.features = nn.Sequential(*features)
        self.classifier = nn.Sequential(
            nn.Dropout(0.2),
            nn.Linear(self.last_channel, num_classes),
        )

    def _forward_impl(self, x: Tensor) -> Tensor:
        x = self.features(x)
        x = nn.functional.adaptive_avg_pool2d(x, (1, 1))
        x = torch.flatten(x, 1)
        x = self.classifier(x)
        return x

    def forward(self, x: Tensor) -> Tensor:
        return self._forward_impl(x)



# pyGAT's graph attention (heads in a plain list registered with add_module), minGPT (an nn.ModuleDict read by
# attribute, a lambda over its entries, a loss computed when targets are given), a cross-entropy head
class GraphAttentionLayer(nn.Module):
    def __init__(self, in_features, out_features, dropout, alpha, concat=True):
        super(GraphAttentionLayer, self).__init__()  # noqa: UP008 (as the original writes it)
        self.dropout = dropout
        self.in_features = in_features
        self.out_features = out_features
        self.alpha = alpha
        self.concat = concat

        self.W = nn.Parameter(torch.empty(size=(in_features, out_features)))
        nn.init.xavier_uniform_(self.W.data, gain=1.414)
        self.a = nn.Parameter(torch.empty(size=(2 * out_features, 1)))
        nn.init.xavier_uniform_(self.a.data, gain=1.414)

        self.leakyrelu = nn.LeakyReLU(self.alpha)

    def forward(self, h, adj):
        Wh = torch.mm(h, self.W)
        e = self._prepare_attentional_mechanism_input(Wh)

        zero_vec = -9e15 * torch.ones_like(e)
        attention = torch.where(adj > 0, e, zero_vec)
        attention = F.softmax(attention, dim=1)
        attention = F.dropout(attention, self.dropout, training=self.training)
        h_prime = torch.matmul(attention, Wh)

        if self.concat:
            return F.elu(h_prime)
        else:
            return h_prime

    def _prepare_attentional_mechanism_input(self, Wh):
        Wh1 = torch.matmul(Wh, self.a[:self.out_features, :])
        Wh2 = torch.matmul(Wh, self.a[self.out_features:, :])
        e = Wh1 + Wh2.T
        return self.leakyrelu(e)


class GAT(nn.Module):
    def __init__(self, nfeat=6, nhid=4, nclass=3, dropout=0.5, alpha=0.2, nheads=2):
        super(GAT, self).__init__()
        self.dropout = dropout
        self.attentions = [GraphAttentionLayer(nfeat, nhid, dropout=dropout, alpha=alpha, concat=True)
                           for _ in range(nheads)]
        for i, attention in enumerate(self.attentions):
            self.add_module('attention_{}'.format(i), attention)
        self.out_att = GraphAttentionLayer(nhid * nheads, nclass, dropout=dropout, alpha=alpha, concat=False)

    def forward(self, x, adj):
        x = F.dropout(x, self.dropout, training=self.training)
        x = torch.cat([att(x, adj) for att in self.attentions], dim=1)
        x = F.dropout(x, self.dropout, training=self.training)
        x = F.elu(self.out_att(x, adj))
        return F.log_softmax(x, dim=1)


class MinGPTNewGELU(nn.Module):
    def forward(self, x):
        return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


class MinGPTSelfAttention(nn.Module):
    def __init__(self, n_embd=8, n_head=2, block_size=8, attn_pdrop=0.1, resid_pdrop=0.1):
        super().__init__()
        assert n_embd % n_head == 0
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)
        self.attn_dropout = nn.Dropout(attn_pdrop)
        self.resid_dropout = nn.Dropout(resid_pdrop)
        self.register_buffer("bias", torch.tril(torch.ones(block_size, block_size))
                                     .view(1, 1, block_size, block_size))
        self.n_head = n_head
        self.n_embd = n_embd

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float('-inf'))
        att = F.softmax(att, dim=-1)
        att = self.attn_dropout(att)
        y = att @ v
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        y = self.resid_dropout(self.c_proj(y))
        return y


class MinGPTBlock(nn.Module):
    def __init__(self, n_embd=8, n_head=2, block_size=8, resid_pdrop=0.1):
        super().__init__()
        self.ln_1 = nn.LayerNorm(n_embd)
        self.attn = MinGPTSelfAttention(n_embd, n_head, block_size)
        self.ln_2 = nn.LayerNorm(n_embd)
        self.mlp = nn.ModuleDict(dict(
            c_fc=nn.Linear(n_embd, 4 * n_embd),
            c_proj=nn.Linear(4 * n_embd, n_embd),
            act=MinGPTNewGELU(),
            dropout=nn.Dropout(resid_pdrop),
        ))
        m = self.mlp
        self.mlpf = lambda x: m.dropout(m.c_proj(m.act(m.c_fc(x))))

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        x = x + self.mlpf(self.ln_2(x))
        return x


class MinGPT(nn.Module):
    def __init__(self, vocab_size=11, block_size=8, n_embd=8, n_layer=2, n_head=2, embd_pdrop=0.1):
        super().__init__()
        self.block_size = block_size
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(vocab_size, n_embd),
            wpe=nn.Embedding(block_size, n_embd),
            drop=nn.Dropout(embd_pdrop),
            h=nn.ModuleList([MinGPTBlock(n_embd, n_head, block_size) for _ in range(n_layer)]),
            ln_f=nn.LayerNorm(n_embd),
        ))
        self.lm_head = nn.Linear(n_embd, vocab_size, bias=False)
        self.apply(self._init_weights)
        for pn, p in self.named_parameters():
            if pn.endswith('c_proj.weight'):
                torch.nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * n_layer))

    def _init_weights(self, module):
        if isinstance(module, nn.Linear):
            torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if module.bias is not None:
                torch.nn.init.zeros_(module.bias)

    def forward(self, idx, targets=None):
        device = idx.device
        b, t = idx.size()
        assert t <= self.block_size, f"Cannot forward sequence of length {t}, block size is only {self.block_size}"
        pos = torch.arange(0, t, dtype=torch.long, device=device).unsqueeze(0)
        tok_emb = self.transformer.wte(idx)
        pos_emb = self.transformer.wpe(pos)
        x = self.transformer.drop(tok_emb + pos_emb)
        for block in self.transformer.h:
            x = block(x)
        x = self.transformer.ln_f(x)
        logits = self.lm_head(x)
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1)
        return logits, loss


class TutorialAttnDecoderRNN(nn.Module):
    def __init__(self, hidden_size=8, output_size=11, dropout_p=0.1, max_length=6):
        super(TutorialAttnDecoderRNN, self).__init__()
        self.hidden_size = hidden_size
        self.output_size = output_size
        self.dropout_p = dropout_p
        self.max_length = max_length
        self.embedding = nn.Embedding(self.output_size, self.hidden_size)
        self.attn = nn.Linear(self.hidden_size * 2, self.max_length)
        self.attn_combine = nn.Linear(self.hidden_size * 2, self.hidden_size)
        self.dropout = nn.Dropout(self.dropout_p)
        self.gru = nn.GRU(self.hidden_size, self.hidden_size)
        self.out = nn.Linear(self.hidden_size, self.output_size)

    def forward(self, input, hidden, encoder_outputs):
        embedded = self.embedding(input).view(1, 1, -1)
        embedded = self.dropout(embedded)
        attn_weights = F.softmax(self.attn(torch.cat((embedded[0], hidden[0]), 1)), dim=1)
        attn_applied = torch.bmm(attn_weights.unsqueeze(0), encoder_outputs.unsqueeze(0))
        output = torch.cat((embedded[0], attn_applied[0]), 1)
        output = self.attn_combine(output).unsqueeze(0)
        output = F.relu(output)
        output, hidden = self.gru(output, hidden)
        output = F.log_softmax(self.out(output[0]), dim=1)
        return output, hidden, attn_weights


class CrossEntropyHead(nn.Module):
    """F.cross_entropy with ignored targets, in each reduction."""

    def __init__(self, n=6, classes=3):
        super().__init__()
        self.fc = nn.Linear(n, classes)

    def forward(self, x):
        y = (x.sum(-1) > 0).long()
        logits = self.fc(x)
        y = torch.where(x[:, 0] > 0.5, -1, y)
        return (F.cross_entropy(logits, y, ignore_index=-1),
                F.cross_entropy(logits, y, reduction="none", ignore_index=-1),
                F.cross_entropy(logits, y, reduction="sum", ignore_index=-1))



class ReservedArgInner(nn.Module):
    """Parameters named like the target's imports (`layers`, `ops`), passed by keyword; a dict keeps its keys."""

    def __init__(self, layers=2, ops=3):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.n = layers + ops
        self.cfg = dict(layers=layers)

    def forward(self, x):
        return self.fc(x) * self.n * self.cfg["layers"]


class ReservedArgOuter(ReservedArgInner):
    def __init__(self, layers=1):
        super().__init__(layers=layers, ops=2)



# Whisper's attention blocks (its Linear subclass above as CLIP's LayerNorm), DETR's MLP and sine position embedding
class WhisperMultiHeadAttention(nn.Module):
    """Whisper's attention: a class attribute choosing SDPA, a key-value cache typed as an optional dict."""

    use_sdpa = True

    def __init__(self, n_state: int, n_head: int):
        super().__init__()
        self.n_head = n_head
        self.query = WhisperLinear(n_state, n_state)
        self.key = WhisperLinear(n_state, n_state, bias=False)
        self.value = WhisperLinear(n_state, n_state)
        self.out = WhisperLinear(n_state, n_state)

    def forward(self, x: Tensor, xa: Optional[Tensor] = None, mask: Optional[Tensor] = None,
                kv_cache: Optional[dict] = None):
        q = self.query(x)
        if kv_cache is None or xa is None or self.key not in kv_cache:
            k = self.key(x if xa is None else xa)
            v = self.value(x if xa is None else xa)
        else:
            k = kv_cache[self.key]
            v = kv_cache[self.value]
        wv, qk = self.qkv_attention(q, k, v, mask)
        return self.out(wv), qk

    def qkv_attention(self, q: Tensor, k: Tensor, v: Tensor, mask: Optional[Tensor] = None):
        n_batch, n_ctx, n_state = q.shape
        scale = (n_state // self.n_head) ** -0.25
        q = q.view(*q.shape[:2], self.n_head, -1).permute(0, 2, 1, 3)
        k = k.view(*k.shape[:2], self.n_head, -1).permute(0, 2, 1, 3)
        v = v.view(*v.shape[:2], self.n_head, -1).permute(0, 2, 1, 3)
        if self.use_sdpa:
            a = F.scaled_dot_product_attention(q, k, v, is_causal=mask is not None and n_ctx > 1)
            out = a.permute(0, 2, 1, 3).flatten(start_dim=2)
            qk = None
        else:
            qk = (q * scale) @ (k * scale).transpose(-1, -2)
            if mask is not None:
                qk = qk + mask[:n_ctx, :n_ctx]
            qk = qk.float()
            w = F.softmax(qk, dim=-1).to(q.dtype)
            out = (w @ v).permute(0, 2, 1, 3).flatten(start_dim=2)
            qk = qk.detach()
        return out, qk


class WhisperResidualAttentionBlock(nn.Module):
    def __init__(self, n_state: int, n_head: int, cross_attention: bool = False):
        super().__init__()
        self.attn = WhisperMultiHeadAttention(n_state, n_head)
        self.attn_ln = CLIPLayerNorm(n_state)
        self.cross_attn = WhisperMultiHeadAttention(n_state, n_head) if cross_attention else None
        self.cross_attn_ln = CLIPLayerNorm(n_state) if cross_attention else None
        n_mlp = n_state * 4
        self.mlp = nn.Sequential(WhisperLinear(n_state, n_mlp), nn.GELU(), WhisperLinear(n_mlp, n_state))
        self.mlp_ln = CLIPLayerNorm(n_state)

    def forward(self, x: Tensor, xa: Optional[Tensor] = None, mask: Optional[Tensor] = None,
                kv_cache: Optional[dict] = None):
        x = x + self.attn(self.attn_ln(x), mask=mask, kv_cache=kv_cache)[0]
        if self.cross_attn:
            x = x + self.cross_attn(self.cross_attn_ln(x), xa, kv_cache=kv_cache)[0]
        x = x + self.mlp(self.mlp_ln(x))
        return x


class DetrMLP(nn.Module):
    """DETR's MLP: a ModuleList built from a generator."""

    def __init__(self, input_dim, hidden_dim, output_dim, num_layers):
        super().__init__()
        self.num_layers = num_layers
        h = [hidden_dim] * (num_layers - 1)
        self.layers = nn.ModuleList(nn.Linear(n, k) for n, k in zip([input_dim] + h, h + [output_dim]))

    def forward(self, x):
        for i, layer in enumerate(self.layers):
            x = F.relu(layer(x)) if i < self.num_layers - 1 else layer(x)
        return x


class PositionEmbeddingSine(nn.Module):
    def __init__(self, num_pos_feats=4, temperature=10000, normalize=True, scale=None):
        super().__init__()
        self.num_pos_feats = num_pos_feats
        self.temperature = temperature
        self.normalize = normalize
        if scale is not None and normalize is False:
            raise ValueError("normalize should be True if scale is passed")
        if scale is None:
            scale = 2 * math.pi
        self.scale = scale

    def forward(self, x):
        not_mask = torch.ones_like(x[:, 0], dtype=torch.float32)
        y_embed = not_mask.cumsum(1, dtype=torch.float32)
        x_embed = not_mask.cumsum(2, dtype=torch.float32)
        if self.normalize:
            eps = 1e-6
            y_embed = y_embed / (y_embed[:, -1:, :] + eps) * self.scale
            x_embed = x_embed / (x_embed[:, :, -1:] + eps) * self.scale

        dim_t = torch.arange(self.num_pos_feats, dtype=torch.float32, device=x.device)
        dim_t = self.temperature ** (2 * (dim_t // 2) / self.num_pos_feats)

        pos_x = x_embed[:, :, :, None] / dim_t
        pos_y = y_embed[:, :, :, None] / dim_t
        pos_x = torch.stack((pos_x[:, :, :, 0::2].sin(), pos_x[:, :, :, 1::2].cos()), dim=4).flatten(3)
        pos_y = torch.stack((pos_y[:, :, :, 0::2].sin(), pos_y[:, :, :, 1::2].cos()), dim=4).flatten(3)
        pos = torch.cat((pos_y, pos_x), dim=3).permute(0, 3, 1, 2)
        return pos + x[:, :1]



def _get_clones(module, N):
    """DETR's clones: deep copies of one layer."""
    return nn.ModuleList([copy.deepcopy(module) for i in range(N)])


class DetrEncoderLayer(nn.Module):
    def __init__(self, d_model=8, dim_feedforward=16, dropout=0.1):
        super().__init__()
        self.linear1 = nn.Linear(d_model, dim_feedforward)
        self.dropout = nn.Dropout(dropout)
        self.linear2 = nn.Linear(dim_feedforward, d_model)
        self.norm = nn.LayerNorm(d_model)

    def forward(self, src):
        src2 = self.linear2(self.dropout(F.relu(self.linear1(src))))
        return self.norm(src + src2)


class DetrEncoder(nn.Module):
    def __init__(self, encoder_layer=None, num_layers=3, norm=None):
        super().__init__()
        encoder_layer = encoder_layer or DetrEncoderLayer()
        self.layers = _get_clones(encoder_layer, num_layers)
        self.num_layers = num_layers
        self.norm = norm

    def forward(self, src):
        output = src
        for layer in self.layers:
            output = layer(output)
        if self.norm is not None:
            output = self.norm(output)
        return output


class SublayerApply(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = nn.LayerNorm(8)

    def forward(self, x, fn):
        return x + fn(self.norm(x))


class PositionalLambda(nn.Module):
    """A layer called with a function as its second positional argument, by a loop variable (Keras takes only
    tensors positionally and the parameter's name is not known there: refused for Keras)."""

    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList([SublayerApply(), SublayerApply()])
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        for block in self.blocks:
            x = block(x, lambda h: self.fc(h))
        return x



class NLayerDiscriminator(nn.Module):
    """pytorch-CycleGAN-and-pix2pix's PatchGAN discriminator: the norm layer class (or a partial of one) compared
    to decide the convolutions' bias."""

    def __init__(self, input_nc=3, ndf=8, n_layers=2, norm_layer=nn.BatchNorm2d):
        super(NLayerDiscriminator, self).__init__()  # noqa: UP008 (as the original writes it)
        if type(norm_layer) == functools.partial:  # noqa: E721 (as the original writes it)
            use_bias = norm_layer.func == nn.InstanceNorm2d
        else:
            use_bias = norm_layer == nn.InstanceNorm2d

        kw = 4
        padw = 1
        sequence = [nn.Conv2d(input_nc, ndf, kernel_size=kw, stride=2, padding=padw), nn.LeakyReLU(0.2, True)]
        nf_mult = 1
        nf_mult_prev = 1
        for n in range(1, n_layers):  # gradually increase the number of filters
            nf_mult_prev = nf_mult
            nf_mult = min(2 ** n, 8)
            sequence += [
                nn.Conv2d(ndf * nf_mult_prev, ndf * nf_mult, kernel_size=kw, stride=2, padding=padw, bias=use_bias),
                norm_layer(ndf * nf_mult),
                nn.LeakyReLU(0.2, True)
            ]

        nf_mult_prev = nf_mult
        nf_mult = min(2 ** n_layers, 8)
        sequence += [
            nn.Conv2d(ndf * nf_mult_prev, ndf * nf_mult, kernel_size=kw, stride=1, padding=padw, bias=use_bias),
            norm_layer(ndf * nf_mult),
            nn.LeakyReLU(0.2, True)
        ]

        sequence += [nn.Conv2d(ndf * nf_mult, 1, kernel_size=kw, stride=1, padding=padw)]  # 1-channel prediction map
        self.model = nn.Sequential(*sequence)

    def forward(self, input):
        """Standard forward."""
        return self.model(input)


class InstanceNLayer(NLayerDiscriminator):
    """The discriminator with instance norm as pix2pix configures it (a partial)."""

    def __init__(self):
        super().__init__(norm_layer=functools.partial(nn.InstanceNorm2d, affine=False, track_running_stats=False))



# pytorch-CycleGAN-and-pix2pix's U-Net generator: blocks nested as submodules, flags for the outermost and innermost
class CycleGANUnetSkipBlock(nn.Module):
    def __init__(self, outer_nc, inner_nc, input_nc=None,
                 submodule=None, outermost=False, innermost=False, norm_layer=nn.BatchNorm2d, use_dropout=False):
        super(CycleGANUnetSkipBlock, self).__init__()  # noqa: UP008 (as the original writes it)
        self.outermost = outermost
        if type(norm_layer) == functools.partial:  # noqa: E721 (as the original writes it)
            use_bias = norm_layer.func == nn.InstanceNorm2d
        else:
            use_bias = norm_layer == nn.InstanceNorm2d
        if input_nc is None:
            input_nc = outer_nc
        downconv = nn.Conv2d(input_nc, inner_nc, kernel_size=4,
                             stride=2, padding=1, bias=use_bias)
        downrelu = nn.LeakyReLU(0.2, True)
        downnorm = norm_layer(inner_nc)
        uprelu = nn.ReLU(True)
        upnorm = norm_layer(outer_nc)

        if outermost:
            upconv = nn.ConvTranspose2d(inner_nc * 2, outer_nc,
                                        kernel_size=4, stride=2,
                                        padding=1)
            down = [downconv]
            up = [uprelu, upconv, nn.Tanh()]
            model = down + [submodule] + up
        elif innermost:
            upconv = nn.ConvTranspose2d(inner_nc, outer_nc,
                                        kernel_size=4, stride=2,
                                        padding=1, bias=use_bias)
            down = [downrelu, downconv]
            up = [uprelu, upconv, upnorm]
            model = down + up
        else:
            upconv = nn.ConvTranspose2d(inner_nc * 2, outer_nc,
                                        kernel_size=4, stride=2,
                                        padding=1, bias=use_bias)
            down = [downrelu, downconv, downnorm]
            up = [uprelu, upconv, upnorm]

            if use_dropout:
                model = down + [submodule] + up + [nn.Dropout(0.5)]
            else:
                model = down + [submodule] + up

        self.model = nn.Sequential(*model)

    def forward(self, x):
        if self.outermost:
            return self.model(x)
        else:
            return torch.cat([x, self.model(x)], 1)


class CycleGANUnetGenerator(nn.Module):
    def __init__(self, input_nc=3, output_nc=3, num_downs=3, ngf=4, norm_layer=nn.BatchNorm2d, use_dropout=False):
        super(CycleGANUnetGenerator, self).__init__()  # noqa: UP008 (as the original writes it)
        unet_block = CycleGANUnetSkipBlock(ngf * 8, ngf * 8, input_nc=None, submodule=None, norm_layer=norm_layer,
                                           innermost=True)
        for _ in range(num_downs - 5):
            unet_block = CycleGANUnetSkipBlock(ngf * 8, ngf * 8, input_nc=None, submodule=unet_block,
                                               norm_layer=norm_layer, use_dropout=use_dropout)
        unet_block = CycleGANUnetSkipBlock(ngf * 4, ngf * 8, input_nc=None, submodule=unet_block,
                                           norm_layer=norm_layer)
        unet_block = CycleGANUnetSkipBlock(ngf * 2, ngf * 4, input_nc=None, submodule=unet_block,
                                           norm_layer=norm_layer)
        unet_block = CycleGANUnetSkipBlock(ngf, ngf * 2, input_nc=None, submodule=unet_block, norm_layer=norm_layer)
        self.model = CycleGANUnetSkipBlock(output_nc, ngf, input_nc=input_nc, submodule=unet_block, outermost=True,
                                           norm_layer=norm_layer)

    def forward(self, input):
        return self.model(input)



# transformers' feed-forward blocks, their activation chosen by name from ACT2FN (by the configuration's name,
# known at run time, or by a literal)
class BertIntermediate(nn.Module):
    def __init__(self, config=BERT_CONFIG):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.intermediate_size)
        if isinstance(config.hidden_act, str):
            self.intermediate_act_fn = ACT2FN[config.hidden_act]
        else:
            self.intermediate_act_fn = config.hidden_act

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        hidden_states = self.dense(hidden_states)
        hidden_states = self.intermediate_act_fn(hidden_states)
        return hidden_states


class BertOutput(nn.Module):
    def __init__(self, config=BERT_CONFIG):
        super().__init__()
        self.dense = nn.Linear(config.intermediate_size, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, hidden_states: torch.Tensor, input_tensor: torch.Tensor) -> torch.Tensor:
        hidden_states = self.dense(hidden_states)
        hidden_states = self.dropout(hidden_states)
        hidden_states = self.LayerNorm(hidden_states + input_tensor)
        return hidden_states


class LlamaMLP(nn.Module):
    def __init__(self, hidden_size=8, intermediate_size=16, hidden_act="silu"):
        super().__init__()
        self.hidden_size = hidden_size
        self.intermediate_size = intermediate_size
        self.gate_proj = nn.Linear(self.hidden_size, self.intermediate_size, bias=False)
        self.up_proj = nn.Linear(self.hidden_size, self.intermediate_size, bias=False)
        self.down_proj = nn.Linear(self.intermediate_size, self.hidden_size, bias=False)
        self.act_fn = ACT2FN[hidden_act]

    def forward(self, x):
        down_proj = self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))
        return down_proj


class GeluNewMLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)
        self.act = ACT2FN["gelu_new"]

    def forward(self, x):
        return self.act(self.fc(x))



class CausalConv1d(nn.Conv1d):
    """WaveNet-style causal convolution: a Conv1d subclass padding on the left by a name-mangled attribute."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, dilation=1, groups=1, bias=True):
        self.__padding = (kernel_size - 1) * dilation
        super(CausalConv1d, self).__init__(in_channels, out_channels, kernel_size=kernel_size, stride=stride,
                                           padding=0, dilation=dilation, groups=groups, bias=bias)

    def forward(self, input):
        return super(CausalConv1d, self).forward(F.pad(input, (self.__padding, 0)))


def get_same_padding(x: int, kernel_size: int, stride: int, dilation: int):
    return max((math.ceil(x / stride) - 1) * stride + (kernel_size - 1) * dilation + 1 - x, 0)


def pad_same(x, kernel_size: List[int], stride: List[int], dilation: List[int] = (1, 1), value: float = 0):
    ih, iw = x.size()[-2:]
    pad_h = get_same_padding(ih, kernel_size[0], stride[0], dilation[0])
    pad_w = get_same_padding(iw, kernel_size[1], stride[1], dilation[1])
    x = F.pad(x, (pad_w // 2, pad_w - pad_w // 2, pad_h // 2, pad_h - pad_h // 2), value=value)
    return x


class MaxPool2dSame(nn.Module):
    """timm's "same" max pooling: pads computed from the input's size with math.ceil, filled with -inf."""

    def __init__(self, kernel_size=3, stride=2):
        super().__init__()
        self.kernel_size = (kernel_size, kernel_size)
        self.stride = (stride, stride)
        self.pool = nn.MaxPool2d(kernel_size, stride)

    def forward(self, x):
        x = pad_same(x, self.kernel_size, self.stride, value=-float('inf'))
        return self.pool(x)


class WaveNetBlock(nn.Module):
    """Gated causal convolutions, a residual and the skip output; a property the forward pass does not use."""

    def __init__(self, channels=8, dilation=2):
        super().__init__()
        self.filter = CausalConv1d(channels, channels, 2, dilation=dilation)
        self.gate = CausalConv1d(channels, channels, 2, dilation=dilation)
        self.res = nn.Conv1d(channels, channels, 1)

    def forward(self, x):
        h = torch.tanh(self.filter(x)) * torch.sigmoid(self.gate(x))
        return x + self.res(h), h

    @property
    def receptive_field(self):
        return 2



class ScaledOutputLinear(nn.Linear):
    """A subclass of a framework layer adding a parameter of its own (ported beside the parent's weights)."""

    def __init__(self, i, o):
        super().__init__(i, o)
        self.extra = nn.Parameter(torch.ones(o))

    def forward(self, x):
        return super().forward(x) * self.extra



@torch.jit.script
def scripted_swish(x):
    return x * torch.sigmoid(x)


class ScriptedSwishBlock(nn.Module):
    def __init__(self, d=8):
        super().__init__()
        self.fc = nn.Linear(d, d)

    def forward(self, x):
        return x + scripted_swish(self.fc(x))


class CheckpointedBlocks(nn.Module):
    """timm-style gradient checkpointing: torch.utils.checkpoint over each block unless scripting, a switch set by a
    method under @torch.jit.ignore, a helper compiled by @torch.jit.script."""

    def __init__(self, d=8, depth=2):
        super().__init__()
        self.blocks = nn.ModuleList([ScriptedSwishBlock(d) for _ in range(depth)])
        self.grad_checkpointing = True

    @torch.jit.ignore
    def set_grad_checkpointing(self, enable=True):
        self.grad_checkpointing = enable

    def forward(self, x):
        for blk in self.blocks:
            if self.grad_checkpointing and not torch.jit.is_scripting():
                x = checkpoint(blk, x, use_reentrant=False)
            else:
                x = blk(x)
        return x



# EDSR's building blocks (the convolution made by a factory function passed as an argument)
def default_conv(in_channels, out_channels, kernel_size, bias=True):
    return nn.Conv2d(in_channels, out_channels, kernel_size, padding=(kernel_size // 2), bias=bias)


class EdsrResBlock(nn.Module):
    def __init__(self, conv, n_feats, kernel_size, bias=True, bn=False, act=nn.ReLU(True), res_scale=1):  # noqa: B008 (as the original writes it)
        super(EdsrResBlock, self).__init__()  # noqa: UP008 (as the original writes it)
        m = []
        for i in range(2):
            m.append(conv(n_feats, n_feats, kernel_size, bias=bias))
            if bn:
                m.append(nn.BatchNorm2d(n_feats))
            if i == 0:
                m.append(act)
        self.body = nn.Sequential(*m)
        self.res_scale = res_scale

    def forward(self, x):
        res = self.body(x).mul(self.res_scale)
        res += x
        return res


class EdsrUpsampler(nn.Sequential):
    def __init__(self, conv, scale, n_feats, bn=False, act=False, bias=True):
        m = []
        if (scale & (scale - 1)) == 0:    # Is scale = 2^n?
            for _ in range(int(math.log(scale, 2))):
                m.append(conv(n_feats, 4 * n_feats, 3, bias))
                m.append(nn.PixelShuffle(2))
                if bn:
                    m.append(nn.BatchNorm2d(n_feats))
                if act == 'relu':
                    m.append(nn.ReLU(True))
        elif scale == 3:
            m.append(conv(n_feats, 9 * n_feats, 3, bias))
            m.append(nn.PixelShuffle(3))
        else:
            raise NotImplementedError
        super(EdsrUpsampler, self).__init__(*m)


class EDSR(nn.Module):
    """EDSR as its repository writes it: the convolution factory passed down to every block, an Upsampler
    subclassing nn.Sequential over a list it fills, MeanShift layers at both ends."""

    def __init__(self, n_resblocks=2, n_feats=8, scale=2, rgb_range=255, conv=default_conv):
        super(EDSR, self).__init__()  # noqa: UP008 (as the original writes it)
        kernel_size = 3
        act = nn.ReLU(True)
        self.sub_mean = MeanShift(rgb_range)
        self.add_mean = MeanShift(rgb_range, sign=1)
        m_head = [conv(3, n_feats, kernel_size)]
        m_body = [EdsrResBlock(conv, n_feats, kernel_size, act=act, res_scale=0.1) for _ in range(n_resblocks)]
        m_body.append(conv(n_feats, n_feats, kernel_size))
        m_tail = [EdsrUpsampler(conv, scale, n_feats, act=False), conv(n_feats, 3, kernel_size)]
        self.head = nn.Sequential(*m_head)
        self.body = nn.Sequential(*m_body)
        self.tail = nn.Sequential(*m_tail)

    def forward(self, x):
        x = self.sub_mean(x)
        x = self.head(x)
        res = self.body(x)
        res += x
        x = self.tail(res)
        x = self.add_mean(x)
        return x



# transformers' Llama attention as modeling_llama.py writes it (the rotary cos and sin passed as inputs)
def apply_rotary_pos_emb(q, k, cos, sin, position_ids=None, unsqueeze_dim=1):
    cos = cos.unsqueeze(unsqueeze_dim)
    sin = sin.unsqueeze(unsqueeze_dim)
    q_embed = (q * cos) + (llama_rotate_half(q) * sin)
    k_embed = (k * cos) + (llama_rotate_half(k) * sin)
    return q_embed, k_embed


def repeat_kv(hidden_states: torch.Tensor, n_rep: int) -> torch.Tensor:
    batch, num_key_value_heads, slen, head_dim = hidden_states.shape
    if n_rep == 1:
        return hidden_states
    hidden_states = hidden_states[:, :, None, :, :].expand(batch, num_key_value_heads, n_rep, slen, head_dim)
    return hidden_states.reshape(batch, num_key_value_heads * n_rep, slen, head_dim)


class LlamaAttention(nn.Module):
    """transformers' Llama attention: grouped key-value heads repeated, rotary position embedding, the softmax
    computed in float32."""

    def __init__(self, hidden_size=16, num_attention_heads=4, num_key_value_heads=2, attention_dropout=0.0):
        super().__init__()
        self.head_dim = hidden_size // num_attention_heads
        self.num_key_value_groups = num_attention_heads // num_key_value_heads
        self.scaling = self.head_dim**-0.5
        self.attention_dropout = attention_dropout
        self.is_causal = True
        self.q_proj = nn.Linear(hidden_size, num_attention_heads * self.head_dim, bias=False)
        self.k_proj = nn.Linear(hidden_size, num_key_value_heads * self.head_dim, bias=False)
        self.v_proj = nn.Linear(hidden_size, num_key_value_heads * self.head_dim, bias=False)
        self.o_proj = nn.Linear(num_attention_heads * self.head_dim, hidden_size, bias=False)

    def forward(self, hidden_states: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor,
                attention_mask=None):
        input_shape = hidden_states.shape[:-1]
        hidden_shape = (*input_shape, -1, self.head_dim)

        query_states = self.q_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        key_states = self.k_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        value_states = self.v_proj(hidden_states).view(hidden_shape).transpose(1, 2)

        query_states, key_states = apply_rotary_pos_emb(query_states, key_states, cos, sin)

        key_states = repeat_kv(key_states, self.num_key_value_groups)
        value_states = repeat_kv(value_states, self.num_key_value_groups)

        attn_weights = torch.matmul(query_states, key_states.transpose(2, 3)) * self.scaling
        if attention_mask is not None:
            causal_mask = attention_mask[:, :, :, : key_states.shape[-2]]
            attn_weights = attn_weights + causal_mask

        attn_weights = nn.functional.softmax(attn_weights, dim=-1, dtype=torch.float32).to(query_states.dtype)
        attn_weights = nn.functional.dropout(attn_weights, p=self.attention_dropout, training=self.training)
        attn_output = torch.matmul(attn_weights, value_states)
        attn_output = attn_output.transpose(1, 2).contiguous()
        attn_output = attn_output.reshape(*input_shape, -1).contiguous()
        attn_output = self.o_proj(attn_output)
        return attn_output, attn_weights


# torchvision's ShuffleNetV2 block: a module-level channel_shuffle (named as a helper the targets write)
def channel_shuffle(x, groups):
    batchsize, num_channels, height, width = x.size()
    channels_per_group = num_channels // groups
    x = x.view(batchsize, groups, channels_per_group, height, width)
    x = torch.transpose(x, 1, 2).contiguous()
    x = x.view(batchsize, -1, height, width)
    return x


class ShuffleV2Block(nn.Module):
    """torchvision's ShuffleNetV2 InvertedResidual: a staticmethod making the depthwise conv inside a
    Sequential ending in ReLU(inplace=True), x read twice in one statement."""

    def __init__(self, inp=8, oup=8, stride=1):
        super().__init__()
        self.stride = stride
        branch_features = oup // 2
        if self.stride > 1:
            self.branch1 = nn.Sequential(
                self.depthwise_conv(inp, inp, kernel_size=3, stride=self.stride, padding=1),
                nn.BatchNorm2d(inp),
                nn.Conv2d(inp, branch_features, kernel_size=1, stride=1, padding=0, bias=False),
                nn.BatchNorm2d(branch_features),
                nn.ReLU(inplace=True),
            )
        else:
            self.branch1 = nn.Sequential()
        self.branch2 = nn.Sequential(
            nn.Conv2d(inp if (self.stride > 1) else branch_features, branch_features, kernel_size=1, stride=1,
                      padding=0, bias=False),
            nn.BatchNorm2d(branch_features),
            nn.ReLU(inplace=True),
            self.depthwise_conv(branch_features, branch_features, kernel_size=3, stride=self.stride, padding=1),
            nn.BatchNorm2d(branch_features),
            nn.Conv2d(branch_features, branch_features, kernel_size=1, stride=1, padding=0, bias=False),
            nn.BatchNorm2d(branch_features),
            nn.ReLU(inplace=True),
        )

    @staticmethod
    def depthwise_conv(i, o, kernel_size, stride=1, padding=0, bias=False):
        return nn.Conv2d(i, o, kernel_size, stride, padding, bias=bias, groups=i)

    def forward(self, x):
        if self.stride == 1:
            x1, x2 = x.chunk(2, dim=1)
            out = torch.cat((x1, self.branch2(x2)), dim=1)
        else:
            out = torch.cat((self.branch1(x), self.branch2(x)), dim=1)
        out = channel_shuffle(out, 2)
        return out


class NonLocalBlock(nn.Module):
    """AlexHex7's Non-local block: view(batch, c, *x.size()[2:]), layers wrapped into Sequentials later."""

    def __init__(self, in_channels=8, inter_channels=None, sub_sample=True, bn_layer=True):
        super().__init__()
        self.sub_sample = sub_sample
        self.in_channels = in_channels
        self.inter_channels = inter_channels
        if self.inter_channels is None:
            self.inter_channels = in_channels // 2
            if self.inter_channels == 0:
                self.inter_channels = 1
        conv_nd = nn.Conv2d
        max_pool_layer = nn.MaxPool2d(kernel_size=(2, 2))
        bn = nn.BatchNorm2d
        self.g = conv_nd(in_channels=self.in_channels, out_channels=self.inter_channels, kernel_size=1, stride=1,
                         padding=0)
        if bn_layer:
            self.W = nn.Sequential(
                conv_nd(in_channels=self.inter_channels, out_channels=self.in_channels, kernel_size=1, stride=1,
                        padding=0),
                bn(self.in_channels))
            nn.init.constant_(self.W[1].weight, 0)
            nn.init.constant_(self.W[1].bias, 0)
        else:
            self.W = conv_nd(in_channels=self.inter_channels, out_channels=self.in_channels, kernel_size=1, stride=1,
                             padding=0)
        self.theta = conv_nd(in_channels=self.in_channels, out_channels=self.inter_channels, kernel_size=1, stride=1,
                             padding=0)
        self.phi = conv_nd(in_channels=self.in_channels, out_channels=self.inter_channels, kernel_size=1, stride=1,
                           padding=0)
        if sub_sample:
            self.g = nn.Sequential(self.g, max_pool_layer)
            self.phi = nn.Sequential(self.phi, max_pool_layer)

    def forward(self, x, return_nl_map=False):
        batch_size = x.size(0)
        g_x = self.g(x).view(batch_size, self.inter_channels, -1)
        g_x = g_x.permute(0, 2, 1)
        theta_x = self.theta(x).view(batch_size, self.inter_channels, -1)
        theta_x = theta_x.permute(0, 2, 1)
        phi_x = self.phi(x).view(batch_size, self.inter_channels, -1)
        f = torch.matmul(theta_x, phi_x)
        f_div_C = F.softmax(f, dim=-1)
        y = torch.matmul(f_div_C, g_x)
        y = y.permute(0, 2, 1).contiguous()
        y = y.view(batch_size, self.inter_channels, *x.size()[2:])
        W_y = self.W(y)
        z = W_y + x
        if return_nl_map:
            return z, f_div_C
        return z


class AddCoords(nn.Module):
    """CoordConv's AddCoords: coordinate channels from arange().repeat() on the input's sizes."""

    def __init__(self, with_r=False):
        super().__init__()
        self.with_r = with_r

    def forward(self, input_tensor):
        batch_size, _, x_dim, y_dim = input_tensor.size()
        xx_channel = torch.arange(x_dim).repeat(1, y_dim, 1)
        yy_channel = torch.arange(y_dim).repeat(1, x_dim, 1).transpose(1, 2)
        xx_channel = xx_channel.float() / (x_dim - 1)
        yy_channel = yy_channel.float() / (y_dim - 1)
        xx_channel = xx_channel * 2 - 1
        yy_channel = yy_channel * 2 - 1
        xx_channel = xx_channel.repeat(batch_size, 1, 1, 1).transpose(2, 3)
        yy_channel = yy_channel.repeat(batch_size, 1, 1, 1).transpose(2, 3)
        ret = torch.cat([input_tensor, xx_channel.type_as(input_tensor), yy_channel.type_as(input_tensor)], dim=1)
        if self.with_r:
            rr = torch.sqrt(torch.pow(xx_channel.type_as(input_tensor) - 0.5, 2) +
                            torch.pow(yy_channel.type_as(input_tensor) - 0.5, 2))
            ret = torch.cat([ret, rr], dim=1)
        return ret


class GhostModule(nn.Module):
    """GhostNet's GhostModule: math.ceil channel counts, an empty Sequential as the identity."""

    def __init__(self, inp=8, oup=12, kernel_size=1, ratio=2, dw_size=3, stride=1, relu=True):
        super().__init__()
        self.oup = oup
        init_channels = math.ceil(oup / ratio)
        new_channels = init_channels * (ratio - 1)
        self.primary_conv = nn.Sequential(
            nn.Conv2d(inp, init_channels, kernel_size, stride, kernel_size // 2, bias=False),
            nn.BatchNorm2d(init_channels),
            nn.ReLU(inplace=True) if relu else nn.Sequential(),
        )
        self.cheap_operation = nn.Sequential(
            nn.Conv2d(init_channels, new_channels, dw_size, 1, dw_size // 2, groups=init_channels, bias=False),
            nn.BatchNorm2d(new_channels),
            nn.ReLU(inplace=True) if relu else nn.Sequential(),
        )

    def forward(self, x):
        x1 = self.primary_conv(x)
        x2 = self.cheap_operation(x1)
        out = torch.cat([x1, x2], dim=1)
        return out[:, :self.oup, :, :]


class Bottle2neck(nn.Module):
    """Res2Net's Bottle2neck: torch.split into scales, a loop over them adding the previous one."""

    expansion = 4

    def __init__(self, inplanes=32, planes=8, stride=1, downsample=None, baseWidth=26, scale=4, stype='normal'):
        super().__init__()
        width = int(math.floor(planes * (baseWidth / 64.0)))
        self.conv1 = nn.Conv2d(inplanes, width * scale, kernel_size=1, bias=False)
        self.bn1 = nn.BatchNorm2d(width * scale)
        if scale == 1:
            self.nums = 1
        else:
            self.nums = scale - 1
        if stype == 'stage':
            self.pool = nn.AvgPool2d(kernel_size=3, stride=stride, padding=1)
        convs = []
        bns = []
        for i in range(self.nums):  # noqa: B007 (as the original writes it)
            convs.append(nn.Conv2d(width, width, kernel_size=3, stride=stride, padding=1, bias=False))
            bns.append(nn.BatchNorm2d(width))
        self.convs = nn.ModuleList(convs)
        self.bns = nn.ModuleList(bns)
        self.conv3 = nn.Conv2d(width * scale, planes * self.expansion, kernel_size=1, bias=False)
        self.bn3 = nn.BatchNorm2d(planes * self.expansion)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = downsample
        self.stype = stype
        self.scale = scale
        self.width = width

    def forward(self, x):
        residual = x
        out = self.conv1(x)
        out = self.bn1(out)
        out = self.relu(out)
        spx = torch.split(out, self.width, 1)
        for i in range(self.nums):
            if i == 0 or self.stype == 'stage':
                sp = spx[i]
            else:
                sp = sp + spx[i]
            sp = self.convs[i](sp)
            sp = self.relu(self.bns[i](sp))
            if i == 0:
                out = sp
            else:
                out = torch.cat((out, sp), 1)
        if self.scale != 1 and self.stype == 'normal':
            out = torch.cat((out, spx[self.nums]), 1)
        elif self.scale != 1 and self.stype == 'stage':
            out = torch.cat((out, self.pool(spx[self.nums])), 1)
        out = self.conv3(out)
        out = self.bn3(out)
        if self.downsample is not None:
            residual = self.downsample(x)
        out += residual
        out = self.relu(out)
        return out


class Flatten(nn.Module):
    """CBAM's Flatten."""

    def forward(self, x):
        return x.view(x.size(0), -1)


class ChannelGate(nn.Module):
    """CBAM's ChannelGate: a loop over pool types, F.avg_pool2d/max_pool2d over the whole map by its sizes."""

    def __init__(self, gate_channels=16, reduction_ratio=4, pool_types=['avg', 'max']):  # noqa: B006 (as the original writes it)
        super().__init__()
        self.gate_channels = gate_channels
        self.mlp = nn.Sequential(
            Flatten(),
            nn.Linear(gate_channels, gate_channels // reduction_ratio),
            nn.ReLU(),
            nn.Linear(gate_channels // reduction_ratio, gate_channels)
        )
        self.pool_types = pool_types

    def forward(self, x):
        channel_att_sum = None
        for pool_type in self.pool_types:
            if pool_type == 'avg':
                avg_pool = F.avg_pool2d(x, (x.size(2), x.size(3)), stride=(x.size(2), x.size(3)))
                channel_att_raw = self.mlp(avg_pool)
            elif pool_type == 'max':
                max_pool = F.max_pool2d(x, (x.size(2), x.size(3)), stride=(x.size(2), x.size(3)))
                channel_att_raw = self.mlp(max_pool)
            if channel_att_sum is None:
                channel_att_sum = channel_att_raw
            else:
                channel_att_sum = channel_att_sum + channel_att_raw
        scale = torch.sigmoid(channel_att_sum).unsqueeze(2).unsqueeze(3).expand_as(x)
        return x * scale


class ChannelPool(nn.Module):
    """CBAM's ChannelPool."""

    def forward(self, x):
        return torch.cat((torch.max(x, 1)[0].unsqueeze(1), torch.mean(x, 1).unsqueeze(1)), dim=1)


class SinusoidPositionalEncoding(nn.Module):
    """jadore801120's attention-is-all-you-need PositionalEncoding: a buffer from a method __init__ calls,
    computed with NumPy through a nested function, given to torch.FloatTensor."""

    def __init__(self, d_hid=8, n_position=20):
        super().__init__()
        self.register_buffer('pos_table', self._get_sinusoid_encoding_table(n_position, d_hid))

    def _get_sinusoid_encoding_table(self, n_position, d_hid):
        def get_position_angle_vec(position):
            return [position / np.power(10000, 2 * (hid_j // 2) / d_hid) for hid_j in range(d_hid)]

        sinusoid_table = np.array([get_position_angle_vec(pos_i) for pos_i in range(n_position)])
        sinusoid_table[:, 0::2] = np.sin(sinusoid_table[:, 0::2])
        sinusoid_table[:, 1::2] = np.cos(sinusoid_table[:, 1::2])
        return torch.FloatTensor(sinusoid_table).unsqueeze(0)

    def forward(self, x):
        return x + self.pos_table[:, :x.size(1)].clone().detach()


class DeepLabASPPConv(nn.Sequential):
    """torchvision's DeepLabV3 ASPPConv."""

    def __init__(self, in_channels, out_channels, dilation):
        modules = [
            nn.Conv2d(in_channels, out_channels, 3, padding=dilation, dilation=dilation, bias=False),
            nn.BatchNorm2d(out_channels),
            nn.ReLU(),
        ]
        super().__init__(*modules)


class DeepLabASPPPooling(nn.Sequential):
    """torchvision's DeepLabV3 ASPPPooling: a Sequential subclass iterating itself in forward."""

    def __init__(self, in_channels, out_channels):
        super().__init__(
            nn.AdaptiveAvgPool2d(1),
            nn.Conv2d(in_channels, out_channels, 1, bias=False),
            nn.BatchNorm2d(out_channels),
            nn.ReLU(),
        )

    def forward(self, x):
        size = x.shape[-2:]
        for mod in self:
            x = mod(x)
        return F.interpolate(x, size=size, mode="bilinear", align_corners=False)


class DeepLabASPP(nn.Module):
    """torchvision's DeepLabV3 ASPP."""

    def __init__(self, in_channels=8, atrous_rates=(2, 3), out_channels=6):
        super().__init__()
        modules = []
        modules.append(
            nn.Sequential(nn.Conv2d(in_channels, out_channels, 1, bias=False), nn.BatchNorm2d(out_channels),
                          nn.ReLU())
        )
        rates = tuple(atrous_rates)
        for rate in rates:
            modules.append(DeepLabASPPConv(in_channels, out_channels, rate))
        modules.append(DeepLabASPPPooling(in_channels, out_channels))
        self.convs = nn.ModuleList(modules)
        self.project = nn.Sequential(
            nn.Conv2d(len(self.convs) * out_channels, out_channels, 1, bias=False),
            nn.BatchNorm2d(out_channels),
            nn.ReLU(),
            nn.Dropout(0.5),
        )

    def forward(self, x):
        _res = []
        for conv in self.convs:
            _res.append(conv(x))
        res = torch.cat(_res, dim=1)
        return self.project(res)


class ConvLSTMCell(nn.Module):
    """ndrplz's ConvLSTM cell: its initial state made by a method of its own, on its conv's device."""

    def __init__(self, input_dim, hidden_dim, kernel_size, bias):
        super().__init__()
        self.input_dim = input_dim
        self.hidden_dim = hidden_dim
        self.kernel_size = kernel_size
        self.padding = kernel_size[0] // 2, kernel_size[1] // 2
        self.bias = bias
        self.conv = nn.Conv2d(in_channels=self.input_dim + self.hidden_dim, out_channels=4 * self.hidden_dim,
                              kernel_size=self.kernel_size, padding=self.padding, bias=self.bias)

    def forward(self, input_tensor, cur_state):
        h_cur, c_cur = cur_state
        combined = torch.cat([input_tensor, h_cur], dim=1)
        combined_conv = self.conv(combined)
        cc_i, cc_f, cc_o, cc_g = torch.split(combined_conv, self.hidden_dim, dim=1)
        i = torch.sigmoid(cc_i)
        f = torch.sigmoid(cc_f)
        o = torch.sigmoid(cc_o)
        g = torch.tanh(cc_g)
        c_next = f * c_cur + i * g
        h_next = o * torch.tanh(c_next)
        return h_next, c_next

    def init_hidden(self, batch_size, image_size):
        height, width = image_size
        return (torch.zeros(batch_size, self.hidden_dim, height, width, device=self.conv.weight.device),
                torch.zeros(batch_size, self.hidden_dim, height, width, device=self.conv.weight.device))


class ConvLSTM(nn.Module):
    """ndrplz's ConvLSTM: staticmethods checking and extending settings, loops over layers and time steps, the
    cells' init_hidden methods called."""

    def __init__(self, input_dim=3, hidden_dim=[4, 5], kernel_size=(3, 3), num_layers=2, batch_first=True,  # noqa: B006 (as the original writes it)
                 bias=True, return_all_layers=False):
        super().__init__()
        self._check_kernel_size_consistency(kernel_size)
        kernel_size = self._extend_for_multilayer(kernel_size, num_layers)
        hidden_dim = self._extend_for_multilayer(hidden_dim, num_layers)
        if not len(kernel_size) == len(hidden_dim) == num_layers:
            raise ValueError('Inconsistent list length.')
        self.input_dim = input_dim
        self.hidden_dim = hidden_dim
        self.kernel_size = kernel_size
        self.num_layers = num_layers
        self.batch_first = batch_first
        self.bias = bias
        self.return_all_layers = return_all_layers
        cell_list = []
        for i in range(0, self.num_layers):
            cur_input_dim = self.input_dim if i == 0 else self.hidden_dim[i - 1]
            cell_list.append(ConvLSTMCell(input_dim=cur_input_dim, hidden_dim=self.hidden_dim[i],
                                          kernel_size=self.kernel_size[i], bias=self.bias))
        self.cell_list = nn.ModuleList(cell_list)

    def forward(self, input_tensor, hidden_state=None):
        if not self.batch_first:
            input_tensor = input_tensor.permute(1, 0, 2, 3, 4)
        b, _, _, h, w = input_tensor.size()
        if hidden_state is not None:
            raise NotImplementedError()
        else:
            hidden_state = self._init_hidden(batch_size=b, image_size=(h, w))
        layer_output_list = []
        last_state_list = []
        seq_len = input_tensor.size(1)
        cur_layer_input = input_tensor
        for layer_idx in range(self.num_layers):
            h, c = hidden_state[layer_idx]
            output_inner = []
            for t in range(seq_len):
                h, c = self.cell_list[layer_idx](input_tensor=cur_layer_input[:, t, :, :, :], cur_state=[h, c])
                output_inner.append(h)
            layer_output = torch.stack(output_inner, dim=1)
            cur_layer_input = layer_output
            layer_output_list.append(layer_output)
            last_state_list.append([h, c])
        if not self.return_all_layers:
            layer_output_list = layer_output_list[-1:]
            last_state_list = last_state_list[-1:]
        return layer_output_list[0], last_state_list[0][0]

    def _init_hidden(self, batch_size, image_size):
        init_states = []
        for i in range(self.num_layers):
            init_states.append(self.cell_list[i].init_hidden(batch_size, image_size))
        return init_states

    @staticmethod
    def _check_kernel_size_consistency(kernel_size):
        if not (isinstance(kernel_size, tuple) or
                (isinstance(kernel_size, list) and all([isinstance(elem, tuple) for elem in kernel_size]))):
            raise ValueError('`kernel_size` must be tuple or list of tuples')

    @staticmethod
    def _extend_for_multilayer(param, num_layers):
        if not isinstance(param, list):
            param = [param] * num_layers
        return param


class CALayer(nn.Module):
    """RCAN's channel attention."""

    def __init__(self, channel=16, reduction=4):
        super().__init__()
        self.avg_pool = nn.AdaptiveAvgPool2d(1)
        self.conv_du = nn.Sequential(
            nn.Conv2d(channel, channel // reduction, 1, padding=0, bias=True),
            nn.ReLU(inplace=True),
            nn.Conv2d(channel // reduction, channel, 1, padding=0, bias=True),
            nn.Sigmoid()
        )

    def forward(self, x):
        y = self.avg_pool(x)
        y = self.conv_du(y)
        return x * y


class RCAB(nn.Module):
    """RCAN's residual channel attention block: an activation layer instance as a default argument."""

    def __init__(self, conv=default_conv, n_feat=16, kernel_size=3, reduction=4, bias=True, bn=False,
                 act=nn.ReLU(True), res_scale=1):  # noqa: B008 (as the original writes it)
        super().__init__()
        modules_body = []
        for i in range(2):
            modules_body.append(conv(n_feat, n_feat, kernel_size, bias=bias))
            if bn:
                modules_body.append(nn.BatchNorm2d(n_feat))
            if i == 0:
                modules_body.append(act)
        modules_body.append(CALayer(n_feat, reduction))
        self.body = nn.Sequential(*modules_body)
        self.res_scale = res_scale

    def forward(self, x):
        res = self.body(x)
        res += x
        return res


class Hourglass(nn.Module):
    """The stacked-hourglass network's Hourglass: a method recursing on a depth counter."""

    def __init__(self, depth=2, planes=8):
        super().__init__()
        self.depth = depth
        self.hg = self._make_hour_glass(planes, depth)

    def _make_residual(self, planes):
        return nn.Sequential(nn.Conv2d(planes, planes, 3, padding=1), nn.ReLU())

    def _make_hour_glass(self, planes, depth):
        hg = []
        for i in range(depth):
            res = []
            for j in range(3):  # noqa: B007 (as the original writes it)
                res.append(self._make_residual(planes))
            if i == 0:
                res.append(self._make_residual(planes))
            hg.append(nn.ModuleList(res))
        return nn.ModuleList(hg)

    def _hour_glass_forward(self, n, x):
        up1 = self.hg[n - 1][0](x)
        low1 = F.max_pool2d(x, 2, stride=2)
        low1 = self.hg[n - 1][1](low1)
        if n > 1:
            low2 = self._hour_glass_forward(n - 1, low1)
        else:
            low2 = self.hg[n - 1][3](low1)
        low3 = self.hg[n - 1][2](low2)
        up2 = F.interpolate(low3, scale_factor=2)
        out = up1 + up2
        return out

    def forward(self, x):
        return self._hour_glass_forward(self.depth, x)


class Seq2SeqAttention(nn.Module):
    """bentrevett's seq2seq tutorial: additive attention over time-major encoder outputs."""

    def __init__(self, enc_hid_dim=6, dec_hid_dim=5):
        super().__init__()
        self.attn = nn.Linear((enc_hid_dim * 2) + dec_hid_dim, dec_hid_dim)
        self.v = nn.Linear(dec_hid_dim, 1, bias=False)

    def forward(self, hidden, encoder_outputs):
        batch_size = encoder_outputs.shape[1]  # noqa: F841 (as the original writes it)
        src_len = encoder_outputs.shape[0]
        hidden = hidden.unsqueeze(1).repeat(1, src_len, 1)
        encoder_outputs = encoder_outputs.permute(1, 0, 2)
        energy = torch.tanh(self.attn(torch.cat((hidden, encoder_outputs), dim=2)))
        attention = self.v(energy).squeeze(2)
        return F.softmax(attention, dim=1)


class Seq2SeqEncoder(nn.Module):
    """bentrevett's seq2seq tutorial: a bidirectional GRU encoder, its last two hidden states joined."""

    def __init__(self, input_dim=30, emb_dim=8, enc_hid_dim=6, dec_hid_dim=5, dropout=0.1):
        super().__init__()
        self.embedding = nn.Embedding(input_dim, emb_dim)
        self.rnn = nn.GRU(emb_dim, enc_hid_dim, bidirectional=True)
        self.fc = nn.Linear(enc_hid_dim * 2, dec_hid_dim)
        self.dropout = nn.Dropout(dropout)

    def forward(self, src):
        embedded = self.dropout(self.embedding(src))
        outputs, hidden = self.rnn(embedded)
        hidden = torch.tanh(self.fc(torch.cat((hidden[-2, :, :], hidden[-1, :, :]), dim=1)))
        return outputs, hidden


class GloveClassifier(nn.Module):
    """A classifier over pretrained word vectors as NLP tutorials write it: nn.Embedding.from_pretrained on a
    table built from the constructor's vectors, one frozen (the default) and one fine-tuned."""

    def __init__(self, vectors=None, n_classes=3):
        super().__init__()
        if vectors is None:
            vectors = [[math.sin(i * 7 + j) for j in range(6)] for i in range(20)]
        weights = torch.FloatTensor(vectors)
        self.static = nn.Embedding.from_pretrained(weights)
        self.tuned = nn.Embedding.from_pretrained(weights, freeze=False, padding_idx=0)
        self.fc = nn.Linear(12, n_classes)

    def forward(self, x):
        h = torch.cat([self.static(x), self.tuned(x)], dim=-1)
        return self.fc(h.mean(dim=1))


class StrideAware(nn.Module):
    """Settings read from a held conv, in __init__ and the forward pass: its stride (kept by PyTorch as a
    tuple however given) and kernel size."""

    def __init__(self, cin=4, cout=8, stride=2):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, 3, stride=stride, padding=1)
        self.proj = nn.Conv2d(cin, cout, 1)
        self.pool_size = self.conv.stride[0]

    def forward(self, x):
        y = self.conv(x)
        if self.conv.stride != (1, 1):
            x = F.avg_pool2d(x, self.conv.stride)
        return y + self.proj(x) * self.conv.kernel_size[0] + self.pool_size


class Unfolder(nn.Module):
    """F.unfold's columns viewed per channel and kernel position (their order matters), and a strided one."""

    def __init__(self, k=3):
        super().__init__()
        self.k = k

    def forward(self, x):
        b, c, h, w = x.shape
        patches = F.unfold(x, kernel_size=self.k, padding=self.k // 2)
        patches = patches.view(b, c, self.k * self.k, h, w)
        return patches.mean(dim=2) + nn.functional.unfold(x, 2, stride=2).sum()


class Involution(nn.Module):
    """Involution (Li et al., CVPR 2021) as its reference code writes it: a kernel generated per pixel and
    group, applied to the nn.Unfold blocks of the input."""

    def __init__(self, channels=8, kernel_size=3, stride=1, group_channels=4, reduction_ratio=2):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride
        self.channels = channels
        self.group_channels = group_channels
        self.groups = self.channels // self.group_channels
        self.conv1 = nn.Sequential(nn.Conv2d(channels, channels // reduction_ratio, 1),
                                   nn.BatchNorm2d(channels // reduction_ratio), nn.ReLU())
        self.conv2 = nn.Conv2d(channels // reduction_ratio, kernel_size ** 2 * self.groups, 1, 1)
        if stride > 1:
            self.avgpool = nn.AvgPool2d(stride, stride)
        self.unfold = nn.Unfold(kernel_size, 1, (kernel_size - 1) // 2, stride)

    def forward(self, x):
        weight = self.conv2(self.conv1(x if self.stride == 1 else self.avgpool(x)))
        b, c, h, w = weight.shape
        weight = weight.view(b, self.groups, self.kernel_size ** 2, h, w).unsqueeze(2)
        out = self.unfold(x).view(b, self.groups, self.group_channels, self.kernel_size ** 2, h, w)
        out = (weight * out).sum(dim=3).view(b, self.channels, h, w)
        return out


class SNDiscriminator(nn.Module):
    """An SNGAN-style discriminator: spectral_norm on its convs and a transposed conv (the hook API, whose power
    iteration runs on the conv's rows or, transposed, its columns) and on its head (the parametrization API)."""

    def __init__(self, ch=8):
        super().__init__()
        self.main = nn.Sequential(
            spectral_norm(nn.Conv2d(3, ch, 3, 1, 1)), nn.LeakyReLU(0.1),
            spectral_norm(nn.Conv2d(ch, ch * 2, 4, 2, 1)), nn.LeakyReLU(0.1),
            spectral_norm(nn.ConvTranspose2d(ch * 2, ch, 4, 2, 1)), nn.LeakyReLU(0.1))
        self.head = nn.utils.parametrizations.spectral_norm(nn.Linear(ch, 1))

    def forward(self, x):
        h = self.main(x)
        return self.head(torch.sum(h, dim=(2, 3)))


class DenseTransition(nn.Sequential):
    """torchvision's DenseNet _Transition: a Sequential subclass whose layers are set as attributes after
    super().__init__() (it runs them in that order), with TorchScript's overload stubs before a method."""

    def __init__(self, num_input_features: int = 8, num_output_features: int = 4) -> None:
        super().__init__()
        self.norm = nn.BatchNorm2d(num_input_features)
        self.relu = nn.ReLU(inplace=True)
        self.conv = nn.Conv2d(num_input_features, num_output_features, kernel_size=1, stride=1, bias=False)
        self.pool = nn.AvgPool2d(kernel_size=2, stride=2)


class AddModuleTransition(nn.Sequential):
    """The same, as older torchvision wrote it: self.add_module(name, layer)."""

    def __init__(self, num_input_features=8, num_output_features=4):
        super().__init__()
        self.add_module('norm', nn.BatchNorm2d(num_input_features))
        self.add_module('relu', nn.ReLU(inplace=True))
        self.add_module('conv', nn.Conv2d(num_input_features, num_output_features, kernel_size=1, stride=1,
                                          bias=False))
        self.add_module('pool', nn.AvgPool2d(kernel_size=2, stride=2))


class OverloadedForward(nn.Module):
    """TorchScript's @torch.jit._overload_method stubs before the method itself (the last def is the method);
    a List[Tensor] parameter iterated."""

    def __init__(self, channels=4):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, 3, padding=1)

    def merge(self, inputs: List[Tensor]) -> Tensor:
        total = inputs[0]
        for t in inputs[1:]:
            total = total + t
        return total

    @torch.jit._overload_method  # noqa: F811
    def forward(self, input: List[Tensor]) -> Tensor:  # noqa: D102, F811
        pass

    @torch.jit._overload_method  # noqa: F811
    def forward(self, input: Tensor) -> Tensor:  # noqa: D102, F811
        pass

    def forward(self, input: Tensor) -> Tensor:  # noqa: F811
        if isinstance(input, Tensor):
            prev = [input]
        else:
            prev = input
        return self.conv(self.merge(prev + [torch.relu(prev[0])]))


class CLIPVisionEmbeddings(nn.Module):
    """transformers' CLIP vision embeddings: a class token expanded over the batch, a non-persistent buffer of
    position ids from arange().expand(), the patch conv's weight dtype read."""

    def __init__(self, hidden_size=16, image_size=8, patch_size=4, num_channels=3):
        super().__init__()
        self.embed_dim = hidden_size
        self.image_size = image_size
        self.patch_size = patch_size
        self.class_embedding = nn.Parameter(torch.randn(self.embed_dim))
        self.patch_embedding = nn.Conv2d(in_channels=num_channels, out_channels=self.embed_dim,
                                         kernel_size=self.patch_size, stride=self.patch_size, bias=False)
        self.num_patches = (self.image_size // self.patch_size) ** 2
        self.num_positions = self.num_patches + 1
        self.position_embedding = nn.Embedding(self.num_positions, self.embed_dim)
        self.register_buffer("position_ids", torch.arange(self.num_positions).expand((1, -1)), persistent=False)

    def forward(self, pixel_values):
        batch_size = pixel_values.shape[0]
        target_dtype = self.patch_embedding.weight.dtype
        patch_embeds = self.patch_embedding(pixel_values.to(dtype=target_dtype))
        patch_embeds = patch_embeds.flatten(2).transpose(1, 2)
        class_embeds = self.class_embedding.expand(batch_size, 1, -1)
        embeddings = torch.cat([class_embeds, patch_embeds], dim=1)
        embeddings = embeddings + self.position_embedding(self.position_ids)
        return embeddings


class T5RelativeBias(nn.Module):
    """transformers' T5 relative position bias: the bucket staticmethod (torch.min of two tensors, log of an
    integer tensor made float, where, full_like) and compute_bias on arange positions."""

    def __init__(self, num_buckets=8, max_distance=16, n_heads=2, bidirectional=True):
        super().__init__()
        self.relative_attention_num_buckets = num_buckets
        self.relative_attention_max_distance = max_distance
        self.is_decoder = not bidirectional
        self.relative_attention_bias = nn.Embedding(num_buckets, n_heads)

    @staticmethod
    def _relative_position_bucket(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
        relative_buckets = 0
        if bidirectional:
            num_buckets //= 2
            relative_buckets += (relative_position > 0).to(torch.long) * num_buckets
            relative_position = torch.abs(relative_position)
        else:
            relative_position = -torch.min(relative_position, torch.zeros_like(relative_position))
        max_exact = num_buckets // 2
        is_small = relative_position < max_exact
        relative_position_if_large = max_exact + (
            torch.log(relative_position.float() / max_exact)
            / math.log(max_distance / max_exact)
            * (num_buckets - max_exact)
        ).to(torch.long)
        relative_position_if_large = torch.min(
            relative_position_if_large, torch.full_like(relative_position_if_large, num_buckets - 1)
        )
        relative_buckets += torch.where(is_small, relative_position, relative_position_if_large)
        return relative_buckets

    def compute_bias(self, query_length, key_length, device=None):
        if device is None:
            device = self.relative_attention_bias.weight.device
        context_position = torch.arange(query_length, dtype=torch.long, device=device)[:, None]
        memory_position = torch.arange(key_length, dtype=torch.long, device=device)[None, :]
        relative_position = memory_position - context_position
        relative_position_bucket = self._relative_position_bucket(
            relative_position,
            bidirectional=(not self.is_decoder),
            num_buckets=self.relative_attention_num_buckets,
            max_distance=self.relative_attention_max_distance,
        )
        values = self.relative_attention_bias(relative_position_bucket)
        values = values.permute([2, 0, 1]).unsqueeze(0)
        return values

    def forward(self, scores):
        return scores + self.compute_bias(scores.shape[-2], scores.shape[-1])


class PairwiseExtrema(nn.Module):
    """torch.max / torch.min given a second tensor: the elementwise forms."""

    def forward(self, x, y):
        return torch.max(x, y) - torch.min(y, x) * x.max(y)


class SpatialTransformerNet(nn.Module):
    """The PyTorch tutorial's spatial transformer network, as written there: F.affine_grid and F.grid_sample on
    a regressed affine map, whose last layer __init__ sets to the identity through self.fc_loc[2].weight.data."""

    def __init__(self):
        super(SpatialTransformerNet, self).__init__()  # noqa: UP008 (as the tutorial writes it)
        self.conv1 = nn.Conv2d(1, 10, kernel_size=5)
        self.conv2 = nn.Conv2d(10, 20, kernel_size=5)
        self.conv2_drop = nn.Dropout2d()
        self.fc1 = nn.Linear(320, 50)
        self.fc2 = nn.Linear(50, 10)

        # Spatial transformer localization-network
        self.localization = nn.Sequential(
            nn.Conv2d(1, 8, kernel_size=7),
            nn.MaxPool2d(2, stride=2),
            nn.ReLU(True),
            nn.Conv2d(8, 10, kernel_size=5),
            nn.MaxPool2d(2, stride=2),
            nn.ReLU(True)
        )

        # Regressor for the 3 * 2 affine matrix
        self.fc_loc = nn.Sequential(
            nn.Linear(10 * 3 * 3, 32),
            nn.ReLU(True),
            nn.Linear(32, 3 * 2)
        )

        # Initialize the weights/bias with identity transformation
        self.fc_loc[2].weight.data.zero_()
        self.fc_loc[2].bias.data.copy_(torch.tensor([1, 0, 0, 0, 1, 0], dtype=torch.float))

    # Spatial transformer network forward function
    def stn(self, x):
        xs = self.localization(x)
        xs = xs.view(-1, 10 * 3 * 3)
        theta = self.fc_loc(xs)
        theta = theta.view(-1, 2, 3)

        grid = F.affine_grid(theta, x.size())
        x = F.grid_sample(x, grid)
        return x

    def forward(self, x):
        # transform the input
        x = self.stn(x)

        # Perform the usual forward pass
        x = F.relu(F.max_pool2d(self.conv1(x), 2))
        x = F.relu(F.max_pool2d(self.conv2_drop(self.conv2(x)), 2))
        x = x.view(-1, 320)
        x = F.relu(self.fc1(x))
        x = F.dropout(x, training=self.training)
        x = self.fc2(x)
        return F.log_softmax(x, dim=1)


class AffineWarp(nn.Module):
    """An affine warp regressed from the input by random weights (far from the identity): F.affine_grid and
    F.grid_sample with align_corners both ways, one grid to a smaller output of a size given as a list."""

    def __init__(self, channels=3):
        super().__init__()
        self.loc = nn.Linear(channels, 6)

    def forward(self, x):
        theta = self.loc(x.mean(dim=(2, 3))).view(-1, 2, 3)
        grid = F.affine_grid(theta, x.size(), align_corners=False)
        out = F.grid_sample(x, grid, align_corners=False)
        small = F.affine_grid(theta, [x.shape[0], 1, 4, 5], align_corners=True)
        return out.mean(dim=1), F.grid_sample(x, small, mode="bilinear", padding_mode="zeros", align_corners=True)


class TextClassificationModel(nn.Module):
    """The PyTorch text-classification tutorial's model: nn.EmbeddingBag over a flat batch of token ids cut
    into bags by offsets, initialised by a method of its own."""

    def __init__(self, vocab_size=30, embed_dim=8, num_class=4):
        super(TextClassificationModel, self).__init__()  # noqa: UP008 (as the tutorial writes it)
        self.embedding = nn.EmbeddingBag(vocab_size, embed_dim, sparse=False)
        self.fc = nn.Linear(embed_dim, num_class)
        self.init_weights()

    def init_weights(self):
        initrange = 0.5
        self.embedding.weight.data.uniform_(-initrange, initrange)
        self.fc.weight.data.uniform_(-initrange, initrange)
        self.fc.bias.data.zero_()

    def forward(self, text, offsets):
        embedded = self.embedding(text, offsets)
        return self.fc(embedded)


class PackedBags(nn.Module):
    """nn.EmbeddingBag by offsets with an empty bag (mode from the constructor), and on a 2-D batch in max mode."""

    def __init__(self, vocab_size=30, embed_dim=8, mode="mean"):
        super().__init__()
        self.bags = nn.EmbeddingBag(vocab_size, embed_dim, mode=mode)
        self.fixed = nn.EmbeddingBag(vocab_size, embed_dim, mode="max")

    def forward(self, text):
        flat = text.reshape(-1)
        offsets = torch.tensor([0, 3, 3, 7])
        return torch.cat([self.bags(flat, offsets), self.fixed(text)[:4]], dim=1)


class TutorialTextBatch(nn.Module):
    """The tutorial's batching: each row of a batch of token ids flattened, its offsets computed."""

    def __init__(self):
        super().__init__()
        self.model = TextClassificationModel()

    def forward(self, text):
        flat = text.reshape(-1)
        offsets = torch.arange(0, flat.shape[0], text.shape[1])
        return self.model(flat, offsets)


def lucid_pair(t):
    return t if isinstance(t, tuple) else (t, t)


class LucidFeedForward(nn.Module):
    def __init__(self, dim, hidden_dim, dropout=0.):
        super().__init__()
        self.net = nn.Sequential(
            nn.LayerNorm(dim),
            nn.Linear(dim, hidden_dim),
            nn.GELU(),
            nn.Dropout(dropout),
            nn.Linear(hidden_dim, dim),
            nn.Dropout(dropout)
        )

    def forward(self, x):
        return self.net(x)


class LucidAttention(nn.Module):
    def __init__(self, dim, heads=8, dim_head=64, dropout=0.):
        super().__init__()
        inner_dim = dim_head * heads
        project_out = not (heads == 1 and dim_head == dim)

        self.heads = heads
        self.scale = dim_head ** -0.5

        self.norm = nn.LayerNorm(dim)

        self.attend = nn.Softmax(dim=-1)
        self.dropout = nn.Dropout(dropout)

        self.to_qkv = nn.Linear(dim, inner_dim * 3, bias=False)

        self.to_out = nn.Sequential(
            nn.Linear(inner_dim, dim),
            nn.Dropout(dropout)
        ) if project_out else nn.Identity()

    def forward(self, x):
        x = self.norm(x)

        qkv = self.to_qkv(x).chunk(3, dim=-1)
        q, k, v = map(lambda t: rearrange(t, 'b n (h d) -> b h n d', h=self.heads), qkv)

        dots = torch.matmul(q, k.transpose(-1, -2)) * self.scale

        attn = self.attend(dots)
        attn = self.dropout(attn)

        out = torch.matmul(attn, v)
        out = rearrange(out, 'b h n d -> b n (h d)')
        return self.to_out(out)


class LucidTransformer(nn.Module):
    def __init__(self, dim, depth, heads, dim_head, mlp_dim, dropout=0.):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.layers = nn.ModuleList([])
        for _ in range(depth):
            self.layers.append(nn.ModuleList([
                LucidAttention(dim, heads=heads, dim_head=dim_head, dropout=dropout),
                LucidFeedForward(dim, mlp_dim, dropout=dropout)
            ]))

    def forward(self, x):
        for attn, ff in self.layers:
            x = attn(x) + x
            x = ff(x) + x

        return self.norm(x)


class LucidViT(nn.Module):
    """lucidrains' vit-pytorch ViT as published: einops Rearrange/rearrange/repeat, chunk and map over a
    lambda, a set literal in an assert, keyword-only constructor arguments."""

    def __init__(self, *, image_size=16, patch_size=4, num_classes=5, dim=16, depth=2, heads=2, mlp_dim=32,
                 pool='cls', channels=3, dim_head=8, dropout=0., emb_dropout=0.):
        super().__init__()
        image_height, image_width = lucid_pair(image_size)
        patch_height, patch_width = lucid_pair(patch_size)

        assert image_height % patch_height == 0 and image_width % patch_width == 0, \
            'Image dimensions must be divisible by the patch size.'

        num_patches = (image_height // patch_height) * (image_width // patch_width)
        patch_dim = channels * patch_height * patch_width
        assert pool in {'cls', 'mean'}, 'pool type must be either cls (cls token) or mean (mean pooling)'

        self.to_patch_embedding = nn.Sequential(
            Rearrange('b c (h p1) (w p2) -> b (h w) (p1 p2 c)', p1=patch_height, p2=patch_width),
            nn.LayerNorm(patch_dim),
            nn.Linear(patch_dim, dim),
            nn.LayerNorm(dim),
        )

        self.pos_embedding = nn.Parameter(torch.randn(1, num_patches + 1, dim))
        self.cls_token = nn.Parameter(torch.randn(1, 1, dim))
        self.dropout = nn.Dropout(emb_dropout)

        self.transformer = LucidTransformer(dim, depth, heads, dim_head, mlp_dim, dropout)

        self.pool = pool
        self.to_latent = nn.Identity()

        self.mlp_head = nn.Linear(dim, num_classes)

    def forward(self, img):
        x = self.to_patch_embedding(img)
        b, n, _ = x.shape

        cls_tokens = repeat(self.cls_token, '1 1 d -> b 1 d', b=b)
        x = torch.cat((cls_tokens, x), dim=1)
        x += self.pos_embedding[:, :(n + 1)]
        x = self.dropout(x)

        x = self.transformer(x)

        x = x.mean(dim=1) if self.pool == 'mean' else x[:, 0]

        x = self.to_latent(x)
        return self.mlp_head(x)


def ddpm_exists(x):
    return x is not None


def ddpm_default(val, d):
    if ddpm_exists(val):
        return val
    return d() if callable(d) else d


class DDPMResidual(nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, x, *args, **kwargs):
        return self.fn(x, *args, **kwargs) + x


def DDPMUpsample(dim, dim_out=None):
    return nn.Sequential(
        nn.Upsample(scale_factor=2, mode='nearest'),
        nn.Conv2d(dim, ddpm_default(dim_out, dim), 3, padding=1)
    )


def DDPMDownsample(dim, dim_out=None):
    return nn.Sequential(
        Rearrange('b c (h p1) (w p2) -> b (c p1 p2) h w', p1=2, p2=2),
        nn.Conv2d(dim * 4, ddpm_default(dim_out, dim), 1)
    )


class DDPMRMSNorm(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.scale = dim ** 0.5
        self.g = nn.Parameter(torch.ones(1, dim, 1, 1))

    def forward(self, x):
        return F.normalize(x, dim=1) * self.g * self.scale


class DDPMBlock(nn.Module):
    def __init__(self, dim, dim_out, dropout=0.):
        super().__init__()
        self.proj = nn.Conv2d(dim, dim_out, 3, padding=1)
        self.norm = DDPMRMSNorm(dim_out)
        self.act = nn.SiLU()
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, scale_shift=None):
        x = self.proj(x)
        x = self.norm(x)

        if ddpm_exists(scale_shift):
            scale, shift = scale_shift
            x = x * (scale + 1) + shift

        x = self.act(x)
        return self.dropout(x)


class DDPMResnetBlock(nn.Module):
    """lucidrains' denoising-diffusion-pytorch ResnetBlock: a time embedding's scale and shift through
    rearrange and chunk, optional layers made on a condition by helpers (exists, default with callable)."""

    def __init__(self, dim=8, dim_out=12, *, time_emb_dim=6, dropout=0.):
        super().__init__()
        self.mlp = nn.Sequential(
            nn.SiLU(),
            nn.Linear(time_emb_dim, dim_out * 2)
        ) if ddpm_exists(time_emb_dim) else None

        self.block1 = DDPMBlock(dim, dim_out, dropout=dropout)
        self.block2 = DDPMBlock(dim_out, dim_out)
        self.res_conv = nn.Conv2d(dim, dim_out, 1) if dim != dim_out else nn.Identity()

    def forward(self, x, time_emb=None):
        scale_shift = None
        if ddpm_exists(self.mlp) and ddpm_exists(time_emb):
            time_emb = self.mlp(time_emb)
            time_emb = rearrange(time_emb, 'b c -> b c 1 1')
            scale_shift = time_emb.chunk(2, dim=1)

        h = self.block1(x, scale_shift=scale_shift)

        h = self.block2(h)

        return h + self.res_conv(x)


class DDPMLinearAttention(nn.Module):
    """Its LinearAttention: memory key/values as one parameter unpacked by map over its first axis, einsum,
    softmax along two axes."""

    def __init__(self, dim=8, heads=2, dim_head=4, num_mem_kv=4):
        super().__init__()
        self.scale = dim_head ** -0.5
        self.heads = heads
        hidden_dim = dim_head * heads

        self.norm = DDPMRMSNorm(dim)

        self.mem_kv = nn.Parameter(torch.randn(2, heads, dim_head, num_mem_kv))
        self.to_qkv = nn.Conv2d(dim, hidden_dim * 3, 1, bias=False)

        self.to_out = nn.Sequential(
            nn.Conv2d(hidden_dim, dim, 1),
            DDPMRMSNorm(dim)
        )

    def forward(self, x):
        b, c, h, w = x.shape

        x = self.norm(x)

        qkv = self.to_qkv(x).chunk(3, dim=1)
        q, k, v = map(lambda t: rearrange(t, 'b (h c) x y -> b h c (x y)', h=self.heads), qkv)

        mk, mv = map(lambda t: repeat(t, 'h c n -> b h c n', b=b), self.mem_kv)
        k, v = map(partial(torch.cat, dim=-1), ((mk, k), (mv, v)))

        q = q.softmax(dim=-2)
        k = k.softmax(dim=-1)

        q = q * self.scale

        context = torch.einsum('b h d n, b h e n -> b h d e', k, v)

        out = torch.einsum('b h d e, b h d n -> b h e n', context, q)
        out = rearrange(out, 'b h c (x y) -> b (h c) x y', h=self.heads, x=h, y=w)
        return self.to_out(out)


class DDPMUpDown(nn.Module):
    """Its Downsample (einops Rearrange) and Upsample (functions returning Sequentials) and Residual."""

    def __init__(self, dim=4):
        super().__init__()
        self.down = DDPMDownsample(dim, dim * 2)
        self.up = DDPMUpsample(dim * 2, dim)
        self.res = DDPMResidual(DDPMRMSNorm(dim))

    def forward(self, x):
        return self.res(self.up(self.down(x)))


class EqualLinear(nn.Module):
    """rosinality's StyleGAN2 EqualLinear: weights scaled at run time, initial values scaled in place
    (randn(...).div_(lr_mul), zeros(...).fill_(bias_init)); the fused leaky ReLU written out."""

    def __init__(self, in_dim, out_dim, bias=True, bias_init=0, lr_mul=1, activation=None):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(out_dim, in_dim).div_(lr_mul))
        if bias:
            self.bias = nn.Parameter(torch.zeros(out_dim).fill_(bias_init))
        else:
            self.bias = None
        self.activation = activation
        self.scale = (1 / math.sqrt(in_dim)) * lr_mul
        self.lr_mul = lr_mul

    def forward(self, input):
        if self.activation:
            out = F.linear(input, self.weight * self.scale)
            out = F.leaky_relu(out + self.bias * self.lr_mul, 0.2) * math.sqrt(2)
        else:
            out = F.linear(input, self.weight * self.scale, bias=self.bias * self.lr_mul)
        return out


class ModulatedConv2d(nn.Module):
    """Its ModulatedConv2d: a weight modulated per sample and demodulated, applied as one grouped F.conv2d
    with a group per sample (groups=batch)."""

    def __init__(self, in_channel=4, out_channel=6, kernel_size=3, style_dim=5, demodulate=True):
        super().__init__()
        self.eps = 1e-8
        self.kernel_size = kernel_size
        self.in_channel = in_channel
        self.out_channel = out_channel
        fan_in = in_channel * kernel_size ** 2
        self.scale = 1 / math.sqrt(fan_in)
        self.padding = kernel_size // 2
        self.weight = nn.Parameter(torch.randn(1, out_channel, in_channel, kernel_size, kernel_size))
        self.modulation = EqualLinear(style_dim, in_channel, bias_init=1)
        self.demodulate = demodulate

    def forward(self, input, style):
        batch, in_channel, height, width = input.shape
        style = self.modulation(style).view(batch, 1, in_channel, 1, 1)
        weight = self.scale * self.weight * style
        if self.demodulate:
            demod = torch.rsqrt(weight.pow(2).sum([2, 3, 4]) + 1e-8)
            weight = weight * demod.view(batch, self.out_channel, 1, 1, 1)
        weight = weight.view(batch * self.out_channel, in_channel, self.kernel_size, self.kernel_size)
        input = input.view(1, batch * in_channel, height, width)
        out = F.conv2d(input, weight, padding=self.padding, groups=batch)
        _, _, height, width = out.shape
        out = out.view(batch, self.out_channel, height, width)
        return out


class PPM(nn.Module):
    """PSPNet's pyramid pooling module: a plain list filled with adaptive pools of each bin size in a loop, then
    wrapped in a ModuleList; bilinear upsampling with align_corners=True."""

    def __init__(self, in_dim=8, reduction_dim=2, bins=(1, 2, 3, 6)):
        super(PPM, self).__init__()  # noqa: UP008 (as the original writes it)
        self.features = []
        for bin in bins:
            self.features.append(nn.Sequential(
                nn.AdaptiveAvgPool2d(bin),
                nn.Conv2d(in_dim, reduction_dim, kernel_size=1, bias=False),
                nn.BatchNorm2d(reduction_dim),
                nn.ReLU(inplace=True)
            ))
        self.features = nn.ModuleList(self.features)

    def forward(self, x):
        x_size = x.size()
        out = [x]
        for f in self.features:
            out.append(F.interpolate(f(x), x_size[2:], mode='bilinear', align_corners=True))
        return torch.cat(out, 1)


class Scale(nn.Module):
    """FCOS's Scale: a parameter from torch.FloatTensor([init_value])."""

    def __init__(self, init_value=1.0):
        super(Scale, self).__init__()  # noqa: UP008 (as the original writes it)
        self.scale = nn.Parameter(torch.FloatTensor([init_value]))

    def forward(self, input):
        return input * self.scale


class FCOSHead(nn.Module):
    """FCOS's head, reduced: a tower added with add_module, per-level Scales, a list of feature maps iterated
    with enumerate, the bias initialised from a prior probability."""

    def __init__(self, channels=8, num_classes=3):
        super().__init__()
        tower = []
        for i in range(2):  # noqa: B007 (as the original writes it)
            tower.append(nn.Conv2d(channels, channels, kernel_size=3, stride=1, padding=1))
            tower.append(nn.GroupNorm(4, channels))
            tower.append(nn.ReLU())
        self.add_module('cls_tower', nn.Sequential(*tower))
        self.cls_logits = nn.Conv2d(channels, num_classes, kernel_size=3, stride=1, padding=1)
        self.bbox_pred = nn.Conv2d(channels, 4, kernel_size=3, stride=1, padding=1)
        self.scales = nn.ModuleList([Scale(init_value=1.0) for _ in range(3)])
        prior_prob = 0.01
        bias_value = -math.log((1 - prior_prob) / prior_prob)
        torch.nn.init.constant_(self.cls_logits.bias, bias_value)

    def forward(self, x):
        logits = []
        bbox_reg = []
        for l, feature in enumerate(x):  # noqa: E741 (as the original writes it)
            cls_tower = self.cls_tower(feature)
            logits.append(self.cls_logits(cls_tower))
            bbox_reg.append(torch.exp(self.scales[l](self.bbox_pred(cls_tower))))
        return logits, bbox_reg


class FCOSOnTwo(nn.Module):
    """The FCOS head on two feature levels of different sizes."""

    def __init__(self):
        super().__init__()
        self.head = FCOSHead()

    def forward(self, a, b):
        logits, boxes = self.head([a, b])
        return logits[0], logits[1], boxes[0], boxes[1]


class GPT2MLP(nn.Module):
    """transformers' GPT2MLP as it is written: transformers' own Conv1D (a dense layer whose weight is kept as
    (in, out)) and an activation from ACT2FN."""

    def __init__(self, intermediate_size=32, hidden_size=16, activation_function="gelu_new", resid_pdrop=0.1):
        super().__init__()
        embed_dim = hidden_size
        self.c_fc = Conv1D(intermediate_size, embed_dim)
        self.c_proj = Conv1D(embed_dim, intermediate_size)
        self.act = ACT2FN[activation_function]
        self.dropout = nn.Dropout(resid_pdrop)

    def forward(self, hidden_states):
        hidden_states = self.c_fc(hidden_states)
        hidden_states = self.act(hidden_states)
        hidden_states = self.c_proj(hidden_states)
        hidden_states = self.dropout(hidden_states)
        return hidden_states


class AppendedStack(nn.Module):
    """An empty nn.Sequential filled with .append() in a loop, pools of a variable size and stride."""

    def __init__(self, channels=(3, 6, 8), pool=2, stride=1):
        super().__init__()
        self.body = nn.Sequential()
        for cin, cout in zip(channels[:-1], channels[1:]):
            self.body.append(nn.Conv2d(cin, cout, 3, padding=1))
            self.body.append(nn.ReLU())
            self.body.append(nn.MaxPool2d(pool, stride))

    def forward(self, x):
        return self.body(x)


class VectorQuantizer(nn.Module):
    """A VQ-VAE quantizer as MishaLaskin's vqvae writes it: nearest codes by argmin of distances, one-hot
    encodings by zeros(...).scatter_(1, indices, 1), the straight-through estimator, loss and perplexity."""

    def __init__(self, n_e=16, e_dim=4, beta=0.25):
        super().__init__()
        self.n_e = n_e
        self.e_dim = e_dim
        self.beta = beta
        self.embedding = nn.Embedding(self.n_e, self.e_dim)
        self.embedding.weight.data.uniform_(-1.0 / self.n_e, 1.0 / self.n_e)

    def forward(self, z):
        z = z.permute(0, 2, 3, 1).contiguous()
        z_flattened = z.view(-1, self.e_dim)
        d = torch.sum(z_flattened ** 2, dim=1, keepdim=True) + \
            torch.sum(self.embedding.weight ** 2, dim=1) - 2 * \
            torch.matmul(z_flattened, self.embedding.weight.t())
        min_encoding_indices = torch.argmin(d, dim=1).unsqueeze(1)
        min_encodings = torch.zeros(min_encoding_indices.shape[0], self.n_e).to(z)
        min_encodings.scatter_(1, min_encoding_indices, 1)
        z_q = torch.matmul(min_encodings, self.embedding.weight).view(z.shape)
        loss = torch.mean((z_q.detach() - z) ** 2) + self.beta * torch.mean((z_q - z.detach()) ** 2)
        z_q = z + (z_q - z).detach()
        e_mean = torch.mean(min_encodings, dim=0)
        perplexity = torch.exp(-torch.sum(e_mean * torch.log(e_mean + 1e-10)))
        z_q = z_q.permute(0, 3, 1, 2).contiguous()
        return loss, z_q, perplexity, min_encodings, min_encoding_indices


class ScatterTopK(nn.Module):
    """torch.scatter of a tensor of values along the last axis of a 3-D tensor, at the top-2 positions of a score."""

    def __init__(self, dim=5):
        super().__init__()
        self.score = nn.Linear(dim, dim)

    def forward(self, x):
        index = torch.topk(self.score(x), 2, dim=-1)[1]
        picked = torch.gather(x, 2, index) * 2
        return torch.scatter(torch.zeros_like(x), 2, index, picked) + x.scatter(2, index[..., :1], -1.0)


class Seq2SeqDecoder(nn.Module):
    """bentrevett's seq2seq tutorial decoder: attention over time-major encoder outputs, bmm, a GRU step from
    the given state, and an assert on tensor values (not kept)."""

    def __init__(self, output_dim=12, emb_dim=4, enc_hid_dim=6, dec_hid_dim=5, dropout=0.1):
        super().__init__()
        self.output_dim = output_dim
        self.attention = Seq2SeqAttention(enc_hid_dim, dec_hid_dim)
        self.embedding = nn.Embedding(output_dim, emb_dim)
        self.rnn = nn.GRU((enc_hid_dim * 2) + emb_dim, dec_hid_dim)
        self.fc_out = nn.Linear((enc_hid_dim * 2) + dec_hid_dim + emb_dim, output_dim)
        self.dropout = nn.Dropout(dropout)

    def forward(self, input, hidden, encoder_outputs):
        input = input.unsqueeze(0)
        embedded = self.dropout(self.embedding(input))
        a = self.attention(hidden, encoder_outputs)
        a = a.unsqueeze(1)
        encoder_outputs = encoder_outputs.permute(1, 0, 2)
        weighted = torch.bmm(a, encoder_outputs)
        weighted = weighted.permute(1, 0, 2)
        rnn_input = torch.cat((embedded, weighted), dim=2)
        output, hidden = self.rnn(rnn_input, hidden.unsqueeze(0))
        assert (output == hidden).all()
        embedded = embedded.squeeze(0)
        output = output.squeeze(0)
        weighted = weighted.squeeze(0)
        prediction = self.fc_out(torch.cat((output, weighted, embedded), dim=1))
        return prediction, hidden.squeeze(0)


class Seq2SeqDecoderStep(nn.Module):
    """One decoding step on tokens made from the batch."""

    def __init__(self):
        super().__init__()
        self.decoder = Seq2SeqDecoder()

    def forward(self, hidden, encoder_outputs):
        tokens = torch.arange(hidden.shape[0]) % 12
        return self.decoder(tokens, hidden, encoder_outputs)


class CharRNN(nn.Module):
    """char-rnn.pytorch's model: one step of a stacked GRU from a given state, init_hidden called by a user."""

    def __init__(self, input_size=20, hidden_size=8, output_size=20, n_layers=2):
        super(CharRNN, self).__init__()  # noqa: UP008 (as the original writes it)
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.output_size = output_size
        self.n_layers = n_layers
        self.encoder = nn.Embedding(input_size, hidden_size)
        self.rnn = nn.GRU(hidden_size, hidden_size, n_layers)
        self.decoder = nn.Linear(hidden_size, output_size)

    def forward(self, input, hidden):
        batch_size = input.size(0)
        encoded = self.encoder(input)
        output, hidden = self.rnn(encoded.view(1, batch_size, -1), hidden)
        output = self.decoder(output.view(batch_size, -1))
        return output, hidden

    def init_hidden(self, batch_size):
        return torch.zeros(self.n_layers, batch_size, self.hidden_size)


class CharRNNStep(nn.Module):
    """Two steps of CharRNN from its init_hidden."""

    def __init__(self):
        super().__init__()
        self.rnn = CharRNN()

    def forward(self, tokens):
        hidden = self.rnn.init_hidden(tokens.shape[0])
        out, hidden = self.rnn(tokens, hidden)
        out2, _ = self.rnn(tokens, hidden)
        return out + out2


class M5(nn.Module):
    """The torchaudio speech-command tutorial's M5: 1-D convolutions, F.avg_pool1d over the whole length."""

    def __init__(self, n_input=1, n_output=5, stride=4, n_channel=8):
        super().__init__()
        self.conv1 = nn.Conv1d(n_input, n_channel, kernel_size=20, stride=stride)
        self.bn1 = nn.BatchNorm1d(n_channel)
        self.pool1 = nn.MaxPool1d(4)
        self.conv2 = nn.Conv1d(n_channel, n_channel, kernel_size=3)
        self.bn2 = nn.BatchNorm1d(n_channel)
        self.pool2 = nn.MaxPool1d(4)
        self.conv3 = nn.Conv1d(n_channel, 2 * n_channel, kernel_size=3)
        self.bn3 = nn.BatchNorm1d(2 * n_channel)
        self.pool3 = nn.MaxPool1d(4)
        self.fc1 = nn.Linear(2 * n_channel, n_output)

    def forward(self, x):
        x = self.conv1(x)
        x = F.relu(self.bn1(x))
        x = self.pool1(x)
        x = self.conv2(x)
        x = F.relu(self.bn2(x))
        x = self.pool2(x)
        x = self.conv3(x)
        x = F.relu(self.bn3(x))
        x = self.pool3(x)
        x = F.avg_pool1d(x, x.shape[-1])
        x = x.permute(0, 2, 1)
        x = self.fc1(x)
        return F.log_softmax(x, dim=2)


class SincConv_fast(nn.Module):  # noqa: N801 (as SincNet names it)
    """SincNet's SincConv_fast: band-pass filters computed in the forward pass from two parameters, kept on the
    layer (self.filters) and applied with F.conv1d; its buffers moved to the input's device on every call."""

    @staticmethod
    def to_mel(hz):
        return 2595 * np.log10(1 + hz / 700)

    @staticmethod
    def to_hz(mel):
        return 700 * (10 ** (mel / 2595) - 1)

    def __init__(self, out_channels=4, kernel_size=15, sample_rate=16000, in_channels=1, stride=1, padding=0,
                 dilation=1, bias=False, groups=1, min_low_hz=50, min_band_hz=50):
        super(SincConv_fast, self).__init__()  # noqa: UP008 (as the original writes it)
        if in_channels != 1:
            msg = "SincConv only support one input channel (here, in_channels = {%i})" % (in_channels)  # noqa: UP031
            raise ValueError(msg)
        self.out_channels = out_channels
        self.kernel_size = kernel_size
        if kernel_size % 2 == 0:
            self.kernel_size = self.kernel_size + 1
        self.stride = stride
        self.padding = padding
        self.dilation = dilation
        if bias:
            raise ValueError('SincConv does not support bias.')
        if groups > 1:
            raise ValueError('SincConv does not support groups.')
        self.sample_rate = sample_rate
        self.min_low_hz = min_low_hz
        self.min_band_hz = min_band_hz
        low_hz = 30
        high_hz = self.sample_rate / 2 - (self.min_low_hz + self.min_band_hz)
        mel = np.linspace(self.to_mel(low_hz), self.to_mel(high_hz), self.out_channels + 1)
        hz = self.to_hz(mel)
        self.low_hz_ = nn.Parameter(torch.Tensor(hz[:-1]).view(-1, 1))
        self.band_hz_ = nn.Parameter(torch.Tensor(np.diff(hz)).view(-1, 1))
        n_lin = torch.linspace(0, (self.kernel_size / 2) - 1, steps=int((self.kernel_size / 2)))
        self.window_ = 0.54 - 0.46 * torch.cos(2 * math.pi * n_lin / self.kernel_size)
        n = (self.kernel_size - 1) / 2.0
        self.n_ = 2 * math.pi * torch.arange(-n, 0).view(1, -1) / self.sample_rate

    def forward(self, waveforms):
        self.n_ = self.n_.to(waveforms.device)
        self.window_ = self.window_.to(waveforms.device)
        low = self.min_low_hz + torch.abs(self.low_hz_)
        high = torch.clamp(low + self.min_band_hz + torch.abs(self.band_hz_), self.min_low_hz, self.sample_rate / 2)
        band = (high - low)[:, 0]
        f_times_t_low = torch.matmul(low, self.n_)
        f_times_t_high = torch.matmul(high, self.n_)
        band_pass_left = ((torch.sin(f_times_t_high) - torch.sin(f_times_t_low)) / (self.n_ / 2)) * self.window_
        band_pass_center = 2 * band.view(-1, 1)
        band_pass_right = torch.flip(band_pass_left, dims=[1])
        band_pass = torch.cat([band_pass_left, band_pass_center, band_pass_right], dim=1)
        band_pass = band_pass / (2 * band[:, None])
        self.filters = (band_pass).view(self.out_channels, 1, self.kernel_size)
        return F.conv1d(waveforms, self.filters, stride=self.stride, padding=self.padding, dilation=self.dilation,
                        bias=None, groups=1)


class MAB(nn.Module):
    """juho-lee's Set Transformer MAB: heads split and joined along the batch axis, norms made on a flag and
    read with getattr(self, 'ln0', None)."""

    def __init__(self, dim_Q, dim_K, dim_V, num_heads, ln=False):  # noqa: N803 (as the original names them)
        super(MAB, self).__init__()  # noqa: UP008 (as the original writes it)
        self.dim_V = dim_V
        self.num_heads = num_heads
        self.fc_q = nn.Linear(dim_Q, dim_V)
        self.fc_k = nn.Linear(dim_K, dim_V)
        self.fc_v = nn.Linear(dim_K, dim_V)
        if ln:
            self.ln0 = nn.LayerNorm(dim_V)
            self.ln1 = nn.LayerNorm(dim_V)
        self.fc_o = nn.Linear(dim_V, dim_V)

    def forward(self, Q, K):
        Q = self.fc_q(Q)
        K, V = self.fc_k(K), self.fc_v(K)

        dim_split = self.dim_V // self.num_heads
        Q_ = torch.cat(Q.split(dim_split, 2), 0)
        K_ = torch.cat(K.split(dim_split, 2), 0)
        V_ = torch.cat(V.split(dim_split, 2), 0)

        A = torch.softmax(Q_.bmm(K_.transpose(1, 2)) / math.sqrt(self.dim_V), 2)
        O = torch.cat((Q_ + A.bmm(V_)).split(Q.size(0), 0), 2)  # noqa: E741 (as the original names it)
        O = O if getattr(self, 'ln0', None) is None else self.ln0(O)  # noqa: E741 (as the original names it)
        O = O + F.relu(self.fc_o(O))  # noqa: E741 (as the original names it)
        O = O if getattr(self, 'ln1', None) is None else self.ln1(O)  # noqa: E741 (as the original names it)
        return O


class SAB(nn.Module):
    """Its SAB."""

    def __init__(self, dim_in=6, dim_out=8, num_heads=2, ln=False):
        super(SAB, self).__init__()  # noqa: UP008 (as the original writes it)
        self.mab = MAB(dim_in, dim_in, dim_out, num_heads, ln=ln)

    def forward(self, X):
        return self.mab(X, X)


class ISAB(nn.Module):
    """Its ISAB: inducing points from a legacy torch.Tensor(...) shape, xavier-initialised."""

    def __init__(self, dim_in=6, dim_out=8, num_heads=2, num_inds=3, ln=True):
        super(ISAB, self).__init__()  # noqa: UP008 (as the original writes it)
        self.I = nn.Parameter(torch.Tensor(1, num_inds, dim_out))
        nn.init.xavier_uniform_(self.I)
        self.mab0 = MAB(dim_out, dim_in, dim_out, num_heads, ln=ln)
        self.mab1 = MAB(dim_in, dim_out, dim_out, num_heads, ln=ln)

    def forward(self, X):
        H = self.mab0(self.I.repeat(X.size(0), 1, 1), X)
        return self.mab1(X, H)


class PMA(nn.Module):
    """Its PMA: seed vectors repeated over the batch."""

    def __init__(self, dim=8, num_heads=2, num_seeds=1, ln=False):
        super(PMA, self).__init__()  # noqa: UP008 (as the original writes it)
        self.S = nn.Parameter(torch.Tensor(1, num_seeds, dim))
        nn.init.xavier_uniform_(self.S)
        self.mab = MAB(dim, dim, dim, num_heads, ln=ln)

    def forward(self, X):
        return self.mab(self.S.repeat(X.size(0), 1, 1), X)


class WithProperty(nn.Module):
    """Properties as models write them: one the forward pass reads, and a `device` property (from
    next(self.parameters())) and extra_repr that nothing calls, left out with a note; x.new_tensor(...) of the
    input's dtype, masked_fill, the tanh GELU."""

    def __init__(self, dim=6):
        super().__init__()
        self.fc = nn.Linear(dim, dim)
        self.scale_init = 0.5

    @property
    def scale(self):
        return self.scale_init * 2

    @property
    def device(self):
        return next(self.parameters()).device

    def extra_repr(self):
        return f"scale={self.scale}"

    def forward(self, x):
        mask = x > 0
        y = self.fc(x).masked_fill(mask, 0.0)
        y = y * self.scale
        z = x.new_tensor([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
        return y + z + F.gelu(x, approximate="tanh")


class RNNModel(nn.Module):
    """PyTorch's word-language-model example: the recurrent class chosen by name (getattr on nn under a test of
    the name), a try/except turning a KeyError into a clearer error, weight tying under a flag, an unused
    init_hidden reading next(self.parameters())."""

    def __init__(self, rnn_type, ntoken, ninp, nhid, nlayers, dropout=0.5, tie_weights=False):
        super(RNNModel, self).__init__()
        self.ntoken = ntoken
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.Embedding(ntoken, ninp)
        if rnn_type in ['LSTM', 'GRU']:
            self.rnn = getattr(nn, rnn_type)(ninp, nhid, nlayers, dropout=dropout)
        else:
            try:
                nonlinearity = {'RNN_TANH': 'tanh', 'RNN_RELU': 'relu'}[rnn_type]
            except KeyError as e:
                raise ValueError("""An invalid option for `--model` was supplied,
                                 options are ['LSTM', 'GRU', 'RNN_TANH' or 'RNN_RELU']""") from e
            self.rnn = nn.RNN(ninp, nhid, nlayers, nonlinearity=nonlinearity, dropout=dropout)
        self.decoder = nn.Linear(nhid, ntoken)
        if tie_weights:
            if nhid != ninp:
                raise ValueError('When using the tied flag, nhid must be equal to emsize')
            self.decoder.weight = self.encoder.weight
        self.init_weights()
        self.rnn_type = rnn_type
        self.nhid = nhid
        self.nlayers = nlayers

    def init_weights(self):
        initrange = 0.1
        nn.init.uniform_(self.encoder.weight, -initrange, initrange)
        nn.init.zeros_(self.decoder.bias)
        nn.init.uniform_(self.decoder.weight, -initrange, initrange)

    def forward(self, input):
        emb = self.drop(self.encoder(input))
        output, hidden = self.rnn(emb)
        output = self.drop(output)
        decoded = self.decoder(output)
        decoded = decoded.view(-1, self.ntoken)
        return F.log_softmax(decoded, dim=1)

    def init_hidden(self, bsz):
        weight = next(self.parameters())
        if self.rnn_type == 'LSTM':
            return (weight.new_zeros(self.nlayers, bsz, self.nhid),
                    weight.new_zeros(self.nlayers, bsz, self.nhid))
        else:
            return weight.new_zeros(self.nlayers, bsz, self.nhid)


def _make_divisible(v: float, divisor: int, min_value: Optional[int] = None) -> int:
    if min_value is None:
        min_value = divisor
    new_v = max(min_value, int(v + divisor / 2) // divisor * divisor)
    if new_v < 0.9 * v:
        new_v += divisor
    return new_v


class InvertedResidualConfig:
    def __init__(self, input_channels: int, kernel: int, expanded_channels: int, out_channels: int, use_se: bool,
                 activation: str, stride: int, dilation: int, width_mult: float):
        self.input_channels = self.adjust_channels(input_channels, width_mult)
        self.kernel = kernel
        self.expanded_channels = self.adjust_channels(expanded_channels, width_mult)
        self.out_channels = self.adjust_channels(out_channels, width_mult)
        self.use_se = use_se
        self.use_hs = activation == "HS"
        self.stride = stride
        self.dilation = dilation

    @staticmethod
    def adjust_channels(channels: int, width_mult: float):
        return _make_divisible(channels * width_mult, 8)


class SElayer(nn.Module):
    def __init__(self, input_channels: int, squeeze_channels: int, activation: Callable[..., nn.Module] = nn.ReLU,
                 scale_activation: Callable[..., nn.Module] = nn.Sigmoid) -> None:
        super().__init__()
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc1 = nn.Conv2d(input_channels, squeeze_channels, 1)
        self.fc2 = nn.Conv2d(squeeze_channels, input_channels, 1)
        self.activation = activation()
        self.scale_activation = scale_activation()

    def _scale(self, input):
        scale = self.avgpool(input)
        scale = self.fc1(scale)
        scale = self.activation(scale)
        scale = self.fc2(scale)
        return self.scale_activation(scale)

    def forward(self, input):
        scale = self._scale(input)
        return scale * input


class MobileV3Block(nn.Module):
    """torchvision's MobileNetV3 InvertedResidual: a plain configuration class, a partial of the module's own
    class as a default factory, a norm factory passed as a local partial."""
    def __init__(self, cnf: InvertedResidualConfig, norm_layer: Callable[..., nn.Module],
                 se_layer: Callable[..., nn.Module] = partial(SElayer, scale_activation=nn.Hardsigmoid)):
        super().__init__()
        if not (1 <= cnf.stride <= 2):
            raise ValueError("illegal stride value")
        self.use_res_connect = cnf.stride == 1 and cnf.input_channels == cnf.out_channels
        layers: List[nn.Module] = []
        activation_layer = nn.Hardswish if cnf.use_hs else nn.ReLU
        if cnf.expanded_channels != cnf.input_channels:
            layers.append(nn.Sequential(nn.Conv2d(cnf.input_channels, cnf.expanded_channels, 1, bias=False),
                                        norm_layer(cnf.expanded_channels), activation_layer(inplace=True)))
        stride = 1 if cnf.dilation > 1 else cnf.stride
        layers.append(nn.Sequential(
            nn.Conv2d(cnf.expanded_channels, cnf.expanded_channels, cnf.kernel, stride,
                      (cnf.kernel - 1) // 2 * cnf.dilation, dilation=cnf.dilation,
                      groups=cnf.expanded_channels, bias=False),
            norm_layer(cnf.expanded_channels), activation_layer(inplace=True)))
        if cnf.use_se:
            squeeze_channels = _make_divisible(cnf.expanded_channels // 4, 8)
            layers.append(se_layer(cnf.expanded_channels, squeeze_channels))
        layers.append(nn.Sequential(nn.Conv2d(cnf.expanded_channels, cnf.out_channels, 1, bias=False),
                                    norm_layer(cnf.out_channels)))
        self.block = nn.Sequential(*layers)
        self.out_channels = cnf.out_channels
        self._is_cn = cnf.stride > 1

    def forward(self, input):
        result = self.block(input)
        if self.use_res_connect:
            result += input
        return result


class MobileV3Pair(nn.Module):
    def __init__(self):
        super().__init__()
        norm = partial(nn.BatchNorm2d, eps=0.001, momentum=0.01)
        self.a = MobileV3Block(InvertedResidualConfig(16, 3, 64, 16, True, "HS", 1, 1, 1.0), norm)
        self.b = MobileV3Block(InvertedResidualConfig(16, 5, 72, 24, False, "RE", 2, 1, 1.0), norm)

    def forward(self, x):
        return self.b(self.a(x))


class Permute(nn.Module):
    def __init__(self, dims: List[int]):
        super().__init__()
        self.dims = dims

    def forward(self, x):
        return torch.permute(x, self.dims)


class LayerNorm2d(nn.LayerNorm):
    """torchvision's: F.layer_norm on the layer's own normalized_shape, weight, bias and eps."""
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.permute(0, 2, 3, 1)
        x = F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)
        x = x.permute(0, 3, 1, 2)
        return x


class CNBlock(nn.Module):
    """torchvision's ConvNeXt block: a Permute module, a layer-scale parameter shaped (dim, 1, 1)."""
    def __init__(self, dim, layer_scale: float, stochastic_depth_prob: float,
                 norm_layer: Optional[Callable[..., nn.Module]] = None) -> None:
        super().__init__()
        if norm_layer is None:
            norm_layer = partial(nn.LayerNorm, eps=1e-6)
        self.block = nn.Sequential(
            nn.Conv2d(dim, dim, kernel_size=7, padding=3, groups=dim, bias=True),
            Permute([0, 2, 3, 1]),
            norm_layer(dim),
            nn.Linear(in_features=dim, out_features=4 * dim, bias=True),
            nn.GELU(),
            nn.Linear(in_features=4 * dim, out_features=dim, bias=True),
            Permute([0, 3, 1, 2]),
        )
        self.layer_scale = nn.Parameter(torch.ones(dim, 1, 1) * layer_scale)

    def forward(self, input):
        result = self.layer_scale * self.block(input)
        result += input
        return result


class CNDownsample(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.down = nn.Sequential(LayerNorm2d(dim), nn.Conv2d(dim, dim * 2, kernel_size=2, stride=2))
        self.blk = CNBlock(dim * 2, 1e-6 * 1e5, 0.0)

    def forward(self, x):
        return self.blk(self.down(x))


class BasicConv2d(nn.Module):
    """torchvision's Inception v3: the convolution's options passed on as **kwargs."""
    def __init__(self, in_channels: int, out_channels: int, **kwargs) -> None:
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, bias=False, **kwargs)
        self.bn = nn.BatchNorm2d(out_channels, eps=0.001)

    def forward(self, x: Tensor) -> Tensor:
        x = self.conv(x)
        x = self.bn(x)
        return F.relu(x, inplace=True)


class InceptionB(nn.Module):
    def __init__(self, in_channels: int, conv_block=None) -> None:
        super().__init__()
        if conv_block is None:
            conv_block = BasicConv2d
        self.branch3x3 = conv_block(in_channels, 384, kernel_size=3, stride=2)
        self.branch3x3dbl_1 = conv_block(in_channels, 64, kernel_size=1)
        self.branch3x3dbl_2 = conv_block(64, 96, kernel_size=3, padding=1)
        self.branch3x3dbl_3 = conv_block(96, 96, kernel_size=3, stride=2)

    def _forward(self, x: Tensor) -> List[Tensor]:
        branch3x3 = self.branch3x3(x)
        branch3x3dbl = self.branch3x3dbl_1(x)
        branch3x3dbl = self.branch3x3dbl_2(branch3x3dbl)
        branch3x3dbl = self.branch3x3dbl_3(branch3x3dbl)
        branch_pool = F.max_pool2d(x, kernel_size=3, stride=2)
        outputs = [branch3x3, branch3x3dbl, branch_pool]
        return outputs

    def forward(self, x: Tensor) -> Tensor:
        outputs = self._forward(x)
        return torch.cat(outputs, 1)


class InceptionE(nn.Module):
    def __init__(self, in_channels: int, conv_block=None) -> None:
        super().__init__()
        if conv_block is None:
            conv_block = BasicConv2d
        self.branch1x1 = conv_block(in_channels, 320, kernel_size=1)
        self.branch3x3_1 = conv_block(in_channels, 384, kernel_size=1)
        self.branch3x3_2a = conv_block(384, 384, kernel_size=(1, 3), padding=(0, 1))
        self.branch3x3_2b = conv_block(384, 384, kernel_size=(3, 1), padding=(1, 0))
        self.branch3x3dbl_1 = conv_block(in_channels, 448, kernel_size=1)
        self.branch3x3dbl_2 = conv_block(448, 384, kernel_size=3, padding=1)
        self.branch3x3dbl_3a = conv_block(384, 384, kernel_size=(1, 3), padding=(0, 1))
        self.branch3x3dbl_3b = conv_block(384, 384, kernel_size=(3, 1), padding=(1, 0))
        self.branch_pool = conv_block(in_channels, 192, kernel_size=1)

    def _forward(self, x: Tensor) -> List[Tensor]:
        branch1x1 = self.branch1x1(x)
        branch3x3 = self.branch3x3_1(x)
        branch3x3 = [self.branch3x3_2a(branch3x3), self.branch3x3_2b(branch3x3)]
        branch3x3 = torch.cat(branch3x3, 1)
        branch3x3dbl = self.branch3x3dbl_1(x)
        branch3x3dbl = self.branch3x3dbl_2(branch3x3dbl)
        branch3x3dbl = [self.branch3x3dbl_3a(branch3x3dbl), self.branch3x3dbl_3b(branch3x3dbl)]
        branch3x3dbl = torch.cat(branch3x3dbl, 1)
        branch_pool = F.avg_pool2d(x, kernel_size=3, stride=1, padding=1)
        branch_pool = self.branch_pool(branch_pool)
        outputs = [branch1x1, branch3x3, branch3x3dbl, branch_pool]
        return outputs

    def forward(self, x: Tensor) -> Tensor:
        outputs = self._forward(x)
        return torch.cat(outputs, 1)


class MLP(torch.nn.Sequential):
    """torchvision.ops.MLP: a Sequential subclass, layer options passed as **params (empty, or inplace)."""
    def __init__(self, in_channels: int, hidden_channels: List[int], norm_layer=None,
                 activation_layer=torch.nn.ReLU, inplace: Optional[bool] = None, bias: bool = True,
                 dropout: float = 0.0):
        params = {} if inplace is None else {"inplace": inplace}
        layers = []
        in_dim = in_channels
        for hidden_dim in hidden_channels[:-1]:
            layers.append(torch.nn.Linear(in_dim, hidden_dim, bias=bias))
            if norm_layer is not None:
                layers.append(norm_layer(hidden_dim))
            layers.append(activation_layer(**params))
            layers.append(torch.nn.Dropout(dropout, **params))
            in_dim = hidden_dim
        layers.append(torch.nn.Linear(in_dim, hidden_channels[-1], bias=bias))
        layers.append(torch.nn.Dropout(dropout, **params))
        super().__init__(*layers)


class MLPBlock(MLP):
    """Transformer MLP block."""
    _version = 2

    def __init__(self, in_dim: int, mlp_dim: int, dropout: float):
        super().__init__(in_dim, [mlp_dim, in_dim], activation_layer=nn.GELU, inplace=None, dropout=dropout)
        for m in self.modules():
            if isinstance(m, nn.Linear):
                nn.init.xavier_uniform_(m.weight)
                if m.bias is not None:
                    nn.init.normal_(m.bias, std=1e-6)


class EncoderBlock(nn.Module):
    """Transformer encoder block."""

    def __init__(self, num_heads: int, hidden_dim: int, mlp_dim: int, dropout: float, attention_dropout: float,
                 norm_layer=partial(nn.LayerNorm, eps=1e-6)):  # noqa: B008 (as the original writes it)
        super().__init__()
        self.num_heads = num_heads
        self.ln_1 = norm_layer(hidden_dim)
        self.self_attention = nn.MultiheadAttention(hidden_dim, num_heads, dropout=attention_dropout, batch_first=True)
        self.dropout = nn.Dropout(dropout)
        self.ln_2 = norm_layer(hidden_dim)
        self.mlp = MLPBlock(hidden_dim, mlp_dim, dropout)

    def forward(self, input: torch.Tensor):
        torch._assert(input.dim() == 3, f"Expected (batch_size, seq_length, hidden_dim) got {input.shape}")
        x = self.ln_1(input)
        x, _ = self.self_attention(x, x, x, need_weights=False)
        x = self.dropout(x)
        x = x + input
        y = self.ln_2(x)
        y = self.mlp(y)
        return x + y


class Encoder(nn.Module):
    """torchvision's ViT encoder: a Sequential of an OrderedDict filled in a loop, a parameter drawn by
    empty(...).normal_(std=...), torch._assert on the input's rank."""

    def __init__(self, seq_length: int, num_layers: int, num_heads: int, hidden_dim: int, mlp_dim: int,
                 dropout: float, attention_dropout: float,
                 norm_layer=partial(nn.LayerNorm, eps=1e-6)):  # noqa: B008 (as the original writes it)
        super().__init__()
        self.pos_embedding = nn.Parameter(torch.empty(1, seq_length, hidden_dim).normal_(std=0.02))
        self.dropout = nn.Dropout(dropout)
        layers: OrderedDict[str, nn.Module] = OrderedDict()
        for i in range(num_layers):
            layers[f"encoder_layer_{i}"] = EncoderBlock(num_heads, hidden_dim, mlp_dim, dropout, attention_dropout,
                                                        norm_layer)
        self.layers = nn.Sequential(layers)
        self.ln = norm_layer(hidden_dim)

    def forward(self, input: torch.Tensor):
        torch._assert(input.dim() == 3, f"Expected (batch_size, seq_length, hidden_dim) got {input.shape}")
        input = input + self.pos_embedding
        return self.ln(self.layers(self.dropout(input)))


class SimpleStemIN(nn.Module):
    def __init__(self, width_in: int, width_out: int, norm_layer=nn.BatchNorm2d, activation_layer=nn.ReLU) -> None:
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(width_in, width_out, kernel_size=3, stride=2, padding=1, bias=False),
                                  norm_layer(width_out), activation_layer())

    def forward(self, x):
        return self.stem(x)


class Fire(nn.Module):
    def __init__(self, inplanes: int, squeeze_planes: int, expand1x1_planes: int, expand3x3_planes: int) -> None:
        super().__init__()
        self.inplanes = inplanes
        self.squeeze = nn.Conv2d(inplanes, squeeze_planes, kernel_size=1)
        self.squeeze_activation = nn.ReLU(inplace=True)
        self.expand1x1 = nn.Conv2d(squeeze_planes, expand1x1_planes, kernel_size=1)
        self.expand1x1_activation = nn.ReLU(inplace=True)
        self.expand3x3 = nn.Conv2d(squeeze_planes, expand3x3_planes, kernel_size=3, padding=1)
        self.expand3x3_activation = nn.ReLU(inplace=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.squeeze_activation(self.squeeze(x))
        return torch.cat(
            [self.expand1x1_activation(self.expand1x1(x)), self.expand3x3_activation(self.expand3x3(x))], 1
        )


class SqueezeNetSmall(nn.Module):
    """torchvision's SqueezeNet 1.0 (two Fire modules): max pools with ceil_mode=True."""
    def __init__(self, num_classes: int = 10, dropout: float = 0.5) -> None:
        super().__init__()
        self.num_classes = num_classes
        self.features = nn.Sequential(
            nn.Conv2d(3, 96, kernel_size=7, stride=2),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(kernel_size=3, stride=2, ceil_mode=True),
            Fire(96, 16, 64, 64),
            Fire(128, 16, 64, 64),
            nn.MaxPool2d(kernel_size=3, stride=2, ceil_mode=True),
        )
        final_conv = nn.Conv2d(128, self.num_classes, kernel_size=1)
        self.classifier = nn.Sequential(nn.Dropout(p=dropout), final_conv, nn.ReLU(inplace=True),
                                        nn.AdaptiveAvgPool2d((1, 1)))
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                if m is final_conv:
                    nn.init.normal_(m.weight, mean=0.0, std=0.01)
                else:
                    nn.init.kaiming_uniform_(m.weight)
                if m.bias is not None:
                    nn.init.constant_(m.bias, 0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.features(x)
        x = self.classifier(x)
        return torch.flatten(x, 1)


class BertPooler(nn.Module):
    def __init__(self, hidden_size=16):
        super().__init__()
        self.dense = nn.Linear(hidden_size, hidden_size)
        self.activation = nn.Tanh()

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        first_token_tensor = hidden_states[:, 0]
        pooled_output = self.dense(first_token_tensor)
        pooled_output = self.activation(pooled_output)
        return pooled_output


class ViTSelfAttention(nn.Module):
    def __init__(self, hidden_size=16, num_attention_heads=4, qkv_bias=True, dropout=0.0) -> None:
        super().__init__()
        if hidden_size % num_attention_heads != 0 and not hasattr(self, "embedding_size"):
            raise ValueError(f"The hidden size {hidden_size} is not a multiple of the number of attention heads.")
        self.num_attention_heads = num_attention_heads
        self.attention_head_size = int(hidden_size / num_attention_heads)
        self.all_head_size = self.num_attention_heads * self.attention_head_size
        self.dropout_prob = dropout
        self.scaling = self.attention_head_size**-0.5
        self.is_causal = False
        self.query = nn.Linear(hidden_size, self.all_head_size, bias=qkv_bias)
        self.key = nn.Linear(hidden_size, self.all_head_size, bias=qkv_bias)
        self.value = nn.Linear(hidden_size, self.all_head_size, bias=qkv_bias)

    def forward(self, hidden_states: torch.Tensor,
                head_mask: Optional[torch.Tensor] = None) -> Tuple[torch.Tensor, torch.Tensor]:
        batch_size = hidden_states.shape[0]
        new_shape = batch_size, -1, self.num_attention_heads, self.attention_head_size
        key_layer = self.key(hidden_states).view(*new_shape).transpose(1, 2)
        value_layer = self.value(hidden_states).view(*new_shape).transpose(1, 2)
        query_layer = self.query(hidden_states).view(*new_shape).transpose(1, 2)
        attn_weights = torch.matmul(query_layer, key_layer.transpose(2, 3)) * self.scaling
        attn_weights = nn.functional.softmax(attn_weights, dim=-1, dtype=torch.float32).to(query_layer.dtype)
        attn_weights = nn.functional.dropout(attn_weights, p=self.dropout_prob, training=self.training)
        if head_mask is not None:
            attn_weights = attn_weights * head_mask
        attn_output = torch.matmul(attn_weights, value_layer)
        attn_output = attn_output.transpose(1, 2).contiguous()
        new_context_layer_shape = attn_output.size()[:-2] + (self.all_head_size,)
        context_layer = attn_output.reshape(new_context_layer_shape)
        return context_layer, attn_weights


class Conv(nn.Module):
    """Ultralytics YOLOv8's Conv: a layer as a class attribute (default_act), isinstance(act, nn.Module), an
    unused forward_fuse."""

    default_act = nn.SiLU()  # default activation

    def __init__(self, c1, c2, k=1, s=1, p=None, g=1, d=1, act=True):
        """Initialize Conv layer with given arguments including activation."""
        super().__init__()
        self.conv = nn.Conv2d(c1, c2, k, s, autopad(k, p, d), groups=g, dilation=d, bias=False)
        self.bn = nn.BatchNorm2d(c2)
        self.act = self.default_act if act is True else act if isinstance(act, nn.Module) else nn.Identity()

    def forward(self, x):
        """Apply convolution, batch normalization and activation to input tensor."""
        return self.act(self.bn(self.conv(x)))

    def forward_fuse(self, x):
        """Perform transposed convolution of 2D data."""
        return self.act(self.conv(x))


class C2fBottleneck(nn.Module):
    """Standard bottleneck."""

    def __init__(self, c1, c2, shortcut=True, g=1, k=(3, 3), e=0.5):
        super().__init__()
        c_ = int(c2 * e)  # hidden channels
        self.cv1 = Conv(c1, c_, k[0], 1)
        self.cv2 = Conv(c_, c2, k[1], 1, g=g)
        self.add = shortcut and c1 == c2

    def forward(self, x):
        """'forward()' applies the YOLO FPN to input data."""
        return x + self.cv2(self.cv1(x)) if self.add else self.cv2(self.cv1(x))


class C2f(nn.Module):
    """Faster Implementation of CSP C2fBottleneck with 2 convolutions."""

    def __init__(self, c1, c2, n=1, shortcut=False, g=1, e=0.5):
        super().__init__()
        self.c = int(c2 * e)  # hidden channels
        self.cv1 = Conv(c1, 2 * self.c, 1, 1)
        self.cv2 = Conv((2 + n) * self.c, c2, 1)  # optional act=FReLU(c2)
        self.m = nn.ModuleList(C2fBottleneck(self.c, self.c, shortcut, g, k=((3, 3), (3, 3)), e=1.0) for _ in range(n))

    def forward(self, x):
        """Forward pass through C2f layer."""
        y = list(self.cv1(x).chunk(2, 1))
        y.extend(m(y[-1]) for m in self.m)
        return self.cv2(torch.cat(y, 1))

    def forward_split(self, x):
        """Forward pass using split() instead of chunk()."""
        y = self.cv1(x).split((self.c, self.c), 1)
        y = [y[0], y[1]]
        y.extend(m(y[-1]) for m in self.m)
        return self.cv2(torch.cat(y, 1))


class DFL(nn.Module):
    """YOLOv8's DFL: a convolution frozen by .requires_grad_(False), its weight set through .data[:]."""

    def __init__(self, c1=16):
        super().__init__()
        self.conv = nn.Conv2d(c1, 1, 1, bias=False).requires_grad_(False)
        x = torch.arange(c1, dtype=torch.float)
        self.conv.weight.data[:] = nn.Parameter(x.view(1, c1, 1, 1))
        self.c1 = c1

    def forward(self, x):
        """Applies a transformer layer on input tensor 'x' and returns a tensor."""
        b, _, a = x.shape  # batch, channels, anchors
        return self.conv(x.view(b, 4, self.c1, a).transpose(2, 1).softmax(1)).view(b, 4, a)


def sam_window_partition(x: torch.Tensor, window_size: int) -> Tuple[torch.Tensor, Tuple[int, int]]:
    B, H, W, C = x.shape
    pad_h = (window_size - H % window_size) % window_size
    pad_w = (window_size - W % window_size) % window_size
    if pad_h > 0 or pad_w > 0:
        x = F.pad(x, (0, 0, 0, pad_w, 0, pad_h))
    Hp, Wp = H + pad_h, W + pad_w
    x = x.view(B, Hp // window_size, window_size, Wp // window_size, window_size, C)
    windows = x.permute(0, 1, 3, 2, 4, 5).contiguous().view(-1, window_size, window_size, C)
    return windows, (Hp, Wp)


def sam_window_unpartition(windows: torch.Tensor, window_size: int, pad_hw: Tuple[int, int],
                       hw: Tuple[int, int]) -> torch.Tensor:
    Hp, Wp = pad_hw
    H, W = hw
    B = windows.shape[0] // (Hp * Wp // window_size // window_size)
    x = windows.view(B, Hp // window_size, Wp // window_size, window_size, window_size, -1)
    x = x.permute(0, 1, 3, 2, 4, 5).contiguous().view(B, Hp, Wp, -1)
    if Hp > H or Wp > W:
        x = x[:, :H, :W, :].contiguous()
    return x


class SamMLPBlock(nn.Module):
    def __init__(self, embedding_dim: int, mlp_dim: int, act: Type[nn.Module] = nn.GELU) -> None:
        super().__init__()
        self.lin1 = nn.Linear(embedding_dim, mlp_dim)
        self.lin2 = nn.Linear(mlp_dim, embedding_dim)
        self.act = act()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.lin2(self.act(self.lin1(x)))


class SamAttention(nn.Module):
    """Multi-head Attention block with relative position embeddings."""

    def __init__(self, dim: int, num_heads: int = 8, qkv_bias: bool = True) -> None:
        super().__init__()
        self.num_heads = num_heads
        head_dim = dim // num_heads
        self.scale = head_dim**-0.5
        self.qkv = nn.Linear(dim, dim * 3, bias=qkv_bias)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, H, W, _ = x.shape
        # qkv with shape (3, B, nHead, H * W, C)
        qkv = self.qkv(x).reshape(B, H * W, 3, self.num_heads, -1).permute(2, 0, 3, 1, 4)
        # q, k, v with shape (B * nHead, H * W, C)
        q, k, v = qkv.reshape(3, B * self.num_heads, H * W, -1).unbind(0)
        attn = (q * self.scale) @ k.transpose(-2, -1)
        attn = attn.softmax(dim=-1)
        x = (attn @ v).view(B, self.num_heads, H, W, -1).permute(0, 2, 3, 1, 4).reshape(B, H, W, -1)
        x = self.proj(x)
        return x


class SamBlock(nn.Module):
    """Segment Anything's image-encoder block (attention without the relative positions): window partition with a
    padding computed from the input's size, names bound only in an `if`."""

    def __init__(self, dim: int, num_heads: int, mlp_ratio: float = 4.0, qkv_bias: bool = True,
                 norm_layer: Type[nn.Module] = nn.LayerNorm, act_layer: Type[nn.Module] = nn.GELU,
                 window_size: int = 0) -> None:
        super().__init__()
        self.norm1 = norm_layer(dim)
        self.attn = SamAttention(dim, num_heads=num_heads, qkv_bias=qkv_bias)
        self.norm2 = norm_layer(dim)
        self.mlp = SamMLPBlock(embedding_dim=dim, mlp_dim=int(dim * mlp_ratio), act=act_layer)
        self.window_size = window_size

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shortcut = x
        x = self.norm1(x)
        # Window partition
        if self.window_size > 0:
            H, W = x.shape[1], x.shape[2]
            x, pad_hw = sam_window_partition(x, self.window_size)
        x = self.attn(x)
        # Reverse window partition
        if self.window_size > 0:
            x = sam_window_unpartition(x, self.window_size, pad_hw, (H, W))
        x = shortcut + x
        x = x + self.mlp(self.norm2(x))
        return x


class SamLayerNorm2d(nn.Module):
    def __init__(self, num_channels: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(num_channels))
        self.bias = nn.Parameter(torch.zeros(num_channels))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        u = x.mean(1, keepdim=True)
        s = (x - u).pow(2).mean(1, keepdim=True)
        x = (x - u) / torch.sqrt(s + self.eps)
        x = self.weight[:, None, None] * x + self.bias[:, None, None]
        return x


class Block(nn.Module):
    '''expand + depthwise + pointwise (kuangliu/pytorch-cifar)'''
    def __init__(self, in_planes, out_planes, expansion, stride):
        super(Block, self).__init__()
        self.stride = stride

        planes = expansion * in_planes
        self.conv1 = nn.Conv2d(in_planes, planes, kernel_size=1, stride=1, padding=0, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, kernel_size=3, stride=stride, padding=1, groups=planes, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.conv3 = nn.Conv2d(planes, out_planes, kernel_size=1, stride=1, padding=0, bias=False)
        self.bn3 = nn.BatchNorm2d(out_planes)

        self.shortcut = nn.Sequential()
        if stride == 1 and in_planes != out_planes:
            self.shortcut = nn.Sequential(
                nn.Conv2d(in_planes, out_planes, kernel_size=1, stride=1, padding=0, bias=False),
                nn.BatchNorm2d(out_planes),
            )

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = F.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        out = out + self.shortcut(x) if self.stride==1 else out
        return out


class MobileNetV2(nn.Module):
    """kuangliu/pytorch-cifar's MobileNetV2 (three stages): a configuration list as a class attribute."""

    # (expansion, out_planes, num_blocks, stride)
    cfg = [(1,  16, 1, 1),
           (6,  24, 2, 1),  # NOTE: change stride 2 -> 1 for CIFAR10
           (6,  32, 2, 2)]

    def __init__(self, num_classes=10):
        super(MobileNetV2, self).__init__()
        # NOTE: change conv1 stride 2 -> 1 for CIFAR10
        self.conv1 = nn.Conv2d(3, 32, kernel_size=3, stride=1, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(32)
        self.layers = self._make_layers(in_planes=32)
        self.conv2 = nn.Conv2d(32, 128, kernel_size=1, stride=1, padding=0, bias=False)
        self.bn2 = nn.BatchNorm2d(128)
        self.linear = nn.Linear(128, num_classes)

    def _make_layers(self, in_planes):
        layers = []
        for expansion, out_planes, num_blocks, stride in self.cfg:
            strides = [stride] + [1]*(num_blocks-1)
            for stride in strides:
                layers.append(Block(in_planes, out_planes, expansion, stride))
                in_planes = out_planes
        return nn.Sequential(*layers)

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.layers(out)
        out = F.relu(self.bn2(self.conv2(out)))
        out = F.avg_pool2d(out, 4)
        out = out.view(out.size(0), -1)
        out = self.linear(out)
        return out


class PreActBlockSE(nn.Module):
    """kuangliu/pytorch-cifar's SENet block: an optional shortcut tested with hasattr, a pool over out.size(2)."""

    def __init__(self, in_planes, planes, stride=1):
        super(PreActBlockSE, self).__init__()
        self.bn1 = nn.BatchNorm2d(in_planes)
        self.conv1 = nn.Conv2d(in_planes, planes, kernel_size=3, stride=stride, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, kernel_size=3, stride=1, padding=1, bias=False)

        if stride != 1 or in_planes != planes:
            self.shortcut = nn.Sequential(
                nn.Conv2d(in_planes, planes, kernel_size=1, stride=stride, bias=False)
            )

        # SE layers
        self.fc1 = nn.Conv2d(planes, planes//16, kernel_size=1)
        self.fc2 = nn.Conv2d(planes//16, planes, kernel_size=1)

    def forward(self, x):
        out = F.relu(self.bn1(x))
        shortcut = self.shortcut(out) if hasattr(self, 'shortcut') else x
        out = self.conv1(out)
        out = self.conv2(F.relu(self.bn2(out)))

        # Squeeze
        w = F.avg_pool2d(out, out.size(2))
        w = F.relu(self.fc1(w))
        w = F.sigmoid(self.fc2(w))
        # Excitation
        out = out * w

        out += shortcut
        return out


class SamWindowedBlocks(nn.Module):
    """Two SAM blocks, the first attending within 3 x 3 windows (the 5 x 5 input padded to 6 x 6)."""

    def __init__(self, dim=8):
        super().__init__()
        self.blocks = nn.ModuleList([SamBlock(dim, 2, window_size=3), SamBlock(dim, 2)])

    def forward(self, x):
        for blk in self.blocks:
            x = blk(x)
        return x


class GraphConv(nn.Module):
    """pytorch/examples' GCN layer: legacy torch.Tensor(n, m) parameters, an optional bias starting as None,
    torch.spmm."""

    def __init__(self, input_dim, output_dim, use_bias=False):
        super(GraphConv, self).__init__()
        self.kernel = nn.Parameter(torch.Tensor(input_dim, output_dim))
        nn.init.xavier_normal_(self.kernel)
        self.bias = None
        if use_bias:
            self.bias = nn.Parameter(torch.Tensor(output_dim))
            nn.init.zeros_(self.bias)

    def forward(self, input_tensor, adj_mat):
        support = torch.mm(input_tensor, self.kernel)
        output = torch.spmm(adj_mat, support)
        if self.bias is not None:
            output = output + self.bias
        return output


class Sequence(nn.Module):
    """pytorch/examples' time-sequence prediction: two nn.LSTMCell stepped over input.split(1, dim=1), a
    number of future steps fed back."""

    def __init__(self):
        super(Sequence, self).__init__()
        self.lstm1 = nn.LSTMCell(1, 51)
        self.lstm2 = nn.LSTMCell(51, 51)
        self.linear = nn.Linear(51, 1)

    def forward(self, input, future = 0):
        outputs = []
        h_t = torch.zeros(input.size(0), 51, dtype=torch.float32)
        c_t = torch.zeros(input.size(0), 51, dtype=torch.float32)
        h_t2 = torch.zeros(input.size(0), 51, dtype=torch.float32)
        c_t2 = torch.zeros(input.size(0), 51, dtype=torch.float32)

        for input_t in input.split(1, dim=1):
            h_t, c_t = self.lstm1(input_t, (h_t, c_t))
            h_t2, c_t2 = self.lstm2(h_t, (h_t2, c_t2))
            output = self.linear(h_t2)
            outputs += [output]
        for i in range(future):  # noqa: B007  # if we should predict the future
            h_t, c_t = self.lstm1(output, (h_t, c_t))
            h_t2, c_t2 = self.lstm2(h_t, (h_t2, c_t2))
            output = self.linear(h_t2)
            outputs += [output]
        outputs = torch.cat(outputs, dim=1)
        return outputs


class Normalization(nn.Module):
    """The neural style transfer tutorial's: torch.tensor of lists given to the constructor."""

    def __init__(self, mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225]):  # noqa: B006 (as written)
        super(Normalization, self).__init__()
        # .view the mean and std to make them [C x 1 x 1] so that they can
        # directly work with image Tensor of shape [B x C x H x W].
        # B is batch size. C is number of channels. H is height and W is width.
        self.mean = torch.tensor(mean).view(-1, 1, 1)
        self.std = torch.tensor(std).view(-1, 1, 1)

    def forward(self, img):
        # normalize ``img``
        return (img - self.mean) / self.std


def gram_matrix(input):
    a, b, c, d = input.size()  # a=batch size(=1)
    # b=number of feature maps
    # (c,d)=dimensions of a f. map (N=c*d)
    features = input.view(a * b, c * d)  # resize F_XL into \hat F_XL
    G = torch.mm(features, features.t())  # compute the gram product
    # we 'normalize' the values of the gram matrix
    # by dividing by the number of element in each feature maps.
    return G.div(a * b * c * d)


class GramFeatures(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)

    def forward(self, x):
        return gram_matrix(self.conv(x))


class Residual(nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, x):
        return self.fn(x) + x


# ConvMixer ("Patches Are All You Need?"): a function returning the model
def ConvMixer(dim, depth, kernel_size=9, patch_size=7, n_classes=1000):
    return nn.Sequential(
        nn.Conv2d(3, dim, kernel_size=patch_size, stride=patch_size),
        nn.GELU(),
        nn.BatchNorm2d(dim),
        *[nn.Sequential(
                Residual(nn.Sequential(
                    nn.Conv2d(dim, dim, kernel_size, groups=dim, padding="same"),
                    nn.GELU(),
                    nn.BatchNorm2d(dim)
                )),
                nn.Conv2d(dim, dim, kernel_size=1),
                nn.GELU(),
                nn.BatchNorm2d(dim)
        ) for i in range(depth)],
        nn.AdaptiveAvgPool2d((1,1)),
        nn.Flatten(),
        nn.Linear(dim, n_classes)
    )


class SmallConvMixer(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = ConvMixer(16, 2, kernel_size=4, patch_size=2, n_classes=5)

    def forward(self, x):
        return self.net(x)


# lucidrains' mlp-mixer-pytorch: a module-level lambda, a function building the model, a partial of nn.Conv1d
pair = lambda x: x if isinstance(x, tuple) else (x, x)


class PreNormResidual(nn.Module):
    def __init__(self, dim, fn):
        super().__init__()
        self.fn = fn
        self.norm = nn.LayerNorm(dim)

    def forward(self, x):
        return self.fn(self.norm(x)) + x


def FeedForward(dim, expansion_factor = 4, dropout = 0., dense = nn.Linear):
    inner_dim = int(dim * expansion_factor)
    return nn.Sequential(
        dense(dim, inner_dim),
        nn.GELU(),
        nn.Dropout(dropout),
        dense(inner_dim, dim),
        nn.Dropout(dropout)
    )


def MLPMixer(*, image_size, channels, patch_size, dim, depth, num_classes, expansion_factor = 4,
             expansion_factor_token = 0.5, dropout = 0.):
    image_h, image_w = pair(image_size)
    assert (image_h % patch_size) == 0 and (image_w % patch_size) == 0, 'image must be divisible by patch size'
    num_patches = (image_h // patch_size) * (image_w // patch_size)
    chan_first, chan_last = partial(nn.Conv1d, kernel_size = 1), nn.Linear

    return nn.Sequential(
        Rearrange('b c (h p1) (w p2) -> b (h w) (p1 p2 c)', p1 = patch_size, p2 = patch_size),
        nn.Linear((patch_size ** 2) * channels, dim),
        *[nn.Sequential(
            PreNormResidual(dim, FeedForward(num_patches, expansion_factor, dropout, chan_first)),
            PreNormResidual(dim, FeedForward(dim, expansion_factor_token, dropout, chan_last))
        ) for _ in range(depth)],
        nn.LayerNorm(dim),
        Reduce('b n c -> b c', 'mean'),
        nn.Linear(dim, num_classes)
    )


class SmallMLPMixer(nn.Module):
    def __init__(self):
        super().__init__()
        self.mixer = MLPMixer(image_size=8, channels=3, patch_size=4, dim=8, depth=2, num_classes=5)

    def forward(self, x):
        return self.mixer(x)


class SuperResolutionNet(nn.Module):
    """pytorch/examples' super-resolution net: init.orthogonal_ with init.calculate_gain, nn.PixelShuffle."""

    def __init__(self, upscale_factor):
        super(SuperResolutionNet, self).__init__()

        self.relu = nn.ReLU()
        self.conv1 = nn.Conv2d(1, 64, (5, 5), (1, 1), (2, 2))
        self.conv2 = nn.Conv2d(64, 64, (3, 3), (1, 1), (1, 1))
        self.conv3 = nn.Conv2d(64, 32, (3, 3), (1, 1), (1, 1))
        self.conv4 = nn.Conv2d(32, upscale_factor ** 2, (3, 3), (1, 1), (1, 1))
        self.pixel_shuffle = nn.PixelShuffle(upscale_factor)

        self._initialize_weights()

    def forward(self, x):
        x = self.relu(self.conv1(x))
        x = self.relu(self.conv2(x))
        x = self.relu(self.conv3(x))
        x = self.pixel_shuffle(self.conv4(x))
        return x

    def _initialize_weights(self):
        init.orthogonal_(self.conv1.weight, init.calculate_gain('relu'))
        init.orthogonal_(self.conv2.weight, init.calculate_gain('relu'))
        init.orthogonal_(self.conv3.weight, init.calculate_gain('relu'))
        init.orthogonal_(self.conv4.weight)


class CellDecoder(nn.Module):
    """A GRU cell then a ReLU RNN cell stepped over time, the first starting from no state."""

    def __init__(self, n=6, h=8):
        super().__init__()
        self.gru = nn.GRUCell(n, h)
        self.rnn = nn.RNNCell(h, h, nonlinearity='relu')
        self.out = nn.Linear(h, 3)

    def forward(self, x):
        h = None
        g = torch.zeros(x.size(1), 8)
        outs = []
        for t in range(x.size(0)):
            h = self.gru(x[t], h)
            g = self.rnn(h, g)
            outs.append(self.out(g))
        return torch.stack(outs)


class ActivationZoo(nn.Module):
    """PyTorch's activation layers side by side, with their options (softplus of a beta, CELU's alpha, softmin)."""

    def __init__(self, d=8):
        super().__init__()
        self.fc = nn.Linear(d, d)
        self.acts = nn.ModuleList([nn.GELU(approximate="tanh"), nn.SiLU(), nn.Mish(), nn.Hardswish(), nn.ELU(0.5),
                                   nn.SELU(), nn.CELU(0.7), nn.Softplus(beta=2.0), nn.LogSigmoid(), nn.Tanhshrink(),
                                   nn.Softsign(), nn.Hardtanh(-0.5, 0.5), nn.ReLU6(), nn.LeakyReLU(0.1),
                                   nn.Hardsigmoid(), nn.Sigmoid(), nn.Tanh(), nn.Softmin(dim=-1)])

    def forward(self, x):
        x = self.fc(x)
        return torch.stack([act(x) for act in self.acts], dim=1)


class FunctionalZoo(nn.Module):
    """PyTorch's activation functions and elementwise math, with options (softplus below its default threshold)."""

    def __init__(self, d=8):
        super().__init__()
        self.fc = nn.Linear(d, d)

    def forward(self, x):
        x = self.fc(x)
        ys = [F.elu(x, 0.3), F.selu(x), F.celu(x), F.softplus(x, beta=0.5, threshold=10), F.logsigmoid(x),
              F.hardtanh(x, -2., 2.), F.relu6(x), F.leaky_relu(x, 0.2), F.hardsigmoid(x), F.hardswish(x),
              F.silu(x), F.mish(x), F.gelu(x), F.glu(torch.cat([x, x], -1), dim=-1), F.softsign(x),
              F.tanhshrink(x), torch.clamp(x, min=-0.3), x.clamp(max=0.2), torch.sign(x), torch.erf(x),
              torch.rsqrt(x.abs() + 1), torch.reciprocal(x.abs() + 1), torch.log1p(x.abs()), torch.expm1(x),
              x.pow(3), torch.floor(x), torch.ceil(x), torch.round(x), torch.trunc(x), torch.frac(x)]
        return torch.stack(ys, 1)


class NormZoo(nn.Module):
    """Norms on (N, C, L): BatchNorm1d with and without affine, affine instance norm, LayerNorm without affine,
    GroupNorm, an embedding with padding_idx."""

    def __init__(self, c=4):
        super().__init__()
        self.bn1 = nn.BatchNorm1d(c)
        self.bn1_2d = nn.BatchNorm1d(c, affine=False)
        self.inorm = nn.InstanceNorm1d(c, affine=True)
        self.ln = nn.LayerNorm(5, elementwise_affine=False)
        self.gn = nn.GroupNorm(2, c)
        self.emb = nn.Embedding(10, 5, padding_idx=0)

    def forward(self, x):
        ids = (torch.arange(x.shape[1]) % 10).view(1, -1)
        a = self.bn1(x)
        b = self.bn1_2d(x.mean(-1))[..., None]
        c = self.inorm(x)
        d = self.ln(x)
        e = 0.0
        f = self.gn(x)
        g = self.emb(ids)
        return a + b + c + d + e + f + g


class UpDown(nn.Module):
    """A strided convolution and a transposed one with output_padding, bilinear upsampling with and without
    aligned corners, reflection and asymmetric replication pads, nearest resizing to a run-time size."""

    def __init__(self, c=4):
        super().__init__()
        self.down = nn.Conv2d(c, 2 * c, 3, stride=2, padding=1)
        self.up = nn.ConvTranspose2d(2 * c, c, 3, stride=2, padding=1, output_padding=1)
        self.up2 = nn.Upsample(scale_factor=2, mode="bilinear", align_corners=True)
        self.norm = nn.InstanceNorm2d(c, affine=True)
        self.pad = nn.ReflectionPad2d(1)
        self.pad2 = nn.ReplicationPad2d((1, 0, 2, 1))
        self.conv = nn.Conv2d(c, c, 3)

    def forward(self, x):
        y = self.up(F.relu(self.down(x)))
        y = self.norm(y)
        z = self.up2(x)
        z = F.interpolate(z, size=x.shape[2:], mode="bilinear", align_corners=False)
        w = self.pad2(x)
        w = F.interpolate(w, size=(x.size(2), x.size(3)), mode="nearest")
        return self.conv(self.pad(y + z)) + w[:, :, :x.size(2), :x.size(3)]


class Indexing(nn.Module):
    """Slices, flips, rolls, sorts, top-k, extrema with indices, cumulative sums and products, masks, moments,
    repeats and expansions."""

    def __init__(self, d=6):
        super().__init__()
        self.fc = nn.Linear(d, d)

    def forward(self, x):
        y = self.fc(x)
        a = y[:, ::2]
        b = y[..., 1:-1]
        c = y.flip(-1)
        d = torch.roll(y, shifts=1, dims=1)
        e = y.gather(1, torch.argsort(y, dim=1))
        f = torch.topk(y, 2, dim=-1).values
        g = y.max(dim=1, keepdim=True)[0] + y.min(1).values.unsqueeze(1) + y.argmax(1, keepdim=True).float()
        h = torch.cumsum(y, 1) + torch.cumprod(y.sigmoid(), 1)
        i = torch.where(y > 0, y, torch.zeros_like(y))
        j = y.masked_fill(y < -0.5, 0.0)
        k = torch.tril(y.unsqueeze(-1) * y.unsqueeze(-2)).sum(-1)
        m = y.std(1, keepdim=True) + y.var(1, unbiased=False, keepdim=True) + y.norm(dim=1, keepdim=True)
        n = torch.logsumexp(y, dim=1, keepdim=True) + y.prod(1, keepdim=True) + y.amax(1, keepdim=True)
        o = y.repeat(1, 2)[:, :6] + y.expand(2, -1, -1)[0] + y.repeat_interleave(2, dim=1)[:, ::2]
        return torch.cat([a, b, c, d, e, f, g, h, i, j, k, m, n, o], 1)


class ViTConfig:
    """A configuration object (a plain class) as transformers passes one."""

    image_size = 8
    patch_size = 4
    num_channels = 3
    hidden_size = 16


class ViTPatchEmbeddings(nn.Module):
    """
    This class turns `pixel_values` of shape `(batch_size, num_channels, height, width)` into the initial
    `hidden_states` (patch embeddings) of shape `(batch_size, seq_length, hidden_size)` to be consumed by a
    Transformer.
    """

    def __init__(self, config=ViTConfig()):  # noqa: B008 (as the original passes its config)
        super().__init__()
        image_size, patch_size = config.image_size, config.patch_size
        num_channels, hidden_size = config.num_channels, config.hidden_size

        image_size = image_size if isinstance(image_size, collections.abc.Iterable) else (image_size, image_size)
        patch_size = patch_size if isinstance(patch_size, collections.abc.Iterable) else (patch_size, patch_size)
        num_patches = (image_size[1] // patch_size[1]) * (image_size[0] // patch_size[0])
        self.image_size = image_size
        self.patch_size = patch_size
        self.num_channels = num_channels
        self.num_patches = num_patches

        self.projection = nn.Conv2d(num_channels, hidden_size, kernel_size=patch_size, stride=patch_size)

    def forward(self, pixel_values: torch.Tensor, interpolate_pos_encoding: bool = False) -> torch.Tensor:
        batch_size, num_channels, height, width = pixel_values.shape
        if num_channels != self.num_channels:
            raise ValueError(
                "Make sure that the channel dimension of the pixel values match with the one set in the configuration."
                f" Expected {self.num_channels} but got {num_channels}."
            )
        if not interpolate_pos_encoding:
            if height != self.image_size[0] or width != self.image_size[1]:
                raise ValueError(
                    f"Input image size ({height}*{width}) doesn't match model"
                    f" ({self.image_size[0]}*{self.image_size[1]})."
                )
        embeddings = self.projection(pixel_values).flatten(2).transpose(1, 2)
        return embeddings


class SwinPatchMerging(nn.Module):
    """transformers' Swin patch merging: the grid's size passed as a tuple of numbers by the caller, a method
    padding an odd grid by widths computed from them."""

    def __init__(self, input_resolution, dim, norm_layer=nn.LayerNorm):
        super().__init__()
        self.input_resolution = input_resolution
        self.dim = dim
        self.reduction = nn.Linear(4 * dim, 2 * dim, bias=False)
        self.norm = norm_layer(4 * dim)

    def maybe_pad(self, input_feature, height, width):
        should_pad = (height % 2 == 1) or (width % 2 == 1)
        if should_pad:
            pad_values = (0, 0, 0, width % 2, 0, height % 2)
            input_feature = nn.functional.pad(input_feature, pad_values)

        return input_feature

    def forward(self, input_feature, input_dimensions):
        height, width = input_dimensions
        # `dim` is height * width
        batch_size, dim, num_channels = input_feature.shape

        input_feature = input_feature.view(batch_size, height, width, num_channels)
        # pad input to be disible by width and height, if needed
        input_feature = self.maybe_pad(input_feature, height, width)
        # [batch_size, height/2, width/2, num_channels]
        input_feature_0 = input_feature[:, 0::2, 0::2, :]
        # [batch_size, height/2, width/2, num_channels]
        input_feature_1 = input_feature[:, 1::2, 0::2, :]
        # [batch_size, height/2, width/2, num_channels]
        input_feature_2 = input_feature[:, 0::2, 1::2, :]
        # [batch_size, height/2, width/2, num_channels]
        input_feature_3 = input_feature[:, 1::2, 1::2, :]
        # batch_size height/2 width/2 4*num_channels
        input_feature = torch.cat([input_feature_0, input_feature_1, input_feature_2, input_feature_3], -1)
        input_feature = input_feature.view(batch_size, -1, 4 * num_channels)  # batch_size height/2*width/2 4*C

        input_feature = self.norm(input_feature)
        input_feature = self.reduction(input_feature)

        return input_feature


class SwinMergeOdd(nn.Module):
    """Swin's patch merging of a 5 x 5 grid (padded to 6 x 6)."""

    def __init__(self):
        super().__init__()
        self.merge = SwinPatchMerging((5, 5), 4)

    def forward(self, x):
        return self.merge(x, (5, 5))


class SegformerDWConv(nn.Module):
    def __init__(self, dim=768):
        super().__init__()
        self.dwconv = nn.Conv2d(dim, dim, 3, 1, 1, bias=True, groups=dim)

    def forward(self, hidden_states, height, width):
        batch_size, seq_len, num_channels = hidden_states.shape
        hidden_states = hidden_states.transpose(1, 2).view(batch_size, num_channels, height, width)
        hidden_states = self.dwconv(hidden_states)
        hidden_states = hidden_states.flatten(2).transpose(1, 2)

        return hidden_states


class SegformerMixFFN(nn.Module):
    def __init__(self, in_features, hidden_features=None, out_features=None, hidden_dropout_prob=0.0):
        super().__init__()
        out_features = out_features or in_features
        self.dense1 = nn.Linear(in_features, hidden_features)
        self.dwconv = SegformerDWConv(hidden_features)
        self.intermediate_act_fn = nn.GELU()
        self.dense2 = nn.Linear(hidden_features, out_features)
        self.dropout = nn.Dropout(hidden_dropout_prob)

    def forward(self, hidden_states, height, width):
        hidden_states = self.dense1(hidden_states)
        hidden_states = self.dwconv(hidden_states, height, width)
        hidden_states = self.intermediate_act_fn(hidden_states)
        hidden_states = self.dropout(hidden_states)
        hidden_states = self.dense2(hidden_states)
        hidden_states = self.dropout(hidden_states)
        return hidden_states


class SegformerEfficientSelfAttention(nn.Module):
    """transformers' Segformer attention: a sequence-reduction convolution on a grid whose height and width the
    caller passes as numbers."""

    def __init__(self, hidden_size, num_attention_heads, sequence_reduction_ratio, dropout=0.0):
        super().__init__()
        self.hidden_size = hidden_size
        self.num_attention_heads = num_attention_heads
        if self.hidden_size % self.num_attention_heads != 0:
            raise ValueError(f"The hidden size ({self.hidden_size}) is not a multiple of the number of attention "
                             f"heads ({self.num_attention_heads})")
        self.attention_head_size = int(self.hidden_size / self.num_attention_heads)
        self.all_head_size = self.num_attention_heads * self.attention_head_size
        self.query = nn.Linear(self.hidden_size, self.all_head_size)
        self.key = nn.Linear(self.hidden_size, self.all_head_size)
        self.value = nn.Linear(self.hidden_size, self.all_head_size)
        self.dropout = nn.Dropout(dropout)
        self.sr_ratio = sequence_reduction_ratio
        if sequence_reduction_ratio > 1:
            self.sr = nn.Conv2d(hidden_size, hidden_size, kernel_size=sequence_reduction_ratio,
                                stride=sequence_reduction_ratio)
            self.layer_norm = nn.LayerNorm(hidden_size)

    def transpose_for_scores(self, hidden_states):
        new_shape = hidden_states.size()[:-1] + (self.num_attention_heads, self.attention_head_size)
        hidden_states = hidden_states.view(new_shape)
        return hidden_states.permute(0, 2, 1, 3)

    def forward(self, hidden_states, height, width, output_attentions=False):
        query_layer = self.transpose_for_scores(self.query(hidden_states))
        if self.sr_ratio > 1:
            batch_size, seq_len, num_channels = hidden_states.shape
            # Reshape to (batch_size, num_channels, height, width)
            hidden_states = hidden_states.permute(0, 2, 1).reshape(batch_size, num_channels, height, width)
            # Apply sequence reduction
            hidden_states = self.sr(hidden_states)
            # Reshape back to (batch_size, seq_len, num_channels)
            hidden_states = hidden_states.reshape(batch_size, num_channels, -1).permute(0, 2, 1)
            hidden_states = self.layer_norm(hidden_states)
        key_layer = self.transpose_for_scores(self.key(hidden_states))
        value_layer = self.transpose_for_scores(self.value(hidden_states))
        # Take the dot product between "query" and "key" to get the raw attention scores.
        attention_scores = torch.matmul(query_layer, key_layer.transpose(-1, -2))
        attention_scores = attention_scores / math.sqrt(self.attention_head_size)
        # Normalize the attention scores to probabilities.
        attention_probs = nn.functional.softmax(attention_scores, dim=-1)
        attention_probs = self.dropout(attention_probs)
        context_layer = torch.matmul(attention_probs, value_layer)
        context_layer = context_layer.permute(0, 2, 1, 3).contiguous()
        new_context_layer_shape = context_layer.size()[:-2] + (self.all_head_size,)
        context_layer = context_layer.view(new_context_layer_shape)
        outputs = (context_layer, attention_probs) if output_attentions else (context_layer,)
        return outputs


class SegformerBlockLite(nn.Module):
    """Segformer's attention and Mix-FFN on a 4 x 4 grid of tokens."""

    def __init__(self):
        super().__init__()
        self.attn = SegformerEfficientSelfAttention(8, 2, 2)
        self.ffn = SegformerMixFFN(8, 16)

    def forward(self, x):
        y = self.attn(x, 4, 4)[0] + x
        return self.ffn(y, 4, 4) + y


class FNetLayer(nn.Module):
    """FNet's encoder layer: tokens mixed by the real part of a 2-D Fourier transform over sequence and hidden
    dims (Flax holds the complex values; Keras tensors cannot)."""

    def __init__(self, dim, hidden, dropout=0.1):
        super().__init__()
        self.mixing_norm = nn.LayerNorm(dim)
        self.output_norm = nn.LayerNorm(dim)
        self.ff = nn.Sequential(nn.Linear(dim, hidden), nn.GELU(), nn.Dropout(dropout), nn.Linear(hidden, dim))

    def forward(self, x):
        mixed = torch.fft.fft(torch.fft.fft(x, dim=-1), dim=-2).real
        x = self.mixing_norm(x + mixed)
        return self.output_norm(x + self.ff(x)) + torch.real(torch.fft.fftn(x, dim=(1, 2))) * 0.1


class TemporalShift(nn.Module):
    """The Temporal Shift Module: parts of the channels shifted one frame back and forward by assigning into slices
    of a new tensor in the forward pass."""

    def __init__(self, n_segment=4, n_div=4):
        super().__init__()
        self.n_segment = n_segment
        self.fold_div = n_div

    def forward(self, x):
        nt, c, h, w = x.size()
        x = x.view(nt // self.n_segment, self.n_segment, c, h, w)
        fold = c // self.fold_div
        out = torch.zeros_like(x)
        out[:, :-1, :fold] = x[:, 1:, :fold]
        out[:, 1:, fold: 2 * fold] = x[:, :-1, fold: 2 * fold]
        out[:, :, 2 * fold:] = x[:, :, 2 * fold:]
        return out.view(nt, c, h, w)


class EdgeTokens(nn.Module):
    """Assignments into a copy: an Ellipsis and an integer index, a number and a broadcast tensor as the values."""

    def __init__(self, dim):
        super().__init__()
        self.fc = nn.Linear(dim, dim)

    def forward(self, x):
        y = self.fc(x).clone()
        y[..., 0] = 0.5
        y[:, -1] = y[:, 0] * 2
        y[:, 1:3, -2:] = x[:, :1, :2]
        return y



class ShrinkActivations(nn.Module):
    """Sparse-coding activations (hard and soft shrink, as layers, functions and a method) beside the rarer
    PyTorch activations."""

    def __init__(self, dim):
        super().__init__()
        self.fc = nn.Linear(dim, dim)
        self.acts = nn.ModuleList([nn.Hardshrink(0.3), nn.Softshrink(), nn.SELU(), nn.CELU(0.7), nn.Tanhshrink(),
                                   nn.Hardtanh(-0.5, 0.5), nn.GELU(approximate="tanh")])

    def forward(self, x):
        x = self.fc(x)
        outs = [act(x) for act in self.acts] + [F.softshrink(x, 0.1), F.hardshrink(x), x.hardshrink(0.2)]
        return torch.stack(outs, dim=1)


class SiameseDistances(nn.Module):
    """A metric-learning head: the cosine similarity and the Euclidean distance between each embedding and its
    neighbour in the batch."""

    def __init__(self, dim, embed):
        super().__init__()
        self.proj = nn.Linear(dim, embed)

    def forward(self, x):
        a = self.proj(x)
        b = torch.roll(a, 1, dims=0)
        similarities = [F.cosine_similarity(a, b, dim=-1), torch.cosine_similarity(a, b)]
        return torch.stack([*similarities, F.pairwise_distance(a, b, p=3.0)], dim=-1)


class UnflattenDecoder(nn.Module):
    """A generator head: a linear layer unflattened to a feature map (nn.Unflatten and Tensor.unflatten), a
    transposed convolution of a channels-first sequence with padding."""

    def __init__(self, dim):
        super().__init__()
        self.fc = nn.Linear(dim, 4 * 3 * 3)
        self.unflatten = nn.Unflatten(1, (4, 3, 3))
        self.up = nn.ConvTranspose2d(4, 3, 3, stride=2, padding=1, output_padding=1)
        self.up1d = nn.ConvTranspose1d(3, 2, 4, stride=2, padding=1)

    def forward(self, x):
        y = self.up(self.unflatten(self.fc(x)))
        z = self.up1d(y.flatten(2))
        return z.unflatten(-1, (6, -1))



class SparseTopFeatures(nn.Module):
    """Keeps each row's three smallest features in place (argsort, gather, scatter into zeros) beside a clamped
    log with its infinities replaced (clamp_min, nan_to_num, clamp_max)."""

    def __init__(self, dim):
        super().__init__()
        self.fc = nn.Linear(dim, dim)

    def forward(self, x):
        y = self.fc(x)
        idx = y.argsort(dim=-1)[:, :3]
        kept = torch.zeros_like(y).scatter(1, idx, torch.gather(y, 1, idx))
        return kept + torch.nan_to_num(y.clamp_min(0.0).log(), neginf=-5.0).clamp_max(2.0)



class BilinearFusion(nn.Module):
    """Two modalities fused by a bilinear form (multimodal and relation heads), with and without a bias."""

    def __init__(self, text_dim, image_dim, out_dim):
        super().__init__()
        self.text_dim = text_dim
        self.fuse = nn.Bilinear(text_dim, image_dim, out_dim)
        self.score = nn.Bilinear(out_dim, out_dim, 1, bias=False)

    def forward(self, x):
        text, image = x[..., :self.text_dim], x[..., self.text_dim:]
        fused = torch.tanh(self.fuse(text, image))
        return self.score(fused, fused) + fused



class SegNetStage(nn.Module):
    """SegNet's encoder-decoder pair: max pooling that remembers where each maximum was, unpooling back there (to
    the pre-pool size, as SegNet passes it), and the functional forms of both."""

    def __init__(self, c_in, c_out):
        super().__init__()
        self.enc = nn.Sequential(nn.Conv2d(c_in, c_out, 3, padding=1), nn.BatchNorm2d(c_out), nn.ReLU(inplace=True))
        self.pool = nn.MaxPool2d(2, 2, return_indices=True)
        self.unpool = nn.MaxUnpool2d(2, 2)
        self.dec = nn.Sequential(nn.Conv2d(c_out, c_in, 3, padding=1), nn.ReLU(inplace=True))

    def forward(self, x):
        y = self.enc(x)
        size = y.size()
        y, idx = self.pool(y)
        y = self.unpool(y, idx, output_size=size)
        z, where = F.max_pool2d(x, kernel_size=2, stride=2, return_indices=True)
        return self.dec(y) + F.max_unpool2d(z, where, 2, 2)



class AlexNetFeatures(nn.Module):
    """The original AlexNet's first stage: convolution, local response normalization across channels (as a layer
    and as the function), overlapping max pooling."""

    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(3, 16, kernel_size=5, stride=2, padding=2), nn.ReLU(inplace=True),
                                      nn.LocalResponseNorm(5, alpha=1e-4, beta=0.75, k=2.0),
                                      nn.MaxPool2d(kernel_size=3, stride=2))

    def forward(self, x):
        return F.local_response_norm(self.features(x), 4)


REFUSED = [
    (HEADER + "class DataDependent(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
     "        self.fc = nn.Linear(4, 4)\n\n    def forward(self, x):\n        if x.sum() > 0:\n"
     "            return self.fc(x)\n        return x\n", "data-dependent control flow"),
    (HEADER + "class Dynamic(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
     "        self.fc = nn.Linear(4, 4)\n\n    def forward(self, x, name='fc'):\n"
     "        return getattr(self, name)(x)\n",
     "dynamic attribute access"),
    (HEADER + "class InPlace(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
     "        self.fc = nn.Linear(4, 4)\n\n    def forward(self, x):\n        y = self.fc(x)\n"
     "        z = F.relu(y, inplace=True) + 1\n        return y + z\n", "holds the operation's result"),
    (HEADER + "class Tied(nn.Module):\n    def __init__(self, bias):\n        super().__init__()\n"
     "        self.emb = nn.Embedding(8, 4)\n        self.head = nn.Linear(4, 8, bias=bias)\n"
     "        self.head.weight = self.emb.weight\n\n    def forward(self, x):\n        return self.head(self.emb(x))\n",
     "bias given by a variable"),
    (HEADER + "class Act(nn.Module):\n    def forward(self, x):\n        return F.relu(x, True)\n\n\n"
     "class Outer(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.act = Act()\n\n"
     "    def forward(self, x):\n        y = self.act(x)\n        return x + y\n",
     "Act.forward may change its input x in place"),
    (HEADER + "class Act(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
     "        self.relu = nn.ReLU(True)\n\n    def forward(self, x):\n        return self.relu(x)\n\n\n"
     "class Outer(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.act = Act()\n\n"
     "    def forward(self, x):\n        y = self.act(x)\n        return x + y\n",
     "Act.forward may change its input x in place"),
    (HEADER + "class LayerScale(nn.Module):\n    def __init__(self, inplace):\n        super().__init__()\n"
     "        self.inplace = inplace\n        self.gamma = nn.Parameter(torch.ones(4))\n\n"
     "    def forward(self, x):\n        return x.mul_(self.gamma) if self.inplace else x * self.gamma\n\n\n"
     "class Block(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
     "        self.scale = LayerScale(True)\n\n    def forward(self, x):\n        y = self.scale(x)\n"
     "        return x + y\n", "LayerScale.forward may change its input x in place"),
    (HEADER + "class Aliased(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
     "        self.fc = nn.Linear(4, 4)\n\n    def forward(self, x):\n        y = self.fc(x)\n        z = y\n"
     "        y += 1\n        return z\n", "refers to the same tensor"),
    (HEADER + "class Recurrent(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
     "        self.lstm = nn.LSTM(4, 8, batch_first=True, proj_size=4)\n\n    def forward(self, x):\n"
     "        out, _ = self.lstm(x)\n        return out\n", "proj_size"),
    (HEADER + "class Unknown(nn.Module):\n    def __init__(self):\n        super().__init__()\n\n"
     "    def forward(self, x):\n        return torch.fft.rfft(x).abs()\n", "torch.fft.rfft"),
    (HEADER + "class ReflectPad(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
     "        self.conv = nn.Conv2d(3, 3, 3, padding='same', padding_mode='reflect')\n\n"
     "    def forward(self, x):\n        return self.conv(x)\n", "padding_mode"),
    (HEADER + "class LayerSize(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
     "        self.rnn = nn.GRU(4, 3)\n\n    def forward(self, x):\n"
     "        return x.new_zeros(x.shape[0], 3) + self.rnn.dropout\n", "reading a layer's attributes"),
    (HEADER + "class WriteInto(nn.Module):\n    def __init__(self):\n        super().__init__()\n\n"
     "    def forward(self, x):\n        x = x * 2\n        x[:, ::2] = 0\n        return x\n", "a slice with a step"),
    (HEADER + "class NoGrad(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
     "        self.fc = nn.Linear(4, 4)\n\n    def forward(self, x):\n        with torch.no_grad():\n"
     "            y = self.fc(x)\n        return y\n", "context managers"),
    (HEADER + "from .layers import Helper\n\n\nclass Imported(nn.Module):\n    def __init__(self):\n"
     "        super().__init__()\n        self.h = make_helper()\n\n    def forward(self, x):\n"
     "        return self.h(x)\n", "not defined in this module"),
    (HEADER + "class ImplicitSoftmax(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
     "        self.sm = nn.Softmax()\n\n    def forward(self, x):\n        return self.sm(x)\n", "softmax without dim"),
    (HEADER + "class CeilPool(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
     "        self.pool = nn.AvgPool2d(3, 2, ceil_mode=True)\n\n    def forward(self, x):\n"
     "        return self.pool(x)\n",
     "ceil_mode=True on an average pool"),
    (HEADER + "class SpectralNorm(nn.Module):\n    def forward(self, x):\n"
     "        return torch.linalg.norm(x, ord=2, dim=(0, 1))\n", "ord=2"),
    (HEADER + "class AvgPoolCeil1d(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
     "        self.pool = nn.AvgPool1d(2, ceil_mode=True)\n\n    def forward(self, x):\n        return self.pool(x)\n",
     "ceil_mode"),
    (HEADER + "class PaddedEncoder(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
     "        self.enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, batch_first=True), 2)\n\n"
     "    def forward(self, x, pad):\n        return self.enc(x, src_key_padding_mask=pad)\n",
     "src_key_padding_mask"),
    (HEADER + "class ParameterCount(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
     "        self.fc = nn.Linear(4, 4)\n\n    def forward(self, x):\n"
     "        return self.fc(x) * sum(p.numel() for p in self.parameters())\n", "layer base class"),
    (HEADER + "class ViewThenAdd(nn.Module):\n    def forward(self, x):\n        x = x.clone()\n"
     "        y = x.view(-1)\n        x += 1\n        return y\n", "refers to the same tensor"),
    (HEADER + "class SliceThenScale(nn.Module):\n    def forward(self, x):\n        x = x * 1\n"
     "        y = x[:, 0]\n        x.mul_(2)\n        return y\n", "refers to the same tensor"),
    (HEADER + "class AliasedWrite(nn.Module):\n    def forward(self, x):\n        x = x.clone()\n"
     "        y = x.view(-1)\n        x[:, 0] = 1.0\n        return y\n", "refers to the same tensor"),
    (HEADER + "class Conv1d(nn.Conv1d):\n    def _conv_forward(self, x, weight, bias):\n"
     "        return super()._conv_forward(x, weight.to(x.dtype), None if bias is None else bias.to(x.dtype))\n",
     "overrides _conv_forward"),
    (HEADER + "class TypeCheck(nn.Module):\n    def forward(self, x):\n"
     "        return x * 2 if type(x) == torch.Tensor else x\n", "the tensor class as a value"),
    (HEADER + "from transformers.activations import ACT2FN\n\n\nclass QuickAct(nn.Module):\n"
     "    def __init__(self):\n        super().__init__()\n        self.act = ACT2FN['quick_gelu']\n\n"
     "    def forward(self, x):\n        return self.act(x)\n", "'quick_gelu'"),
    (HEADER + "from transformers.image_transforms import center_to_corners_format\n\n\nclass Boxes(nn.Module):\n"
     "    def forward(self, x):\n        return center_to_corners_format(x)\n",
     "a library written for one framework's tensors"),
    (HEADER + "class DenseBlock(nn.ModuleDict):\n    def forward(self, x):\n"
     "        for name, layer in self.items():\n            x = layer(x)\n        return x\n",
     "its __init__ does not call the container's"),
    (HEADER + "class Checkpointed(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
     "        self.fc = nn.Linear(4, 4)\n\n    def forward(self, x):\n"
     "        return self.fc(x) if x.requires_grad else x\n", "autograd's record of a tensor"),
    (HEADER + "class NamedSequential(nn.Sequential):\n    def __init__(self):\n        super().__init__()\n"
     "        self.fc = nn.Linear(4, 4)\n\n    def forward(self, x):\n        return self.fc(x) + x\n",
     "set as an attribute and read by name"),
]
