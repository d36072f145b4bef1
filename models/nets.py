"""The networks, each small enough for one core of a Raspberry Pi.

- DiceDetector: fully convolutional; for each cell of a stride-4 grid it predicts whether a
  die's top face is centred there (heatmap), the sub-cell offset of that centre and the size
  of the die's visible body (log width/height in input pixels).
- FaceClassifier: reads a 64×64 crop centred on a die's top face: the value (12 faces: six pip
  counts, six animals) and the crop's quality (ok / tilted / stacked / unreadable / not a
  die).
- BodyHead: a small head on the trained detector's features (the detector itself stays as it
  is): where each die's body lies from its top-face centre. A side face found as a die has
  its body on the wrong side, against the perspective of the other dice (vision/reader.py).
  It ships as its own file, computed at the finds only (BodyAtCells).
- CentreRefiner: looks at a crop twice the found size around a find and says where the
  nearest die's top face lies and how large the die is: the detector's stride-4 grid puts
  some finds on a die's edge or front face, or finds a large die at half its size.
- FaceEmbedder: the same kind of network, trained only to tell faces apart — the twelve
  known ones and about 1200 other emoji painted on dice — so that `kniffel teach` can learn
  a dice set nobody trained on by nearest neighbour in its embedding.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

FACES = ("1", "2", "3", "4", "5", "6", "duck", "lion", "mouse", "cat", "dog", "elephant")
QUALITY = ("ok", "tilted", "stacked", "unreadable", "no_die")
BOTTLENECK = 64
EMBED_DIM = 128


def conv_bn(cin: int, cout: int, stride: int = 1, k: int = 3) -> nn.Sequential:
    """Plain conv + batch norm + ReLU: on a CPU, plain 3×3 convolutions train several times
    faster than depthwise-separable ones and run fast enough at this size."""
    return nn.Sequential(
        nn.Conv2d(cin, cout, k, stride, k // 2, bias=False),
        nn.BatchNorm2d(cout),
        nn.ReLU(inplace=True),
    )


class DiceDetector(nn.Module):
    """A small feature pyramid down to 1/32 and back up to the stride-4 output grid; the
    stride-4 layers are kept thin because they dominate the cost. The coarse stages are
    deeper (one convolution more at 1/8, two more at 1/16 and 1/32, where they cost
    little): they see more around a die — its neighbours, the way the view runs — and put
    fewer finds on side faces and where no die is (models/README.md, "A deeper detector on
    twice the scenes")."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = conv_bn(3, 16, 2)  # /2
        self.s4 = nn.Sequential(conv_bn(16, 24, 2), conv_bn(24, 24))  # /4
        self.s8 = nn.Sequential(conv_bn(24, 40, 2), conv_bn(40, 40), conv_bn(40, 40))  # /8
        self.s16 = nn.Sequential(conv_bn(40, 64, 2), conv_bn(64, 64), conv_bn(64, 64),
                                 conv_bn(64, 64))  # /16
        self.s32 = nn.Sequential(conv_bn(64, 96, 2), conv_bn(96, 96), conv_bn(96, 96),
                                 conv_bn(96, 96))  # /32
        self.lat16 = conv_bn(96 + 64, 48, k=1)
        self.lat8 = conv_bn(48 + 40, 32, k=1)
        self.lat4 = conv_bn(32 + 24, 24, k=1)
        self.refine = conv_bn(24, 24)
        self.head = nn.Conv2d(24, 5, 1)  # heat, dx, dy, log w, log h
        nn.init.constant_(self.head.bias[0:1], -4.0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        f4 = self.s4(self.stem(x))
        f8 = self.s8(f4)
        f16 = self.s16(f8)
        f32 = self.s32(f16)
        up = F.interpolate(f32, size=f16.shape[-2:], mode="nearest")
        y = self.lat16(torch.cat([up, f16], 1))
        y = self.lat8(torch.cat([F.interpolate(y, size=f8.shape[-2:], mode="nearest"), f8], 1))
        y = self.lat4(torch.cat([F.interpolate(y, size=f4.shape[-2:], mode="nearest"), f4], 1))
        out = self.head(self.refine(y))
        heat = torch.sigmoid(out[:, 0:1])
        return torch.cat([heat, out[:, 1:]], 1)


class BodyHead(nn.Module):
    """On the detector's stride-4 features and its stride-16 context: the offset from a
    die's top-face centre to the centre of its visible body, in die sizes (2 channels).
    Seen from above the body lies under the top face; seen at an angle it lies towards the
    vertical vanishing point, the same way for every die of a frame."""

    #: The detector's tensors it reads (names in the exported detector.onnx).
    FEATURES = "/refine/refine.2/Relu_output_0"
    CONTEXT = "/lat16/lat16.2/Relu_output_0"

    def __init__(self, width: int = 32, features: int = 24, context: int = 48) -> None:
        super().__init__()
        self.context = nn.Conv2d(context, width, 1)
        self.local = nn.Conv2d(features, width, 3, 1, 1)
        self.mix = nn.Conv2d(width, width, 3, 1, 1)
        self.out = nn.Conv2d(width, 2, 1)

    def forward(self, features: torch.Tensor, context: torch.Tensor) -> torch.Tensor:
        c = F.interpolate(self.context(context), size=features.shape[-2:], mode="bilinear",
                          align_corners=False)
        y = F.relu(self.local(features) + c)
        return self.out(F.relu(self.mix(y)))


class BodyAtCells(nn.Module):
    """A BodyHead computed at chosen cells of the grid only (vision.detector.BodyOffsets):
    over the whole stride-4 grid the head took a third of the detector's time, and the
    reader needs it at a few finds. Per cell its inputs are what the head's two 3×3
    convolutions see there: the features of the 5 × 5 cells around it (zero outside the
    grid), the context as interpolated to the 3 × 3 cells around it, and which of those lie
    inside the grid (the second convolution pads with zeros outside). Out: N × 2, what
    BodyHead gives at those cells."""

    def __init__(self, head: BodyHead) -> None:
        super().__init__()
        self.head = head

    def forward(self, features: torch.Tensor, context: torch.Tensor, inside: torch.Tensor
                ) -> torch.Tensor:
        h = self.head
        y = F.relu(F.conv2d(features, h.local.weight, h.local.bias) + h.context(context))
        y = F.relu(F.conv2d(y * inside, h.mix.weight, h.mix.bias))
        return h.out(y).flatten(1)


def crop_features(w: int) -> nn.Sequential:
    """64×64 crop → 6w channels at 4×4."""
    return nn.Sequential(
        conv_bn(3, w, 2),  # 32
        conv_bn(w, 2 * w),
        conv_bn(2 * w, 2 * w, 2),  # 16
        conv_bn(2 * w, 3 * w),
        conv_bn(3 * w, 3 * w, 2),  # 8
        conv_bn(3 * w, 4 * w),
        conv_bn(4 * w, 6 * w, 2),  # 4
        conv_bn(6 * w, 6 * w),
    )


class FaceClassifier(nn.Module):
    def __init__(self, width: int = 24) -> None:
        super().__init__()
        w = width
        self.features = crop_features(w)
        self.embed = nn.Linear(6 * w, BOTTLENECK)
        self.value = nn.Linear(BOTTLENECK, len(FACES))
        self.quality = nn.Linear(BOTTLENECK, len(QUALITY))

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        e = F.relu(self.embed(self.features(x).mean(dim=(2, 3))))
        return self.value(e), self.quality(e)


class CentreRefiner(nn.Module):
    """A crop of REFINE_SPAN found sizes around a find (vision/preprocess.py) → the offset
    from the crop centre to the nearest die's top-face centre, in found sizes (x, y), and
    log(die size / found size)."""

    def __init__(self, width: int = 16) -> None:
        super().__init__()
        self.features = crop_features(width)
        self.hidden = nn.Linear(6 * width * 16, BOTTLENECK)
        self.out = nn.Linear(BOTTLENECK, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.out(F.relu(self.hidden(self.features(x).flatten(1))))


class FaceEmbedder(nn.Module):
    """Unit-length embedding of a die crop; trained with a cosine softmax over many faces
    (models/train.py embedder), so faces it never saw still land apart."""

    def __init__(self, width: int = 24, dim: int = EMBED_DIM) -> None:
        super().__init__()
        self.features = crop_features(width)
        self.embed = nn.Linear(6 * width, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.normalize(self.embed(self.features(x).mean(dim=(2, 3))), dim=1)
