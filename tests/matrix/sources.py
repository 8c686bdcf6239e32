"""The source models of the conversion matrix: real architectures with seeded random weights, as users have them.

- every keras.applications architecture (Keras 3), BatchNorm statistics calibrated on images like its feeds,
  logits out;
- the PyTorch test zoo (tests/models/torch_zoo.py);
- transformers models built from small configs: BERT, GPT-2, T5, ViT, Whisper, a LLaMA-style decoder, and the
  architectures of CONFIGS (DistilBERT, RoBERTa, ALBERT, DeBERTa-v2, BART, Mistral, Qwen2, Gemma, Phi, CLIP, Swin,
  SegFormer, Wav2Vec2, ...);
- a wide sample of timm's families (tests/models/timm_zoo.py);
- keras_hub backbones and diffusers models (UNets, diffusion transformers, autoencoders) built small
  (keras_hub_sources.py, diffusers_sources.py);
- files the frameworks' own writers make of some of those: SavedModels (`model.export`) and TFLite flatbuffers
  (TensorFlow's converter) of keras.applications, ONNX files (torch.onnx.export, both exporters) and TorchScript
  archives (torch.jit.trace) of timm and diffusers models.

A source builds to (model, example inputs): a file, or an in-memory torch module, and the feeds its own runtime
is run on. Nothing is downloaded.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np


@dataclass
class Source:
    name: str
    family: str  # keras | torch | transformers | timm | keras_hub | diffusers | written (a file another writer made)
    build: Callable  # (workdir) -> (model or path, [input arrays])


# -- Keras ---------------------------------------------------------------------------------------------
#: input size per architecture: the smallest the architecture accepts at a reasonable cost
KERAS_SIZES = {"InceptionV3": 75, "InceptionResNetV2": 75, "Xception": 71, "NASNetMobile": 224, "NASNetLarge": 331,
               "EfficientNetV2L": 64, "EfficientNetV2M": 64, "EfficientNetV2S": 64}
KERAS_DEFAULT_SIZE = 64


def keras_application(name: str) -> Source:
    def build(workdir: Path):
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
        import keras

        from tests.models.keras_zoo import calibrate_batch_norms

        keras.utils.set_random_seed(0)
        size = KERAS_SIZES.get(name, KERAS_DEFAULT_SIZE)
        shape = (size, size, 3)
        kwargs = {"classifier_activation": None, "input_shape": shape, "weights": None}
        model = getattr(keras.applications, name)(**kwargs)
        calibrate_batch_norms(model, shape, data=_images(4, shape, seed=1))
        path = workdir / f"{name}.keras"
        model.save(path)
        return path, [_images(1, shape, seed=2)]

    return Source(name, "keras", build)


def _images(n: int, shape, seed: int) -> np.ndarray:
    """Pixels in [0, 255], as images are fed (the applications' own preprocessing layers rescale them)."""
    return np.random.default_rng(seed).uniform(0, 255, (n, *shape)).astype(np.float32)


def keras_sources() -> list[Source]:
    import keras

    return [keras_application(n) for n in sorted(dir(keras.applications)) if n[:1].isupper()]


# -- PyTorch zoo, transformers -------------------------------------------------------------------------
def torch_zoo_sources() -> list[Source]:
    from tests.models.torch_zoo import ZOO

    def source(name):
        def build(_workdir):
            module, args, _ = ZOO[name]()
            return module.eval(), [a.numpy() for a in args]

        return Source(name, "torch", build)

    return [source(n) for n in ZOO]


def _seed():
    import torch

    torch.manual_seed(0)
    np.random.seed(0)


class _Outputs:
    """A transformers model as a module returning its main tensor (logits or the last hidden state)."""

    @staticmethod
    def wrap(model, keys: tuple[str, ...], field: str):
        import torch

        class Wrapped(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.model = model

            def forward(self, *args):
                return getattr(self.model(**dict(zip(keys, args))), field)

        return Wrapped().eval()


def _ids(batch: int, seq: int, vocab: int):
    return np.random.default_rng(3).integers(0, vocab, (batch, seq)).astype(np.int64)


def transformers_sources() -> list[Source]:
    def t5(_workdir):
        from transformers import T5Config, T5Model

        _seed()
        cfg = T5Config(vocab_size=500, d_model=64, d_kv=16, d_ff=128, num_layers=2, num_decoder_layers=2,
                       num_heads=4, use_cache=False)
        model = T5Model(cfg).eval()
        return _Outputs.wrap(model, ("input_ids", "decoder_input_ids"), "last_hidden_state"), \
            [_ids(1, 12, 500), _ids(1, 6, 500)]

    def vit(_workdir):
        from transformers import ViTConfig, ViTModel

        _seed()
        cfg = ViTConfig(image_size=32, patch_size=8, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                        intermediate_size=128)
        model = ViTModel(cfg, add_pooling_layer=False).eval()
        x = np.random.default_rng(4).standard_normal((1, 3, 32, 32)).astype(np.float32)
        return _Outputs.wrap(model, ("pixel_values",), "last_hidden_state"), [x]

    def whisper(_workdir):
        from transformers import WhisperConfig, WhisperModel

        _seed()
        cfg = WhisperConfig(vocab_size=500, num_mel_bins=16, d_model=64, encoder_layers=2, decoder_layers=2,
                            encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=128,
                            decoder_ffn_dim=128, max_source_positions=32, max_target_positions=32, use_cache=False,
                            pad_token_id=0, bos_token_id=1, eos_token_id=2, decoder_start_token_id=1)  # within vocab
        model = WhisperModel(cfg).eval()
        features = np.random.default_rng(5).standard_normal((1, 16, 64)).astype(np.float32)
        return _Outputs.wrap(model, ("input_features", "decoder_input_ids"), "last_hidden_state"), \
            [features, _ids(1, 6, 500)]

    def llama(_workdir):
        from tests.models import llm

        return llm.prefill(llm.llama(llm.SMALL)), llm.prefill_feeds(llm.SMALL)

    builders = {"hf_t5": t5, "hf_vit": vit, "hf_whisper": whisper, "hf_llama": llama,
                **{f"hf_{name}": _from_config(name) for name in CONFIGS}}
    zoo = {"hf_bert": "bert", "hf_gpt2": "gpt2"}

    def from_zoo(name):
        def build(_workdir):
            from tests.models.torch_zoo import ZOO

            module, args, _ = ZOO[name]()
            return module.eval(), [a.numpy() for a in args]

        return build

    return [Source(n, "transformers", from_zoo(z)) for n, z in zoo.items()] + \
        [Source(n, "transformers", b) for n, b in builders.items()]


#: more transformers architectures, each (model class, config class, config, input names, inputs: ("ids", seq)
#: for token ids, ("mask", seq) for an attention mask, ("ones", shape) for an all-observed mask, or an array shape
#: for floats[, the output field compared: last_hidden_state unless named]), built small
_LAYERS = {"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 128}
_DECODER = {**_LAYERS, "vocab_size": 500, "max_position_embeddings": 64, "use_cache": False}
_SEQ2SEQ = {"vocab_size": 500, "d_model": 64, "encoder_layers": 2, "decoder_layers": 2, "encoder_attention_heads": 4,
            "decoder_attention_heads": 4, "encoder_ffn_dim": 128, "decoder_ffn_dim": 128, "max_position_embeddings": 64,
            "use_cache": False}
_SPEECH = {"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 64,
           "conv_dim": (16, 16), "conv_stride": (5, 2), "conv_kernel": (10, 3), "num_feat_extract_layers": 2,
           "num_conv_pos_embeddings": 16, "num_conv_pos_embedding_groups": 4}
#: a small ResNet backbone for the DETR family (no timm weights)
_RESNET_BACKBONE = {"backbone_config": {"model_type": "resnet", "embedding_size": 16, "hidden_sizes": [16, 32, 48, 64],
                                        "depths": [1, 1, 1, 1], "out_features": ["stage2", "stage3", "stage4"]},
                    "use_timm_backbone": False, "use_pretrained_backbone": False}
_DETR = {**_RESNET_BACKBONE, "d_model": 32, "encoder_layers": 1, "decoder_layers": 1, "encoder_attention_heads": 2,
         "decoder_attention_heads": 2, "encoder_ffn_dim": 64, "decoder_ffn_dim": 64, "num_queries": 10}
_IDS = (("input_ids",), [("ids", 12)])
_IMAGE = (("pixel_values",), [(1, 3, 64, 64)])
_AUDIO = (("input_values",), [(1, 400)])
CONFIGS = {
    "distilbert": ("DistilBertModel", "DistilBertConfig", {"vocab_size": 500, "dim": 64, "n_layers": 2, "n_heads": 4,
                                                           "hidden_dim": 128}, ("input_ids",), [("ids", 12)]),
    "roberta": ("RobertaModel", "RobertaConfig", {"vocab_size": 500, **_LAYERS}, ("input_ids",), [("ids", 12)]),
    "xlm_roberta": ("XLMRobertaModel", "XLMRobertaConfig", {"vocab_size": 500, **_LAYERS}, ("input_ids",),
                    [("ids", 12)]),
    "albert": ("AlbertModel", "AlbertConfig", {"vocab_size": 500, "embedding_size": 32, **_LAYERS}, ("input_ids",),
               [("ids", 12)]),
    "deberta_v2": ("DebertaV2Model", "DebertaV2Config", {"vocab_size": 500, **_LAYERS}, ("input_ids",),
                   [("ids", 12)]),
    "electra": ("ElectraModel", "ElectraConfig", {"vocab_size": 500, "embedding_size": 32, **_LAYERS},
                ("input_ids",), [("ids", 12)]),
    "mobilebert": ("MobileBertModel", "MobileBertConfig", {
        "vocab_size": 500, "hidden_size": 64, "embedding_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4,
        "intermediate_size": 64, "intra_bottleneck_size": 32, "true_hidden_size": 32, "num_feedforward_networks": 2},
        ("input_ids",), [("ids", 12)]),
    "bart": ("BartModel", "BartConfig", {"vocab_size": 500, "d_model": 64, "encoder_layers": 2, "decoder_layers": 2,
                                         "encoder_attention_heads": 4, "decoder_attention_heads": 4,
                                         "encoder_ffn_dim": 128, "decoder_ffn_dim": 128, "max_position_embeddings": 64,
                                         "use_cache": False}, ("input_ids", "decoder_input_ids"),
             [("ids", 12), ("ids", 6)]),
    "mistral": ("MistralModel", "MistralConfig", {**_DECODER, "num_key_value_heads": 2}, ("input_ids",),
                [("ids", 12)]),
    "qwen2": ("Qwen2Model", "Qwen2Config", {**_DECODER, "num_key_value_heads": 2}, ("input_ids",), [("ids", 12)]),
    "gemma": ("GemmaModel", "GemmaConfig", {**_DECODER, "num_key_value_heads": 2, "head_dim": 16}, ("input_ids",),
              [("ids", 12)]),
    "phi": ("PhiModel", "PhiConfig", _DECODER, ("input_ids",), [("ids", 12)]),
    "gpt_neox": ("GPTNeoXModel", "GPTNeoXConfig", _DECODER, ("input_ids",), [("ids", 12)]),
    "opt": ("OPTModel", "OPTConfig", {"vocab_size": 500, "hidden_size": 64, "num_hidden_layers": 2,
                                      "num_attention_heads": 4, "ffn_dim": 128, "word_embed_proj_dim": 64,
                                      "max_position_embeddings": 64, "use_cache": False}, ("input_ids",),
            [("ids", 12)]),
    "clip_text": ("CLIPTextModel", "CLIPTextConfig", {"vocab_size": 500, "max_position_embeddings": 32, **_LAYERS},
                  ("input_ids",), [("ids", 12)]),
    "clip_vision": ("CLIPVisionModel", "CLIPVisionConfig", {"image_size": 32, "patch_size": 8, **_LAYERS},
                    ("pixel_values",), [(1, 3, 32, 32)]),
    "deit": ("DeiTModel", "DeiTConfig", {"image_size": 32, "patch_size": 8, **_LAYERS}, ("pixel_values",),
             [(1, 3, 32, 32)]),
    "swin": ("SwinModel", "SwinConfig", {"image_size": 32, "patch_size": 4, "embed_dim": 16, "depths": [1, 1],
                                         "num_heads": [2, 2], "window_size": 4}, ("pixel_values",), [(1, 3, 32, 32)]),
    "convnext": ("ConvNextModel", "ConvNextConfig", {"num_stages": 2, "hidden_sizes": [16, 32], "depths": [1, 1]},
                 ("pixel_values",), [(1, 3, 32, 32)]),
    "resnet": ("ResNetModel", "ResNetConfig", {"embedding_size": 16, "hidden_sizes": [16, 32], "depths": [1, 1]},
               ("pixel_values",), [(1, 3, 32, 32)]),
    "segformer": ("SegformerModel", "SegformerConfig", {
        "num_encoder_blocks": 2, "depths": [1, 1], "sr_ratios": [2, 1], "hidden_sizes": [16, 32],
        "num_attention_heads": [1, 2], "decoder_hidden_size": 32, "patch_sizes": [7, 3], "strides": [4, 2]},
        ("pixel_values",), [(1, 3, 32, 32)]),
    "wav2vec2": ("Wav2Vec2Model", "Wav2Vec2Config", {
        "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 64,
        "conv_dim": (16, 16), "conv_stride": (5, 2), "conv_kernel": (10, 3), "num_feat_extract_layers": 2,
        "num_conv_pos_embeddings": 16, "num_conv_pos_embedding_groups": 4}, ("input_values",), [(1, 400)]),
    "bloom": ("BloomModel", "BloomConfig", {"vocab_size": 500, "hidden_size": 64, "n_layer": 2, "n_head": 4,
                                           "use_cache": False}, ("input_ids",), [("ids", 12)]),
    "falcon": ("FalconModel", "FalconConfig", {"vocab_size": 500, "hidden_size": 64, "num_hidden_layers": 2,
                                              "num_attention_heads": 4, "use_cache": False}, ("input_ids",),
               [("ids", 12)]),
    "gptj": ("GPTJModel", "GPTJConfig", {"vocab_size": 500, "n_embd": 64, "n_layer": 2, "n_head": 4, "rotary_dim": 8,
                                         "n_positions": 64, "use_cache": False}, ("input_ids",), [("ids", 12)]),
    "gpt_neo": ("GPTNeoModel", "GPTNeoConfig", {"vocab_size": 500, "hidden_size": 64, "num_layers": 2, "num_heads": 4,
                                                "attention_types": [[["global", "local"], 1]], "window_size": 4,
                                                "max_position_embeddings": 64, "use_cache": False},
                ("input_ids",), [("ids", 12)]),
    "gemma2": ("Gemma2Model", "Gemma2Config", {**_DECODER, "num_key_value_heads": 2, "head_dim": 16,
                                               "sliding_window": 8}, ("input_ids",), [("ids", 12)]),
    "qwen3": ("Qwen3Model", "Qwen3Config", {**_DECODER, "num_key_value_heads": 2, "head_dim": 16}, ("input_ids",),
              [("ids", 12)]),
    "phi3": ("Phi3Model", "Phi3Config", {**_DECODER, "num_key_value_heads": 2, "pad_token_id": 0}, ("input_ids",),
             [("ids", 12)]),
    "stablelm": ("StableLmModel", "StableLmConfig", {**_DECODER, "num_key_value_heads": 2}, ("input_ids",),
                 [("ids", 12)]),
    "mixtral": ("MixtralModel", "MixtralConfig", {**_DECODER, "num_key_value_heads": 2, "num_local_experts": 4,
                                                  "num_experts_per_tok": 2}, ("input_ids",), [("ids", 12)]),
    "qwen2_moe": ("Qwen2MoeModel", "Qwen2MoeConfig", {**_DECODER, "num_key_value_heads": 2, "num_experts": 4,
                                                      "num_experts_per_tok": 2, "moe_intermediate_size": 32,
                                                      "shared_expert_intermediate_size": 64}, ("input_ids",),
                  [("ids", 12)]),
    "olmoe": ("OlmoeModel", "OlmoeConfig", {**_DECODER, "num_key_value_heads": 2, "num_experts": 4,
                                            "num_experts_per_tok": 2, "pad_token_id": 0}, ("input_ids",),
              [("ids", 12)]),
    "qwen3_moe": ("Qwen3MoeModel", "Qwen3MoeConfig", {**_DECODER, "num_key_value_heads": 2, "head_dim": 16,
                                                      "num_experts": 4, "num_experts_per_tok": 2,
                                                      "moe_intermediate_size": 32}, ("input_ids",), [("ids", 12)]),
    "deepseek_v3": ("DeepseekV3Model", "DeepseekV3Config", {
        **_DECODER, "num_key_value_heads": 4, "n_routed_experts": 4, "num_experts_per_tok": 2,
        "moe_intermediate_size": 32, "first_k_dense_replace": 1, "n_group": 1, "topk_group": 1, "kv_lora_rank": 16,
        "q_lora_rank": 24, "qk_rope_head_dim": 8, "qk_nope_head_dim": 8, "v_head_dim": 16}, ("input_ids",),
        [("ids", 12)]),
    "gpt_oss": ("GptOssModel", "GptOssConfig", {**_DECODER, "num_key_value_heads": 2, "head_dim": 16,
                                                "num_local_experts": 4, "num_experts_per_tok": 2, "sliding_window": 8,
                                                "layer_types": ["sliding_attention", "full_attention"]},
                ("input_ids",), [("ids", 12)]),
    "gemma3_text": ("Gemma3TextModel", "Gemma3TextConfig", {**_DECODER, "num_key_value_heads": 2, "head_dim": 16,
                                                            "sliding_window": 8}, ("input_ids",), [("ids", 12)]),
    "olmo": ("OlmoModel", "OlmoConfig", {**_DECODER, "num_key_value_heads": 2, "pad_token_id": 0}, ("input_ids",),
             [("ids", 12)]),
    "gpt_bigcode": ("GPTBigCodeModel", "GPTBigCodeConfig", {"vocab_size": 500, "n_embd": 64, "n_layer": 2, "n_head": 4,
                                                            "n_positions": 64, "use_cache": False}, ("input_ids",),
                    [("ids", 12)]),
    "roformer": ("RoFormerModel", "RoFormerConfig", {"vocab_size": 500, **_LAYERS}, ("input_ids",), [("ids", 12)]),
    "convbert": ("ConvBertModel", "ConvBertConfig", {"vocab_size": 500, "embedding_size": 64, **_LAYERS},
                 ("input_ids",), [("ids", 12)]),
    "squeezebert": ("SqueezeBertModel", "SqueezeBertConfig", {
        "vocab_size": 500, "embedding_size": 64, **_LAYERS, "q_groups": 2, "k_groups": 2, "v_groups": 2,
        "post_attention_groups": 2, "intermediate_groups": 2, "output_groups": 2}, ("input_ids",), [("ids", 12)]),
    "funnel": ("FunnelModel", "FunnelConfig", {"vocab_size": 500, "block_sizes": [1, 1], "d_model": 32, "n_head": 2,
                                               "d_head": 16, "d_inner": 64}, ("input_ids",), [("ids", 12)]),
    "mpnet": ("MPNetModel", "MPNetConfig", {"vocab_size": 500, **_LAYERS}, ("input_ids",), [("ids", 12)]),
    "esm": ("EsmModel", "EsmConfig", {"vocab_size": 500, "pad_token_id": 1, "mask_token_id": 32, **_LAYERS,
                                      "max_position_embeddings": 64}, ("input_ids",), [("ids", 12)]),
    "marian": ("MarianModel", "MarianConfig", {**_SEQ2SEQ, "pad_token_id": 0, "decoder_start_token_id": 0},
               ("input_ids", "decoder_input_ids"), [("ids", 12), ("ids", 6)]),
    "pegasus": ("PegasusModel", "PegasusConfig", _SEQ2SEQ, ("input_ids", "decoder_input_ids"),
                [("ids", 12), ("ids", 6)]),
    "yolos": ("YolosModel", "YolosConfig", {"image_size": [32, 32], "patch_size": 8, "num_detection_tokens": 5,
                                            **_LAYERS}, ("pixel_values",), [(1, 3, 32, 32)]),
    "dpt": ("DPTModel", "DPTConfig", {"image_size": 32, "patch_size": 8, **_LAYERS, "backbone_out_indices": [0, 1],
                                      "neck_hidden_sizes": [16, 32], "fusion_hidden_size": 32}, ("pixel_values",),
            [(1, 3, 32, 32)]),
    "focalnet": ("FocalNetModel", "FocalNetConfig", {"image_size": 32, "patch_size": 4, "embed_dim": 16,
                                                     "depths": [1, 1], "hidden_sizes": [16, 32]}, ("pixel_values",),
                 [(1, 3, 32, 32)]),
    "dinov2": ("Dinov2Model", "Dinov2Config", {"image_size": 32, "patch_size": 8, **_LAYERS}, ("pixel_values",),
               [(1, 3, 32, 32)]),
    "beit": ("BeitModel", "BeitConfig", {"image_size": 32, "patch_size": 8, **_LAYERS,
                                         "use_relative_position_bias": True}, ("pixel_values",), [(1, 3, 32, 32)]),
    "siglip_vision": ("SiglipVisionModel", "SiglipVisionConfig", {"image_size": 32, "patch_size": 8, **_LAYERS},
                      ("pixel_values",), [(1, 3, 32, 32)]),
    "levit": ("LevitModel", "LevitConfig", {"image_size": 64, "hidden_sizes": [32, 48, 64],
                                            "num_attention_heads": [2, 2, 2], "depths": [1, 1, 1],
                                            "key_dim": [8, 8, 8]}, ("pixel_values",), [(1, 3, 64, 64)]),
    "poolformer": ("PoolFormerModel", "PoolFormerConfig", {"hidden_sizes": [16, 32, 48, 64], "depths": [1, 1, 1, 1]},
                   ("pixel_values",), [(1, 3, 64, 64)]),
    "regnet": ("RegNetModel", "RegNetConfig", {"embedding_size": 16, "hidden_sizes": [16, 32, 48, 64],
                                               "depths": [1, 1, 1, 1], "groups_width": 8}, ("pixel_values",),
               [(1, 3, 64, 64)]),
    "hubert": ("HubertModel", "HubertConfig", _SPEECH, ("input_values",), [(1, 400)]),
    "wavlm": ("WavLMModel", "WavLMConfig", {**_SPEECH, "num_buckets": 32, "max_bucket_distance": 64},
              ("input_values",), [(1, 400)]),
    "mamba": ("MambaModel", "MambaConfig", {"vocab_size": 500, "hidden_size": 32, "state_size": 8,
                                            "num_hidden_layers": 2, "use_cache": False}, ("input_ids",),
              [("ids", 12)]),
    "xlnet": ("XLNetModel", "XLNetConfig", {
        "vocab_size": 500, "d_model": 64, "n_layer": 2, "n_head": 4, "d_inner": 128, "use_mems_eval": False}, *_IDS),
    "mamba2": ("Mamba2Model", "Mamba2Config", {
        "vocab_size": 500, "hidden_size": 64, "num_heads": 4, "head_dim": 32, "state_size": 8, "n_groups": 1,
        "num_hidden_layers": 2, "chunk_size": 4, "use_cache": False}, *_IDS),
    "falcon_mamba": ("FalconMambaModel", "FalconMambaConfig", {
        "vocab_size": 500, "hidden_size": 32, "state_size": 8, "num_hidden_layers": 2, "use_cache": False}, *_IDS),
    "wav2vec2_conformer": ("Wav2Vec2ConformerModel", "Wav2Vec2ConformerConfig", {
        **_SPEECH, "position_embeddings_type": "rotary"}, *_AUDIO),
    "granitemoe": ("GraniteMoeModel", "GraniteMoeConfig", {
        **_DECODER, "num_key_value_heads": 2, "num_local_experts": 4, "num_experts_per_tok": 2}, *_IDS),
    "phimoe": ("PhimoeModel", "PhimoeConfig", {
        **_DECODER, "num_key_value_heads": 2, "num_local_experts": 4, "num_experts_per_tok": 2}, *_IDS),
    "ctrl": ("CTRLModel", "CTRLConfig", {
        "vocab_size": 500, "n_embd": 64, "n_layer": 2, "n_head": 4, "dff": 128, "n_positions": 64, "use_cache": False},
        *_IDS),
    "biogpt": ("BioGptModel", "BioGptConfig", {**_DECODER, "num_key_value_heads": 2}, *_IDS),
    "persimmon": ("PersimmonModel", "PersimmonConfig", {**_DECODER, "num_key_value_heads": 4}, *_IDS),
    "cohere": ("CohereModel", "CohereConfig", {**_DECODER, "num_key_value_heads": 2}, *_IDS),
    "starcoder2": ("Starcoder2Model", "Starcoder2Config", {**_DECODER, "num_key_value_heads": 2}, *_IDS),
    "speech_to_text": ("Speech2TextModel", "Speech2TextConfig", {
        **_SEQ2SEQ, "input_feat_per_channel": 16, "input_channels": 1, "conv_channels": 32, "max_source_positions": 64},
        ("input_features", "decoder_input_ids"), [(1, 20, 16), ("ids", 6)]),
    "patchtst": ("PatchTSTModel", "PatchTSTConfig", {
        "num_input_channels": 3, "context_length": 32, "patch_length": 8, "patch_stride": 8, "d_model": 32,
        "num_attention_heads": 4, "num_hidden_layers": 2, "ffn_dim": 64}, ("past_values",), [(1, 32, 3)]),
    "canine": ("CanineModel", "CanineConfig", {
        **_LAYERS, "num_hash_buckets": 64, "num_hash_functions": 2, "local_transformer_stride": 4,
        "downsampling_rate": 4}, *_IDS),
    "rwkv": ("RwkvModel", "RwkvConfig", {
        "vocab_size": 500, "hidden_size": 64, "num_hidden_layers": 2, "attention_hidden_size": 64,
        "intermediate_size": 128, "context_length": 64, "use_cache": False}, *_IDS),
    "recurrent_gemma": ("RecurrentGemmaModel", "RecurrentGemmaConfig", {
        "vocab_size": 500, "hidden_size": 64, "num_hidden_layers": 3, "num_attention_heads": 4,
        "num_key_value_heads": 1, "intermediate_size": 128, "lru_width": 64, "attention_window_size": 16,
        "use_cache": False}, *_IDS),
    "sew_d": ("SEWDModel", "SEWDConfig", {
        **_SPEECH, "squeeze_factor": 2, "max_position_embeddings": 64, "position_buckets": 16}, *_AUDIO),
    "umt5": ("UMT5Model", "UMT5Config", {
        "vocab_size": 500, "d_model": 64, "d_kv": 16, "d_ff": 128, "num_layers": 2, "num_heads": 4, "use_cache": False},
        ("input_ids", "decoder_input_ids"), [("ids", 12), ("ids", 6)]),
    "mt5": ("MT5Model", "MT5Config", {
        "vocab_size": 500, "d_model": 64, "d_kv": 16, "d_ff": 128, "num_layers": 2, "num_heads": 4, "use_cache": False},
        ("input_ids", "decoder_input_ids"), [("ids", 12), ("ids", 6)]),
    "longt5": ("LongT5Model", "LongT5Config", {
        "vocab_size": 500, "d_model": 64, "d_kv": 16, "d_ff": 128, "num_layers": 2, "num_heads": 4, "use_cache": False,
        "local_radius": 4},
        ("input_ids", "attention_mask", "decoder_input_ids"), [("ids", 12), ("mask", 12), ("ids", 6)]),
    "switch_transformers": ("SwitchTransformersModel", "SwitchTransformersConfig", {
        "vocab_size": 500, "d_model": 64, "d_kv": 16, "d_ff": 128, "num_layers": 2, "num_decoder_layers": 2,
        "num_heads": 4, "num_experts": 4, "use_cache": False},
        ("input_ids", "attention_mask", "decoder_input_ids"), [("ids", 12), ("mask", 12), ("ids", 6)]),
    "codegen": ("CodeGenModel", "CodeGenConfig", {
        "vocab_size": 500, "n_embd": 64, "n_layer": 2, "n_head": 4, "rotary_dim": 8, "n_positions": 64,
        "use_cache": False}, *_IDS),
    "xglm": ("XGLMModel", "XGLMConfig", {
        "vocab_size": 500, "d_model": 64, "num_layers": 2, "attention_heads": 4, "ffn_dim": 128,
        "max_position_embeddings": 64, "use_cache": False}, *_IDS),
    "cohere2": ("Cohere2Model", "Cohere2Config", {**_DECODER, "num_key_value_heads": 2, "sliding_window": 8}, *_IDS),
    "nemotron": ("NemotronModel", "NemotronConfig", {**_DECODER, "num_key_value_heads": 2}, *_IDS),
    "olmo2": ("Olmo2Model", "Olmo2Config", {**_DECODER, "num_key_value_heads": 2}, *_IDS),
    "rembert": ("RemBertModel", "RemBertConfig", {
        **_LAYERS, "vocab_size": 500, "input_embedding_size": 32, "output_embedding_size": 32}, *_IDS),
    "ast": ("ASTModel", "ASTConfig", {
        **_LAYERS, "num_mel_bins": 32, "max_length": 64, "patch_size": 16}, ("input_values",), [(1, 64, 32)]),
    "patchtsmixer": ("PatchTSMixerModel", "PatchTSMixerConfig", {
        "num_input_channels": 3, "context_length": 32, "patch_length": 8, "patch_stride": 8, "d_model": 16,
        "num_layers": 2}, ("past_values",), [(1, 32, 3)]),
    "jetmoe": ("JetMoeModel", "JetMoeConfig", {
        "vocab_size": 500, "hidden_size": 64, "num_hidden_layers": 2, "num_key_value_heads": 2, "kv_channels": 16,
        "intermediate_size": 128, "num_local_experts": 4, "num_experts_per_tok": 2, "max_position_embeddings": 64,
        "use_cache": False}, *_IDS),
    "mbart": ("MBartModel", "MBartConfig", {**_SEQ2SEQ}, *_IDS),
    "mobilenet_v1": ("MobileNetV1Model", "MobileNetV1Config", {"depth_multiplier": 0.25, "image_size": 64}, *_IMAGE),
    "mobilenet_v2": ("MobileNetV2Model", "MobileNetV2Config", {"depth_multiplier": 0.35, "image_size": 64}, *_IMAGE),
    "mobilevit": ("MobileViTModel", "MobileViTConfig", {
        "image_size": 64, "hidden_sizes": [32, 48, 64], "neck_hidden_sizes": [8, 16, 24, 32, 48, 64, 80]}, *_IMAGE),
    "mobilevitv2": ("MobileViTV2Model", "MobileViTV2Config", {"image_size": 64, "width_multiplier": 0.5}, *_IMAGE),
    "pvt": ("PvtModel", "PvtConfig", {
        "image_size": 64, "hidden_sizes": [16, 32, 48, 64], "depths": [1, 1, 1, 1],
        "num_attention_heads": [1, 1, 2, 4]}, *_IMAGE),
    "pvt_v2": ("PvtV2Model", "PvtV2Config", {
        "hidden_sizes": [16, 32, 48, 64], "depths": [1, 1, 1, 1], "num_attention_heads": [1, 1, 2, 4]}, *_IMAGE),
    "swinv2": ("Swinv2Model", "Swinv2Config", {
        "image_size": 64, "embed_dim": 16, "depths": [1, 1], "num_heads": [1, 2], "window_size": 4}, *_IMAGE),
    "glpn": ("GLPNModel", "GLPNConfig", {
        "hidden_sizes": [16, 32, 48, 64], "depths": [1, 1, 1, 1], "num_attention_heads": [1, 1, 2, 4],
        "decoder_hidden_size": 16}, *_IMAGE),
    "vitdet": ("VitDetModel", "VitDetConfig", {
        **_LAYERS, "image_size": 64, "pretrain_image_size": 64, "patch_size": 16, "window_size": 2,
        "window_block_indices": [0], "use_relative_position_embeddings": True}, *_IMAGE),
    "dinov2_with_registers": ("Dinov2WithRegistersModel", "Dinov2WithRegistersConfig", {
        **_LAYERS, "image_size": 32, "patch_size": 8}, ("pixel_values",), [(1, 3, 32, 32)]),
    "convnextv2": ("ConvNextV2Model", "ConvNextV2Config", {
        "hidden_sizes": [16, 32, 64, 128], "depths": [1, 1, 1, 1]}, *_IMAGE),
    "data2vec_vision": ("Data2VecVisionModel", "Data2VecVisionConfig", {
        **_LAYERS, "image_size": 32, "patch_size": 8, "use_relative_position_bias": True},
        ("pixel_values",), [(1, 3, 32, 32)]),
    "swiftformer": ("SwiftFormerModel", "SwiftFormerConfig", {
        "depths": [1, 1, 1, 1], "embed_dims": [16, 32, 48, 64]}, *_IMAGE),
    "textnet": ("TextNetModel", "TextNetConfig", {}, *_IMAGE),
    "sew": ("SEWModel", "SEWConfig", {**_SPEECH, "squeeze_factor": 2}, *_AUDIO),
    "detr": ("DetrModel", "DetrConfig", _DETR, *_IMAGE),
    "conditional_detr": ("ConditionalDetrModel", "ConditionalDetrConfig", _DETR, *_IMAGE),
    "table_transformer": ("TableTransformerModel", "TableTransformerConfig", _DETR, *_IMAGE),
    "rt_detr": ("RTDetrModel", "RTDetrConfig", {
        "backbone_config": {**_RESNET_BACKBONE["backbone_config"], "model_type": "rt_detr_resnet"},
        "encoder_hidden_dim": 32, "d_model": 32, "decoder_layers": 1, "encoder_layers": 1, "num_queries": 10,
        "encoder_in_channels": [32, 48, 64], "decoder_in_channels": [32, 32, 32], "encoder_ffn_dim": 64,
        "decoder_ffn_dim": 64, "num_feature_levels": 3, "decoder_n_points": 2, "anchor_image_size": None}, *_IMAGE),
    "owlvit_vision": ("OwlViTVisionModel", "OwlViTVisionConfig", {**_LAYERS, "image_size": 32, "patch_size": 8},
                      ("pixel_values",), [(1, 3, 32, 32)]),
    "wav2vec2_bert": ("Wav2Vec2BertModel", "Wav2Vec2BertConfig", {
        "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 64,
        "feature_projection_input_dim": 16, "conv_depthwise_kernel_size": 3}, ("input_features",), [(1, 20, 16)]),
    **{name: (f"{prefix}Model", f"{prefix}Config", {**_DECODER, "num_key_value_heads": 2, "head_dim": 16, **extra},
              *_IDS)
       for name, prefix, extra in (
           ("granite", "Granite", {}), ("glm", "Glm", {"pad_token_id": 0}), ("glm4", "Glm4", {"pad_token_id": 0}),
           ("helium", "Helium", {}), ("exaone4", "Exaone4", {}), ("olmo3", "Olmo3", {}),
           ("smollm3", "SmolLM3", {"pad_token_id": 0}), ("bitnet", "BitNet", {}),
           ("diffllama", "DiffLlama", {}), ("ernie4_5", "Ernie4_5", {}), ("arcee", "Arcee", {}),
           ("seed_oss", "SeedOss", {}), ("apertus", "Apertus", {}), ("hunyuan_v1_dense", "HunYuanDenseV1", {}),
           ("doge", "Doge", {}), ("lfm2", "Lfm2", {"full_attn_idxs": [1]}))},
    **{name: (f"{prefix}Model", f"{prefix}Config", {"vocab_size": 500, **_LAYERS, **extra}, *_IDS)
       for name, prefix, extra in (
           ("big_bird", "BigBird", {"attention_type": "original_full"}), ("ernie", "Ernie", {}),
           ("megatron_bert", "MegatronBert", {}), ("data2vec_text", "Data2VecText", {}),
           ("fnet", "FNet", {"num_attention_heads": 1}))},
    **{name: (f"{prefix}Model", f"{prefix}Config", _SEQ2SEQ, ("input_ids", "decoder_input_ids"),
              [("ids", 12), ("ids", 6)])
       for name, prefix in (("m2m_100", "M2M100"), ("plbart", "PLBart"), ("blenderbot_small", "BlenderbotSmall"))},
    "autoformer": ("AutoformerModel", "AutoformerConfig", {  # autocorrelation: rfft, conj, product, irfft
        "prediction_length": 4, "context_length": 8, "lags_sequence": [1, 2], "num_time_features": 1, "d_model": 16,
        "encoder_layers": 1, "decoder_layers": 1, "encoder_attention_heads": 2, "decoder_attention_heads": 2,
        "encoder_ffn_dim": 32, "decoder_ffn_dim": 32},
        ("past_values", "past_time_features", "past_observed_mask", "future_time_features"),
        [(1, 10), (1, 10, 1), ("ones", (1, 10)), (1, 4, 1)], "encoder_last_hidden_state"),
    **{name: (f"{prefix}Model", f"{prefix}Config", {"vocab_size": 500, **_LAYERS, "max_position_embeddings": 64,
                                                    **extra}, *_IDS)
       for name, prefix, extra in (
           ("camembert", "Camembert", {}), ("xlm_roberta", "XLMRoberta", {}), ("deberta", "Deberta", {}),
           ("luke", "Luke", {"entity_vocab_size": 10, "entity_emb_size": 16}), ("nomic_bert", "NomicBert", {}),
           ("mra", "Mra", {"block_per_row": 2}), ("yoso", "Yoso", {}), ("splinter", "Splinter", {}),
           ("ibert", "IBert", {}), ("roc_bert", "RoCBert", {}), ("roberta_prelayernorm", "RobertaPreLayerNorm", {}),
           ("xmod", "Xmod", {"languages": ["en_XX"], "default_language": "en_XX"}),
           ("modernbert", "ModernBert", {"global_attn_every_n_layers": 2, "local_attention": 4, "pad_token_id": 0,
                                         "bos_token_id": 1, "eos_token_id": 2, "cls_token_id": 1,
                                         "sep_token_id": 2}))},
    **{name: (f"{prefix}Model", f"{prefix}Config", {**_DECODER, "num_key_value_heads": 2, **extra}, *_IDS)
       for name, prefix, extra in (
           ("eurobert", "EuroBert", {"pad_token_id": 0, "bos_token_id": 1, "eos_token_id": 2}),
           ("vaultgemma", "VaultGemma", {"head_dim": 16}), ("ministral", "Ministral", {"head_dim": 16}),
           ("glm4_moe", "Glm4Moe", {"n_routed_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 32,
                                    "first_k_dense_replace": 1, "n_group": 1, "topk_group": 1, "head_dim": 16,
                                    "pad_token_id": 0}),
           ("hunyuan_v1_moe", "HunYuanMoEV1", {"num_experts": 4, "moe_topk": 2, "head_dim": 16}),
           ("ernie4_5_moe", "Ernie4_5_Moe", {"moe_num_experts": 4, "moe_k": 2, "moe_intermediate_size": 32,
                                             "head_dim": 16}),
           ("lfm2_moe", "Lfm2Moe", {"num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 32,
                                    "num_dense_layers": 1, "layer_types": ["full_attention", "conv"]}),
           ("bamba", "Bamba", {"mamba_n_heads": 4, "mamba_d_head": 32, "mamba_d_state": 8, "mamba_n_groups": 1,
                               "mamba_chunk_size": 4, "attn_layer_indices": [1]}),
           ("jamba", "Jamba", {"num_experts": 4, "num_experts_per_tok": 2, "mamba_d_state": 8, "mamba_expand": 2,
                               "attn_layer_offset": 1, "attn_layer_period": 2, "expert_layer_offset": 1,
                               "expert_layer_period": 2, "use_mamba_kernels": False}),
           ("qwen3_next", "Qwen3Next", {"head_dim": 16, "linear_num_key_heads": 2, "linear_num_value_heads": 4,
                                        "linear_key_head_dim": 16, "linear_value_head_dim": 16, "num_experts": 4,
                                        "num_experts_per_tok": 2, "moe_intermediate_size": 32,
                                        "shared_expert_intermediate_size": 32,
                                        "layer_types": ["linear_attention", "full_attention"]}))},
    "mpt": ("MptModel", "MptConfig", {
        "vocab_size": 500, "d_model": 64, "n_layers": 2, "n_heads": 4, "max_seq_len": 64, "use_cache": False}, *_IDS),
    "openai_gpt": ("OpenAIGPTModel", "OpenAIGPTConfig", {
        "vocab_size": 500, "n_embd": 64, "n_layer": 2, "n_head": 4, "n_positions": 64}, *_IDS),
    **{name: (f"{prefix}Model", f"{prefix}Config", {
        "vocab_size": 500, "emb_dim": 64, "n_layers": 2, "n_heads": 4, "max_position_embeddings": 64}, *_IDS)
       for name, prefix in (("xlm", "XLM"), ("flaubert", "Flaubert"))},
    **{name: (f"{prefix}Model", f"{prefix}Config", {**_SEQ2SEQ, **extra}, ("input_ids", "decoder_input_ids"),
              [("ids", 12), ("ids", 6)])
       for name, prefix, extra in (
           ("pegasus_x", "PegasusX", {"block_size": 4, "num_global_tokens": 2}), ("mvp", "Mvp", {}),
           ("bigbird_pegasus", "BigBirdPegasus", {"attention_type": "original_full"}))},
    "prophetnet": ("ProphetNetModel", "ProphetNetConfig", {
        "vocab_size": 500, "hidden_size": 64, "encoder_ffn_dim": 128, "decoder_ffn_dim": 128, "num_encoder_layers": 2,
        "num_decoder_layers": 2, "num_encoder_attention_heads": 4, "num_decoder_attention_heads": 4,
        "max_position_embeddings": 64, "ngram": 2, "use_cache": False}, ("input_ids", "decoder_input_ids"),
        [("ids", 12), ("ids", 6)]),
    "bit": ("BitModel", "BitConfig", {
        "embedding_size": 16, "hidden_sizes": [16, 32, 48, 64], "depths": [1, 1, 1, 1], "num_groups": 8}, *_IMAGE),
    "efficientnet": ("EfficientNetModel", "EfficientNetConfig", {  # B0
        "width_coefficient": 1.0, "depth_coefficient": 1.0, "image_size": 64, "hidden_dim": 1280}, *_IMAGE),
    "dinov3_convnext": ("DINOv3ConvNextModel", "DINOv3ConvNextConfig", {
        "hidden_sizes": [16, 32, 48, 64], "depths": [1, 1, 1, 1]}, *_IMAGE),
    **{name: (f"{prefix}Model", f"{prefix}Config", {**_LAYERS, "image_size": 32, "patch_size": 8, **extra},
              ("pixel_values",), [(1, 3, 32, 32)])
       for name, prefix, extra in (
           ("siglip_vision", "SiglipVision", {}), ("dinov3_vit", "DINOv3ViT", {}),
           ("aimv2_vision", "Aimv2Vision", {}), ("mlcd_vision", "MLCDVision", {}),
           ("pixtral", "PixtralVision", {"head_dim": 16}))},
    **{name: (f"{prefix}Model", f"{prefix}Config", {**_LAYERS, "image_size": 32, "num_frames": 4, **extra},
              ("pixel_values",), [(1, 4, 3, 32, 32)])
       for name, prefix, extra in (
           ("videomae", "VideoMAE", {"patch_size": 8, "tubelet_size": 2}),
           ("timesformer", "Timesformer", {"patch_size": 8}), ("vivit", "Vivit", {"tubelet_size": [2, 8, 8]}))},
    "unispeech_sat": ("UniSpeechSatModel", "UniSpeechSatConfig", _SPEECH, *_AUDIO),
    "dac": ("DacModel", "DacConfig", {  # a neural audio codec: its decoded audio compared
        "encoder_hidden_size": 8, "downsampling_ratios": [2, 4], "decoder_hidden_size": 16,
        "upsampling_ratios": [4, 2], "hidden_size": 32, "n_codebooks": 2, "codebook_size": 32, "codebook_dim": 4},
        ("input_values",), [(1, 1, 400)], "audio_values"),
    "data2vec_audio": ("Data2VecAudioModel", "Data2VecAudioConfig", _SPEECH, *_AUDIO),
    "unispeech": ("UniSpeechModel", "UniSpeechConfig", _SPEECH, *_AUDIO),
    "vit_msn": ("ViTMSNModel", "ViTMSNConfig", {**_LAYERS, "image_size": 64, "patch_size": 16}, *_IMAGE),
    "ijepa": ("IJepaModel", "IJepaConfig", {**_LAYERS, "image_size": 64, "patch_size": 16}, *_IMAGE),
    "hiera": ("HieraModel", "HieraConfig", {"embed_dim": 16, "num_heads": [1, 2, 4, 8], "depths": [1, 1, 1, 1],
                                            "image_size": [64, 64], "query_stride": [2, 2], "masked_unit_size": [8, 8]},
              *_IMAGE),
}


def _padding_mask(seq: int):
    """An attention mask of one sequence whose last two tokens are padding (int64 ones and zeros)."""
    return (np.arange(seq) < seq - 2).astype(np.int64)[None]


def _unit_scales(model) -> None:
    """BatchNorm scales drawn in (0.5, 1.5), as trained nets have them: transformers initialises some (MobileViT's)
    near zero, which leaves every output nearly the same whatever the input."""
    import torch

    scales = np.random.default_rng(1)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, torch.nn.modules.batchnorm._BatchNorm) and m.weight is not None:
                m.weight.copy_(torch.from_numpy(scales.uniform(0.5, 1.5, tuple(m.weight.shape)).astype(np.float32)))


def _from_config(name: str):
    """A CONFIGS entry as a source: the model built from its config, its last hidden state compared."""
    def build(_workdir):
        import transformers

        model_class, config_class, config, keys, inputs, *field = CONFIGS[name]
        _seed()
        model = getattr(transformers, model_class)(getattr(transformers, config_class)(**config)).eval()
        feeds = [_ids(1, spec[1], 500) if spec[0] == "ids" else _padding_mask(spec[1]) if spec[0] == "mask" else
                 np.ones(spec[1], np.float32) if spec[0] == "ones" else
                 np.random.default_rng(4).standard_normal(spec).astype(np.float32) for spec in inputs]
        wrapped = _Outputs.wrap(model, keys, field[0] if field else "last_hidden_state")
        if len(feeds) == 1 and feeds[0].dtype == np.float32:  # random BatchNorm statistics make outputs constant
            from tests.models.timm_zoo import calibrate_batch_norms

            _unit_scales(model)
            calibrate_batch_norms(wrapped, feeds[0].shape[1:])
        return wrapped, feeds

    return build


# -- timm -----------------------------------------------------------------------------------------------
#: one or two small members of each timm family (by the module that defines them)
TIMM_MODELS = (
    "resnet18", "resnet50d", "resnext26ts", "seresnext26d_32x4d", "res2net50_14w_8s", "resnest14d", "regnetx_002",
    "regnety_002", "densenet121", "dla34", "dpn48b", "hrnet_w18_small", "cspresnet50", "cspdarknet53",
    "vovnet39a", "ese_vovnet19b_dw", "efficientnet_b0", "efficientnet_lite0", "tf_efficientnetv2_b0",
    "mobilenetv2_050", "mobilenetv3_small_050", "mobilenetv4_conv_small", "ghostnet_100", "rexnet_100",
    "mnasnet_050", "fbnetc_100", "lcnet_050", "hardcorenas_a", "tinynet_e", "inception_v3", "xception41",
    "vgg11", "repvgg_a0", "convnext_atto", "convnextv2_atto", "convmixer_768_32", "nfnet_f0", "nf_resnet26",
    "dm_nfnet_f0", "vit_tiny_patch16_224", "deit_tiny_patch16_224", "beit_base_patch16_224",
    "swin_tiny_patch4_window7_224", "swinv2_cr_tiny_ns_224", "cait_xxs24_224", "coat_lite_tiny", "crossvit_tiny_240",
    "levit_128s", "mixer_s32_224", "resmlp_12_224", "gmlp_ti16_224", "poolformer_s12", "pvt_v2_b0",
    "mobilevit_xxs", "mobilevitv2_050", "edgenext_xx_small", "efficientformer_l1", "efficientformerv2_s0",
    "fastvit_t8", "tiny_vit_5m_224", "maxvit_nano_rw_256", "coatnet_nano_rw_224", "gcvit_xxtiny",
    "twins_svt_small", "visformer_tiny", "xcit_nano_12_p16_224", "sequencer2d_s", "davit_tiny", "inception_next_atto",
    "ghostnetv2_100", "hgnet_tiny", "repghostnet_050", "rdnet_tiny", "mambaout_femto", "starnet_s1",
    "selecsls42b", "tresnet_m", "skresnet18", "gernet_s", "halonet26t", "botnet26t_256", "lambda_resnet26t",
    "pit_ti_224", "convit_tiny", "nest_tiny", "hiera_tiny_224", "eva02_tiny_patch14_224", "efficientvit_b0",
    "efficientvit_m0", "repvit_m1", "hgnetv2_b0", "focalnet_tiny_srf", "mvitv2_tiny", "regnetz_b16",
    "legacy_seresnet18", "resnetv2_50x1_bit", "fasternet_t0", "shvit_s1", "mixnet_s", "mobileone_s0", "resnetblur18",
    "vit_relpos_small_patch16_224", "inception_v4", "volo_d1_224", "tnt_s_patch16_224", "test_vit_relpos",
    "test_efficientnet_evos", "nf_regnet_b0", "vitamin_small_224", "cs3darknet_s", "cpubone_t0", "csatv2",
    "cspnext_s", "efficientvim_m1", "hieradet_small", "iformer_s", "inception_resnet_v2", "lcnetv2_small",
    "lowformer_b0", "nextvit_small", "swiftformer_xs", "swinv2_tiny_window8_256", "vit_base_r26_s32_224",
    "legacy_xception", "vit_little_patch16_reg4_gap_256", "deit3_small_patch16_224", "resnet50_gn", "ecaresnet26t",
    "gcresnet33ts", "sebotnet33ts_256", "eca_halonext26ts", "efficientnet_cc_b0_4e", "tf_mixnet_s",
    "tf_efficientnet_b0", "poolformerv2_s12", "convformer_s18", "caformer_s18", "ghostnetv3_050", "resnet51q",
    "regnetz_b16_evos", "vit_medium_patch16_gap_256", "vit_small_patch14_dinov2", "vit_pe_core_small_patch16_384",
    "fastvit_mci0", "mobilenetv4_hybrid_medium", "samvit_base_patch16_224", "naflexvit_base_patch16_gap",
    "qwen3_vit_88m", "mobilenetv5_base", "gemma4_vit_167m", "efficientvit_l1", "bat_resnext26ts",
)


def timm_model(name: str) -> Source:
    def build(_workdir):
        from tests.models.timm_zoo import create

        model, x = create(name)
        return model, [x]

    return Source(f"timm_{name}", "timm", build)


def timm_sources() -> list[Source]:
    return [timm_model(n) for n in TIMM_MODELS]


# -- files other tools wrote ------------------------------------------------------------------------------
#: keras.applications architectures also read as TensorFlow writes them: `model.export` (a SavedModel) and
#: TensorFlow's TFLite converter on that SavedModel (float32)
EXPORTED_KERAS = ("MobileNetV2", "MobileNetV3Small", "EfficientNetB0", "ResNet50", "InceptionV3", "DenseNet121",
                  "ConvNeXtTiny", "NASNetMobile", "Xception", "EfficientNetV2B0")
#: timm architectures also read as PyTorch writes them: torch.onnx.export (its TorchScript-based exporter, which
#: made most published ONNX models, opset 17), its torch.export-based exporter (the default now) and torch.jit.trace +
#: torch.jit.save
EXPORTED_TIMM = ("resnet18", "efficientnet_b0", "mobilenetv3_small_050", "convnext_atto", "vit_tiny_patch16_224",
                 "swin_tiny_patch4_window7_224", "regnety_002", "densenet121")


def tensorflow_file(name: str, kind: str) -> Source:
    """keras.applications `name` as a SavedModel (`kind` "savedmodel") or a TFLite flatbuffer ("tflite")."""
    def build(workdir: Path):
        import keras
        import tensorflow as tf

        path, feeds = keras_application(name).build(workdir)
        saved = workdir / f"{name}_saved"
        keras.models.load_model(path).export(str(saved), verbose=False)
        if kind == "savedmodel":
            return saved, feeds
        flat = workdir / f"{name}.tflite"
        flat.write_bytes(tf.lite.TFLiteConverter.from_saved_model(str(saved)).convert())
        return flat, feeds

    return Source(f"{kind}_{name}", "written", build)


#: diffusers models also read as PyTorch writes them (how Stable Diffusion's UNet and VAE ship as ONNX)
EXPORTED_DIFFUSERS = ("unet2d_condition", "autoencoder_kl", "dit", "sd3")


def torch_file(name: str, kind: str, family: str = "timm") -> Source:
    """timm or diffusers model `name` as an ONNX file (`kind` "onnx": the TorchScript-based exporter; "onnx_dynamo":
    torch.export's, torch.onnx.export's default since PyTorch 2.9) or a TorchScript archive ("torchscript")."""
    def build(workdir: Path):
        import torch

        if family == "timm":
            from tests.models.timm_zoo import create

            model, x = create(name)
            feeds, inputs, outputs = [x], ["pixels"], ["logits"]
        else:
            from tests.matrix import diffusers_sources

            model, feeds = diffusers_sources.build(name)
            inputs, outputs = list(diffusers_sources.MODELS[name][3]), ["out"]
        example = tuple(torch.from_numpy(f) for f in feeds)
        if kind.startswith("onnx"):
            path = workdir / f"{name}.onnx"
            options = {"dynamo": True, "verbose": False} if kind == "onnx_dynamo" else \
                {"dynamo": False, "opset_version": 17}
            torch.onnx.export(model, example, str(path), input_names=inputs, output_names=outputs, **options)
        else:
            path = workdir / f"{name}.pt"
            with torch.no_grad():
                torch.jit.save(torch.jit.trace(model, example), str(path))
        return path, feeds

    prefix = "" if family == "timm" else f"{family}_"
    return Source(f"{kind}_{prefix}{name}", "written", build)


def written_sources() -> list[Source]:
    return [tensorflow_file(n, k) for k in ("savedmodel", "tflite") for n in EXPORTED_KERAS] + \
        [torch_file(n, k) for k in ("onnx", "onnx_dynamo", "torchscript") for n in EXPORTED_TIMM] + \
        [torch_file(n, k, "diffusers") for k in ("onnx", "onnx_dynamo", "torchscript") for n in EXPORTED_DIFFUSERS]


def keras_hub_sources() -> list[Source]:
    from tests.matrix import keras_hub_sources as hub

    def source(name):
        return Source(f"keras_hub_{name}", "keras_hub", lambda workdir: hub.build(name, workdir))

    return [source(name) for name in hub.MODELS]


def diffusers_sources() -> list[Source]:
    from tests.matrix import diffusers_sources as diffusers

    def source(name):
        return Source(f"diffusers_{name}", "diffusers", lambda _workdir: diffusers.build(name))

    return [source(name) for name in diffusers.MODELS]


FAMILIES = {"keras": keras_sources, "torch": torch_zoo_sources, "transformers": transformers_sources,
            "timm": timm_sources, "keras_hub": keras_hub_sources, "diffusers": diffusers_sources,
            "written": written_sources}


def all_sources(families=None) -> list[Source]:
    return [s for f, make in FAMILIES.items() if families is None or f in families for s in make()]
