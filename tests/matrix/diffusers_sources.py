"""diffusers models built from small configs with seeded weights: the denoisers (UNets, diffusion transformers)
and the autoencoders of published image and audio pipelines, each called as its pipeline calls it.

MODELS: name -> (model class, config, inputs, keyword names of the inputs[, the output field compared: `sample`,
the denoised or decoded tensor, unless named; None: the model returns the tensor itself]); an input is
("latents", shape), ("timestep", value) (a float32 tensor of shape (1,)), ("ids", shape, vocabulary),
("mask", shape) (int64 ones) or ("positions", rows, columns) (Flux's (row, column) coordinates of a grid's
tokens, then one zero row per text token when columns is 0).
"""

from __future__ import annotations

import numpy as np

_GROUPS = {"norm_num_groups": 8}
_UNET = {"sample_size": 16, "layers_per_block": 1, "block_out_channels": (16, 32), **_GROUPS}
_VAE = {"in_channels": 3, "out_channels": 3, "block_out_channels": (16, 32), "layers_per_block": 1,
        "down_block_types": ("DownEncoderBlock2D",) * 2, "up_block_types": ("UpDecoderBlock2D",) * 2, **_GROUPS}
_T = ("timestep", 500.0)

MODELS = {
    # DDPM / consistency models' pixel-space UNet with attention blocks
    "unet2d": ("UNet2DModel", {**_UNET, "in_channels": 3, "out_channels": 3,
                               "down_block_types": ("DownBlock2D", "AttnDownBlock2D"),
                               "up_block_types": ("AttnUpBlock2D", "UpBlock2D")},
               [("latents", (1, 3, 16, 16)), _T], ("sample", "timestep")),
    # Stable Diffusion's latent UNet: cross-attention to the text encoder's states
    "unet2d_condition": ("UNet2DConditionModel", {
        **_UNET, "in_channels": 4, "out_channels": 4, "cross_attention_dim": 32, "attention_head_dim": 8,
        "down_block_types": ("CrossAttnDownBlock2D", "DownBlock2D"),
        "up_block_types": ("UpBlock2D", "CrossAttnUpBlock2D")},
        [("latents", (1, 4, 16, 16)), _T, ("latents", (1, 7, 32))],
        ("sample", "timestep", "encoder_hidden_states")),
    # Stable Diffusion's VAE, image -> latent distribution's mode -> image
    "autoencoder_kl": ("AutoencoderKL", {**_VAE, "latent_channels": 4, "sample_size": 32},
                       [("latents", (1, 3, 32, 32))], ("sample",)),
    "vq_model": ("VQModel", {**_VAE, "latent_channels": 4, "num_vq_embeddings": 64, "vq_embed_dim": 4},
                 [("latents", (1, 3, 32, 32))], ("sample",)),
    "autoencoder_tiny": ("AutoencoderTiny", {"encoder_block_out_channels": (16, 16),
                                             "decoder_block_out_channels": (16, 16), "num_encoder_blocks": (1, 1),
                                             "num_decoder_blocks": (1, 1), "latent_channels": 4},
                         [("latents", (1, 3, 32, 32))], ("sample",)),
    # Dance Diffusion's waveform UNet
    "unet1d": ("UNet1DModel", {"sample_size": 256, "in_channels": 2, "out_channels": 2, "extra_in_channels": 64,
                               "block_out_channels": (32, 32, 64), "down_block_types": (
                                   "DownBlock1DNoSkip", "DownBlock1D", "AttnDownBlock1D"),
                               "up_block_types": ("AttnUpBlock1D", "UpBlock1D", "UpBlock1DNoSkip"),
                               "mid_block_type": "UNetMidBlock1D", "use_timestep_embedding": False,
                               "time_embedding_type": "fourier", "flip_sin_to_cos": True},
               [("latents", (1, 2, 256)), _T], ("sample", "timestep")),
    # DiT: class-conditional diffusion transformer (adaptive layer norm)
    "dit": ("DiTTransformer2DModel", {"num_attention_heads": 2, "attention_head_dim": 8, "in_channels": 4,
                                      "out_channels": 4, "num_layers": 2, "sample_size": 8, "patch_size": 2,
                                      "num_embeds_ada_norm": 1000},
            [("latents", (1, 4, 8, 8)), _T, ("ids", (1,), 1000)], ("hidden_states", "timestep", "class_labels")),
    # Stable Diffusion 3's joint-attention transformer
    "sd3": ("SD3Transformer2DModel", {"sample_size": 8, "patch_size": 2, "in_channels": 4, "num_layers": 2,
                                      "attention_head_dim": 8, "num_attention_heads": 2, "joint_attention_dim": 16,
                                      "caption_projection_dim": 16, "pooled_projection_dim": 16,
                                      "out_channels": 4, "pos_embed_max_size": 16},
            [("latents", (1, 4, 8, 8)), ("latents", (1, 5, 16)), ("latents", (1, 16)), _T],
            ("hidden_states", "encoder_hidden_states", "pooled_projections", "timestep")),
    # PixArt-α: cross-attention transformer with adaptive single norm
    "pixart": ("PixArtTransformer2DModel", {"num_attention_heads": 2, "attention_head_dim": 8, "in_channels": 4,
                                            "out_channels": 8, "num_layers": 2, "sample_size": 8, "patch_size": 2,
                                            "cross_attention_dim": 16, "caption_channels": 16, "norm_num_groups": 8},
               [("latents", (1, 4, 8, 8)), ("latents", (1, 5, 16)), _T],
               ("hidden_states", "encoder_hidden_states", "timestep")),
    # Stable Audio's VAE (Snake activations, weight-normalised convolutions)
    "autoencoder_oobleck": ("AutoencoderOobleck", {"encoder_hidden_size": 8, "downsampling_ratios": [2, 4],
                                                   "decoder_channels": 8, "decoder_input_channels": 4,
                                                   "audio_channels": 2, "channel_multiples": [1, 2]},
                            [("latents", (1, 2, 256))], ("sample",)),
    # FLUX.1: joint and single-stream blocks, rotary embedding of token coordinates
    "flux": ("FluxTransformer2DModel", {"in_channels": 4, "num_layers": 1, "num_single_layers": 1,
                                        "attention_head_dim": 8, "num_attention_heads": 2, "joint_attention_dim": 16,
                                        "pooled_projection_dim": 16, "axes_dims_rope": (2, 2, 4)},
             [("latents", (1, 16, 4)), ("latents", (1, 5, 16)), ("latents", (1, 16)), ("timestep", 0.5),
              ("positions", 4, 4), ("positions", 5, 0)],
             ("hidden_states", "encoder_hidden_states", "pooled_projections", "timestep", "img_ids", "txt_ids")),
    # Wan 2.1 video transformer: 3-D patches, complex rotary embedding
    "wan": ("WanTransformer3DModel", {"num_attention_heads": 2, "attention_head_dim": 8, "in_channels": 4,
                                      "out_channels": 4, "text_dim": 16, "freq_dim": 16, "ffn_dim": 32, "num_layers": 1,
                                      "rope_max_seq_len": 32},
            [("latents", (1, 4, 2, 8, 8)), _T, ("latents", (1, 5, 16))],
            ("hidden_states", "timestep", "encoder_hidden_states")),
    # Sana: linear attention
    "sana": ("SanaTransformer2DModel", {"in_channels": 4, "out_channels": 4, "num_attention_heads": 2,
                                        "attention_head_dim": 8, "num_layers": 1, "num_cross_attention_heads": 2,
                                        "cross_attention_head_dim": 8, "cross_attention_dim": 16,
                                        "caption_channels": 16, "sample_size": 8},
             [("latents", (1, 4, 8, 8)), ("latents", (1, 5, 16)), _T],
             ("hidden_states", "encoder_hidden_states", "timestep")),
    "auraflow": ("AuraFlowTransformer2DModel", {"sample_size": 8, "in_channels": 4, "num_mmdit_layers": 1,
                                                "num_single_dit_layers": 1, "attention_head_dim": 8,
                                                "num_attention_heads": 2, "joint_attention_dim": 16,
                                                "caption_projection_dim": 16, "out_channels": 4,
                                                "pos_embed_max_size": 64},
                 [("latents", (1, 4, 8, 8)), ("latents", (1, 5, 16)), _T],
                 ("hidden_states", "encoder_hidden_states", "timestep")),
    "cogvideox": ("CogVideoXTransformer3DModel", {"num_attention_heads": 2, "attention_head_dim": 8, "in_channels": 4,
                                                  "out_channels": 4, "time_embed_dim": 16, "text_embed_dim": 16,
                                                  "num_layers": 1, "sample_width": 8, "sample_height": 8,
                                                  "sample_frames": 5, "max_text_seq_length": 5},
                  [("latents", (1, 2, 4, 8, 8)), ("latents", (1, 5, 16)), _T],
                  ("hidden_states", "encoder_hidden_states", "timestep")),
    # ModelScope text-to-video UNet: temporal convolutions and attention
    "unet3d_condition": ("UNet3DConditionModel", {
        "sample_size": 8, "in_channels": 4, "out_channels": 4, "layers_per_block": 1, "block_out_channels": (16, 32),
        "cross_attention_dim": 16, "attention_head_dim": 8, "down_block_types": ("CrossAttnDownBlock3D", "DownBlock3D"),
        "up_block_types": ("UpBlock3D", "CrossAttnUpBlock3D"), **_GROUPS},
        [("latents", (1, 4, 2, 8, 8)), _T, ("latents", (1, 5, 16))],
        ("sample", "timestep", "encoder_hidden_states")),
    # Sana's deep-compression autoencoder (ReLU linear attention blocks)
    "autoencoder_dc": ("AutoencoderDC", {"in_channels": 3, "latent_channels": 4, "attention_head_dim": 8,
                                         "encoder_block_types": ("ResBlock", "EfficientViTBlock"),
                                         "decoder_block_types": ("ResBlock", "EfficientViTBlock"),
                                         "encoder_block_out_channels": (16, 32), "decoder_block_out_channels": (16, 32),
                                         "encoder_layers_per_block": (1, 1), "decoder_layers_per_block": (1, 1),
                                         "encoder_qkv_multiscales": ((), (5,)), "decoder_qkv_multiscales": ((), (5,))},
                       [("latents", (1, 3, 32, 32))], ("sample",)),
    # unCLIP / Kandinsky's prior: text embedding -> image embedding
    "prior": ("PriorTransformer", {"num_attention_heads": 2, "attention_head_dim": 8, "num_layers": 1,
                                   "embedding_dim": 16, "num_embeddings": 5, "additional_embeddings": 4},
              [("latents", (1, 16)), _T, ("latents", (1, 16)), ("latents", (1, 5, 16))],
              ("hidden_states", "timestep", "proj_embedding", "encoder_hidden_states"), "predicted_image_embedding"),
    # Wan's causal video VAE
    "autoencoder_kl_wan": ("AutoencoderKLWan", {"base_dim": 8, "z_dim": 4, "dim_mult": [1, 2], "num_res_blocks": 1,
                                                "temperal_downsample": [True], "latents_mean": [0.0] * 4,
                                                "latents_std": [1.0] * 4},
                           [("latents", (1, 3, 5, 16, 16))], ("sample",)),
    # ControlNet: a copy of the UNet's encoder reading a conditioning image; its middle block's residual compared
    "controlnet": ("ControlNetModel", {
        "in_channels": 4, "conditioning_channels": 3, "block_out_channels": (16, 32), "layers_per_block": 1,
        "cross_attention_dim": 32, "attention_head_dim": 8, "conditioning_embedding_out_channels": (8, 16),
        "down_block_types": ("CrossAttnDownBlock2D", "DownBlock2D"), **_GROUPS},
        [("latents", (1, 4, 16, 16)), _T, ("latents", (1, 7, 32)), ("latents", (1, 3, 32, 32))],
        ("sample", "timestep", "encoder_hidden_states", "controlnet_cond"), "mid_block_res_sample"),
    # Latte: video transformer alternating spatial and temporal blocks
    "latte": ("LatteTransformer3DModel", {"num_attention_heads": 2, "attention_head_dim": 8, "in_channels": 4,
                                          "out_channels": 8, "num_layers": 1, "cross_attention_dim": 16,
                                          "sample_size": 8, "patch_size": 2, "norm_type": "ada_norm_single",
                                          "caption_channels": 16, "video_length": 2},
              [("latents", (1, 4, 2, 8, 8)), _T, ("latents", (1, 5, 16))],
              ("hidden_states", "timestep", "encoder_hidden_states")),
    # aMUSEd's masked-token transformer (a UNet-shaped ViT over VQ codes)
    "uvit2d": ("UVit2DModel", {"hidden_size": 32, "cond_embed_dim": 16, "micro_cond_encode_dim": 4,
                               "micro_cond_embed_dim": 20, "encoder_hidden_size": 16, "vocab_size": 72,
                               "codebook_size": 64, "in_channels": 16, "block_out_channels": 16, "num_res_blocks": 1,
                               "block_num_heads": 2, "num_hidden_layers": 1, "num_attention_heads": 2,
                               "intermediate_size": 32},
               [("ids", (1, 4, 4), 64), ("latents", (1, 5, 16)), ("latents", (1, 16)), ("latents", (1, 5))],
               ("input_ids", "encoder_hidden_states", "pooled_text_emb", "micro_conds"), None),
}


def _positions(rows: int, columns: int) -> np.ndarray:
    if not columns:
        return np.zeros((rows, 3), np.float32)
    grid = np.stack(np.meshgrid(np.arange(rows), np.arange(columns), indexing="ij"), -1).reshape(-1, 2)
    return np.concatenate([np.zeros((len(grid), 1)), grid], 1).astype(np.float32)


def build(name: str):
    """(module returning the model's `sample`, feeds) for a MODELS entry."""
    import diffusers
    import torch

    class_name, config, inputs, keys, *field = MODELS[name]
    torch.manual_seed(0)
    model = getattr(diffusers, class_name)(**config).eval()
    with torch.no_grad():  # zero-initialised layers (ControlNet's zero convolutions, adaLN-Zero) drawn as the others
        for p in model.parameters():
            if p.ndim > 1 and not p.any():
                p.normal_(0.0, 0.2 / p[0].numel() ** 0.5)
    rng = np.random.default_rng(4)
    feeds = []
    for spec in inputs:
        if spec[0] == "timestep":
            feeds.append(np.full((1,), spec[1], np.float32))
        elif spec[0] == "mask":
            feeds.append(np.ones(spec[1], np.int64))
        elif spec[0] == "positions":
            feeds.append(_positions(spec[1], spec[2]))
        elif spec[0] == "ids":
            feeds.append(rng.integers(0, spec[2], spec[1]).astype(np.int64))
        else:
            feeds.append(rng.standard_normal(spec[1]).astype(np.float32))

    class Sample(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.model = model

        def forward(self, *args):
            out = self.model(**dict(zip(keys, args)))
            return out if field and field[0] is None else getattr(out, field[0] if field else "sample")

    return Sample().eval(), feeds
