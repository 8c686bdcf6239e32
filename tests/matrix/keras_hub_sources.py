"""keras_hub models as the matrix's sources: the backbones of its text and vision models, built small with seeded
weights, saved as `.keras` files whose inputs are the backbone's (token ids and a padding mask, or images).

keras_hub writes its models as custom layers over keras.ops (position embeddings, rotary embeddings, cached
attention), which the Keras reader traces; their sequence length is open, so the matrix reads them with the feeds'
shapes given (`--input-shape`), as a user converting one would.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

#: layer sizes every text backbone is built with
_SMALL = {"num_layers": 2, "hidden_dim": 32, "intermediate_dim": 64}
_VOCAB = 100
_FRAMES, _SAMPLES = 32, 2000  # the length of audio inputs of open length: features, or a waveform


def _text(name: str):
    import keras_hub as kh

    heads = {"num_heads": 4}
    grouped = {"num_query_heads": 4, "num_key_value_heads": 2}
    if name == "bert":
        return kh.models.BertBackbone(vocabulary_size=_VOCAB, max_sequence_length=32, **heads, **_SMALL)
    if name == "distilbert":
        return kh.models.DistilBertBackbone(vocabulary_size=_VOCAB, max_sequence_length=32, **heads, **_SMALL)
    if name == "roberta":
        return kh.models.RobertaBackbone(vocabulary_size=_VOCAB, max_sequence_length=32, **heads, **_SMALL)
    if name == "deberta_v3":
        return kh.models.DebertaV3Backbone(vocabulary_size=_VOCAB, max_sequence_length=32, bucket_size=8, **heads,
                                           **_SMALL)
    if name == "gpt2":
        return kh.models.GPT2Backbone(vocabulary_size=_VOCAB, max_sequence_length=32, **heads, **_SMALL)
    if name == "llama":
        return kh.models.LlamaBackbone(vocabulary_size=_VOCAB, **grouped, **_SMALL)
    if name == "mistral":
        return kh.models.MistralBackbone(vocabulary_size=_VOCAB, sliding_window=8, **grouped, **_SMALL)
    if name == "qwen":
        return kh.models.QwenBackbone(vocabulary_size=_VOCAB, **grouped, **_SMALL)
    if name == "phi3":
        return kh.models.Phi3Backbone(vocabulary_size=_VOCAB, **grouped, **_SMALL)
    if name == "gemma":
        return kh.models.GemmaBackbone(vocabulary_size=_VOCAB, num_query_heads=4, num_key_value_heads=1, head_dim=8,
                                       **_SMALL)
    if name == "t5":
        return kh.models.T5Backbone(vocabulary_size=_VOCAB, **heads, **_SMALL)
    if name == "bart":
        return kh.models.BartBackbone(vocabulary_size=_VOCAB, max_sequence_length=32, **heads, **_SMALL)
    if name == "albert":
        return kh.models.AlbertBackbone(vocabulary_size=_VOCAB, embedding_dim=16, max_sequence_length=32, **heads,
                                        **_SMALL)
    if name == "electra":
        return kh.models.ElectraBackbone(vocab_size=_VOCAB, embedding_dim=16, max_sequence_length=32, **heads,
                                         **_SMALL)
    if name == "f_net":
        return kh.models.FNetBackbone(vocabulary_size=_VOCAB, max_sequence_length=32, **_SMALL)
    if name == "xlm_roberta":
        return kh.models.XLMRobertaBackbone(vocabulary_size=_VOCAB, max_sequence_length=32, **heads, **_SMALL)
    if name == "opt":
        return kh.models.OPTBackbone(vocabulary_size=_VOCAB, max_sequence_length=32, **heads, **_SMALL)
    if name == "gpt_neox":
        return kh.models.GPTNeoXBackbone(vocabulary_size=_VOCAB, max_sequence_length=32, **heads, **_SMALL)
    if name == "falcon":
        return kh.models.FalconBackbone(vocabulary_size=_VOCAB, num_attention_heads=4, **_SMALL)
    if name == "bloom":
        return kh.models.BloomBackbone(vocabulary_size=_VOCAB, **heads, **_SMALL)
    if name == "llama3":
        return kh.models.Llama3Backbone(vocabulary_size=_VOCAB, **grouped, **_SMALL)
    if name == "qwen3":
        return kh.models.Qwen3Backbone(vocabulary_size=_VOCAB, head_dim=8, **grouped, **_SMALL)
    if name == "mixtral":
        return kh.models.MixtralBackbone(vocabulary_size=_VOCAB, num_experts=4, sliding_window=8, **grouped,
                                         **_SMALL)
    if name == "qwen3_moe":
        return kh.models.Qwen3MoeBackbone(vocabulary_size=_VOCAB, moe_intermediate_dim=16, num_experts=4, top_k=2,
                                          head_dim=8, **grouped, **_SMALL)
    if name == "esm":
        return kh.models.ESMBackbone(vocabulary_size=_VOCAB, max_sequence_length=32, **heads, **_SMALL)
    if name == "roformer_v2":
        return kh.models.RoformerV2Backbone(vocabulary_size=_VOCAB, head_size=8, **heads, **_SMALL)
    if name == "xlnet":
        return kh.models.XLNetBackbone(vocabulary_size=_VOCAB, **heads, **_SMALL)
    if name == "qwen2":
        return kh.models.Qwen2Backbone(vocabulary_size=_VOCAB, **grouped, **_SMALL)
    if name == "qwen_moe":
        return kh.models.QwenMoeBackbone(vocabulary_size=_VOCAB, moe_intermediate_dim=16,
                                         shared_expert_intermediate_dim=32, num_experts=4, top_k=2, **grouped,
                                         **_SMALL)
    if name == "gemma3":
        return kh.models.Gemma3Backbone(vocabulary_size=_VOCAB, image_size=32, head_dim=8,
                                        use_sliding_window_attention=True, sliding_window_size=4, **grouped, **_SMALL)
    if name == "gpt_oss":
        return kh.models.GptOssBackbone(vocabulary_size=_VOCAB, num_experts=4, top_k=2, head_dim=8, sliding_window=4,
                                        **grouped, **_SMALL)
    if name == "esm2":
        return kh.models.ESM2Backbone(vocabulary_size=_VOCAB, max_sequence_length=32, **heads, **_SMALL)
    if name == "qwen3_5":  # gated delta-net (linear attention) layers between full-attention ones
        return kh.models.Qwen3_5Backbone(vocabulary_size=_VOCAB, head_dim=8, layer_types=["linear_attention",
                                         "full_attention"], linear_num_key_heads=2, linear_num_value_heads=4,
                                         linear_key_head_dim=8, linear_value_head_dim=8, **grouped, **_SMALL)
    if name == "clip":  # image and text towers: their similarity logit compared
        vision = kh.models.CLIPVisionEncoder(patch_size=8, hidden_dim=32, num_layers=2, num_heads=4,
                                             intermediate_dim=64, image_shape=(32, 32, 3))
        text = kh.models.CLIPTextEncoder(vocabulary_size=_VOCAB, embedding_dim=32, hidden_dim=32, num_layers=2,
                                         num_heads=4, intermediate_dim=64, max_sequence_length=12)
        return kh.models.CLIPBackbone(vision, text, projection_dim=16)
    if name == "siglip":
        vision = kh.models.SigLIPVisionEncoder(patch_size=8, hidden_dim=32, num_layers=2, num_heads=4,
                                               intermediate_dim=64, image_shape=(32, 32, 3))
        text = kh.models.SigLIPTextEncoder(vocabulary_size=_VOCAB, embedding_dim=32, hidden_dim=32, num_layers=2,
                                           num_heads=4, intermediate_dim=64, max_sequence_length=12)
        return kh.models.SigLIPBackbone(vision, text)
    if name == "rwkv7":
        return kh.models.RWKV7Backbone(hidden_size=32, head_size=8, num_layers=2, vocabulary_size=_VOCAB,
                                       intermediate_dim=64, gate_lora=8, mv_lora=8, aaa_lora=8, decay_lora=8)
    if name == "whisper":
        return kh.models.WhisperBackbone(vocabulary_size=_VOCAB, num_mels=16, max_encoder_sequence_length=32,
                                         max_decoder_sequence_length=16, **heads, **_SMALL)
    if name == "moonshine":
        return kh.models.MoonshineBackbone(vocabulary_size=_VOCAB, filter_dim=32, encoder_num_layers=1,
                                           decoder_num_layers=1, hidden_dim=32, intermediate_dim=64,
                                           encoder_num_heads=4, decoder_num_heads=4)
    if name == "t5gemma":
        return kh.models.T5GemmaBackbone(
            vocabulary_size=_VOCAB, encoder_hidden_dim=32, encoder_intermediate_dim=64, encoder_num_layers=2,
            encoder_num_attention_heads=4, encoder_num_key_value_heads=2, encoder_head_dim=8,
            encoder_layer_types=["sliding_attention", "full_attention"], decoder_hidden_dim=32,
            decoder_intermediate_dim=64, decoder_num_layers=2, decoder_num_attention_heads=4,
            decoder_num_key_value_heads=2, decoder_head_dim=8,
            decoder_layer_types=["sliding_attention", "full_attention"],
            sliding_window=4)
    return None


def _vision(name: str):
    import keras_hub as kh

    image = (32, 32, 3)
    if name == "vit":
        return kh.models.ViTBackbone(image_shape=image, patch_size=8, num_layers=2, num_heads=4, hidden_dim=32,
                                     mlp_dim=64)
    if name == "resnet":
        return kh.models.ResNetBackbone(input_conv_filters=[16], input_conv_kernel_sizes=[7],
                                        stackwise_num_filters=[64, 32], stackwise_num_blocks=[1, 1],
                                        stackwise_num_strides=[1, 2], block_type="bottleneck_block", image_shape=image)
    if name == "densenet":
        return kh.models.DenseNetBackbone(stackwise_num_repeats=[2, 2], image_shape=image)
    if name == "mit":
        return kh.models.MiTBackbone(layerwise_depths=[1, 1], num_layers=2, layerwise_num_heads=[1, 2],
                                     layerwise_sr_ratios=[2, 1], max_drop_path_rate=0.0, hidden_dims=[16, 32],
                                     image_shape=image, layerwise_patch_sizes=[7, 3], layerwise_strides=[4, 2])
    if name == "vgg":
        return kh.models.VGGBackbone(stackwise_num_repeats=[1, 2], stackwise_num_filters=[8, 16], image_shape=image)
    if name == "xception":
        return kh.models.XceptionBackbone(stackwise_conv_filters=[[8, 16], [32, 32], [64, 64]],
                                          stackwise_pooling=[False, True, False], image_shape=image)
    if name == "deit":
        return kh.models.DeiTBackbone(image_shape=image, patch_size=8, num_layers=2, num_heads=4, hidden_dim=32,
                                      intermediate_dim=64)
    if name == "dinov2":
        return kh.models.DINOV2Backbone(patch_size=8, num_layers=2, hidden_dim=32, num_heads=4, intermediate_dim=64,
                                        image_shape=image, position_embedding_shape=(64, 64, 3))
    if name == "segformer":
        encoder = _vision("mit")
        return kh.models.SegFormerBackbone(image_encoder=encoder, projection_filters=16)
    if name == "swin":
        return kh.models.SwinTransformerBackbone(image_shape=image, embed_dim=16, depths=[1, 1], num_heads=[2, 4],
                                                 window_size=4, patch_size=2, drop_path=0.0)
    if name == "dinov3":
        return kh.models.DINOV3Backbone(patch_size=8, num_layers=2, hidden_dim=32, num_heads=4, intermediate_dim=64,
                                        image_shape=image)
    if name == "vitdet":
        return kh.models.ViTDetBackbone(hidden_size=32, num_layers=2, intermediate_dim=64, num_heads=4,
                                        global_attention_layer_indices=[1], image_shape=image, patch_size=8,
                                        num_output_channels=16, window_size=2)
    if name == "hgnetv2":
        return kh.models.HGNetV2Backbone(depths=[1, 1], embedding_size=16, hidden_sizes=[32, 64],
                                         stem_channels=[3, 8, 16], hidden_act="relu", use_learnable_affine_block=True,
                                         stackwise_stage_filters=[[16, 8, 32, 1, 2, 3], [32, 16, 64, 1, 2, 3]],
                                         apply_downsample=[False, True], use_lightweight_conv_block=[False, True],
                                         image_shape=image)
    raise KeyError(name)


MODELS = ("bert", "distilbert", "roberta", "deberta_v3", "gpt2", "llama", "mistral", "qwen", "phi3", "gemma", "t5",
          "bart", "albert", "electra", "f_net", "xlm_roberta", "opt", "gpt_neox", "falcon", "bloom", "llama3", "qwen3",
          "mixtral", "qwen3_moe", "esm", "roformer_v2", "xlnet", "vit", "resnet", "densenet", "mit", "vgg", "xception",
          "deit", "dinov2", "qwen2", "qwen_moe", "gemma3", "gpt_oss", "rwkv7", "whisper", "moonshine", "t5gemma",
          "swin", "dinov3", "vitdet", "hgnetv2", "esm2", "qwen3_5", "segformer",
          "clip", "siglip")


def _feeds(backbone) -> dict:
    """Seeded feeds for each of the backbone's inputs: token ids, a padding mask whose last two tokens are padding,
    zero segment ids, a decoder's six tokens, or images."""
    rng = np.random.default_rng(0)
    feeds = {}
    for key, spec in _inputs(backbone).items():
        length = 6 if key.startswith("decoder") else 12
        if key.endswith("token_ids"):
            feeds[key] = rng.integers(1, _VOCAB, (1, length)).astype("int32")
        elif key.endswith("padding_mask"):
            mask = np.arange(length) < length - (0 if key.startswith("decoder") else 2)
            feeds[key] = mask.astype(spec.dtype)[None]  # int32, or bool (Moonshine's)
        elif key == "segment_ids":
            feeds[key] = np.zeros((1, length), "int32")
        else:  # images, or audio features of open length
            open_length = _SAMPLES if spec.shape[-1] == 1 else _FRAMES
            feeds[key] = rng.standard_normal((1, *(d or open_length for d in spec.shape[1:]))).astype("float32")
    return feeds


def _inputs(backbone) -> dict:
    """The backbone's inputs by name (a vision backbone takes one: its images)."""
    return backbone.input if isinstance(backbone.input, dict) else {"images": backbone.input}


def build(name: str, workdir: Path):
    """(the `.keras` file of keras_hub backbone `name`, its feeds): the backbone's main output (its sequence output
    where it gives several) behind inputs named as the backbone's."""
    import keras

    keras.utils.set_random_seed(0)
    backbone = _text(name) or _vision(name)
    feeds = _feeds(backbone)
    specs = _inputs(backbone)
    inputs = {k: keras.Input(shape=specs[k].shape[1:], dtype=specs[k].dtype, name=k) for k in feeds}
    out = backbone(inputs if isinstance(backbone.input, dict) else inputs["images"])
    if isinstance(out, dict):
        out = out.get("sequence_output", out.get("encoder_sequence_output", next(iter(out.values()))))
    path = workdir / f"{name}.keras"
    keras.Model(list(inputs.values()), out, name=name).save(path)
    return path, list(feeds.values())
