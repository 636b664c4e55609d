"""Export the zoo's float models (dev only: needs torch; CI uses the committed .onnx files).

    pip install torch==2.13.0          # CPU build
    python tests/models/zoo/make_zoo.py       # writes tests/models/zoo/models/*.onnx

Small architectures as users build them in PyTorch, random weights under fixed seeds, BatchNorm
with random statistics (folded into the convs by the exporter), exported with the TorchScript
exporter at opset 13 (14 for the HardSwish model), static batch 1. The same torch version gives
byte-identical files.
"""
from __future__ import annotations

import io
import itertools
import sys
from pathlib import Path

import onnx
import torch
from torch import nn
from torch.nn import functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
from tests.models.zoo.catalog import BY_NAME, CATALOG, MODELS

MAX_BYTES = 300 * 1024
MAX_TOTAL = 2 * 1024 * 1024


def bn(c: int) -> nn.BatchNorm2d:
    return nn.BatchNorm2d(c)


def conv_bn(cin: int, cout: int, k: int = 3, s: int = 1, groups: int = 1,
            act: type[nn.Module] | None = nn.ReLU) -> nn.Sequential:
    layers: list[nn.Module] = [nn.Conv2d(cin, cout, k, s, k // 2, groups=groups, bias=False), bn(cout)]
    if act is not None:
        layers.append(act())
    return nn.Sequential(*layers)


class InvertedResidual(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int, expand: int) -> None:
        super().__init__()
        mid = cin * expand
        self.use_res = stride == 1 and cin == cout
        self.body = nn.Sequential(conv_bn(cin, mid, 1, act=nn.ReLU6),
                                  conv_bn(mid, mid, 3, stride, groups=mid, act=nn.ReLU6),
                                  conv_bn(mid, cout, 1, act=None))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.body(x)
        return x + y if self.use_res else y


class MBV2(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.features = nn.Sequential(
            conv_bn(3, 8, 3, 2, act=nn.ReLU6),            # 16x16
            InvertedResidual(8, 8, 1, 4),
            InvertedResidual(8, 16, 2, 4),                # 8x8
            InvertedResidual(16, 16, 1, 4),
            conv_bn(16, 32, 1, act=nn.ReLU6))
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(32, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(torch.flatten(self.pool(self.features(x)), 1))


class BasicBlock(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int) -> None:
        super().__init__()
        self.c1 = conv_bn(cin, cout, 3, stride)
        self.c2 = conv_bn(cout, cout, 3, act=None)
        self.short = (nn.Identity() if stride == 1 and cin == cout
                      else conv_bn(cin, cout, 1, stride, act=None))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.relu(self.c2(self.c1(x)) + self.short(x))


class ResNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.stem = conv_bn(3, 16, 3, 2)                  # 16x16
        self.b1 = BasicBlock(16, 16, 1)
        self.b2 = BasicBlock(16, 24, 2)                   # 8x8
        self.fc = nn.Linear(24, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.b2(self.b1(self.stem(x)))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(y, 1), 1))


class DSCNN(nn.Module):
    def __init__(self, c: int = 32, classes: int = 12) -> None:
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(1, c, (10, 4), (2, 2), (5, 1), bias=False), bn(c), nn.ReLU())
        blocks = []
        for _ in range(3):
            blocks += [conv_bn(c, c, 3, groups=c), conv_bn(c, c, 1)]
        self.blocks = nn.Sequential(*blocks)
        self.pool = nn.AvgPool2d((25, 5))
        self.fc = nn.Linear(c, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.pool(self.blocks(self.stem(x)))          # 25x5 -> 1x1
        return self.fc(torch.flatten(y, 1))


class Conv1dAudio(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv1d(1, 8, 9, 2, 4), nn.BatchNorm1d(8), nn.ReLU(),        # 128
            nn.Conv1d(8, 16, 5, 2, 2), nn.BatchNorm1d(16), nn.ReLU(),      # 64
            nn.MaxPool1d(2),                                               # 32
            nn.Conv1d(16, 16, 3, 1, 1), nn.BatchNorm1d(16), nn.ReLU(),
            nn.AdaptiveAvgPool1d(1))
        self.fc = nn.Linear(16, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(torch.flatten(self.net(x), 1))


class MLPAutoencoder(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        dims = [64, 32, 16, 8, 16, 32, 64]
        layers: list[nn.Module] = []
        for i, (a, b) in enumerate(itertools.pairwise(dims)):
            layers.append(nn.Linear(a, b))
            if i < len(dims) - 2:
                layers.append(nn.ReLU())
        self.net = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


class Inception(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.stem = conv_bn(3, 16, 3, 2)                  # 16x16
        self.b1 = conv_bn(16, 8, 1)
        self.b3 = nn.Sequential(conv_bn(16, 8, 1), conv_bn(8, 12, 3))
        self.b5 = nn.Sequential(conv_bn(16, 4, 1), conv_bn(4, 8, 5))
        self.bp = nn.Sequential(nn.MaxPool2d(3, 1, 1), conv_bn(16, 8, 1))
        self.fc = nn.Linear(36, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.stem(x)
        y = torch.cat([self.b1(y), self.b3(y), self.b5(y), self.bp(y)], 1)
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(y, 1), 1))


class SESigmoid(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.c1 = conv_bn(3, 16, 3, 2)                    # 16x16
        self.c2 = conv_bn(16, 16, 3)
        self.fc1 = nn.Linear(16, 4)
        self.fc2 = nn.Linear(4, 16)
        self.head = conv_bn(16, 24, 3, 2)                 # 8x8
        self.fc = nn.Linear(24, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.c2(self.c1(x))
        s = torch.flatten(F.adaptive_avg_pool2d(y, 1), 1)
        s = torch.sigmoid(self.fc2(F.relu(self.fc1(s))))
        y = y * s.reshape(1, 16, 1, 1)
        y = self.head(y)
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(y, 1), 1))


class SEHardSigmoid(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.c1 = conv_bn(3, 16, 3, 2, act=nn.Hardswish)  # 16x16
        self.dw = conv_bn(16, 16, 3, groups=16, act=nn.ReLU)
        self.se1 = nn.Conv2d(16, 8, 1)
        self.se2 = nn.Conv2d(8, 16, 1)
        self.pw = conv_bn(16, 24, 1, act=None)
        self.fc = nn.Linear(24, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.dw(self.c1(x))
        s = F.adaptive_avg_pool2d(y, 1)
        s = F.hardsigmoid(self.se2(F.relu(self.se1(s))))
        y = self.pw(y * s)
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(y, 1), 1))


class HardSwishNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(conv_bn(3, 16, 3, 2, act=nn.Hardswish),
                                 conv_bn(16, 16, 3, groups=16, act=nn.Hardswish),
                                 conv_bn(16, 24, 1, act=nn.Hardswish),
                                 conv_bn(24, 24, 3, 2, groups=24, act=nn.Hardswish),
                                 conv_bn(24, 32, 1, act=nn.Hardswish))
        self.fc = nn.Linear(32, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(self.net(x), 1), 1))


class LeakyNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()

        def act() -> nn.Module:
            return nn.LeakyReLU(0.1)

        self.net = nn.Sequential(nn.Conv2d(3, 16, 3, 2, 1), bn(16), act(),
                                 nn.Conv2d(16, 16, 3, 1, 1), bn(16), act(),
                                 nn.Conv2d(16, 24, 3, 2, 1), bn(24), act())
        self.fc = nn.Linear(24, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(self.net(x), 1), 1))


class EncDec(nn.Module):
    def __init__(self, mode: str) -> None:
        super().__init__()
        self.mode = mode
        self.e1 = conv_bn(3, 8, 3, 2)                     # 16x16
        self.e2 = conv_bn(8, 16, 3, 2)                    # 8x8
        self.d1 = conv_bn(16, 8, 3)
        self.d2 = nn.Conv2d(8, 2, 3, 1, 1)

    def up(self, x: torch.Tensor) -> torch.Tensor:
        if self.mode == "nearest":
            return F.interpolate(x, scale_factor=2.0, mode="nearest")
        return F.interpolate(x, scale_factor=2.0, mode="bilinear", align_corners=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.e2(self.e1(x))
        y = self.d1(self.up(y))                           # 16x16
        return self.d2(self.up(y))                        # 32x32


class MaxPoolPad(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.c1 = conv_bn(3, 8, 3)                        # 32x32
        self.c2 = nn.Sequential(nn.Conv2d(8, 16, 3, 1, 0, bias=False), bn(16), nn.ReLU())
        self.c3 = nn.Sequential(nn.Conv2d(16, 16, 3, 1, 0, bias=False), bn(16), nn.ReLU())
        self.fc = nn.Linear(16, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = F.max_pool2d(self.c1(x), 3, 2, 1)             # 16x16, padded max pool
        y = self.c2(F.pad(y, (1, 1, 1, 1)))               # Pad -> 18x18 -> conv valid -> 16x16
        y = F.pad(y, (0, 1, 0, 1))                        # asymmetric Pad -> 17x17
        y = F.max_pool2d(self.c3(y), 2, 2)                # 15x15 -> 7x7
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(y, 1), 1))


class SliceSplit(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.c1 = conv_bn(3, 16, 3)                       # 24x24
        self.ca = conv_bn(8, 8, 3, 2)                     # 12x12
        self.cb = conv_bn(8, 8, 1)
        self.head = conv_bn(20, 24, 3, 2)                 # 5x5 (input 10x10)
        self.fc = nn.Linear(24, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.c1(x)
        a, b = torch.split(y, [8, 8], dim=1)              # Split
        a = self.ca(a)                                    # 12x12
        b = self.cb(b[:, :, ::2, ::2])                    # strided Slice, 12x12
        c = y[:, 4:8, 6:18, 6:18]                         # channel + spatial crop Slice, 12x12
        z = torch.cat([a, b, c], 1)[:, :, 1:11, 1:11]     # Concat, crop Slice -> 20x10x10
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(self.head(z), 1), 1))


BUILDERS = {
    "mbv2_blocks": MBV2,
    "resnet_blocks": ResNet,
    "dscnn_kws": DSCNN,
    "conv1d_audio": Conv1dAudio,
    "mlp_autoencoder": MLPAutoencoder,
    "inception_block": Inception,
    "se_sigmoid": SESigmoid,
    "se_hardsigmoid": SEHardSigmoid,
    "hardswish": HardSwishNet,
    "leakyrelu": LeakyNet,
    "resize_nearest": lambda: EncDec("nearest"),
    "resize_bilinear": lambda: EncDec("bilinear"),
    "maxpool_pad": MaxPoolPad,
    "slice_split": SliceSplit,
}


def randomize(model: nn.Module, seed: int) -> nn.Module:
    """Seeded weights; BatchNorm gets non-trivial affine parameters and running statistics."""
    torch.manual_seed(seed)
    for m in model.modules():
        if isinstance(m, (nn.Conv1d, nn.Conv2d, nn.Linear)):
            nn.init.kaiming_normal_(m.weight, nonlinearity="relu")
            if m.bias is not None:
                nn.init.uniform_(m.bias, -0.1, 0.1)
        elif isinstance(m, (nn.BatchNorm1d, nn.BatchNorm2d)):
            n = m.num_features
            m.weight.data = 0.5 + torch.rand(n)
            m.bias.data = 0.2 * torch.randn(n)
            m.running_mean = 0.2 * torch.randn(n)
            m.running_var = 0.5 + torch.rand(n)
    return model.eval()


def export(name: str, seed: int) -> bytes:
    spec = BY_NAME[name]
    model = randomize(BUILDERS[name](), seed)
    x = torch.zeros(spec.input_shape)
    buf = io.BytesIO()
    torch.onnx.export(model, (x,), buf, opset_version=spec.opset, dynamo=False,
                      input_names=[spec.input_name], output_names=["y"],
                      do_constant_folding=True, training=torch.onnx.TrainingMode.EVAL)
    proto = onnx.load_from_string(buf.getvalue())
    proto.producer_name = "mcugen tests/models/zoo/make_zoo.py"
    proto.graph.name = name
    proto = onnx.shape_inference.infer_shapes(proto, strict_mode=True)
    onnx.checker.check_model(proto, full_check=True)
    return proto.SerializeToString()


def main() -> int:
    MODELS.mkdir(parents=True, exist_ok=True)
    total = 0
    for seed, spec in enumerate(CATALOG):
        data = export(spec.name, 100 + seed)
        if len(data) > MAX_BYTES:
            raise SystemExit(f"{spec.name}: {len(data)} bytes > {MAX_BYTES}")
        spec.path.write_bytes(data)
        total += len(data)
        ops = sorted({n.op_type for n in onnx.load_from_string(data).graph.node})
        print(f"{spec.name:<18} {len(data):>8,} B  {' '.join(ops)}")
    if total > MAX_TOTAL:
        raise SystemExit(f"total {total} bytes > {MAX_TOTAL}")
    print(f"{'total':<18} {total:>8,} B in {MODELS}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
