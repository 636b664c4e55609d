"""Regenerate mcugen's demo model: a small CNN for scikit-learn's 8x8 digits, quantized to INT8.

Dev-only script (torch is not a dependency of mcugen). Needs:

    pip install torch==2.13.0

Run from anywhere:

    python examples/make_digits_model.py

Writes, next to this file:
    digits_cnn_fp32.onnx   float model, opset 13, input "input" float32 [1,1,8,8] in [0,1],
                           output "logits" float32 [1,10]
    digits_cnn_int8.onnx   onnxruntime quantize_static: QDQ, per-channel QInt8 weights,
                           QInt8 activations, MinMax calibration on 200 training images
    digits_heldout.npz     held-out set: images float32 [N,1,8,8] in [0,1], labels int64 [N]

Everything is seeded: the split, weight init, batch order, and calibration set, so a rerun on the
same torch/onnxruntime versions gives the same files.
"""

from __future__ import annotations

import logging
import warnings
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import torch
from onnxruntime.quantization import (
    CalibrationDataReader,
    QuantFormat,
    QuantType,
    quantize_static,
)
from sklearn.datasets import load_digits
from torch import nn

HERE = Path(__file__).resolve().parent
FP32_PATH = HERE / "digits_cnn_fp32.onnx"
INT8_PATH = HERE / "digits_cnn_int8.onnx"
HELDOUT_PATH = HERE / "digits_heldout.npz"

SEED = 0
HELDOUT_FRACTION = 0.2
EPOCHS = 80
BATCH = 64
LR = 3e-3
N_CALIB = 200
OPSET = 13


class DigitsCNN(nn.Module):
    """conv3x3, conv3x3/s2, depthwise 3x3, pointwise (ReLU after each), flatten, linear."""

    def __init__(self) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 8, 3, padding=1),  # [1,8,8,8]
            nn.ReLU(),
            nn.Conv2d(8, 16, 3, stride=2, padding=1),  # [1,16,4,4]
            nn.ReLU(),
            nn.Conv2d(16, 16, 3, padding=1, groups=16),  # depthwise, [1,16,4,4]
            nn.ReLU(),
            nn.Conv2d(16, 16, 1),  # pointwise, [1,16,4,4]
            nn.ReLU(),
        )
        self.classifier = nn.Linear(16 * 4 * 4, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = self.classifier(torch.flatten(self.features(x), 1))
        return out


def load_split() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Digits as float32 NCHW in [0,1]; seeded permutation, last 20% held out."""
    digits = load_digits()
    images = (digits.images.astype(np.float32) / 16.0).reshape(-1, 1, 8, 8)
    labels = digits.target.astype(np.int64)
    order = np.random.default_rng(SEED).permutation(len(labels))
    n_train = len(labels) - round(HELDOUT_FRACTION * len(labels))
    train, held = order[:n_train], order[n_train:]
    return images[train], labels[train], images[held], labels[held]


def train(x: np.ndarray, y: np.ndarray) -> DigitsCNN:
    torch.manual_seed(SEED)
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)
    model = DigitsCNN()
    opt = torch.optim.Adam(model.parameters(), lr=LR)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=EPOCHS)
    xt, yt = torch.from_numpy(x), torch.from_numpy(y)
    gen = torch.Generator().manual_seed(SEED)
    loss_fn = nn.CrossEntropyLoss()
    model.train()
    for _ in range(EPOCHS):
        perm = torch.randperm(len(yt), generator=gen)
        for i in range(0, len(perm), BATCH):
            idx = perm[i : i + BATCH]
            opt.zero_grad()
            loss_fn(model(xt[idx]), yt[idx]).backward()
            opt.step()
        sched.step()
    model.eval()
    return model


def export_fp32(model: DigitsCNN) -> None:
    dummy = torch.zeros(1, 1, 8, 8)
    torch.onnx.export(
        model,
        (dummy,),
        str(FP32_PATH),
        dynamo=False,  # the TorchScript exporter: no onnxscript needed, plain opset-13 graph
        opset_version=OPSET,
        input_names=["input"],
        output_names=["logits"],
        do_constant_folding=True,
    )
    m = onnx.load(str(FP32_PATH))
    onnx.checker.check_model(m, full_check=True)


class DigitsReader(CalibrationDataReader):  # type: ignore[misc]
    def __init__(self, images: np.ndarray) -> None:
        self._it = iter([{"input": img[None]} for img in images])

    def get_next(self) -> dict[str, np.ndarray] | None:
        return next(self._it, None)


def quantize(calib: np.ndarray) -> None:
    quantize_static(
        str(FP32_PATH),
        str(INT8_PATH),
        DigitsReader(calib),
        quant_format=QuantFormat.QDQ,
        per_channel=True,
        weight_type=QuantType.QInt8,
        activation_type=QuantType.QInt8,
    )


def ort_logits(path: Path, images: np.ndarray) -> np.ndarray:
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
    return np.concatenate([sess.run(None, {"input": img[None]})[0] for img in images])


def main() -> None:
    warnings.filterwarnings("ignore", message=".*legacy TorchScript-based ONNX export.*")
    logging.getLogger().setLevel(logging.ERROR)  # quantize_static's "consider pre-processing" hint
    x_train, y_train, x_held, y_held = load_split()
    model = train(x_train, y_train)
    with torch.no_grad():
        torch_pred = model(torch.from_numpy(x_held)).argmax(1).numpy()
    export_fp32(model)
    calib_idx = np.random.default_rng(SEED + 1).choice(len(x_train), N_CALIB, replace=False)
    quantize(x_train[np.sort(calib_idx)])
    np.savez_compressed(HELDOUT_PATH, images=x_held, labels=y_held)

    fp32_pred = ort_logits(FP32_PATH, x_held).argmax(1)
    int8_pred = ort_logits(INT8_PATH, x_held).argmax(1)
    n = len(y_held)
    print(f"train {len(y_train)} / held-out {n} images")
    print(f"float accuracy (torch)        : {np.mean(torch_pred == y_held):.4f}")
    print(f"float accuracy (onnxruntime)  : {np.mean(fp32_pred == y_held):.4f}")
    print(f"int8 accuracy (onnxruntime)   : {np.mean(int8_pred == y_held):.4f}")
    print(f"int8 vs float top-1 agreement : {np.mean(int8_pred == fp32_pred):.4f}")
    for p in (FP32_PATH, INT8_PATH, HELDOUT_PATH):
        print(f"wrote {p.name} ({p.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
