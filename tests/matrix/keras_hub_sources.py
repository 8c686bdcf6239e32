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
    raise KeyError(name)


MODELS = ("bert", "distilbert", "roberta", "deberta_v3", "gpt2", "llama", "mistral", "qwen", "phi3", "gemma", "t5",
          "bart", "albert", "electra", "f_net", "xlm_roberta", "opt", "gpt_neox", "falcon", "bloom", "llama3", "qwen3",
          "mixtral", "qwen3_moe", "esm", "roformer_v2", "xlnet", "vit", "resnet", "densenet", "mit", "vgg", "xception",
          "deit", "dinov2")


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
            feeds[key] = (np.arange(length) < length - (0 if key.startswith("decoder") else 2)).astype("int32")[None]
        elif key == "segment_ids":
            feeds[key] = np.zeros((1, length), "int32")
        else:
            feeds[key] = rng.standard_normal((1, *spec.shape[1:])).astype("float32")
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
