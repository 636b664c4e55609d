"""int16-activation (A16W8) test models: float graphs quantized by onnxruntime quantize_static with
activation_type=QInt16 (symmetric activations: extra_options ActivationSymmetric=True) and int8
symmetric per-channel weights, as onnxruntime writes them (opset 21, QDQ). Seeded."""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static


class _Feeds(CalibrationDataReader):  # type: ignore[misc]
    def __init__(self, feeds: list[dict[str, np.ndarray]]) -> None:
        self._it = iter(feeds)

    def get_next(self) -> dict[str, np.ndarray] | None:
        return next(self._it, None)


def feeds(shape: tuple[int, ...], n: int = 8, seed: int = 1) -> list[dict[str, np.ndarray]]:
    rng = np.random.default_rng(seed)
    return [{"x": rng.uniform(-1, 1, shape).astype(np.float32)} for _ in range(n)]


def quantize16(nodes: Sequence[onnx.NodeProto], inits: dict[str, np.ndarray], in_shape: tuple[int, ...],
               out: Path, *, symmetric: bool = True, overrides: dict[str, Any] | None = None,
               per_channel: bool = True, op_types: list[str] | None = None) -> Path:
    """Quantize the float graph x -> nodes -> y with int16 activations (zero point 0 when symmetric);
    `overrides`: onnxruntime's TensorQuantOverrides with int8 activations elsewhere (a mixed graph);
    `op_types`: onnxruntime's op_types_to_quantize (its default list leaves Tanh in float)."""
    graph = helper.make_graph(list(nodes), "a16", [helper.make_tensor_value_info("x", TensorProto.FLOAT, in_shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              [numpy_helper.from_array(v.astype(np.float32), k) for k, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    model.ir_version = 10
    f32 = out.with_suffix(".f32.onnx")
    onnx.save(model, f32)
    quantize_static(str(f32), str(out), _Feeds(feeds(in_shape)), quant_format=QuantFormat.QDQ, per_channel=per_channel,
                    op_types_to_quantize=op_types,
                    activation_type=QuantType.QInt8 if overrides else QuantType.QInt16, weight_type=QuantType.QInt8,
                    extra_options={"TensorQuantOverrides": overrides} if overrides
                    else {"ActivationSymmetric": symmetric})
    return out


def _w(rng: np.random.Generator, *shape: int, s: float = 0.3) -> np.ndarray:
    return rng.normal(0, s, shape)


def net(out: Path) -> Path:
    """conv 3x3 + Relu -> depthwise 3x3 -> Add (residual) -> Mul -> MaxPool -> AveragePool (padded) -> Gemm."""
    rng = np.random.default_rng(0)
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1], group=8),
        helper.make_node("Add", ["c2", "r1"], ["a"]),
        helper.make_node("Mul", ["a", "c2"], ["m"]),
        helper.make_node("MaxPool", ["m"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("AveragePool", ["p"], ["q"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
        helper.make_node("Flatten", ["q"], ["f"]),
        helper.make_node("Gemm", ["f", "w3", "b3"], ["y"], transB=1),
    ]
    inits = {"w1": _w(rng, 8, 3, 3, 3), "b1": _w(rng, 8, s=0.1), "w2": _w(rng, 8, 1, 3, 3), "b2": _w(rng, 8, s=0.1),
             "w3": _w(rng, 10, 32, s=0.2), "b3": _w(rng, 10, s=0.1)}
    return quantize16(nodes, inits, (1, 3, 8, 8), out)


def single(op: str, out: Path) -> Path:
    """One op over x [1, 4, 6, 6] (Gemm: over x [1, 24]; add and the pools behind a 1x1 conv)."""
    rng = np.random.default_rng(3)
    lead = helper.make_node("Conv", ["x", "w"], ["c"])  # onnxruntime quantizes a pool behind a quantized op
    if op == "conv":
        return quantize16([helper.make_node("Conv", ["x", "w", "b"], ["y"], pads=[1, 0, 1, 2], strides=[1, 2])],
                          {"w": _w(rng, 5, 4, 3, 2), "b": _w(rng, 5, s=0.1)}, (1, 4, 6, 6), out)
    if op == "depthwise":
        return quantize16([helper.make_node("Conv", ["x", "w", "b"], ["y"], pads=[1, 1, 1, 1], group=4)],
                          {"w": _w(rng, 8, 1, 3, 3), "b": _w(rng, 8, s=0.1)}, (1, 4, 6, 6), out)
    if op == "fc":
        return quantize16([helper.make_node("Gemm", ["x", "w", "b"], ["y"], transB=1)],
                          {"w": _w(rng, 7, 24, s=0.2), "b": _w(rng, 7, s=0.1)}, (1, 24), out)
    if op == "fc_per_tensor":  # CMSIS-NN's arm_fully_connected_s16 takes per-tensor weights only
        return quantize16([helper.make_node("Gemm", ["x", "w", "b"], ["y"], transB=1)],
                          {"w": _w(rng, 7, 24, s=0.2), "b": _w(rng, 7, s=0.1)}, (1, 24), out, per_channel=False)
    if op == "add":
        return quantize16([helper.make_node("Conv", ["x", "w"], ["c"]), helper.make_node("Add", ["x", "c"], ["y"])],
                          {"w": _w(rng, 4, 4, 1, 1)}, (1, 4, 6, 6), out)
    if op == "mul":
        return quantize16([lead, helper.make_node("Mul", ["x", "c"], ["y"])], {"w": _w(rng, 4, 4, 1, 1)},
                          (1, 4, 6, 6), out)
    if op == "maxpool":
        return quantize16([lead, helper.make_node("MaxPool", ["c"], ["y"], kernel_shape=[3, 3], strides=[2, 2],
                                                  pads=[1, 1, 1, 1])], {"w": _w(rng, 4, 4, 1, 1)}, (1, 4, 6, 6), out)
    if op == "avgpool":
        return quantize16([lead, helper.make_node("AveragePool", ["c"], ["y"], kernel_shape=[3, 3], strides=[1, 1],
                                                  pads=[1, 1, 1, 1])], {"w": _w(rng, 4, 4, 1, 1)}, (1, 4, 6, 6), out)
    if op == "gap":
        return quantize16([lead, helper.make_node("GlobalAveragePool", ["c"], ["y"])], {"w": _w(rng, 4, 4, 1, 1)},
                          (1, 4, 6, 6), out)
    if op in ("sigmoid", "tanh", "softmax"):  # behind a 1x1 conv that spreads the inputs over about +-8
        kind = op.capitalize()
        return quantize16([lead, helper.make_node(kind, ["c"], ["y"])], {"w": _w(rng, 4, 4, 1, 1, s=3.0)},
                          (1, 4, 6, 6), out, op_types=["Conv", kind])
    raise ValueError(op)


def mixed(out: Path) -> Path:
    """int8 conv -> QuantizeLinear to int16 -> int16 conv -> QuantizeLinear to int8 -> int8 conv: the
    int8/int16 conversions onnxruntime writes for TensorQuantOverrides with a "convert" entry."""
    rng = np.random.default_rng(4)
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
             helper.make_node("Conv", ["c1", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1]),
             helper.make_node("Conv", ["c2", "w3", "b3"], ["y"])]
    inits = {"w1": _w(rng, 4, 3, 3, 3), "b1": _w(rng, 4, s=0.1), "w2": _w(rng, 4, 4, 3, 3), "b2": _w(rng, 4, s=0.1),
             "w3": _w(rng, 2, 4, 1, 1), "b3": _w(rng, 2, s=0.1)}
    to16 = [{"quant_type": QuantType.QInt8, "convert": {"quant_type": QuantType.QInt16, "symmetric": True}}]
    to8 = [{"quant_type": QuantType.QInt16, "symmetric": True, "convert": {"quant_type": QuantType.QInt8}}]
    return quantize16(nodes, inits, (1, 3, 6, 6), out, overrides={"c1": to16, "c2": to8})


def tflite_style(out: Path) -> Path:
    """What a converted TFLite int16x8 graph looks like: int16 graph input and output (zero point 0),
    DequantizeLinear -> Conv (int8 per-channel weights, float bias) -> QuantizeLinear(int16) ->
    DequantizeLinear -> Gemm -> QuantizeLinear(int16); no onnxruntime producer (TFLite numerics)."""
    rng = np.random.default_rng(8)
    w1 = rng.integers(-127, 128, (4, 3, 3, 3)).astype(np.int8)
    w2 = rng.integers(-127, 128, (5, 4 * 4 * 4)).astype(np.int8)
    inits = [numpy_helper.from_array(a, n) for n, a in [
        ("s_x", np.float32(1 / 4096)), ("z16", np.int16(0)), ("w1", w1),
        ("s_w1", rng.uniform(0.002, 0.01, 4).astype(np.float32)), ("z_w1", np.zeros(4, np.int8)),
        ("b1", rng.normal(0, 0.1, 4).astype(np.float32)), ("s_c", np.float32(1 / 2048)),
        ("w2", w2), ("s_w2", np.float32(0.004)), ("z8", np.int8(0)), ("b2", rng.normal(0, 0.1, 5).astype(np.float32)),
        ("s_y", np.float32(1 / 1024)), ("shape", np.array([1, -1], np.int64))]]
    nodes = [helper.make_node("DequantizeLinear", ["x", "s_x", "z16"], ["xf"]),
             helper.make_node("DequantizeLinear", ["w1", "s_w1", "z_w1"], ["w1f"], axis=0),
             helper.make_node("Conv", ["xf", "w1f", "b1"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("QuantizeLinear", ["r", "s_c", "z16"], ["cq"]),
             helper.make_node("DequantizeLinear", ["cq", "s_c", "z16"], ["cf"]),
             helper.make_node("Reshape", ["cf", "shape"], ["flat"]),
             helper.make_node("DequantizeLinear", ["w2", "s_w2", "z8"], ["w2f"]),
             helper.make_node("Gemm", ["flat", "w2f", "b2"], ["g"], transB=1),
             helper.make_node("QuantizeLinear", ["g", "s_y", "z16"], ["y"])]
    graph = helper.make_graph(nodes, "tflite16x8",
                              [helper.make_tensor_value_info("x", TensorProto.INT16, [1, 3, 4, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.INT16, [1, 5])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    model.ir_version = 10
    onnx.save(model, out)
    return out


def unary_int16(op: str, s_in: float, s_out: float, out: Path, n: int = 65536) -> Path:
    """int16 x [1, n] -> DequantizeLinear -> `op` (Sigmoid, Tanh, Softmax) -> QuantizeLinear(int16) -> y, zero
    points 0: the op alone, on int16 codes the caller chooses (every code: n = 65536)."""
    inits = [numpy_helper.from_array(a, k) for k, a in [
        ("s_x", np.float32(s_in)), ("s_y", np.float32(s_out)), ("z16", np.int16(0))]]
    nodes = [helper.make_node("DequantizeLinear", ["x", "s_x", "z16"], ["xf"]), helper.make_node(op, ["xf"], ["f"]),
             helper.make_node("QuantizeLinear", ["f", "s_y", "z16"], ["y"])]
    graph = helper.make_graph(nodes, f"{op}16", [helper.make_tensor_value_info("x", TensorProto.INT16, [1, n])],
                              [helper.make_tensor_value_info("y", TensorProto.INT16, [1, n])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    model.ir_version = 10
    onnx.save(model, out)
    return out
