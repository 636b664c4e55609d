"""A small keyword-transformer-like model on the digits: each 8x8 image is 8 tokens (its rows) of 8
pixels. Built by hand with onnx.helper (no torch), quantized with `mcugen quantize`.

Dev script, numpy + onnx + onnxruntime only. Run from the repository root:

    python examples/attention/make_attention_model.py [--quantize] [--board cortex-m4]

Network (opset 17, what torch.onnx exports for nn.TransformerEncoderLayer(norm_first=True)):
    x [1, 8, 8] -> MatMul 8->32 + bias + position embedding                    h  [1, 8, 32]
    LayerNormalization -> Q, K, V (MatMul 32->32 + bias each)
      Q, V: Reshape [1, 8, 4, 8] -> Transpose (0, 2, 1, 3)                      [1, 4, 8, 8]
      K:    Reshape [1, 8, 4, 8] -> Transpose (0, 2, 1, 3) -> Transpose (0, 1, 3, 2)
      MatMul(Q, K^T) -> Mul 1/sqrt(8) -> Softmax(-1) -> MatMul(P, V)          [1, 4, 8, 8]
      Transpose (0, 2, 1, 3) -> Reshape [1, 8, 32] -> MatMul 32->32 + bias -> h + it
    LayerNormalization -> MatMul 32->64 + bias -> GELU (x * 0.5 * (1 + erf(x / sqrt 2)), torch's
      export) -> MatMul 64->32 + bias -> h + it
    ReduceMean over the tokens (axis 1, keepdims 0) -> MatMul 32->10 + bias -> logits [1, 10]
The transformer block's weights are seeded random (a random-feature transformer); only the classifier
is fitted (softmax regression in numpy on the pooled features of the training images).

Data: examples/digits_heldout.npz (359 images the digits CNN never saw), split by a seeded
permutation into 240 training and 119 test images. Writes next to this file:
    attention_fp32.onnx   the float model (input "tokens" float32 [1, 8, 8], output "logits")
    calibration.npz       `tokens`: the 240 training images (mcugen quantize --calibration)
    test.npz              `tokens` [119, 8, 8] and `labels` (mcugen quantize --labels)
With --quantize it then runs `mcugen quantize` (attention_int8.onnx, the top-1 table).
"""
from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto as TP
from onnx import helper as H
from onnx import numpy_helper as NH

HERE = Path(__file__).resolve().parent
DIGITS = HERE.parent / "digits_heldout.npz"
SEED = 26
T, D_IN, C, HEADS, MLP, CLASSES = 8, 8, 32, 4, 64, 10
N_TRAIN = 240


def data() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    d = np.load(DIGITS)
    x = d["images"].reshape(-1, T, D_IN).astype(np.float32)
    y = d["labels"].astype(np.int64)
    order = np.random.default_rng(SEED).permutation(len(y))
    tr, te = order[:N_TRAIN], order[N_TRAIN:]
    return x[tr], y[tr], x[te], y[te]


def block_weights(rng: np.random.Generator) -> dict[str, np.ndarray]:
    def w(fan_in: int, *shape: int) -> np.ndarray:
        return (rng.standard_normal(shape) / np.sqrt(fan_in)).astype(np.float32)

    def b(n: int) -> np.ndarray:
        return (0.05 * rng.standard_normal(n)).astype(np.float32)

    pos = np.stack([np.sin(np.arange(C) * (t + 1) / C * np.pi) for t in range(T)]).astype(np.float32)
    return {
        "W_embed": w(D_IN, D_IN, C) * 2, "b_embed": b(C), "pos": 0.5 * pos,
        "ln1_g": (1 + 0.1 * rng.standard_normal(C)).astype(np.float32), "ln1_b": b(C),
        "W_q": w(C, C, C), "b_q": b(C), "W_k": w(C, C, C), "b_k": b(C),
        "W_v": w(C, C, C), "b_v": b(C), "W_o": w(C, C, C), "b_o": b(C),
        "scale": np.float32(1 / np.sqrt(C // HEADS)),
        "ln2_g": (1 + 0.1 * rng.standard_normal(C)).astype(np.float32), "ln2_b": b(C),
        "W_up": w(C, C, MLP), "b_up": b(MLP), "W_down": w(MLP, MLP, C), "b_down": b(C),
        "sqrt2": np.float32(np.sqrt(2.0)), "one": np.float32(1.0), "half": np.float32(0.5),
        "heads_shape": np.array([1, T, HEADS, C // HEADS], np.int64),
        "tokens_shape": np.array([1, T, C], np.int64),
    }


def linear(nodes: list, x: str, w: str, b: str, out: str) -> str:
    nodes.append(H.make_node("MatMul", [x, w], [f"{out}_mm"], name=f"{out}_matmul"))
    nodes.append(H.make_node("Add", [f"{out}_mm", b], [out], name=f"{out}_bias"))
    return out


def heads(nodes: list, x: str, out: str, keys: bool = False) -> str:
    nodes.append(H.make_node("Reshape", [x, "heads_shape"], [f"{out}_split"], name=f"{out}_split"))
    nodes.append(H.make_node("Transpose", [f"{out}_split"], [out], name=f"{out}_heads", perm=[0, 2, 1, 3]))
    if not keys:
        return out
    nodes.append(H.make_node("Transpose", [out], [f"{out}_t"], name=f"{out}_transposed", perm=[0, 1, 3, 2]))
    return f"{out}_t"


def build(weights: dict[str, np.ndarray], classifier: dict[str, np.ndarray] | None) -> onnx.ModelProto:
    """The float model; without a classifier its output is the pooled features [1, C]."""
    n: list = []
    h = linear(n, "tokens", "W_embed", "b_embed", "embed")
    n.append(H.make_node("Add", [h, "pos"], ["h0"], name="position"))
    n.append(H.make_node("LayerNormalization", ["h0", "ln1_g", "ln1_b"], ["ln1"], name="ln1", axis=-1,
                         epsilon=1e-5))
    q = heads(n, linear(n, "ln1", "W_q", "b_q", "q"), "qh")
    k = heads(n, linear(n, "ln1", "W_k", "b_k", "k"), "kh", keys=True)
    v = heads(n, linear(n, "ln1", "W_v", "b_v", "v"), "vh")
    n.append(H.make_node("MatMul", [q, k], ["scores"], name="scores"))
    n.append(H.make_node("Mul", ["scores", "scale"], ["scaled"], name="scaled"))
    n.append(H.make_node("Softmax", ["scaled"], ["probs"], name="softmax", axis=-1))
    n.append(H.make_node("MatMul", ["probs", v], ["context"], name="context"))
    n.append(H.make_node("Transpose", ["context"], ["context_t"], name="merge_heads", perm=[0, 2, 1, 3]))
    n.append(H.make_node("Reshape", ["context_t", "tokens_shape"], ["merged"], name="merged"))
    o = linear(n, "merged", "W_o", "b_o", "attn_out")
    n.append(H.make_node("Add", ["h0", o], ["h1"], name="residual1"))
    n.append(H.make_node("LayerNormalization", ["h1", "ln2_g", "ln2_b"], ["ln2"], name="ln2", axis=-1,
                         epsilon=1e-5))
    up = linear(n, "ln2", "W_up", "b_up", "up")
    n.append(H.make_node("Div", [up, "sqrt2"], ["gelu_div"], name="gelu_div"))
    n.append(H.make_node("Erf", ["gelu_div"], ["gelu_erf"], name="gelu_erf"))
    n.append(H.make_node("Add", ["gelu_erf", "one"], ["gelu_add"], name="gelu_add"))
    n.append(H.make_node("Mul", [up, "gelu_add"], ["gelu_mul"], name="gelu_mul"))
    n.append(H.make_node("Mul", ["gelu_mul", "half"], ["gelu"], name="gelu"))
    down = linear(n, "gelu", "W_down", "b_down", "down")
    n.append(H.make_node("Add", ["h1", down], ["h2"], name="residual2"))
    n.append(H.make_node("ReduceMean", ["h2"], ["pooled"], name="pool_tokens", axes=[1], keepdims=0))
    inits = dict(weights)
    out, shape = "pooled", [1, C]
    if classifier is not None:
        inits.update(classifier)
        out, shape = linear(n, "pooled", "W_cls", "b_cls", "logits"), [1, CLASSES]
    graph = H.make_graph(n, "keyword_transformer", [H.make_tensor_value_info("tokens", TP.FLOAT, [1, T, D_IN])],
                         [H.make_tensor_value_info(out, TP.FLOAT, shape)],
                         initializer=[NH.from_array(np.asarray(v), k) for k, v in inits.items()])
    model = H.make_model(graph, opset_imports=[H.make_opsetid("", 17)], producer_name="mcugen-examples")
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    return model


def run(model: onnx.ModelProto, x: np.ndarray) -> np.ndarray:
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return np.concatenate([sess.run(None, {"tokens": x[i:i + 1]})[0] for i in range(len(x))])


def fit_classifier(f: np.ndarray, y: np.ndarray) -> dict[str, np.ndarray]:
    """Softmax regression on standardized features, seeded full-batch gradient descent, folded back."""
    mu, sd = f.mean(0), f.std(0) + 1e-6
    z = (f - mu) / sd
    w = np.zeros((C, CLASSES))
    b = np.zeros(CLASSES)
    onehot = np.eye(CLASSES)[y]
    for _ in range(3000):
        logits = z @ w + b
        p = np.exp(logits - logits.max(1, keepdims=True))
        p /= p.sum(1, keepdims=True)
        g = (p - onehot) / len(y)
        w -= 0.5 * (z.T @ g + 1e-3 * w)
        b -= 0.5 * g.sum(0)
    return {"W_cls": (w / sd[:, None]).astype(np.float32), "b_cls": (b - (mu / sd) @ w).astype(np.float32)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quantize", action="store_true", help="then run `mcugen quantize` with --labels")
    ap.add_argument("--board", default="cortex-m4")
    args = ap.parse_args()
    x_tr, y_tr, x_te, y_te = data()
    weights = block_weights(np.random.default_rng(SEED))
    cls = fit_classifier(run(build(weights, None), x_tr), y_tr)
    model = build(weights, cls)
    fp32 = HERE / "attention_fp32.onnx"
    onnx.save(model, str(fp32))
    np.savez(HERE / "calibration.npz", tokens=x_tr)
    np.savez(HERE / "test.npz", tokens=x_te, labels=y_te)
    train_acc = float((run(model, x_tr).argmax(1) == y_tr).mean())
    test_acc = float((run(model, x_te).argmax(1) == y_te).mean())
    print(f"float model: top-1 {100 * train_acc:.2f} % on the {len(y_tr)} training images, "
          f"{100 * test_acc:.2f} % on the {len(y_te)} test images -> {fp32}")
    if args.quantize:
        cmd = [sys.executable, "-m", "emitter.cli", "quantize", str(fp32), "--calibration",
               str(HERE / "calibration.npz"), "-o", str(HERE / "attention_int8.onnx"),
               "--labels", str(HERE / "test.npz"), "--board", args.board]
        return subprocess.run(cmd, check=False).returncode
    return 0


if __name__ == "__main__":
    sys.exit(main())
