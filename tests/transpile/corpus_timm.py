"""Model code importing its building blocks from timm, as research repositories (MAE, DeiT) write it: `from
timm.models.layers import DropPath, Mlp, to_2tuple, trunc_normal_`, and timm's own layers imported to be translated
(`--class SwiGLU`). The translation reads each imported definition from timm's source (transpile/library_code.py).
Importing this module needs timm, which imports only with the test-only torchvision stand-in
(tests/models/timm_zoo.py: import_timm)."""

import torch.nn as nn
from timm.layers import Attention as TimmAttention
from timm.layers import GatedMlp, GluMlp, LayerNorm, LayerScale, SwiGLU  # noqa: F401 (translated with --class)
from timm.models.layers import DropPath, Mlp, to_2tuple, trunc_normal_


class PatchEmbed(nn.Module):
    """Image to Patch Embedding (as MAE / DeiT-era repositories write it)."""

    def __init__(self, img_size=224, patch_size=16, in_chans=3, embed_dim=768):
        super().__init__()
        img_size = to_2tuple(img_size)
        patch_size = to_2tuple(patch_size)
        num_patches = (img_size[1] // patch_size[1]) * (img_size[0] // patch_size[0])
        self.img_size = img_size
        self.patch_size = patch_size
        self.num_patches = num_patches
        self.proj = nn.Conv2d(in_chans, embed_dim, kernel_size=patch_size, stride=patch_size)

    def forward(self, x):
        B, C, H, W = x.shape
        x = self.proj(x).flatten(2).transpose(1, 2)
        return x


class Attention(nn.Module):
    def __init__(self, dim, num_heads=8, qkv_bias=False, qk_scale=None, attn_drop=0., proj_drop=0.):
        super().__init__()
        self.num_heads = num_heads
        head_dim = dim // num_heads
        self.scale = qk_scale or head_dim ** -0.5
        self.qkv = nn.Linear(dim, dim * 3, bias=qkv_bias)
        self.attn_drop = nn.Dropout(attn_drop)
        self.proj = nn.Linear(dim, dim)
        self.proj_drop = nn.Dropout(proj_drop)

    def forward(self, x):
        B, N, C = x.shape
        qkv = self.qkv(x).reshape(B, N, 3, self.num_heads, C // self.num_heads).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        attn = (q @ k.transpose(-2, -1)) * self.scale
        attn = attn.softmax(dim=-1)
        attn = self.attn_drop(attn)
        x = (attn @ v).transpose(1, 2).reshape(B, N, C)
        x = self.proj(x)
        x = self.proj_drop(x)
        return x


class Block(nn.Module):
    def __init__(self, dim, num_heads, mlp_ratio=4., qkv_bias=False, qk_scale=None, drop=0., attn_drop=0.,
                 drop_path=0., act_layer=nn.GELU, norm_layer=nn.LayerNorm):
        super().__init__()
        self.norm1 = norm_layer(dim)
        self.attn = Attention(dim, num_heads=num_heads, qkv_bias=qkv_bias, qk_scale=qk_scale, attn_drop=attn_drop,
                              proj_drop=drop)
        self.drop_path = DropPath(drop_path) if drop_path > 0. else nn.Identity()
        self.norm2 = norm_layer(dim)
        mlp_hidden_dim = int(dim * mlp_ratio)
        self.mlp = Mlp(in_features=dim, hidden_features=mlp_hidden_dim, act_layer=act_layer, drop=drop)
        self.apply(self._init_weights)

    def _init_weights(self, m):
        if isinstance(m, nn.Linear):
            trunc_normal_(m.weight, std=.02)
            if isinstance(m, nn.Linear) and m.bias is not None:
                nn.init.constant_(m.bias, 0)
        elif isinstance(m, nn.LayerNorm):
            nn.init.constant_(m.bias, 0)
            nn.init.constant_(m.weight, 1.0)

    def forward(self, x):
        x = x + self.drop_path(self.attn(self.norm1(x)))
        x = x + self.drop_path(self.mlp(self.norm2(x)))
        return x


class FusedAttentionBlock(nn.Module):
    """A pre-norm block on timm's own Attention, whose fused path is chosen by settings timm reads at import
    (`use_fused_attn()`: the TIMM_FUSED_ATTN environment variable, `hasattr(F, "scaled_dot_product_attention")`)."""

    def __init__(self, dim, num_heads, mlp_ratio=2.0):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim, eps=1e-6)
        self.attn = TimmAttention(dim, num_heads=num_heads, qkv_bias=True)
        self.norm2 = nn.LayerNorm(dim, eps=1e-6)
        self.mlp = Mlp(in_features=dim, hidden_features=int(dim * mlp_ratio))

    def forward(self, x):
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class TimmNormedHead(nn.Module):
    """timm's LayerNorm (eps 1e-6 by default, `affine` for elementwise_affine: its "fast norm" path differs only
    under mixed precision), read as the layer it is."""

    def __init__(self, dim, classes):
        super().__init__()
        self.norm = LayerNorm(dim)
        self.head = nn.Linear(dim, classes)

    def forward(self, x):
        return self.head(self.norm(x).mean(1))


CASES = [
    ("PatchEmbed", (16, 4, 3, 8), (2, 3, 16, 16)),
    ("Attention", (8, 2, True), (2, 5, 8)),
    ("Block", (8, 2, 4.0, True, None, 0.0, 0.0, 0.1), (2, 5, 8)),
    ("Mlp", (8, 16), (2, 5, 8)),
    ("DropPath", (0.1,), (2, 5, 8)),
    ("SwiGLU", (8, 16), (2, 5, 8)),
    ("GluMlp", (8, 16), (2, 5, 8)),
    ("GatedMlp", (8, 16), (2, 5, 8)),
    ("LayerScale", (8,), (2, 5, 8)),
    ("FusedAttentionBlock", (8, 2), (2, 5, 8)),
    ("TimmNormedHead", (8, 3), (2, 5, 8)),
]
