"""torchvision.ops.misc as timm imports it (for isinstance checks on frozen BatchNorm layers)."""

from torchvision import missing

FrozenBatchNorm2d = missing("FrozenBatchNorm2d")
