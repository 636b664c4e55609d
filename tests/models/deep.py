"""Deep onnxruntime-quantized models for the numerics study (docs/numerics_onnxruntime.md) and the
onnxruntime-numerics tests: a MobileNetV2-style and a ResNet-style float network with random
weights and BatchNorm-folded per-channel scales, quantized by onnxruntime's quantize_static.

    mbv2  ~45 layers: stem 3x3/2, 10 inverted residual blocks (1x1 expand, ReLU6, 3x3 depthwise,
          ReLU6, 1x1 project, residual Add at stride 1), 1x1 head, GlobalAveragePool, Gemm -> 10
    resnet ~40 layers: stem 3x3, three stages of basic blocks (3x3, ReLU, 3x3, Add, ReLU), an
          AveragePool 2x2 between stages, GlobalAveragePool, Gemm -> 10

BatchNorm folding gives each output channel its own weight scale (gamma / sqrt(var), log-normal)
and a bias (beta - mean * gamma / sqrt(var)), as a trained network exported from PyTorch has.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto as TP
from onnx import helper as H
from onnx import numpy_helper as NH

from tests.models.ops import quantize

INPUT_SHAPE = (1, 3, 32, 32)


class _Net:
    """A float NCHW graph under construction: each helper appends nodes, returns the output name."""

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []
        self.k = 0

    def _name(self, op: str) -> str:
        self.k += 1
        return f"{op}{self.k}"

    def conv(self, x: str, cin: int, cout: int, k: int, stride: int = 1, group: int = 1,
             act: str | None = "relu", gain: float = 1.0) -> str:
        """Conv with BatchNorm folded in: per-channel scale gamma/sqrt(var), bias."""
        n = self._name("conv")
        fan_in = cin // group * k * k
        w = self.rng.normal(0, np.sqrt(2.0 / fan_in), (cout, cin // group, k, k))
        bn_scale = np.exp(self.rng.normal(0, 0.35, cout)) * gain  # gamma / sqrt(var)
        bias = self.rng.normal(0.05, 0.2, cout) * gain            # beta - mean * bn_scale
        w = w * bn_scale[:, None, None, None]
        self.inits += [NH.from_array(w.astype(np.float32), n + "_w"),
                       NH.from_array(bias.astype(np.float32), n + "_b")]
        self.nodes.append(H.make_node("Conv", [x, n + "_w", n + "_b"], [n], name=n,
                                      kernel_shape=[k, k], strides=[stride, stride],
                                      pads=[k // 2] * 4, group=group))
        if act == "relu":
            return self.relu(n)
        if act == "relu6":
            self.inits += [NH.from_array(np.array(0, np.float32), n + "_lo"),
                           NH.from_array(np.array(6, np.float32), n + "_hi")]
            self.nodes.append(H.make_node("Clip", [n, n + "_lo", n + "_hi"], [n + "_r6"], name=n + "_r6"))
            return n + "_r6"
        return n

    def relu(self, x: str) -> str:
        self.nodes.append(H.make_node("Relu", [x], [x + "_relu"], name=x + "_relu"))
        return x + "_relu"

    def add(self, a: str, b: str) -> str:
        n = self._name("add")
        self.nodes.append(H.make_node("Add", [a, b], [n], name=n))
        return n

    def avgpool(self, x: str) -> str:
        n = self._name("avgpool")
        self.nodes.append(H.make_node("AveragePool", [x], [n], name=n, kernel_shape=[2, 2], strides=[2, 2]))
        return n

    def head(self, x: str, c: int, classes: int = 10) -> str:
        self.nodes.append(H.make_node("GlobalAveragePool", [x], ["gap"], name="gap"))
        self.nodes.append(H.make_node("Flatten", ["gap"], ["flat"], name="flatten"))
        w = self.rng.normal(0, np.sqrt(1.0 / c), (classes, c))
        b = self.rng.normal(0, 0.1, classes)
        self.inits += [NH.from_array(w.astype(np.float32), "fc_w"), NH.from_array(b.astype(np.float32), "fc_b")]
        self.nodes.append(H.make_node("Gemm", ["flat", "fc_w", "fc_b"], ["logits"], name="fc", transB=1))
        return "logits"

    def model(self, name: str, out: str, classes: int = 10) -> onnx.ModelProto:
        graph = H.make_graph(self.nodes, name, [H.make_tensor_value_info("x", TP.FLOAT, list(INPUT_SHAPE))],
                             [H.make_tensor_value_info(out, TP.FLOAT, [1, classes])], self.inits)
        m = H.make_model(graph, opset_imports=[H.make_opsetid("", 13)], producer_name="mcugen-tests")
        m.ir_version = 8
        onnx.checker.check_model(m)
        return m


def mbv2(seed: int = 1) -> onnx.ModelProto:
    net = _Net(seed)
    x = net.conv("x", 3, 16, 3, 2, act="relu6")
    c = 16
    # (expansion, out channels, stride)
    for t, cout, s in [(1, 16, 1), (4, 24, 2), (4, 24, 1), (4, 32, 2), (4, 32, 1), (4, 32, 1),
                       (4, 48, 1), (4, 48, 1), (4, 64, 2), (4, 64, 1)]:
        h = x if t == 1 else net.conv(x, c, c * t, 1, act="relu6")
        h = net.conv(h, c * t, c * t, 3, s, group=c * t, act="relu6")
        h = net.conv(h, c * t, cout, 1, act=None, gain=0.5 if s == 1 and cout == c else 1.0)
        x = net.add(x, h) if s == 1 and cout == c else h
        c = cout
    x = net.conv(x, c, 128, 1, act="relu6")
    return net.model("deep_mbv2", net.head(x, 128))


def resnet(seed: int = 2) -> onnx.ModelProto:
    net = _Net(seed)
    x = net.conv("x", 3, 16, 3)
    c = 16
    for stage, cout in enumerate([16, 32, 48]):
        if stage:
            x = net.avgpool(x)
            x = net.conv(x, c, cout, 1, act="relu")
            c = cout
        for _ in range(3):
            h = net.conv(x, c, c, 3)
            h = net.conv(h, c, c, 3, act=None, gain=0.5)
            x = net.relu(net.add(x, h))
    return net.model("deep_resnet", net.head(x, c))


BUILDERS = {"mbv2": mbv2, "resnet": resnet}


def feeds(n: int, seed: int) -> list[dict[str, np.ndarray]]:
    """`n` inputs like normalised images: N(0, 1), seeded."""
    rng = np.random.default_rng(seed)
    return [{"x": rng.normal(0, 1, INPUT_SHAPE).astype(np.float32)} for _ in range(n)]


def build(kind: str, fmt: str, folder: Path, calib: int = 32) -> Path:
    """The `kind` network quantized by onnxruntime in `fmt` ("qdq" or "qop"), int8 activations and
    per-channel int8 weights, MinMax calibration on `calib` seeded inputs; written into folder."""
    out = Path(folder) / f"deep_{kind}_{fmt}.onnx"
    if not out.is_file():
        quantize(BUILDERS[kind](), feeds(calib, 99), fmt=fmt, out_path=out,
                 op_types=["Conv", "Add", "Relu", "Clip", "AveragePool", "GlobalAveragePool", "Gemm",
                           "Flatten"])
    return out
