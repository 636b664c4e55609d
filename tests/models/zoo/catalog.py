"""The zoo's models: what each one is, its input and how to feed it (no torch needed).

`make_zoo.py` (dev only, needs torch) exports the float models listed here into models/; the tests
and scripts/zoo_report.py quantize them at test time (variants.py) with calibration data from `calib_feeds`.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

ZOO = Path(__file__).resolve().parent
MODELS = ZOO / "models"
N_CALIB = 16
CALIB_SEED = 1000
EVAL_SEED = 2000


@dataclass(frozen=True)
class ZooModel:
    name: str
    input_shape: tuple[int, ...]
    dist: tuple[str, float, float]  # ("uniform", lo, hi) or ("normal", mean, std)
    classifier: bool  # logits output: report top-1 (argmax) agreement
    about: str
    opset: int = 13

    @property
    def path(self) -> Path:
        return MODELS / f"{self.name}.onnx"

    @property
    def input_name(self) -> str:
        return "x"

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """n float32 inputs, shape (n, *input_shape)."""
        kind, a, b = self.dist
        size = (n, *self.input_shape)
        if kind == "uniform":
            x = rng.uniform(a, b, size=size)
        elif kind == "normal":
            x = rng.normal(a, b, size=size)
        else:
            raise ValueError(f"{self.name}: unknown input distribution {kind!r}")
        return x.astype(np.float32)

    def calib_feeds(self, n: int = N_CALIB) -> list[dict[str, np.ndarray]]:
        """Seeded calibration feeds for onnxruntime quantize_static."""
        xs = self.sample(np.random.default_rng(CALIB_SEED + _stable(self.name)), n)
        return [{self.input_name: x} for x in xs]

    def eval_inputs(self, n: int = 32) -> np.ndarray:
        """Seeded evaluation inputs (float32), drawn apart from the calibration data."""
        return self.sample(np.random.default_rng(EVAL_SEED + _stable(self.name)), n)


def _stable(name: str) -> int:
    return sum((i + 1) * ord(ch) for i, ch in enumerate(name)) % 997


IMG = (1, 3, 32, 32)
IMG_RANGE = ("uniform", -1.0, 1.0)

CATALOG: tuple[ZooModel, ...] = (
    ZooModel("mbv2_blocks", IMG, IMG_RANGE, True,
             "MobileNetV2 inverted residual blocks: 1x1 expand, 3x3 depthwise, 1x1 project, "
             "ReLU6, residual Add"),
    ZooModel("resnet_blocks", IMG, IMG_RANGE, True,
             "ResNet basic blocks (3x3 conv pairs, identity and 1x1 stride-2 shortcuts, Add+ReLU)"),
    ZooModel("dscnn_kws", (1, 1, 49, 10), ("normal", 0.0, 4.0), True,
             "DS-CNN keyword spotting on 49x10 MFCC: 10x4 stride-2 conv, depthwise separable "
             "blocks, AveragePool, FC"),
    ZooModel("conv1d_audio", (1, 1, 256), ("uniform", -1.0, 1.0), True,
             "1-D conv audio net on a raw waveform: Conv1d stride 2, MaxPool1d, global pool, FC"),
    ZooModel("mlp_autoencoder", (1, 64), ("uniform", 0.0, 1.0), False,
             "MLP autoencoder 64-32-16-8-16-32-64 (Gemm + ReLU)"),
    ZooModel("inception_block", IMG, IMG_RANGE, True,
             "Inception-style block: 1x1, 3x3, 5x5 and maxpool branches joined by Concat"),
    ZooModel("se_sigmoid", IMG, IMG_RANGE, True,
             "Squeeze-and-Excitation: GlobalAveragePool -> Flatten -> FC -> ReLU -> FC -> "
             "Sigmoid -> Reshape -> broadcast Mul"),
    ZooModel("se_hardsigmoid", IMG, IMG_RANGE, True,
             "MobileNetV3-style SE: GlobalAveragePool -> 1x1 conv -> ReLU -> 1x1 conv -> "
             "HardSigmoid -> broadcast Mul; Hardswish exported at opset 13 (HardSigmoid * x)"),
    ZooModel("hardswish", IMG, IMG_RANGE, True,
             "Conv/depthwise with the HardSwish op (opset 14)", opset=14),
    ZooModel("leakyrelu", IMG, IMG_RANGE, True, "Conv with LeakyRelu(0.1)"),
    ZooModel("resize_nearest", IMG, IMG_RANGE, False,
             "Encoder-decoder: stride-2 convs, 2x nearest Resize upsampling, segmentation logits"),
    ZooModel("resize_bilinear", IMG, IMG_RANGE, False,
             "Encoder-decoder with 2x bilinear Resize (half_pixel)"),
    ZooModel("maxpool_pad", IMG, IMG_RANGE, True,
             "MaxPool 3x3/2 with padding, explicit constant Pad (symmetric and asymmetric), "
             "MaxPool 2x2"),
    ZooModel("slice_split", (1, 3, 24, 24), IMG_RANGE, True,
             "Split into channel groups, strided and cropping Slice, Concat"),
)

BY_NAME = {m.name: m for m in CATALOG}
