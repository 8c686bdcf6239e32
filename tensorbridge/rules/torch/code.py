"""PyTorch model code -> IR ops: `torch.nn` layer classes, `torch` / `torch.nn.functional` functions and
tensor methods, as the transpiler reads them (see rules/code.py). Weights: each layer's parameters and
buffers by their torch names -> the IR op's weight roles (IR Conv weights are OIHW, Dense weights (in, out)).
"""

from __future__ import annotations

import ast
from functools import partial

import numpy as np

from tensorbridge.ops.attention_layer import PROJECTIONS
from tensorbridge.rules.code import (
    COMPARISONS,
    DTYPE_NAMES,
    NOT_LITERAL,
    CodeTable,
    OpCall,
    Refused,
    Renamed,
    Signature,
    SourceSkeleton,
    WeightSource,
    holds_number,
    known,
    only,
    pairs,
)
from tensorbridge.rules.einops_code import einops_layers
from tensorbridge.rules.recurrent import CODE_MODE, reorder
from tensorbridge.rules.torch.base import R

C = R.code = CodeTable("torch")
NN = "torch.nn."
F = "torch.nn.functional."


# -- layers ------------------------------------------------------------------------------------------
def _conv(rank, transposed=False):
    def read(a):
        if transposed:
            only(a, padding_mode="zeros")
        attrs = {"rank": rank, "in_channels": a["in_channels"], "filters": a["out_channels"],
                 "kernel_shape": a["kernel_size"], "strides": a["stride"], "pads": a["padding"],
                 "dilations": a["dilation"], "group": a["groups"], "bias": a["bias"], "layout": "channels_first"}
        if transposed:
            attrs["output_padding"] = a["output_padding"]
        elif known(a["padding_mode"]) != "zeros":  # padded by reflection, replication or wrapping around
            mode = known(a["padding_mode"])
            if mode not in PAD_MODES:
                raise Refused(f"padding_mode={ast.unparse(a['padding_mode'])}")
            attrs["padding_mode"] = PAD_MODES[mode]
        return OpCall("ConvTranspose" if transposed else "Conv", attrs=attrs)
    return read


#: convolution weights as they are (ConvTranspose keeps torch's (in, out/group, k...) order in the IR, as ONNX does)
CONV_WEIGHTS = Renamed(weight="W", bias="B")
NORM_WEIGHTS = Renamed(running_mean="mean", running_var="var", weight="scale", bias="B")
EMBEDDING_WEIGHTS = Renamed(weight="W")


CONV_ARGS = "in_channels out_channels kernel_size stride=1 padding=0 dilation=1 groups=1 bias=True " \
            "padding_mode='zeros'"
TCONV_ARGS = "in_channels out_channels kernel_size stride=1 padding=0 output_padding=0 groups=1 bias=True " \
             "dilation=1 padding_mode='zeros'"
for _n in (1, 2, 3):
    C.layer(f"{NN}Conv{_n}d", "Conv", CONV_ARGS, read=_conv(_n), to_ir=CONV_WEIGHTS.to_ir)
    C.layer(f"{NN}ConvTranspose{_n}d", "ConvTranspose", TCONV_ARGS, read=_conv(_n, True),
            to_ir=CONV_WEIGHTS.to_ir)


C.layer(f"{NN}Linear", "Dense", "in_features out_features bias=True",
        read=lambda a: OpCall("Dense", attrs={"in_features": a["in_features"], "units": a["out_features"],
                                              "bias": a["bias"]}),
        to_ir=lambda w, attrs: {"W": np.ascontiguousarray(w["weight"].T), **({"B": w["bias"]} if "bias" in w else {})})


# transformers' Conv1D (GPT-2's projections): a dense layer whose weight is kept as (in, out)
C.layer("transformers.pytorch_utils.Conv1D", "Dense", "nf nx",
        read=lambda a: OpCall("Dense", attrs={"in_features": a["nx"], "units": a["nf"], "bias": True}),
        to_ir=lambda w, attrs: {"W": w["weight"], "B": w["bias"]}, call="x")


def _batch_norm(a):
    only(a, track_running_stats=True)
    momentum = known(a["momentum"])
    if momentum is None:
        raise Refused("momentum=None (a cumulative average) has no equivalent")
    factor = 1 - momentum if momentum is not NOT_LITERAL else ast.BinOp(ast.Constant(1), ast.Sub(), a["momentum"])
    if isinstance(factor, float):
        factor = float(f"{factor:.12g}")
    return OpCall("BatchNormalization", attrs={"num_features": a["num_features"], "epsilon": a["eps"],
                                               "momentum": factor, "affine": a["affine"], "axis": 1})


for _n in (1, 2, 3):
    C.layer(f"{NN}BatchNorm{_n}d", "BatchNormalization", "num_features eps=1e-05 momentum=0.1 affine=True "
            "track_running_stats=True", read=_batch_norm, to_ir=NORM_WEIGHTS.to_ir)


def _layer_norm(a):
    shape = known(a["normalized_shape"])
    if isinstance(shape, (list, tuple)) and len(shape) > 1:
        axes = tuple(range(-len(shape), 0))
    elif isinstance(a["normalized_shape"], (ast.List, ast.Tuple)) and len(a["normalized_shape"].elts) > 1:
        axes = tuple(range(-len(a["normalized_shape"].elts), 0))
    else:
        # an int, a one-element list, or a variable: read as one trailing dim (the `nn.LayerNorm(dim)` of model
        # code); `port_weights` checks the weight shapes, so a variable that holds a longer shape is caught there
        axes = -1
    return OpCall("LayerNormalization", attrs={"axis": axes, "epsilon": a["eps"], "affine": a["elementwise_affine"],
                                               "bias": a["bias"], "normalized_shape": a["normalized_shape"]})


C.layer(f"{NN}LayerNorm", "LayerNormalization", "normalized_shape eps=1e-05 elementwise_affine=True bias=True",
        read=_layer_norm, to_ir=NORM_WEIGHTS.to_ir)
# timm's LayerNorm (its ViT blocks' default norm): nn.LayerNorm with eps 1e-6 and `affine` for elementwise_affine;
# its "fast norm" path differs only under mixed precision (AMP's autocast, apex's fused kernel)
for _path in ("timm.layers.LayerNorm", "timm.layers.norm.LayerNorm"):
    C.layer(_path, "LayerNormalization", "num_channels eps=1e-06 affine=True device=None dtype=None",
            read=lambda a: _layer_norm({"normalized_shape": a["num_channels"], "eps": a["eps"],
                                        "elementwise_affine": a["affine"], "bias": True}), to_ir=NORM_WEIGHTS.to_ir,
            call="x")
C.layer(f"{NN}GroupNorm", "GroupNormalization", "num_groups num_channels eps=1e-05 affine=True",
        read=lambda a: OpCall("GroupNormalization", attrs={"num_groups": a["num_groups"], "epsilon": a["eps"],
                                                            "affine": a["affine"], "axis": 1,
                                                            "num_channels": a["num_channels"]}),
        to_ir=NORM_WEIGHTS.to_ir)


def _instance_norm(a):
    """An instance norm is a group norm of one channel per group (without running statistics: with them, inference
    normalises by those instead)."""
    only(a, track_running_stats=False)
    return OpCall("GroupNormalization", attrs={"num_groups": a["num_features"], "epsilon": a["eps"],
                                               "affine": a["affine"], "axis": 1, "num_channels": a["num_features"]})


for _n in (1, 2, 3):
    C.layer(f"{NN}InstanceNorm{_n}d", "GroupNormalization", "num_features eps=1e-05 momentum=0.1 affine=False "
            "track_running_stats=False", read=_instance_norm, to_ir=NORM_WEIGHTS.to_ir)


def _embedding(a):
    only(a, max_norm=None, scale_grad_by_freq=False, sparse=False)
    return OpCall("Embedding", attrs={"num_embeddings": a["num_embeddings"], "embedding_dim": a["embedding_dim"]})


C.layer(f"{NN}Embedding", "Embedding", "num_embeddings embedding_dim padding_idx=None max_norm=None "
        "norm_type=2.0 scale_grad_by_freq=False sparse=False", read=_embedding,
        to_ir=EMBEDDING_WEIGHTS.to_ir)


def _embedding_bag(a):
    only(a, max_norm=None, scale_grad_by_freq=False, sparse=False, _weight=None, include_last_offset=False,
         padding_idx=None)
    if known(a["mode"]) not in ("mean", "sum", "max", NOT_LITERAL):  # a variable: the helper reads it
        raise Refused(f"mode={known(a['mode'])!r}")
    return OpCall("EmbeddingBag", attrs={"num_embeddings": a["num_embeddings"], "embedding_dim": a["embedding_dim"],
                                         "mode": a["mode"]})


C.layer(f"{NN}EmbeddingBag", "EmbeddingBag", "num_embeddings embedding_dim max_norm=None norm_type=2.0 "
        "scale_grad_by_freq=False mode='mean' sparse=False _weight=None include_last_offset=False padding_idx=None",
        read=_embedding_bag, to_ir=EMBEDDING_WEIGHTS.to_ir, call="input offsets=None per_sample_weights=None")


def _pretrained_embedding(a):
    """An embedding starting from the given table; a frozen one (the default) stays as it is in training."""
    only(a, max_norm=None, scale_grad_by_freq=False, sparse=False)
    freeze = known(a["freeze"])
    if not isinstance(freeze, bool):
        raise Refused("freeze given by a variable")
    return OpCall("Embedding", attrs={"initial": a["embeddings"], "trainable": not freeze})


C.layer(f"{NN}Embedding.from_pretrained", "Embedding", "embeddings freeze=True padding_idx=None max_norm=None "
        "norm_type=2.0 scale_grad_by_freq=False sparse=False", read=_pretrained_embedding,
        to_ir=EMBEDDING_WEIGHTS.to_ir)
def _recurrent(op, cell=False):
    """nn.LSTM / nn.GRU / nn.RNN, or with `cell` nn.LSTMCell / ... (the code op `<op>Cell`: one step, called on
    (input, state))."""
    def read(a):
        only(a, **({"proj_size": 0} if op == "LSTM" and not cell else {}))
        one = {"num_layers": 1, "batch_first": False, "dropout": 0.0, "bidirectional": False}
        attrs = {"input_size": a["input_size"], "hidden_size": a["hidden_size"], "bias": a["bias"],
                 **({k: a[k] for k in ("num_layers", "batch_first", "dropout", "bidirectional")} if not cell else one)}
        if op == "RNN":
            name = known(a["nonlinearity"])  # a variable holds one of the two names (PyTorch refuses others)
            attrs["activation"] = a["nonlinearity"] if name is NOT_LITERAL else name
        return OpCall(f"{op}Cell" if cell else op, attrs=attrs)
    return read


def _recurrent_to_ir(op):
    """nn.LSTM/GRU/RNN parameters (weight_ih_l0, ..._reverse; cuDNN gate order) -> W{l}, R{l}, B{l}."""
    mode = CODE_MODE[op]

    def to_ir(w, attrs):
        out, layer = {}, 0
        while f"weight_ih_l{layer}" in w:
            suffixes = [f"_l{layer}", f"_l{layer}_reverse"][:2 if f"weight_ih_l{layer}_reverse" in w else 1]
            hidden = w[f"weight_hh_l{layer}"].shape[1]
            stack = {name: np.stack([reorder(w[name + s], mode, hidden) for s in suffixes])
                     for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh") if name + suffixes[0] in w}
            out[f"W{layer}"], out[f"R{layer}"] = stack["weight_ih"], stack["weight_hh"]
            if "bias_ih" in stack:
                out[f"B{layer}"] = np.concatenate([stack["bias_ih"], stack["bias_hh"]], axis=1)
            layer += 1
        return out
    return to_ir


def _attention(a):
    only(a, add_bias_kv=False, add_zero_attn=False)
    return OpCall("MultiHeadAttention", attrs={
        "embed_dim": a["embed_dim"], "num_heads": a["num_heads"], "dropout": a["dropout"], "bias": a["bias"],
        "kdim": a["kdim"], "vdim": a["vdim"], "batch_first": a["batch_first"]})


def _attention_to_ir(w, attrs):
    """nn.MultiheadAttention's packed (or, with kdim / vdim, separate) projections -> the IR's [in, out] weights."""
    packed = "in_proj_weight" in w
    weights = np.split(w["in_proj_weight"], 3) if packed else [w[f"{p}_proj_weight"] for p in "qkv"]
    out = {f"{role}_weight": np.ascontiguousarray(m.T) for role, m in zip(PROJECTIONS, weights)}
    out["output_weight"] = np.ascontiguousarray(w["out_proj.weight"].T)
    if "in_proj_bias" in w:
        out.update({f"{role}_bias": b for role, b in zip(PROJECTIONS, np.split(w["in_proj_bias"], 3))})
        out["output_bias"] = w["out_proj.bias"]
    return out


C.layer(f"{NN}MultiheadAttention", "MultiHeadAttention", "embed_dim num_heads dropout=0.0 bias=True add_bias_kv=False "
        "add_zero_attn=False kdim=None vdim=None batch_first=False", read=_attention, to_ir=_attention_to_ir,
        call="query key value key_padding_mask=None need_weights=True attn_mask=None average_attn_weights=True "
             "is_causal=False")


def _rms_norm(a):
    only(a, elementwise_affine=True, device=None, dtype=None)
    size = a["normalized_shape"]
    if isinstance(size, (ast.List, ast.Tuple)) or isinstance(known(size), (list, tuple)):
        items = size.elts if isinstance(size, (ast.List, ast.Tuple)) else known(size)
        if len(items) != 1:
            raise Refused("RMSNorm over several trailing dims")
        size = items[0]
    eps = a["eps"] if known(a["eps"]) is not None else float(np.finfo(np.float32).eps)  # torch's default for float32
    return OpCall("RMSNormalization", attrs={"features": size, "epsilon": eps})


C.layer(f"{NN}RMSNorm", "RMSNormalization", "normalized_shape eps=None elementwise_affine=True device=None dtype=None",
        read=_rms_norm, to_ir=Renamed(weight="scale").to_ir, call="x")

TRANSFORMER_OPTIONS = ("dim_feedforward", "dropout", "activation", "layer_norm_eps", "batch_first", "norm_first",
                       "bias")


def _transformer_layer(op):
    def read(a):
        if known(a["activation"]) not in ("relu", "gelu"):
            raise Refused("an activation other than 'relu' or 'gelu'")
        only(a, device=None, dtype=None)
        return OpCall(op, attrs={k: a[k] for k in ("d_model", "nhead", *TRANSFORMER_OPTIONS)})
    return read


def _transformer_layer_to_ir(w, attrs, prefix=""):
    """nn.TransformerEncoderLayer's / DecoderLayer's weights -> the IR's: the attentions' as MultiHeadAttention's
    under `self_attn.` (and the decoder's `multihead_attn.`), the feed-forward Dense weights [in, out]
    (`linear1.W`, ...), the norms' `norm1.scale`, ..."""
    out = {}
    for name in ("self_attn", "multihead_attn"):
        attention = {k[len(f"{prefix}{name}."):]: v for k, v in w.items() if k.startswith(f"{prefix}{name}.")}
        if attention:
            out.update({f"{name}.{k}": v for k, v in _attention_to_ir(attention, attrs).items()})
    for layer in ("linear1", "linear2"):
        out[f"{layer}.W"] = np.ascontiguousarray(w[f"{prefix}{layer}.weight"].T)
        if f"{prefix}{layer}.bias" in w:
            out[f"{layer}.B"] = w[f"{prefix}{layer}.bias"]
    for norm in ("norm1", "norm2", "norm3"):
        out.update(_norm_to_ir(w, f"{prefix}{norm}.", norm))
    return out


def _norm_to_ir(w, prefix, name):
    return {f"{name}.{role}": w[prefix + weight] for weight, role in (("weight", "scale"), ("bias", "B"))
            if prefix + weight in w}


TRANSFORMER_LAYER_ARGS = ("d_model nhead dim_feedforward=2048 dropout=0.1 activation='relu' layer_norm_eps=1e-05 "
                          "batch_first=False norm_first=False bias=True device=None dtype=None")
C.layer(f"{NN}TransformerEncoderLayer", "TransformerEncoderLayer", TRANSFORMER_LAYER_ARGS,
        read=_transformer_layer("TransformerEncoderLayer"), to_ir=_transformer_layer_to_ir,
        call="src src_mask=None src_key_padding_mask=None is_causal=False")
C.layer(f"{NN}TransformerDecoderLayer", "TransformerDecoderLayer", TRANSFORMER_LAYER_ARGS,
        read=_transformer_layer("TransformerDecoderLayer"), to_ir=_transformer_layer_to_ir,
        call="tgt memory tgt_mask=None memory_mask=None tgt_key_padding_mask=None memory_key_padding_mask=None "
             "tgt_is_causal=False memory_is_causal=False")


def _transformer_stack(op, layer_argument):
    def read(a):
        """`num_layers` copies of the layer (nn.TransformerEncoder/Decoder deep-copy it), then an optional
        nn.LayerNorm."""
        layer, norm = a[layer_argument], a["norm"]
        if known(norm) is not None and (norm.op != "LayerNormalization" or known(norm.attrs["affine"]) is not True):
            raise Refused("a final norm other than nn.LayerNorm(d_model)")
        return OpCall(op, attrs={**layer.attrs, "num_layers": a["num_layers"],
                                 "norm_eps": norm.attrs["epsilon"] if known(norm) is not None else None})
    return read


def _transformer_encoder_to_ir(w, attrs):
    out, layer = {}, 0
    while f"layers.{layer}.linear1.weight" in w:
        out.update({f"layers.{layer}.{k}": v for k, v in
                    _transformer_layer_to_ir(w, attrs, prefix=f"layers.{layer}.").items()})
        layer += 1
    out.update(_norm_to_ir(w, "norm.", "norm"))
    return out


C.layer(f"{NN}TransformerEncoder", "TransformerEncoder", "encoder_layer num_layers norm=None "
        "enable_nested_tensor=True mask_check=True", read=_transformer_stack("TransformerEncoder", "encoder_layer"),
        to_ir=_transformer_encoder_to_ir, layer_arguments=("encoder_layer", "norm"),
        call="src mask=None")
C.layer(f"{NN}TransformerDecoder", "TransformerDecoder", "decoder_layer num_layers norm=None",
        read=_transformer_stack("TransformerDecoder", "decoder_layer"), to_ir=_transformer_encoder_to_ir,
        layer_arguments=("decoder_layer", "norm"),
        call="tgt memory tgt_mask=None memory_mask=None tgt_key_padding_mask=None memory_key_padding_mask=None "
             "tgt_is_causal=None memory_is_causal=False")


#: nn.Transformer as what it holds, for the classes deriving from it (pytorch/examples' TransformerModel)
TRANSFORMER_INIT = """
def __init__(self, d_model=512, nhead=8, num_encoder_layers=6, num_decoder_layers=6, dim_feedforward=2048,
             dropout=0.1, activation='relu', custom_encoder=None, custom_decoder=None, layer_norm_eps=1e-05,
             batch_first=False, norm_first=False, bias=True, device=None, dtype=None):
    self.encoder = torch.nn.TransformerEncoder(torch.nn.TransformerEncoderLayer(
        d_model, nhead, dim_feedforward, dropout, activation, layer_norm_eps, batch_first, norm_first, bias),
        num_encoder_layers, torch.nn.LayerNorm(d_model, eps=layer_norm_eps, bias=bias))
    self.decoder = torch.nn.TransformerDecoder(torch.nn.TransformerDecoderLayer(
        d_model, nhead, dim_feedforward, dropout, activation, layer_norm_eps, batch_first, norm_first, bias),
        num_decoder_layers, torch.nn.LayerNorm(d_model, eps=layer_norm_eps, bias=bias))
    self.d_model = d_model
    self.nhead = nhead
    self.batch_first = batch_first
"""


RECURRENT_ARGS = "input_size hidden_size num_layers=1 {}bias=True batch_first=False dropout=0.0 bidirectional=False"
C.layer(f"{NN}LSTM", "LSTM", RECURRENT_ARGS.format("") + " proj_size=0", read=_recurrent("LSTM"),
        to_ir=_recurrent_to_ir("LSTM"), call="input hx=None")
C.layer(f"{NN}GRU", "GRU", RECURRENT_ARGS.format(""), read=_recurrent("GRU"), to_ir=_recurrent_to_ir("GRU"),
        call="input hx=None")
C.layer(f"{NN}RNN", "RNN", RECURRENT_ARGS.format("nonlinearity='tanh' "), read=_recurrent("RNN"),
        to_ir=_recurrent_to_ir("RNN"), call="input hx=None")
for _op in ("LSTM", "GRU", "RNN"):
    C.layer(f"{NN}{_op}Cell", f"{_op}Cell", "input_size hidden_size bias=True" + (
        " nonlinearity='tanh'" if _op == "RNN" else ""), read=_recurrent(_op, cell=True), call="input hx=None",
        to_ir=lambda w, attrs, op=_op: _recurrent_to_ir(op)({f"{k}_l0": v for k, v in w.items()}, attrs))
C.layer(f"{NN}Dropout", "Dropout", "p=0.5 inplace=False", read=lambda a: OpCall("Dropout", attrs={"ratio": a["p"]}))
for _n in (1, 2, 3):
    C.layer(f"{NN}Dropout{_n}d", "Dropout", "p=0.5 inplace=False",  # whole channels of (N, C, *spatial)
            read=lambda a, n=_n: OpCall("Dropout", attrs={"ratio": a["p"], "spatial": n,
                                                          "layout": "channels_first"}))
C.layer(f"{NN}Identity", "Identity", "", read=lambda a: OpCall("Identity"))


def _activation(op, **attr_args):
    def read(a):
        return OpCall(op, attrs={ir: a[arg] for ir, arg in attr_args.items()})
    return read


for _cls, _op in (("ReLU", "Relu"), ("Sigmoid", "Sigmoid"), ("Tanh", "Tanh"), ("SiLU", "SiLU"),
                  ("Hardswish", "HardSwish"), ("Hardsigmoid", "HardSigmoid"), ("ReLU6", "Relu6"), ("Mish", "Mish")):
    C.layer(NN + _cls, _op, "" if _cls in ("Sigmoid", "Tanh") else "inplace=False", read=_activation(_op),
            inplace=None if _cls in ("Sigmoid", "Tanh") else "inplace")
C.layer(f"{NN}GELU", "Gelu", "approximate='none'", read=_activation("Gelu", approximate="approximate"))
C.layer(f"{NN}LeakyReLU", "LeakyRelu", "negative_slope=0.01 inplace=False",
        read=_activation("LeakyRelu", alpha="negative_slope"), inplace="inplace")
C.layer(f"{NN}ELU", "Elu", "alpha=1.0 inplace=False", read=_activation("Elu", alpha="alpha"), inplace="inplace")
C.layer(f"{NN}PReLU", "PRelu", "num_parameters=1 init=0.25",
        read=_activation("PRelu", num_parameters="num_parameters", init="init"),
        to_ir=lambda w, attrs: {"slope": w["weight"]})
C.layer(f"{NN}Hardtanh", "Clip", "min_val=-1.0 max_val=1.0 inplace=False",
        read=_activation("Clip", min="min_val", max="max_val"), inplace="inplace")
C.layer(f"{NN}Softsign", "Softsign", "", read=_activation("Softsign"))
C.layer(f"{NN}SELU", "Selu", "inplace=False", read=_activation("Selu"), inplace="inplace")
C.layer(f"{NN}CELU", "Celu", "alpha=1.0 inplace=False", read=_activation("Celu", alpha="alpha"), inplace="inplace")
C.layer(f"{NN}Tanhshrink", "Tanhshrink", "", read=_activation("Tanhshrink"))


def _shrink(soft: bool):
    """Hard shrink keeps x where |x| > lambd; soft shrink also moves it lambd towards zero (the catalogue's Shrink
    with a bias of lambd)."""
    def read(a):
        inputs = [a["input"]] if "input" in a else []
        return OpCall("Shrink", inputs, {"lambd": a["lambd"], "bias": a["lambd"] if soft else 0.0})
    return read


C.layer(f"{NN}Hardshrink", "Shrink", "lambd=0.5", read=_shrink(soft=False))
C.layer(f"{NN}Softshrink", "Shrink", "lambd=0.5", read=_shrink(soft=True))
C.layer(f"{NN}Softmin", "Softmin", "dim=None", read=_activation("Softmin", axis="dim"))
C.layer(f"{NN}LogSigmoid", "LogSigmoid", "", read=_activation("LogSigmoid"))
C.layer(f"{NN}GLU", "Glu", "dim=-1", read=_activation("Glu", axis="dim"))
C.layer(f"{NN}PixelShuffle", "DepthToSpace", "upscale_factor",
        read=lambda a: OpCall("DepthToSpace", attrs={"blocksize": a["upscale_factor"], "mode": "CRD"}))
C.layer(f"{NN}PixelUnshuffle", "SpaceToDepth", "downscale_factor",
        read=lambda a: OpCall("SpaceToDepth", attrs={"blocksize": a["downscale_factor"], "mode": "CRD"}))
C.layer(f"{NN}ChannelShuffle", "ChannelShuffle", "groups", read=_activation("ChannelShuffle", groups="groups"))
C.layer(f"{NN}Softmax", "Softmax", "dim=None", read=_activation("Softmax", axis="dim"))
C.layer(f"{NN}LogSoftmax", "LogSoftmax", "dim=None", read=_activation("LogSoftmax", axis="dim"))


def _softplus(a):
    """Softplus; PyTorch's returns x itself where beta * x exceeds `threshold`, which equals softplus there in
    float32 from about 15: other betas and thresholds are the code op ScaledSoftplus, which chooses as PyTorch."""
    inputs = [a["input"]] if "input" in a else []
    threshold = known(a["threshold"])
    if known(a["beta"]) == 1 and isinstance(threshold, (int, float)) and threshold >= 15:
        return OpCall("Softplus", inputs)
    return OpCall("ScaledSoftplus", inputs, {"beta": a["beta"], "threshold": a["threshold"]})


C.layer(f"{NN}Softplus", "Softplus", "beta=1.0 threshold=20.0", read=_softplus)
C.layer(f"{NN}LocalResponseNorm", "LocalResponseNorm", "size alpha=0.0001 beta=0.75 k=1.0",
        read=lambda a: OpCall("LocalResponseNorm", attrs=dict(a)))
C.function(f"{F}local_response_norm", "LocalResponseNorm", "input size alpha=0.0001 beta=0.75 k=1.0",
           read=lambda a: OpCall("LocalResponseNorm", [a["input"]], {n: a[n] for n in ("size", "alpha", "beta", "k")}))
C.layer(f"{NN}Bilinear", "Bilinear", "in1_features in2_features out_features bias=True",
        read=lambda a: OpCall("Bilinear", attrs=dict(a)),
        to_ir=lambda w, attrs: {"W": w["weight"], **({"B": w["bias"]} if "bias" in w else {})}, call="input1 input2")
C.layer(f"{NN}Unflatten", "Unflatten", "dim unflattened_size",
        read=lambda a: OpCall("Unflatten", attrs={"dim": a["dim"], "sizes": a["unflattened_size"]}))
C.layer(f"{NN}Flatten", "Flatten", "start_dim=1 end_dim=-1",
        read=lambda a: only(a, start_dim=1, end_dim=-1) or OpCall("Flatten", attrs={"axis": 1}))


def _ceil_mode(op, a, stride, rank) -> dict:
    """{"ceil_mode": True} for a max pool counting a last window that starts inside the input but ends beyond it
    (SqueezeNet's, GoogLeNet's); its padding then depends on the input's size, so the sizes must be literals."""
    ceil = known(a["ceil_mode"])
    if ceil is False:
        return {}
    if ceil is not True or op != "MaxPool":
        raise Refused("ceil_mode given by a variable" if ceil is not True else
                      "ceil_mode=True on an average pool (the windows past the end divide by less)")
    if any(pairs(v, rank) is NOT_LITERAL for v in (a["kernel_size"], stride, a["padding"])):
        raise Refused("ceil_mode=True with sizes given by a variable")
    return {"ceil_mode": True}


def _window(a, rank) -> dict:
    """The kernel and strides (the kernel's when None) of a pooling call as tuples, for the index helpers; they
    take no padding, dilation nor ceil_mode."""
    only(a, padding=0, **({"dilation": 1, "ceil_mode": False} if "dilation" in a else {}))
    kernel, stride = pairs(a["kernel_size"], rank), pairs(a["stride"], rank)
    if kernel is NOT_LITERAL or stride is NOT_LITERAL:
        raise Refused("a pooling window given by a variable")
    return {"kernel_shape": tuple(kernel), "strides": tuple(stride if known(a["stride"]) is not None else kernel)}


def _pool_with_indices(a, rank) -> OpCall:
    """Max pooling with `return_indices=True` (SegNet's encoder): the maxima and their positions in each channel
    plane, by the targets' `max_pool_with_indices` helper."""
    return OpCall("MaxPoolWithIndices", [a["input"]] if "input" in a else [], _window(a, rank), returns="tensors")


def _unpool(rank):
    def read(a):
        """Max unpooling (SegNet's decoder): each value back at the position its indices name."""
        attrs = _window(a, rank)
        if "output_size" in a and known(a["output_size"]) is not None:
            attrs["output_size"] = a["output_size"]
        return OpCall("MaxUnpool", [a["input"], a["indices"]] if "input" in a else [], attrs)
    return read


def _pool(op, rank):
    def read(a):
        if op == "MaxPool" and known(a["return_indices"]) is True:
            return _pool_with_indices(a, rank)
        if op == "MaxPool":
            only(a, return_indices=False, dilation=1)
        elif "divisor_override" in a:
            only(a, divisor_override=None)
        stride = a["stride"] if known(a["stride"]) is not None else a["kernel_size"]
        attrs = {"rank": rank, "kernel_shape": a["kernel_size"], "strides": stride, "pads": a["padding"],
                 "layout": "channels_first", **_ceil_mode(op, a, stride, rank)}
        if op == "AveragePool":
            if known(a["padding"]) not in (0, (0,) * rank, [0] * rank) and known(a["count_include_pad"]) is not True:
                raise Refused("count_include_pad=False with padding")
        return OpCall(op, attrs=attrs)
    return read


for _n in (1, 2, 3):
    C.layer(f"{NN}MaxUnpool{_n}d", "MaxUnpool", "kernel_size stride=None padding=0", read=_unpool(_n),
            call="input indices output_size=None")
    C.function(f"{F}max_unpool{_n}d", "MaxUnpool", "input indices kernel_size stride=None padding=0 "
               "output_size=None", read=_unpool(_n))
    C.layer(f"{NN}MaxPool{_n}d", "MaxPool", "kernel_size stride=None padding=0 dilation=1 return_indices=False "
            "ceil_mode=False", read=_pool("MaxPool", _n))
    C.layer(f"{NN}AvgPool{_n}d", "AveragePool", "kernel_size stride=None padding=0 ceil_mode=False "
            "count_include_pad=True" + (" divisor_override=None" if _n > 1 else ""), read=_pool("AveragePool", _n))


def _adaptive_pool(op, rank):
    """An adaptive pool: to size 1, a global pool; to other sizes (literal ones, None keeping an axis), an
    AdaptivePool of `reduce` ("mean" / "max") over the trailing `rank` axes."""
    def read(a):
        if "return_indices" in a:
            only(a, return_indices=False)
        size = known(a["output_size"])
        if size in (1, (1,) * rank, [1] * rank):
            return OpCall(op, attrs={"rank": rank, "keepdims": True, "layout": "channels_first"})
        reduce = "mean" if op == "GlobalAveragePool" else "max"
        if size is NOT_LITERAL and isinstance(a["output_size"], ast.Name):  # PSPNet's bins: a size per layer
            given = a["output_size"].id
            sizes = ast.parse(f"({given},) * {rank} if isinstance({given}, int) else {given}", mode="eval").body
            return OpCall("AdaptivePool", attrs={"output_size": sizes, "reduce": reduce})
        sizes = (size,) * rank if isinstance(size, int) else size
        if not isinstance(sizes, (tuple, list)) or len(sizes) != rank or \
                not all(s is None or isinstance(s, int) for s in sizes):
            raise Refused("output_size given by an expression")
        return OpCall("AdaptivePool", attrs={"output_size": tuple(sizes), "reduce": reduce})
    return read


for _n in (1, 2, 3):
    C.layer(f"{NN}AdaptiveAvgPool{_n}d", "GlobalAveragePool", "output_size",
            read=_adaptive_pool("GlobalAveragePool", _n))
    C.layer(f"{NN}AdaptiveMaxPool{_n}d", "GlobalMaxPool", "output_size return_indices=False",
            read=_adaptive_pool("GlobalMaxPool", _n))


def _upsample(a):
    """By an integer factor in nearest or bilinear (half-pixel) mode: the targets' upsampling (Resize); otherwise
    (to a size, by another or a variable factor, corner-aligned, nearest-exact, linear, trilinear) an Interpolate
    sampling as PyTorch does."""
    only(a, recompute_scale_factor=None)
    mode, scale = known(a["mode"]), known(a["scale_factor"])
    if mode not in INTERPOLATE_MODES:
        raise Refused(f"mode={mode!r} (nearest, nearest-exact, linear, bilinear and trilinear are translated)")
    corners = known(a["align_corners"])
    if corners not in (None, False, True):
        raise Refused("align_corners given by a variable")
    if known(a["size"]) is None and mode in ("nearest", "bilinear") and not corners and \
            isinstance(scale, (int, float)) and float(scale).is_integer():
        return OpCall("Resize", attrs={"rank": 2, "scale": a["scale_factor"], "mode": mode,
                                       "layout": "channels_first"})
    return OpCall("Interpolate", attrs={"size": a["size"], "scale_factor": a["scale_factor"], "mode": mode,
                                        "align_corners": bool(corners)})


INTERPOLATE_MODES = ("nearest", "nearest-exact", "linear", "bilinear", "trilinear")


C.layer(f"{NN}Upsample", "Resize", "size=None scale_factor=None mode='nearest' align_corners=None "
        "recompute_scale_factor=None", read=_upsample)


# -- functions and tensor methods (a method's receiver is its first argument) ---------------------------
_fn = partial(C.reads, inputs="input")


def _methods(names: str, prefix="Tensor.") -> str:
    return " ".join(prefix + n for n in names.split())


for _name, _op in (("relu", "Relu"), ("sigmoid", "Sigmoid"), ("tanh", "Tanh"), ("exp", "Exp"), ("log", "Log"),
                   ("sqrt", "Sqrt"), ("rsqrt", "Rsqrt"), ("abs", "Abs"), ("neg", "Neg"), ("sin", "Sin"), ("cos", "Cos"),
                   ("erf", "Erf"), ("floor", "Floor"), ("ceil", "Ceil"), ("reciprocal", "Reciprocal"),
                   ("square", "Square"), ("log1p", "Log1p"), ("expm1", "Expm1"), ("trunc", "Trunc"), ("fix", "Trunc"),
                   ("frac", "Frac")):
    _fn(f"torch.{_name} {_methods(_name)}" + (f" {F}{_name}" if _name in ("sigmoid", "tanh") else ""), _op, "input")
_fn(f"{F}relu", "Relu", "input inplace=False", inplace="inplace")
for _name, _op in (("silu", "SiLU"), ("hardswish", "HardSwish"), ("hardsigmoid", "HardSigmoid"), ("mish", "Mish"),
                   ("relu6", "Relu6")):
    _fn(f"{F}{_name}", _op, "input inplace=False", inplace="inplace")
_fn(f"{F}gelu", "Gelu", "input approximate='none'", approximate="approximate")
_fn(f"{F}selu torch.selu", "Selu", "input inplace=False", inplace="inplace")
_fn(f"{F}celu torch.celu", "Celu", "input alpha=1.0 inplace=False", alpha="alpha", inplace="inplace")
_fn(f"{F}tanhshrink", "Tanhshrink", "input")
C.function(f"{F}hardshrink torch.hardshrink {_methods('hardshrink')}", "Shrink", "input lambd=0.5",
           read=_shrink(soft=False))
C.function(f"{F}softshrink", "Shrink", "input lambd=0.5", read=_shrink(soft=True))
_fn(f"{F}softmin", "Softmin", "input dim=None _stacklevel=3 dtype=None", axis="dim",
    check=lambda a: only(a, dtype=None))
_fn(f"{F}elu", "Elu", "input alpha=1.0 inplace=False", alpha="alpha", inplace="inplace")
_fn(f"{F}leaky_relu", "LeakyRelu", "input negative_slope=0.01 inplace=False", alpha="negative_slope",
    inplace="inplace")
C.function(f"{F}softplus", "Softplus", "input beta=1.0 threshold=20.0", read=_softplus)


# `dtype=`: the input cast to it first (transformers' `softmax(w, dim=-1, dtype=torch.float32)`)
_fn(f"{F}softmax", "Softmax", "input dim=None _stacklevel=3 dtype=None", axis="dim", dtype="dtype")
_fn(f"{F}log_softmax", "LogSoftmax", "input dim=None _stacklevel=3 dtype=None", axis="dim", dtype="dtype")
_fn("torch.softmax Tensor.softmax", "Softmax", "input dim dtype=None", axis="dim", dtype="dtype")
_fn("torch.log_softmax Tensor.log_softmax", "LogSoftmax", "input dim dtype=None", axis="dim", dtype="dtype")
_fn("torch.cat torch.concat torch.concatenate", "Concat", "tensors dim=0", inputs="tensors", axis="dim")
_fn("torch.stack", "Stack", "tensors dim=0", inputs="tensors", axis="dim")


def _meshgrid(a):
    """Coordinate grids of 1-D tensors, given one by one or as one list; PyTorch's default indexing is "ij"."""
    tensors = a["tensors"]
    if len(tensors) == 1 and isinstance(tensors[0], (ast.List, ast.Tuple)):
        tensors = tensors[0].elts
    if any(isinstance(t, ast.Starred) for t in tensors):
        raise Refused("tensors given by *args")
    indexing = known(a["indexing"])
    if indexing not in (None, "ij", "xy"):
        raise Refused("indexing given by a variable")
    return OpCall("MeshGrid", [list(tensors)], {"indexing": indexing or "ij"})


C.function("torch.meshgrid", "MeshGrid", "*tensors indexing=None", read=_meshgrid, returns="tensors")
_fn("torch.matmul torch.bmm Tensor.matmul Tensor.bmm torch.mm Tensor.mm", "MatMul", "input other",
    inputs="input other")
# a sparse matrix times a dense one: the same values as the dense product (sparsity is a storage format)
_fn("torch.spmm torch.sparse.mm", "MatMul", "input mat2", inputs="input mat2")
_fn("torch.pow Tensor.pow", "Pow", "input exponent", inputs="input exponent")
for _name, _op, _extra in (("add", "Add", " alpha=1"), ("sub", "Sub", " alpha=1"), ("mul", "Mul", ""),
                           ("div", "Div", " rounding_mode=None")):
    _fn(f"torch.{_name} Tensor.{_name}", _op, f"input other{_extra} out=None", inputs="input other",
        check=lambda a: only(a, **{k: v for k, v in (("alpha", 1), ("rounding_mode", None), ("out", None)) if k in a}))
for _op, (_long, _name) in COMPARISONS.items():
    _aliases = f" torch.{_long} Tensor.{_long}" if _long != _name and not _long.startswith("logical") else ""
    _fn(f"torch.{_name} Tensor.{_name}{_aliases}", _op, "input other", inputs="input other")
_fn("torch.logical_not Tensor.logical_not", "Not", "input")
_fn("torch.tril Tensor.tril", "Tril", "input diagonal=0", k="diagonal")
_fn("Tensor.expand_as", "ExpandAs", "input other", inputs="input other")


def _expand(a):
    """`x.expand(*sizes)` as `sizes` (one expression per dim; -1 keeps that dim of x, counted from the end)."""
    sizes = a["sizes"]
    if len(sizes) == 1 and isinstance(sizes[0], (ast.Tuple, ast.List)):
        sizes = list(sizes[0].elts)
    elif len(sizes) == 1 and isinstance(known(sizes[0]), (tuple, list)):
        sizes = [ast.Constant(v) for v in known(sizes[0])]
    if any(isinstance(s, ast.Starred) for s in sizes) or (len(sizes) == 1 and not isinstance(known(sizes[0]), int)):
        raise Refused("expand sizes given by a variable (which of them are -1 cannot be seen)")
    return OpCall("Expand", [a["input"]], {"sizes": sizes})


C.function("Tensor.expand", "Expand", "input *sizes", read=_expand)
_fn("torch.einsum", "Einsum", "equation *operands", inputs="operands", equation="equation")
_fn("torch.where", "Where", "condition input other", inputs="condition input other")
_fn("Tensor.masked_fill", "MaskedFill", "input mask value", inputs="input mask", value="value")
_fn("torch.clamp torch.clip Tensor.clamp Tensor.clip", "Clip", "input min=None max=None", min="min", max="max")
_fn(f"torch.clamp_min {_methods('clamp_min')}", "Clip", "input min", min="min", max=None)
_fn(f"torch.clamp_max {_methods('clamp_max')}", "Clip", "input max", min=None, max="max")
_fn(f"torch.nan_to_num {_methods('nan_to_num')}", "NanToNum", "input nan=0.0 posinf=None neginf=None", nan="nan",
    posinf="posinf", neginf="neginf")
_fn("torch.flatten Tensor.flatten", "Flatten", "input start_dim=0 end_dim=-1", start="start_dim", end="end_dim")
_fn("torch.unflatten Tensor.unflatten", "Unflatten", "input dim sizes", dim="dim", sizes="sizes")
_fn("Tensor.view Tensor.reshape", "Reshape", "input *shape", shape="shape")
_fn("torch.reshape", "Reshape", "input shape", shape="shape")
_fn("Tensor.permute", "Transpose", "input *dims", perm="dims")
_fn("torch.permute", "Transpose", "input dims", perm="dims")
_fn("torch.transpose Tensor.transpose", "SwapAxes", "input dim0 dim1", axis1="dim0", axis2="dim1")
_fn("torch.t Tensor.t", "SwapAxes", "input", axis1=0, axis2=-1)  # a 2-D transpose (1-D: the vector itself)
_fn("torch.unsqueeze Tensor.unsqueeze", "Unsqueeze", "input dim", axis="dim")
_fn("torch.squeeze Tensor.squeeze", "Squeeze", "input dim=None", axis="dim")
_fn("Tensor.contiguous", "Identity", "input memory_format=None", copy="if_strided")
_fn("torch.chunk Tensor.chunk", "Split", "input chunks dim=0", returns="tensors", sections="chunks", axis="dim")
_fn("Tensor.size", "Shape", "input dim=None", returns="python", index="dim")
_fn("Tensor.dim", "Rank", "input", returns="python")
for _name, _op in (("mean", "ReduceMean"), ("sum", "ReduceSum"), ("amax", "ReduceMax"), ("amin", "ReduceMin"),
                   ("all", "ReduceAll"), ("any", "ReduceAny"), ("prod", "ReduceProd")):
    _fn(f"torch.{_name} Tensor.{_name}", _op, "input dim=None keepdim=False", axis="dim", keepdims="keepdim")
_fn("torch.logsumexp Tensor.logsumexp", "ReduceLogSumExp", "input dim keepdim=False", axis="dim", keepdims="keepdim")


def _dropout(a):
    """F.dropout: nothing with training=False; with the module's flag (`training=self.training`), a dropout the
    target applies while training; always (the default training=True, random in inference too) is refused."""
    training = known(a["training"])
    if training is False:
        return OpCall("Identity", [a["input"]])
    if training is True:
        raise Refused("functional dropout with training=True, which drops in inference too: pass "
                      "training=self.training")
    return OpCall("Dropout", [a["input"]], {"ratio": a["p"], "training": a["training"]})


C.function(f"{F}dropout", "Dropout", "input p=0.5 training=True inplace=False", read=_dropout)
_fn(f"{F}cosine_similarity torch.cosine_similarity", "CosineSimilarity", "x1 x2 dim=1 eps=1e-08",
    inputs="x1 x2", dim="dim", eps="eps")
_fn(f"{F}pairwise_distance torch.pairwise_distance", "PairwiseDistance", "x1 x2 p=2.0 eps=1e-06 keepdim=False",
    inputs="x1 x2", p="p", eps="eps", keepdim="keepdim")
_fn(f"{F}normalize", "LpNormalize", "input p=2.0 dim=1 eps=1e-12 out=None", axis="dim", epsilon="eps",
    check=lambda a: only(a, p=2.0, out=None))


def _adaptive_pool_fn(op, rank):
    read = _adaptive_pool(op, rank)

    def read_fn(a):
        call = read(a)  # a global pool or, to other sizes, an AdaptivePool
        return OpCall(call.op, [a["input"]], call.attrs)
    return read_fn


for _n in (1, 2, 3):
    C.function(f"{F}adaptive_avg_pool{_n}d", "GlobalAveragePool", "input output_size",
               read=_adaptive_pool_fn("GlobalAveragePool", _n))
    C.function(f"{F}adaptive_max_pool{_n}d", "GlobalMaxPool", "input output_size return_indices=False",
               read=_adaptive_pool_fn("GlobalMaxPool", _n))
    # a convolution by a weight the code holds or computes ([out, in / groups, *kernel], channels first)
    C.reads(f"{F}conv{_n}d", "ConvFn", "input weight bias=None stride=1 padding=0 dilation=1 groups=1",
            "input weight bias", rank=_n, stride="stride", padding="padding", dilation="dilation", groups="groups")


def _pool_fn(op, rank):
    def read(a):
        if op == "MaxPool" and known(a["return_indices"]) is True:
            return _pool_with_indices(a, rank)
        only(a, **({"dilation": 1, "return_indices": False} if op == "MaxPool" else {}))
        if op == "AveragePool" and known(a["padding"]) not in (0, (0,) * rank, [0] * rank) and \
                known(a["count_include_pad"]) is not True:
            raise Refused("count_include_pad=False with padding")
        stride = a["stride"] if known(a["stride"]) is not None else a["kernel_size"]
        return OpCall(op, [a["input"]], {"rank": rank, "kernel_shape": a["kernel_size"], "strides": stride,
                                         "pads": a["padding"], "layout": "channels_first",
                                         **_ceil_mode(op, a, stride, rank)})
    return read


for _n in (1, 2, 3):
    C.function(f"{F}max_pool{_n}d", "MaxPool", "input kernel_size stride=None padding=0 dilation=1 ceil_mode=False "
               "return_indices=False", read=_pool_fn("MaxPool", _n))
    C.function(f"{F}avg_pool{_n}d", "AveragePool", "input kernel_size stride=None padding=0 ceil_mode=False "
               "count_include_pad=True" + (" divisor_override=None" if _n > 1 else ""),
               read=_pool_fn("AveragePool", _n))


def _pad(a):
    """`F.pad`'s (begin, end) pairs, listed from the last dim backwards, as `trailing_pads`: the pairs of the
    last dims, first to last."""
    mode = known(a["mode"])
    if mode not in PAD_MODES:
        raise Refused(f"mode={ast.unparse(a['mode'])}")
    pads = a["pad"]
    if isinstance(pads, (ast.List, ast.Tuple)):
        items = list(pads.elts)
    elif isinstance(known(pads), (list, tuple)):
        items = [ast.Constant(v) for v in known(pads)]
    else:
        raise Refused("pad widths given by a variable")
    return OpCall("Pad", [a["input"]], _pad_attrs(items, a["value"], mode))


def _pad_attrs(items: list, value, mode: str) -> dict:
    """Pad's attributes from F.pad's flat widths (last dim first), its fill value (None: 0) and mode."""
    if len(items) % 2:
        raise Refused("an odd number of pad widths")
    trailing = [ast.List(items[i:i + 2], ast.Load()) for i in range(len(items) - 2, -1, -2)]
    return {"trailing_pads": trailing, "value": value if known(value) is not None else 0.0, "mode": PAD_MODES[mode]}


#: F.pad's modes -> NumPy's names for them
PAD_MODES = {"constant": "constant", "reflect": "reflect", "replicate": "edge", "circular": "wrap"}
C.function(f"{F}pad", "Pad", "input pad mode='constant' value=None", read=_pad)


def _pad_layer(rank, mode):
    """nn.ZeroPad2d / ConstantPad2d / ReflectionPad2d / ...: `padding` one width for every side, or F.pad's list."""
    def read(a):
        widths = known(a["padding"])
        if holds_number(a["padding"]):  # one width for every side: a literal or a number (`kernel_size // 2`)
            widths = [a["padding"]] * 2 * rank
        elif isinstance(widths, (tuple, list)) and len(widths) == 2 * rank:
            widths = [ast.Constant(w) for w in widths]
        else:
            raise Refused("padding given by a variable that may be a tuple, or not one width per side")
        return OpCall("Pad", attrs=_pad_attrs(widths, a.get("value"), mode))
    return read


for _n in (1, 2, 3):
    for _cls, _mode in (("Zero", "constant"), ("Constant", "constant"), ("Reflection", "reflect"),
                        ("Replication", "replicate"), ("Circular", "circular")):
        C.layer(f"{NN}{_cls}Pad{_n}d", "Pad", "padding value" if _cls == "Constant" else "padding",
                read=_pad_layer(_n, _mode))


def _interpolate(a):
    only(a, antialias=False)
    call = _upsample(a)
    return OpCall(call.op, [a["input"]], call.attrs)


C.function(f"{F}interpolate", "Resize", "input size=None scale_factor=None mode='nearest' align_corners=None "
           "recompute_scale_factor=None antialias=False", read=_interpolate)


#: torch.Tensor's public methods that model code calls (a method named here without a row is refused)
TENSOR_METHODS = """abs add addmm all amax amin any argmax argmin bmm ceil chunk clamp clip clone contiguous cos
cpu cuda cumsum detach dim div double eq exp expand expand_as fill flatten flip float floor
gather ge gt half index_select int item log log_softmax logsumexp long lt masked_fill matmul max mean min
mm mul ne neg new_zeros new_ones norm numel permute pow prod reciprocal relu repeat
repeat_interleave reshape roll round rsqrt scatter sigmoid sign sin size softmax sort split
sqrt square squeeze std sub sum t tanh to topk transpose type type_as unbind unflatten
unsqueeze var view view_as where zero"""


#: torch's dtype names -> the dtype's name in the code (as NumPy spells it)
DTYPES = {f"torch.{name}": name for name in DTYPE_NAMES} | {
    "torch.float": "float32", "torch.double": "float64", "torch.half": "float16", "torch.long": "int64",
    "torch.int": "int32", "torch.short": "int16"}


# -- how torch model code is recognised --------------------------------------------------------------
class TorchWeightSource(WeightSource):
    def owns(self, obj) -> bool:
        import torch

        return isinstance(obj, torch.nn.Module)

    def layer_weights(self, layer) -> dict:
        """Its parameters and buffers, a sublayer's by its dotted name (nn.MultiheadAttention's out_proj.weight); a
        weight under weight_norm or spectral_norm as the weight it computes in inference."""
        out = {n: t.detach().cpu().numpy() for n, t in [*layer.named_parameters(), *layer.named_buffers()]
               if t is not None and not n.endswith("num_batches_tracked")}
        for name, weight in _normalised_weights(layer).items():
            out = {n: v for n, v in out.items() if not (n.startswith(f"parametrizations.{name}.") or
                                                         n in (f"{name}_g", f"{name}_v", f"{name}_orig", f"{name}_u"))}
            out[name] = weight
        return out

    def members(self, obj) -> list | None:
        import torch

        return list(obj) if isinstance(obj, (torch.nn.Sequential, torch.nn.ModuleList, torch.nn.ParameterList)) \
            else None

    def mapping(self, obj) -> dict | None:
        import torch

        return dict(obj.items()) if isinstance(obj, (torch.nn.ModuleDict, torch.nn.ParameterDict)) else None

    def class_path(self, obj) -> str:
        """A layer under a parametrization (weight_norm) is of a class made for it, deriving from its own."""
        import torch

        cls = type(obj).__bases__[0] if torch.nn.utils.parametrize.is_parametrized(obj) else type(obj)
        return f"{cls.__module__}.{cls.__qualname__}"

    def weight_array(self, obj):
        import torch

        return obj.detach().cpu().numpy() if isinstance(obj, torch.Tensor) else None

    def own_weights(self, obj) -> dict:
        return {n: t.detach().cpu().numpy() for n, t in [*obj.named_parameters(recurse=False),
                                                         *obj.named_buffers(recurse=False)]
                if t is not None and n != "num_batches_tracked"}

    def children(self, obj) -> dict:
        return dict(obj.named_children())

    def weight_ids(self, obj) -> list[int]:
        return [id(p) for _, p in obj.named_parameters(remove_duplicate=False)]


WEIGHT_NORM_LOST = "port_weights copies g * v / |v|, so training no longer separates magnitude and direction"
SPECTRAL_NORM_LOST = ("port_weights copies W / sigma as PyTorch computes it in inference, so training no longer "
                      "divides the weight by its largest singular value (wrap the layer in the target's spectral "
                      "norm to train it so)")


def _normalised_weights(layer) -> dict:
    """The weights weight_norm and spectral_norm re-express, as they compute them in inference: from magnitude
    and direction, or divided by the largest singular value the stored power-iteration vectors give (the
    parametrizations' API or the forward hooks')."""
    import torch

    out = {}
    for name, parametrization in getattr(layer, "parametrizations", {}).items():
        norm = parametrization[0]
        if type(norm).__name__ == "_SpectralNorm":  # read without running it: in training it would iterate
            out[name] = _spectral(parametrization.original, norm._u, norm._v, norm.dim)
        else:
            out[name] = getattr(layer, name).detach().cpu().numpy()
    for hook in layer._forward_pre_hooks.values():
        if type(hook).__name__ == "WeightNorm":
            g, v = getattr(layer, f"{hook.name}_g"), getattr(layer, f"{hook.name}_v")
            out[hook.name] = torch._weight_norm(v, g, hook.dim).detach().cpu().numpy()
        elif type(hook).__name__ == "SpectralNorm":
            out[hook.name] = _spectral(getattr(layer, f"{hook.name}_orig"), getattr(layer, f"{hook.name}_u"),
                                       getattr(layer, f"{hook.name}_v"), hook.dim)
    return out


def _spectral(weight, u, v, dim: int):
    """weight / sigma, sigma = u . (W v) with W the weight as a matrix of `dim`'s rows (spectral_norm in inference)."""
    matrix = weight.detach().movedim(dim, 0).reshape(weight.shape[dim], -1)
    sigma = u.detach() @ (matrix @ v.detach())
    return (weight.detach() / sigma).cpu().numpy()


einops_layers(C, "einops.layers.torch")
C.weight_attributes = {"Embedding": {"weight": ("W", False)}, "Dense": {"weight": ("W", True), "bias": ("B", False)},
                       "Conv": {"weight": ("W", False), "bias": ("B", False)},
                       "LayerNormalization": {"weight": ("scale", False), "bias": ("B", False)}}
C.layer_settings = {f"{NN}Conv{n}d": {"kernel_size": n, "stride": n, "padding": n, "dilation": n, "groups": None,
                                      "padding_mode": None} for n in (1, 2, 3)} | {
    f"{NN}LayerNorm": {"normalized_shape": 1, "elementwise_affine": None}} | {
    f"{NN}{rnn}": {"input_size": None, "hidden_size": None, "num_layers": None, "bidirectional": None,
                   "batch_first": None} for rnn in ("LSTM", "GRU", "RNN")}
C.config_attributes = {"Dense": {"in_features": "in_features", "out_features": "units"},
                       "Conv": {"in_channels": "in_channels", "out_channels": "filters"}, "Dropout": {"p": "ratio"},
                       "Embedding": {"num_embeddings": "num_embeddings", "embedding_dim": "embedding_dim"},
                       "LayerNormalization": {"eps": "epsilon"}} | {
    f"{rnn}Cell": {"input_size": "input_size", "hidden_size": "hidden_size"} for rnn in ("LSTM", "GRU", "RNN")}

#: transformers' activations by name, as the torch layers computing them (the names whose layers hold no weights
#: and have a row; "gelu_new" and "gelu_pytorch_tanh" are the tanh approximation)
HF_ACTIVATIONS = {"gelu": (f"{NN}GELU", {}), "gelu_new": (f"{NN}GELU", {"approximate": "tanh"}),
                  "gelu_pytorch_tanh": (f"{NN}GELU", {"approximate": "tanh"}), "relu": (f"{NN}ReLU", {}),
                  "relu6": (f"{NN}ReLU6", {}), "leaky_relu": (f"{NN}LeakyReLU", {}), "silu": (f"{NN}SiLU", {}),
                  "swish": (f"{NN}SiLU", {}), "sigmoid": (f"{NN}Sigmoid", {}), "tanh": (f"{NN}Tanh", {}),
                  "mish": (f"{NN}Mish", {}), "hardswish": (f"{NN}Hardswish", {}), "linear": (f"{NN}Identity", {})}

C.source = SourceSkeleton(
    module_classes=frozenset({"torch.nn.Module", "torch.nn.modules.module.Module"}),
    layer_classes=frozenset({"torch.nn.Module", "torch.nn.modules.module.Module"}),
    tensor_classes=frozenset({"torch.Tensor"}),
    reparametrizations={
        **{f"{NN}utils{api}.weight_norm": (Signature.parse("module name='weight' dim=0"), WEIGHT_NORM_LOST)
           for api in ("", ".parametrizations")},
        **{f"{NN}utils{api}.spectral_norm": (Signature.parse(
            "module name='weight' n_power_iterations=1 eps=1e-12 dim=None"), SPECTRAL_NORM_LOST)
           for api in ("", ".parametrizations")}},
    data_wrappers=frozenset({"torch.autograd.Variable", "torch.autograd.variable.Variable"}),
    autograd_attributes=frozenset({"requires_grad", "grad", "grad_fn", "is_leaf"}),
    device_classes=frozenset({"torch.device"}),
    assert_functions=frozenset({"torch._assert"}),
    weight_values="data",
    parameters_method="parameters",
    add_child="add_module",
    factory_arguments=frozenset({"device", "dtype"}),
    composite_layers={f"{NN}Transformer": TRANSFORMER_INIT},
    appliers={"torch.utils.checkpoint.checkpoint": None, "torch.nn.parallel.data_parallel": 1,
              "torch.nn.parallel.data_parallel.data_parallel": 1},
    neutral_decorators=frozenset({"torch.jit.script", "torch.jit.ignore", "torch.jit.unused", "torch.jit.export",
                                  "torch.fx.wrap",
                                  "torch.compile", "torch.jit.script_if_tracing"}),
    constant_calls={"torch.jit.is_scripting": False, "torch.jit.is_tracing": False, "torch.cuda.is_available": False,
                    "torch.onnx.is_in_onnx_export": False, "torch.compiler.is_compiling": False},
    activation_tables={"transformers.activations.ACT2FN": HF_ACTIVATIONS},
    base_methods=frozenset({"parameters", "named_parameters", "buffers", "named_buffers", "modules", "named_modules",
                            "children", "named_children", "state_dict", "load_state_dict", "train", "eval", "to",
                            "cuda", "cpu", "half", "float", "double", "requires_grad_", "zero_grad", "get_parameter",
                            "get_submodule", "register_forward_hook", "register_forward_pre_hook"}),
    trainable_attribute="requires_grad",
    tied_layers={f"{NN}Embedding": (f"{NN}functional.embedding", {"max_norm": None}, ()),
                 f"{NN}Linear": (f"{NN}functional.linear", {}, ("bias",))},
    no_grad_decorators=frozenset({"torch.no_grad", "torch.inference_mode", "torch.autograd.grad_mode.no_grad"}),
    containers={f"{NN}Sequential": "sequential", f"{NN}ModuleList": "list", f"{NN}ModuleDict": "dict",
                f"{NN}ParameterList": "list", f"{NN}ParameterDict": "dict"},
    parameter_classes={f"{NN}Parameter": True, f"{NN}parameter.Parameter": True},
    init_module=f"{NN}init",
    initializers={"torch.zeros": "zeros", "torch.ones": "ones", "torch.randn": "normal", "torch.rand": "uniform",
                  "torch.empty": "zeros"},
    tensor_attributes={"shape": lambda x: OpCall("Shape", [x], {"index": None}),
                       "ndim": lambda x: OpCall("Rank", [x]), "device": lambda x: OpCall("Device", [x]),
                       "T": lambda x: OpCall("Transpose", [x], {"perm": None}),
                       "real": lambda x: OpCall("Real", [x]),
                       "dtype": lambda x: OpCall("DType", [x]), "is_cuda": lambda x: OpCall("IsCuda", [x])},
    tensor_methods=frozenset(TENSOR_METHODS.split()),
    float_dtypes=frozenset({"torch.float32", "torch.float"}),
    dtypes=DTYPES,
    tuple_fields={"values": 0, "indices": 1},
    weights=TorchWeightSource(),
    roots=frozenset({"einops.layers.torch", "transformers.pytorch_utils.Conv1D", "timm.layers.LayerNorm",
                     "timm.layers.norm.LayerNorm"}),
    sequential_append="append",
)
