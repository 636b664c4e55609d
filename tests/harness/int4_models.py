"""4-bit weight test models: small float ONNX graphs (opset 21) quantized by onnxruntime's
quantize_static in QDQ form with 4-bit weights (QInt4 / QUInt4, per channel or per tensor) and
8-bit activations, and their 8-bit twins (the same float graph, weight_type QInt8). Seeded and
cached: `model(kind, root, ...)` writes under `root` (the test session's temporary directory,
tests/test_int4.py's `int4_root` fixture) once per (kind, quantization) and returns the path.

Builders: BUILDERS maps a kind to a function rng -> Float (nodes, float initializers, input shape).
Add one for a new kind (conv, depthwise, transpose conv: I2) with `register`:

    @register("conv3x3")
    def conv3x3(rng: np.random.Generator) -> Float: ...
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 21
WEIGHT_TYPES = ("int4", "uint4", "int8", "uint8")


@dataclass(frozen=True)
class Float:
    """A float graph x -> nodes -> y: its nodes, float initializers and the input's shape."""
    nodes: list[onnx.NodeProto]
    inits: dict[str, np.ndarray]
    in_shape: tuple[int, ...]


BUILDERS: dict[str, Callable[[np.random.Generator], Float]] = {}


def register(kind: str) -> Callable[[Callable[[np.random.Generator], Float]], Callable[[np.random.Generator], Float]]:
    def add(fn: Callable[[np.random.Generator], Float]) -> Callable[[np.random.Generator], Float]:
        BUILDERS[kind] = fn
        return fn
    return add


def _w(rng: np.random.Generator, *shape: int, s: float = 0.3) -> np.ndarray:
    return rng.normal(0, s, shape)


@register("fc")
def fc(rng: np.random.Generator) -> Float:
    """Gemm(transB=1) 64 -> 32 + Relu, Gemm 32 -> 10: torch's nn.Linear pair."""
    nodes = [helper.make_node("Gemm", ["x", "w1", "b1"], ["h"], transB=1),
             helper.make_node("Relu", ["h"], ["r"]),
             helper.make_node("Gemm", ["r", "w2", "b2"], ["y"], transB=1)]
    return Float(nodes, {"w1": _w(rng, 32, 64), "b1": _w(rng, 32, s=0.1), "w2": _w(rng, 10, 32),
                         "b2": _w(rng, 10, s=0.1)}, (1, 64))


@register("mlp_odd")
def mlp_odd(rng: np.random.Generator) -> Float:
    """Odd sizes: MatMul [49 -> 31] + Add(bias) + Relu (tf2onnx's form), Gemm 31 -> 17 + Relu,
    MatMul 17 -> 9."""
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["m1"]), helper.make_node("Add", ["m1", "b1"], ["a1"]),
             helper.make_node("Relu", ["a1"], ["r1"]),
             helper.make_node("Gemm", ["r1", "w2", "b2"], ["g2"]), helper.make_node("Relu", ["g2"], ["r2"]),
             helper.make_node("MatMul", ["r2", "w3"], ["y"])]
    return Float(nodes, {"w1": _w(rng, 49, 31), "b1": _w(rng, 31, s=0.1), "w2": _w(rng, 31, 17),
                         "b2": _w(rng, 17, s=0.1), "w3": _w(rng, 17, 9)}, (1, 49))


@register("fc_batch")
def fc_batch(rng: np.random.Generator) -> Float:
    """Several rows: x [5, 33] Gemm(transB=1) 33 -> 19 + Relu, Gemm 19 -> 7."""
    nodes = [helper.make_node("Gemm", ["x", "w1", "b1"], ["h"], transB=1),
             helper.make_node("Relu", ["h"], ["r"]),
             helper.make_node("Gemm", ["r", "w2", "b2"], ["y"], transB=1)]
    return Float(nodes, {"w1": _w(rng, 19, 33), "b1": _w(rng, 19, s=0.1), "w2": _w(rng, 7, 19),
                         "b2": _w(rng, 7, s=0.1)}, (5, 33))


@register("fc_wide")
def fc_wide(rng: np.random.Generator) -> Float:
    """A larger MLP for instruction counts: 256 -> 128 + Relu -> 64 + Relu -> 10 (Gemm, transB=1)."""
    nodes = [helper.make_node("Gemm", ["x", "w1", "b1"], ["h1"], transB=1), helper.make_node("Relu", ["h1"], ["r1"]),
             helper.make_node("Gemm", ["r1", "w2", "b2"], ["h2"], transB=1), helper.make_node("Relu", ["h2"], ["r2"]),
             helper.make_node("Gemm", ["r2", "w3", "b3"], ["y"], transB=1)]
    return Float(nodes, {"w1": _w(rng, 128, 256, s=0.1), "b1": _w(rng, 128, s=0.1),
                         "w2": _w(rng, 64, 128, s=0.1), "b2": _w(rng, 64, s=0.1),
                         "w3": _w(rng, 10, 64), "b3": _w(rng, 10, s=0.1)}, (1, 256))


def float_model(kind: str, seed: int = 0) -> onnx.ModelProto:
    f = BUILDERS[kind](np.random.default_rng(seed))
    graph = helper.make_graph(f.nodes, kind, [helper.make_tensor_value_info("x", TensorProto.FLOAT, f.in_shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              [numpy_helper.from_array(v.astype(np.float32), k) for k, v in f.inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = 10
    return model


def in_shape(kind: str) -> tuple[int, ...]:
    return BUILDERS[kind](np.random.default_rng(0)).in_shape


def feeds(kind: str, n: int = 16, seed: int = 1) -> list[dict[str, np.ndarray]]:
    """Calibration / test inputs: uniform in [-1, 1]."""
    rng = np.random.default_rng(seed)
    shape = in_shape(kind)
    return [{"x": rng.uniform(-1, 1, shape).astype(np.float32)} for _ in range(n)]


def model(kind: str, root: Path, weight_type: str = "int4", per_channel: bool = True,
          activation_type: str = "int8", symmetric: bool = True) -> Path:
    """`kind` quantized by quantize_static (QDQ, opset 21) with `weight_type` weights (int4, uint4,
    int8, uint8), per channel or per tensor, `activation_type` (int8/uint8) activations;
    `symmetric=False`: WeightSymmetric off (uint4 weights then get zero points other than 8).
    Cached under root."""
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

    class Feeds(CalibrationDataReader):  # type: ignore[misc]
        def __init__(self, items: list[dict[str, np.ndarray]]) -> None:
            self._it = iter(items)

        def get_next(self) -> dict[str, np.ndarray] | None:
            return next(self._it, None)

    types = {"int4": QuantType.QInt4, "uint4": QuantType.QUInt4, "int8": QuantType.QInt8,
             "uint8": QuantType.QUInt8}
    name = f"{kind}_{weight_type}_{'pc' if per_channel else 'pt'}_{activation_type}{'' if symmetric else '_asym'}"
    folder = root / "int4_models"
    out = folder / f"{name}.onnx"
    if out.exists():
        return out
    folder.mkdir(parents=True, exist_ok=True)
    f32 = folder / f"{kind}.f32.onnx"
    onnx.save(float_model(kind), f32)
    tmp = folder / f"{name}.tmp.onnx"
    quantize_static(str(f32), str(tmp), Feeds(feeds(kind)), quant_format=QuantFormat.QDQ, per_channel=per_channel,
                    activation_type=types[activation_type], weight_type=types[weight_type],
                    extra_options={"WeightSymmetric": symmetric})
    tmp.replace(out)  # atomic: a cached file is whole
    return out


# -- convolutions (I2): regular, depthwise, transposed and 1-D ------------------------------------
@register("conv")
def conv(rng: np.random.Generator) -> Float:
    """Conv 3x3 pad 1 [3 -> 12] + Relu, Conv 3x3 stride 2 [12 -> 17] + Relu, Conv 1x1 [17 -> 9]
    (odd channel counts, K = 27, 108 and 17: whole 32-weight blocks and tails)."""
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], strides=[2, 2]),
             helper.make_node("Relu", ["c2"], ["r2"]),
             helper.make_node("Conv", ["r2", "w3", "b3"], ["y"])]
    return Float(nodes, {"w1": _w(rng, 12, 3, 3, 3), "b1": _w(rng, 12, s=0.1), "w2": _w(rng, 17, 12, 3, 3, s=0.1),
                         "b2": _w(rng, 17, s=0.1), "w3": _w(rng, 9, 17, 1, 1), "b3": _w(rng, 9, s=0.1)},
                 (1, 3, 10, 9))


@register("depthwise")
def depthwise(rng: np.random.Generator) -> Float:
    """Conv 1x1 [4 -> 13], depthwise 3x3 pad 1 (13 channels) + Relu, depthwise 3x3 stride 2
    multiplier 2 (13 -> 26), Conv 1x1 [26 -> 6]."""
    nodes = [helper.make_node("Conv", ["x", "w0", "b0"], ["c0"]),
             helper.make_node("Conv", ["c0", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1], group=13),
             helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], strides=[2, 2], group=13),
             helper.make_node("Conv", ["c2", "w3", "b3"], ["y"])]
    return Float(nodes, {"w0": _w(rng, 13, 4, 1, 1), "b0": _w(rng, 13, s=0.1), "w1": _w(rng, 13, 1, 3, 3),
                         "b1": _w(rng, 13, s=0.1), "w2": _w(rng, 26, 1, 3, 3), "b2": _w(rng, 26, s=0.1),
                         "w3": _w(rng, 6, 26, 1, 1), "b3": _w(rng, 6, s=0.1)}, (1, 4, 9, 8))


@register("conv_transpose")
def conv_transpose(rng: np.random.Generator) -> Float:
    """Conv 3x3 [3 -> 7] + Relu, ConvTranspose 3x3 stride 2 pad 1 output_padding 1 [7 -> 5]."""
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("ConvTranspose", ["r1", "w2", "b2"], ["y"], strides=[2, 2], pads=[1, 1, 1, 1],
                              output_padding=[1, 1])]
    return Float(nodes, {"w1": _w(rng, 7, 3, 3, 3), "b1": _w(rng, 7, s=0.1), "w2": _w(rng, 7, 5, 3, 3),
                         "b2": _w(rng, 5, s=0.1)}, (1, 3, 6, 5))


@register("conv_transpose_wide")
def conv_transpose_wide(rng: np.random.Generator) -> Float:
    """Conv 3x3 [3 -> 45] + Relu, ConvTranspose 2x2 stride 2 [45 -> 6]: C_in 45 is one 32-channel step
    of the MVE path plus a tail of 13 (the DSP path: eleven 4-channel steps and one channel)."""
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("ConvTranspose", ["r1", "w2", "b2"], ["y"], strides=[2, 2])]
    return Float(nodes, {"w1": _w(rng, 45, 3, 3, 3), "b1": _w(rng, 45, s=0.1), "w2": _w(rng, 45, 6, 2, 2),
                         "b2": _w(rng, 6, s=0.1)}, (1, 3, 4, 5))


@register("conv1d")
def conv1d(rng: np.random.Generator) -> Float:
    """A keyword-spotting-like 1-D stack on [1, 10, 49]: Conv1d k=5 pad 2 [10 -> 24] + Relu,
    depthwise Conv1d k=3 dilation 2 pad 2 + Relu, Conv1d k=1 [24 -> 11]."""
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[2, 2]),
             helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], pads=[2, 2], dilations=[2], group=24),
             helper.make_node("Relu", ["c2"], ["r2"]),
             helper.make_node("Conv", ["r2", "w3", "b3"], ["y"])]
    return Float(nodes, {"w1": _w(rng, 24, 10, 5, s=0.2), "b1": _w(rng, 24, s=0.1), "w2": _w(rng, 24, 1, 3),
                         "b2": _w(rng, 24, s=0.1), "w3": _w(rng, 11, 24, 1), "b3": _w(rng, 11, s=0.1)},
                 (1, 10, 49))
