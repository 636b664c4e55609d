"""Regenerate the keyword example: spoken words synthesised with espeak-ng, MFCC features through
mcugen's front end (cmsisdsp: the device's numbers), a small numpy-trained network, INT8 by
`mcugen quantize`.

Dev-only script. Needs espeak-ng (`apt-get install espeak-ng`, scripts/setup.sh installs it) and
the cmsisdsp package. Run from the repository root:

    python examples/keyword_audio/make_keyword_model.py

Writes, next to this file:
    keyword_fp32.onnx   float model: input "mfcc" float32 [1,49,10] (q8.7 MFCC values, i.e. raw / 128),
                        output "logits" float32 [1,9]; a temporal CNN (about 2.7 k parameters)
    keyword_int8.onnx   `mcugen quantize` of it (QDQ, per-channel int8 weights, int8 activations)
    heldout.npz         held-out clips: `mulaw` uint8 [N,6400] (8-bit mu-law codes, mu = 255, of the
                        8 kHz PCM), `table` int16 [256] (the sample of each code: decoding is exact),
                        `labels` int64 [N]

Everything is seeded (voices, speeds, pitches, placement, noise, weight init, batch order).
"""
from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto as TP
from onnx import helper as H
from onnx import numpy_helper as NH

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))
sys.path.insert(0, str(HERE))

from keyword_data import CLASSES, encode_mulaw, make_clips, mulaw_table  # noqa: E402

from emitter.features import features_raw, load_spec  # noqa: E402

SPEC = HERE / "frontend.toml"
TRAIN_PER_CLASS, VAL_PER_CLASS, HELDOUT_PER_CLASS = 160, 50, 4


def features(clips: np.ndarray) -> np.ndarray:
    """Float MFCC [N, 49, 10]: the front end's q8.7 values / 128, computed by cmsisdsp."""
    spec = load_spec(SPEC)
    return np.stack([features_raw(spec, c, 49) for c in clips]).astype(np.float32) / 128.0


K1, C1, K2, C2 = 5, 16, 3, 32  # conv 1: 5 frames x all 10 coefficients -> 16; conv 2: 3 frames -> 32


def windows(x: np.ndarray, k: int) -> np.ndarray:
    """[N, T, F] -> [N, T - k + 1, k * F]: the im2col of a valid 1-D convolution over time."""
    t = x.shape[1] - k + 1
    return np.concatenate([x[:, i:i + t] for i in range(k)], axis=2)


def unwindows(g: np.ndarray, k: int, f: int) -> np.ndarray:
    """The adjoint of windows(): gradients [N, T', k * F] -> [N, T' + k - 1, F]."""
    n, t, _ = g.shape
    out = np.zeros((n, t + k - 1, f))
    for i in range(k):
        out[:, i:i + t] += g[:, :, i * f:(i + 1) * f]
    return out


def train(x: np.ndarray, y: np.ndarray, seed: int = 0, epochs: int = 60) -> list[np.ndarray]:
    """Conv(5x10 -> 16) -> ReLU -> Conv(3x1 -> 32) -> ReLU -> mean over time -> Dense(9), with Adam in
    numpy; the per-coefficient input standardisation is folded into the first convolution."""
    rng = np.random.default_rng(seed)
    mu, sd = x.mean((0, 1)), x.std((0, 1)) + 1e-3
    z = (x - mu) / sd
    f = z.shape[2]
    params = [rng.normal(0, np.sqrt(2 / (K1 * f)), (K1 * f, C1)), np.zeros(C1),
              rng.normal(0, np.sqrt(2 / (K2 * C1)), (K2 * C1, C2)), np.zeros(C2),
              rng.normal(0, np.sqrt(1 / C2), (C2, len(CLASSES))), np.zeros(len(CLASSES))]
    m = [np.zeros_like(p) for p in params]
    v = [np.zeros_like(p) for p in params]
    step, lr, wd = 0, 3e-3, 1e-4
    for _ in range(epochs):
        order = rng.permutation(len(z))
        for b in range(0, len(z), 32):
            idx = order[b:b + 32]
            w1 = windows(z[idx] + rng.normal(0, 0.05, z[idx].shape), K1)
            h1 = np.maximum(w1 @ params[0] + params[1], 0)
            w2 = windows(h1, K2)
            h2 = np.maximum(w2 @ params[2] + params[3], 0)
            pooled = h2.mean(1)
            logits = pooled @ params[4] + params[5]
            p = np.exp(logits - logits.max(1, keepdims=True))
            p /= p.sum(1, keepdims=True)
            p[np.arange(len(idx)), y[idx]] -= 1
            g_out = p / len(idx)
            g_h2 = np.repeat((g_out @ params[4].T)[:, None, :], h2.shape[1], 1) / h2.shape[1] * (h2 > 0)
            g_h1 = unwindows(g_h2 @ params[2].T, K2, C1) * (h1 > 0)
            grads = [np.einsum("ntk,ntc->kc", w1, g_h1) + wd * params[0], g_h1.sum((0, 1)),
                     np.einsum("ntk,ntc->kc", w2, g_h2) + wd * params[2], g_h2.sum((0, 1)),
                     pooled.T @ g_out + wd * params[4], g_out.sum(0)]
            step += 1
            for k, g in enumerate(grads):
                m[k] = 0.9 * m[k] + 0.1 * g
                v[k] = 0.999 * v[k] + 0.001 * g * g
                params[k] -= lr * (m[k] / (1 - 0.9 ** step)) / (np.sqrt(v[k] / (1 - 0.999 ** step)) + 1e-8)
    w1 = params[0].reshape(K1, f, C1) / sd[None, :, None]
    b1 = params[1] - np.einsum("kfc,f->c", w1, mu)
    return [w1.transpose(2, 0, 1)[:, None].astype(np.float32), b1.astype(np.float32),
            params[2].reshape(K2, C1, C2).transpose(2, 1, 0)[..., None].astype(np.float32),
            params[3].astype(np.float32), params[4].T.astype(np.float32), params[5].astype(np.float32)]


def to_onnx(w: list[np.ndarray], path: Path) -> None:
    g = H.make_graph(
        [H.make_node("Reshape", ["mfcc", "image_shape"], ["image"]),
         H.make_node("Conv", ["image", "w1", "b1"], ["c1"]), H.make_node("Relu", ["c1"], ["r1"]),
         H.make_node("Conv", ["r1", "w2", "b2"], ["c2"]), H.make_node("Relu", ["c2"], ["r2"]),
         H.make_node("GlobalAveragePool", ["r2"], ["pooled"]), H.make_node("Flatten", ["pooled"], ["flat"]),
         H.make_node("Gemm", ["flat", "w3", "b3"], ["logits"], transB=1)],
        "keyword_tcnn", [H.make_tensor_value_info("mfcc", TP.FLOAT, [1, 49, 10])],
        [H.make_tensor_value_info("logits", TP.FLOAT, [1, len(CLASSES)])],
        [NH.from_array(np.array([1, 1, 49, 10], np.int64), "image_shape"), NH.from_array(w[0], "w1"),
         NH.from_array(w[1], "b1"), NH.from_array(w[2], "w2"), NH.from_array(w[3], "b2"),
         NH.from_array(w[4], "w3"), NH.from_array(w[5], "b3")])
    model = H.make_model(g, opset_imports=[H.make_opsetid("", 13)], producer_name="mcugen-example")
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, path)


def main() -> int:
    per_class = TRAIN_PER_CLASS + VAL_PER_CLASS + HELDOUT_PER_CLASS
    clips, labels = make_clips(per_class, seed=14)
    rng = np.random.default_rng(1)
    order = rng.permutation(len(clips))
    held = order[:HELDOUT_PER_CLASS * len(CLASSES)]
    val = order[len(held):len(held) + VAL_PER_CLASS * len(CLASSES)]
    tr = order[len(held) + len(val):]
    x = features(clips)
    weights = train(x[tr], labels[tr])
    to_onnx(weights, HERE / "keyword_fp32.onnx")
    with tempfile.TemporaryDirectory() as tmp:
        calib = Path(tmp) / "calib.npz"
        np.savez(calib, mfcc=x[tr[:300]][:, None])
        vals = Path(tmp) / "val.npz"
        np.savez(vals, mfcc=x[val][:, None], labels=labels[val])
        print(f"validation set: {len(val)} clips (training {len(tr)}, held out {len(held)})")
        subprocess.run([sys.executable, "-m", "emitter.cli", "quantize", str(HERE / "keyword_fp32.onnx"),
                        "--calibration", str(calib), "-o", str(HERE / "keyword_int8.onnx"),
                        "--labels", str(vals), "--board", "cortex-m4", "--no-qemu"], check=True)
    np.savez_compressed(HERE / "heldout.npz", mulaw=encode_mulaw(clips[held]), table=mulaw_table(),
                        labels=labels[held])
    print(f"wrote keyword_fp32.onnx, keyword_int8.onnx, heldout.npz ({len(held)} clips)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
