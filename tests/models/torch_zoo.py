"""Small real architectures with seeded random weights (no downloads), for tests and benchmarks.

Each builder returns (module in eval mode, example inputs tuple, is_classifier).
"""

from __future__ import annotations


def _seed():
    import torch

    torch.manual_seed(0)


def _randomize_bn(model):
    import torch

    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, (torch.nn.BatchNorm1d, torch.nn.BatchNorm2d)):
                m.running_mean.uniform_(-0.3, 0.3)
                m.running_var.uniform_(0.5, 1.5)
                m.weight.uniform_(0.5, 1.5)
                m.bias.uniform_(-0.2, 0.2)
    return model


def _shortcut(cin, cout, stride):
    """A residual block's 1x1 projection where the block changes shape; None where its input passes as is."""
    from torch import nn

    if stride == 1 and cin == cout:
        return None
    return nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))


def resnet18(num_classes=100, batch=2, size=64):
    """ResNet-18 layout: 4 stages of 2 basic blocks, strided downsampling with 1x1 shortcuts."""
    import torch
    from torch import nn

    class Basic(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(cout)
            self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(cout)
            self.downsample = _shortcut(cin, cout, stride)

        def forward(self, x):
            idt = x if self.downsample is None else self.downsample(x)
            y = torch.relu(self.bn1(self.conv1(x)))
            return torch.relu(self.bn2(self.conv2(y)) + idt)

    class ResNet18(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
            self.bn1 = nn.BatchNorm2d(64)
            self.maxpool = nn.MaxPool2d(3, 2, 1)
            chans = [64, 128, 256, 512]
            layers, cin = [], 64
            for i, c in enumerate(chans):
                layers.append(nn.Sequential(Basic(cin, c, 1 if i == 0 else 2), Basic(c, c, 1)))
                cin = c
            self.layer1, self.layer2, self.layer3, self.layer4 = layers
            self.avgpool = nn.AdaptiveAvgPool2d(1)
            self.fc = nn.Linear(512, num_classes)

        def forward(self, x):
            x = self.maxpool(torch.relu(self.bn1(self.conv1(x))))
            x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
            return self.fc(torch.flatten(self.avgpool(x), 1))

    _seed()
    return _randomize_bn(ResNet18()).eval(), (torch.randn(batch, 3, size, size),), True


def resnet50(num_classes=1000, batch=1, size=224):
    """ResNet-50 layout: bottleneck blocks [3, 4, 6, 3] with 1x1 projection shortcuts."""
    import torch
    from torch import nn

    class Bottleneck(nn.Module):
        def __init__(self, cin, width, stride):
            super().__init__()
            cout = width * 4
            self.conv1, self.bn1 = nn.Conv2d(cin, width, 1, bias=False), nn.BatchNorm2d(width)
            self.conv2, self.bn2 = nn.Conv2d(width, width, 3, stride, 1, bias=False), nn.BatchNorm2d(width)
            self.conv3, self.bn3 = nn.Conv2d(width, cout, 1, bias=False), nn.BatchNorm2d(cout)
            self.downsample = _shortcut(cin, cout, stride)

        def forward(self, x):
            idt = x if self.downsample is None else self.downsample(x)
            y = torch.relu(self.bn1(self.conv1(x)))
            y = torch.relu(self.bn2(self.conv2(y)))
            return torch.relu(self.bn3(self.conv3(y)) + idt)

    class ResNet50(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1, self.bn1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64)
            self.maxpool = nn.MaxPool2d(3, 2, 1)
            stages, cin = [], 64
            for i, (width, blocks) in enumerate(((64, 3), (128, 4), (256, 6), (512, 3))):
                layer = []
                for j in range(blocks):
                    layer.append(Bottleneck(cin, width, 2 if j == 0 and i > 0 else 1))
                    cin = width * 4
                stages.append(nn.Sequential(*layer))
            self.layer1, self.layer2, self.layer3, self.layer4 = stages
            self.fc = nn.Linear(2048, num_classes)

        def forward(self, x):
            x = self.maxpool(torch.relu(self.bn1(self.conv1(x))))
            x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
            return self.fc(torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1))

    _seed()
    return _randomize_bn(ResNet50()).eval(), (torch.randn(batch, 3, size, size),), True


def mobilenet_v2(num_classes=100, batch=2, size=64):
    """MobileNetV2 layout: inverted residuals with depthwise convs and ReLU6."""
    import torch
    from torch import nn

    def cbr(cin, cout, k=3, s=1, groups=1, act=True):
        layers = [nn.Conv2d(cin, cout, k, s, k // 2, groups=groups, bias=False), nn.BatchNorm2d(cout)]
        return nn.Sequential(*layers, *( [nn.ReLU6()] if act else []))

    class InvertedResidual(nn.Module):
        def __init__(self, cin, cout, stride, expand):
            super().__init__()
            hidden = cin * expand
            self.use_res = stride == 1 and cin == cout
            layers = [cbr(cin, hidden, 1)] if expand != 1 else []
            layers += [cbr(hidden, hidden, 3, stride, groups=hidden), cbr(hidden, cout, 1, act=False)]
            self.conv = nn.Sequential(*layers)

        def forward(self, x):
            return x + self.conv(x) if self.use_res else self.conv(x)

    class MobileNetV2(nn.Module):
        def __init__(self):
            super().__init__()
            cfg = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 2, 2), (6, 96, 1, 1)]
            layers, cin = [cbr(3, 32, 3, 2)], 32
            for t, c, n, s in cfg:
                for i in range(n):
                    layers.append(InvertedResidual(cin, c, s if i == 0 else 1, t))
                    cin = c
            layers.append(cbr(cin, 320, 1))
            self.features = nn.Sequential(*layers)
            self.classifier = nn.Sequential(nn.Dropout(0.2), nn.Linear(320, num_classes))

        def forward(self, x):
            x = nn.functional.adaptive_avg_pool2d(self.features(x), 1)
            return self.classifier(torch.flatten(x, 1))

    _seed()
    return _randomize_bn(MobileNetV2()).eval(), (torch.randn(batch, 3, size, size),), True


def transformer_encoder(batch=2, seq=16, d_model=64, classes=10):
    """Token classifier: embedding, 2 encoder layers (LayerNorm, GELU, multi-head attention)."""
    import torch
    from torch import nn

    class Encoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(1000, d_model)
            self.pos = nn.Parameter(torch.randn(1, seq, d_model) * 0.02)
            layer = nn.TransformerEncoderLayer(d_model, 4, 4 * d_model, dropout=0.0, activation="gelu",
                                               batch_first=True, norm_first=True)
            self.encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
            self.norm = nn.LayerNorm(d_model)
            self.head = nn.Linear(d_model, classes)

        def forward(self, tokens):
            h = self.encoder(self.embed(tokens) + self.pos)
            return self.head(self.norm(h).mean(1))

    _seed()
    return Encoder().eval(), (torch.randint(0, 1000, (batch, seq)),), True


def lstm_tagger(batch=2, seq=12, vocab=500, classes=8):
    """Bidirectional 2-layer LSTM sequence tagger."""
    import torch
    from torch import nn

    class Tagger(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(vocab, 32)
            self.lstm = nn.LSTM(32, 48, num_layers=2, batch_first=True, bidirectional=True)
            self.out = nn.Linear(96, classes)

        def forward(self, tokens):
            h, _ = self.lstm(self.embed(tokens))
            return self.out(h)

    _seed()
    return Tagger().eval(), (torch.randint(0, vocab, (batch, seq)),), False


def _hf_wrap(model, kind):
    import torch

    class Wrapped(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.model = model

        def forward(self, input_ids, attention_mask):
            out = self.model(input_ids=input_ids, attention_mask=attention_mask)
            return out.logits if kind == "gpt2" else out.last_hidden_state

    return Wrapped().eval()


def bert(batch=2, seq=16):
    import torch
    from transformers import BertConfig, BertModel

    _seed()
    cfg = BertConfig(vocab_size=1000, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                     intermediate_size=128, max_position_embeddings=64, attn_implementation="sdpa")
    model = BertModel(cfg).eval()
    ids = torch.randint(0, 1000, (batch, seq))
    mask = torch.ones(batch, seq, dtype=torch.int64)
    return _hf_wrap(model, "bert"), (ids, mask), False


def gpt2(batch=2, seq=16):
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    _seed()
    cfg = GPT2Config(vocab_size=1000, n_embd=64, n_layer=2, n_head=4, n_positions=64, attn_implementation="sdpa",
                     use_cache=False)
    model = GPT2LMHeadModel(cfg).eval()
    ids = torch.randint(0, 1000, (batch, seq))
    mask = torch.ones(batch, seq, dtype=torch.int64)
    return _hf_wrap(model, "gpt2"), (ids, mask), True


ZOO = {"resnet18": resnet18, "resnet50": resnet50, "mobilenet_v2": mobilenet_v2,
       "transformer_encoder": transformer_encoder, "lstm_tagger": lstm_tagger, "bert": bert, "gpt2": gpt2}


def imported(name: str, **kwargs):
    """(module, example inputs, IR graph) of a zoo model read through torch.export, its warnings silenced."""
    import warnings

    import tensorbridge as tb

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        module, args, _ = ZOO[name](**kwargs)
        return module, args, tb.load(module, example_inputs=args)
