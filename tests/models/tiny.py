"""Small hand-built ONNX models (onnx.helper) shared by the tests: the seeds of tests/test_fuzz.py,
the inputs of tests/test_golden_files.py (committed as .onnx beside their goldens), the hostile-model
bases of tests/test_robustness.py, and mixed models with unsupported nodes for tests/test_cli.py.

HELLO is the project's own small real model (hello_fc: x -> sin(x), 1 -> 16 -> 16 -> 1 fully
connected, int8 in the QDQ form tf2onnx writes), committed beside its goldens so that the tests
which need "a small real model" run on a fresh clone without ../shared/models."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto as TP
from onnx import helper as H
from onnx import numpy_helper as NH

GOLDEN = Path(__file__).resolve().parents[1] / "golden_files"
HELLO = GOLDEN / "hello_fc" / "hello_fc.onnx"  # = hello_fc(), checked by tests/test_golden_files.py


# ---- tiny models ---------------------------------------------------------------------------------

def _model(graph: onnx.GraphProto, *domains: tuple[str, int]) -> onnx.ModelProto:
    opsets = [H.make_opsetid(d, v) for d, v in (("", 13),) + domains]
    m = H.make_model(graph, opset_imports=opsets, producer_name="mcugen-tests")
    m.ir_version = 8
    return m


def tiny_qdq_conv() -> onnx.ModelProto:
    """QDQ: float x [1,3,8,8] -> Q -> DQ -> Conv 3x3 (per-channel int8 weights, int32 bias) -> Relu
    -> Q -> DQ -> AveragePool 2x2 -> Q -> DQ -> float y [1,4,4,4]."""
    rng = np.random.default_rng(5)
    w = rng.integers(-127, 128, (4, 3, 3, 3)).astype(np.int8)
    b = rng.integers(-500, 500, (4,)).astype(np.int32)
    w_s = np.array([0.011, 0.009, 0.013, 0.01], np.float32)
    inits = [NH.from_array(np.array(0.05, np.float32), "x_s"), NH.from_array(np.array(0, np.int8), "x_z"),
             NH.from_array(w, "w_q"), NH.from_array(w_s, "w_s"), NH.from_array(np.zeros(4, np.int8), "w_z"),
             NH.from_array(b, "b_q"), NH.from_array((w_s * np.float32(0.05)).astype(np.float32), "b_s"),
             NH.from_array(np.zeros(4, np.int32), "b_z"),
             NH.from_array(np.array(0.1, np.float32), "c_s"), NH.from_array(np.array(-128, np.int8), "c_z"),
             NH.from_array(np.array(0.1, np.float32), "p_s"), NH.from_array(np.array(-128, np.int8), "p_z")]
    nodes = [H.make_node("QuantizeLinear", ["x", "x_s", "x_z"], ["xq"], name="q_in"),
             H.make_node("DequantizeLinear", ["xq", "x_s", "x_z"], ["xf"], name="dq_in"),
             H.make_node("DequantizeLinear", ["w_q", "w_s", "w_z"], ["wf"], name="dq_w", axis=0),
             H.make_node("DequantizeLinear", ["b_q", "b_s", "b_z"], ["bf"], name="dq_b", axis=0),
             H.make_node("Conv", ["xf", "wf", "bf"], ["c"], name="conv", pads=[1, 1, 1, 1]),
             H.make_node("Relu", ["c"], ["r"], name="relu"),
             H.make_node("QuantizeLinear", ["r", "c_s", "c_z"], ["rq"], name="q_relu"),
             H.make_node("DequantizeLinear", ["rq", "c_s", "c_z"], ["rf"], name="dq_relu"),
             H.make_node("AveragePool", ["rf"], ["p"], name="pool", kernel_shape=[2, 2], strides=[2, 2]),
             H.make_node("QuantizeLinear", ["p", "p_s", "p_z"], ["pq"], name="q_pool"),
             H.make_node("DequantizeLinear", ["pq", "p_s", "p_z"], ["y"], name="dq_out")]
    graph = H.make_graph(nodes, "tiny_qdq_conv", [H.make_tensor_value_info("x", TP.FLOAT, [1, 3, 8, 8])],
                         [H.make_tensor_value_info("y", TP.FLOAT, [1, 4, 4, 4])], inits)
    return _model(graph)


def tiny_qop_add_concat() -> onnx.ModelProto:
    """QOperator (com.microsoft): int8 a, b [1,6] -> QLinearAdd -> QLinearConcat(sum, a) -> int8 y [1,12]."""
    inits = [NH.from_array(np.array(0.05, np.float32), "a_s"), NH.from_array(np.array(3, np.int8), "a_z"),
             NH.from_array(np.array(0.04, np.float32), "b_s"), NH.from_array(np.array(-5, np.int8), "b_z"),
             NH.from_array(np.array(0.08, np.float32), "s_s"), NH.from_array(np.array(1, np.int8), "s_z"),
             NH.from_array(np.array(0.1, np.float32), "y_s"), NH.from_array(np.array(0, np.int8), "y_z")]
    nodes = [H.make_node("QLinearAdd", ["a", "a_s", "a_z", "b", "b_s", "b_z", "s_s", "s_z"], ["s"],
                         name="add", domain="com.microsoft"),
             H.make_node("QLinearConcat", ["y_s", "y_z", "s", "s_s", "s_z", "a", "a_s", "a_z"], ["y"],
                         name="concat", axis=1, domain="com.microsoft")]
    graph = H.make_graph(nodes, "tiny_qop_add_concat",
                         [H.make_tensor_value_info("a", TP.INT8, [1, 6]),
                          H.make_tensor_value_info("b", TP.INT8, [1, 6])],
                         [H.make_tensor_value_info("y", TP.INT8, [1, 12])], inits)
    return _model(graph, ("com.microsoft", 1))


def tiny_qdq_misc() -> onnx.ModelProto:
    """QDQ: float x [1,2,4,4] -> Q -> MaxPool 2x2 (on int8) -> DQ -> Sigmoid -> Mul by a per-channel
    constant -> Concat with the Sigmoid output -> Reshape [1,16] -> Softmax -> Q -> int8 y [1,16]."""
    def qdq(t: str, s: str, z: str) -> list[onnx.NodeProto]:
        return [H.make_node("QuantizeLinear", [t, s, z], [t + "_q"], name=f"q_{t}"),
                H.make_node("DequantizeLinear", [t + "_q", s, z], [t + "_dq"], name=f"dq_{t}")]
    inits = [NH.from_array(np.array(0.04, np.float32), "s1"), NH.from_array(np.array(2, np.int8), "z1"),
             NH.from_array(np.array(1 / 256, np.float32), "s2"), NH.from_array(np.array(-128, np.int8), "z2"),
             NH.from_array(np.array(0.01, np.float32), "s3"), NH.from_array(np.array(-7, np.int8), "z3"),
             NH.from_array(np.array(1 / 256, np.float32), "s4"), NH.from_array(np.array(-128, np.int8), "z4"),
             NH.from_array(np.array([[[[90]], [[-60]]]], np.int8), "k_q"),
             NH.from_array(np.array(0.02, np.float32), "k_s"), NH.from_array(np.array(0, np.int8), "k_z"),
             NH.from_array(np.array([1, 16], np.int64), "shape")]
    nodes = [H.make_node("QuantizeLinear", ["x", "s1", "z1"], ["xq"], name="q_in"),
             H.make_node("MaxPool", ["xq"], ["mq"], name="maxpool", kernel_shape=[2, 2], strides=[2, 2]),
             H.make_node("DequantizeLinear", ["mq", "s1", "z1"], ["m"], name="dq_max"),
             H.make_node("Sigmoid", ["m"], ["sg"], name="sigmoid"), *qdq("sg", "s2", "z2"),
             H.make_node("DequantizeLinear", ["k_q", "k_s", "k_z"], ["k"], name="dq_k"),
             H.make_node("Mul", ["sg_dq", "k"], ["mu"], name="mul"), *qdq("mu", "s3", "z3"),
             H.make_node("Concat", ["mu_dq", "sg_dq"], ["cat"], name="concat", axis=1),
             *qdq("cat", "s3", "z3"),
             H.make_node("Reshape", ["cat_dq", "shape"], ["flat"], name="reshape"), *qdq("flat", "s3", "z3"),
             H.make_node("Softmax", ["flat_dq"], ["sm"], name="softmax", axis=-1),
             H.make_node("QuantizeLinear", ["sm", "s4", "z4"], ["y"], name="q_out")]
    graph = H.make_graph(nodes, "tiny_qdq_misc", [H.make_tensor_value_info("x", TP.FLOAT, [1, 2, 4, 4])],
                         [H.make_tensor_value_info("y", TP.INT8, [1, 16])], inits)
    return _model(graph)


def hello_fc() -> onnx.ModelProto:
    """x (int8 [1,1], the angle in [0, 2*pi]) -> 3 fully connected layers (ReLU, ReLU, none) ->
    int8 y [1,1] ~ sin(x), laid out as tf2onnx exports a TFLite int8 model: every weight and bias
    a DequantizeLinear of an int8 / int32 initializer, MatMul + bias Add (+ Relu) between Q/DQ
    pairs, tensor names with ':' and ';'. Hidden layers: ReLU hinges at 16 knots, randomly mixed;
    the last layer a least-squares fit of sin(x), so the outputs mean something (max error about
    0.07 after int8 quantization); per-tensor scales."""
    rng = np.random.default_rng(15)
    x = np.linspace(0, 2 * np.pi, 256).reshape(-1, 1)
    w1, b1 = np.ones((1, 16)), -np.linspace(0, 2 * np.pi, 17)[:-1]  # ReLU hinges at 16 knots
    h1 = np.maximum(x @ w1 + b1, 0)
    w2, b2 = np.eye(16) + rng.normal(0, 0.05, (16, 16)), rng.uniform(-0.1, 0.1, 16)  # mixed hinges
    h2 = np.maximum(h1 @ w2 + b2, 0)
    a = np.hstack([h2, np.ones((len(x), 1))])
    fit = np.linalg.solve(a.T @ a + 0.01 * np.eye(17), a.T @ np.sin(x))  # ridge: small int8-friendly weights
    w3, b3 = fit[:-1], float(fit[-1, 0])
    y = h2 @ w3 + b3

    def act(t: np.ndarray, relu: bool) -> tuple[float, int]:  # int8 scale / zero point of a range
        lo, hi = (0.0, float(t.max())) if relu else (min(float(t.min()), 0.0), max(float(t.max()), 0.0))
        s = (hi - lo) / 255
        return s, int(np.clip(round(-128 - lo / s), -128, 127))

    scales = [act(x, True), act(h1, True), act(h2, True), act(y, False)]
    inits = [NH.from_array(np.array(0, np.int32), "zero_point:b"),
             NH.from_array(np.array(0, np.int8), "zero_point:w")]
    for k, (s, zp) in enumerate(scales):
        inits += [NH.from_array(np.array(s, np.float32), f"scale:a{k}"),
                  NH.from_array(np.array(zp, np.int8), f"zero_point:a{k}")]
    x_name = "serving_hello_input:0"
    nodes = [H.make_node("DequantizeLinear", [x_name, "scale:a0", "zero_point:a0"], [x_name + "_dequant"],
                         name=x_name + "_dequant")]
    prev = x_name + "_dequant"
    for k, (w, b) in enumerate(((w1, b1), (w2, b2), (w3, np.array([b3])))):
        layer = f"hello/dense_{k}"
        relu = k < 2
        w_s = float(np.abs(w).max()) / 127
        w_q = np.clip(np.round(w / w_s), -127, 127).astype(np.int8)
        b_s = np.float32(w_s) * np.float32(scales[k][0])
        b_q = np.round(b / b_s).astype(np.int32)
        inits += [NH.from_array(w_q, f"{layer}/MatMul"), NH.from_array(np.array(w_s, np.float32), f"scale:{layer}/w"),
                  NH.from_array(b_q, f"{layer}/BiasAdd/ReadVariableOp"),
                  NH.from_array(np.array(b_s, np.float32), f"scale:{layer}/b")]
        fused = f"{layer}/MatMul;{layer}/Relu;{layer}/BiasAdd" if relu else "Identity:0"
        out_s, out_zp = f"scale:a{k + 1}", f"zero_point:a{k + 1}"
        nodes += [
            H.make_node("DequantizeLinear", [f"{layer}/MatMul", f"scale:{layer}/w", "zero_point:w"],
                        [f"{layer}/MatMul_dequant"], name=f"{layer}/MatMul_dequant"),
            H.make_node("DequantizeLinear", [f"{layer}/BiasAdd/ReadVariableOp", f"scale:{layer}/b", "zero_point:b"],
                        [f"{layer}/BiasAdd_dequant"], name=f"{layer}/BiasAdd_dequant"),
            H.make_node("MatMul", [prev, f"{layer}/MatMul_dequant"], [fused + "_prequant"], name=fused + "_prequant"),
            H.make_node("Add", [fused + "_prequant", f"{layer}/BiasAdd_dequant"], [f"{layer}/Add:0"],
                        name=f"{layer}/Add")]
        pre = f"{layer}/Add:0"
        if relu:
            nodes.append(H.make_node("Relu", [pre], [f"{layer}/Relu:0"], name=f"{layer}/Relu"))
            pre = f"{layer}/Relu:0"
        nodes.append(H.make_node("QuantizeLinear", [pre, out_s, out_zp], [fused], name=fused + "_quantize"))
        if relu:
            nodes.append(H.make_node("DequantizeLinear", [fused, out_s, out_zp], [fused + "_dequant"],
                                     name=fused + "_dequant"))
            prev = fused + "_dequant"
    graph = H.make_graph(nodes, "hello_fc", [H.make_tensor_value_info(x_name, TP.INT8, [1, 1])],
                         [H.make_tensor_value_info("Identity:0", TP.INT8, [1, 1])], inits)
    m = _model(graph, ("ai.onnx.ml", 2))
    m.ir_version = 7
    return m


TINY_MODELS = {"tiny_qdq_conv": tiny_qdq_conv, "tiny_qop_add_concat": tiny_qop_add_concat,
               "tiny_qdq_misc": tiny_qdq_misc}


# ---- QDQ models with an unsupported node --------------------------------------------------------

def qdq_model_with(extra_op: str, tmp_path: Path) -> Path:
    """x(int8) -> DQ -> Relu -> Q, then <extra_op> on the float tensor: a real mixed model."""
    inits = [NH.from_array(np.array(0.1, np.float32), "s"),
             NH.from_array(np.array(0, np.int8), "z")]
    nodes = [H.make_node("DequantizeLinear", ["x", "s", "z"], ["xf"], name="dq"),
             H.make_node("Relu", ["xf"], ["r"], name="relu"),
             H.make_node("QuantizeLinear", ["r", "s", "z"], ["y"], name="q")]
    shape = [1, 1, 8] if extra_op == "LSTM" else [1, 8]
    outputs = [H.make_tensor_value_info("y", TP.INT8, shape)]
    if extra_op == "TopK":
        inits.append(NH.from_array(np.array([2], np.int64), "k"))
        nodes.append(H.make_node("TopK", ["xf", "k"], ["v", "i"], name="my_topk"))
        outputs += [H.make_tensor_value_info("v", TP.FLOAT, [1, 2]),
                    H.make_tensor_value_info("i", TP.INT64, [1, 2])]
    elif extra_op == "LSTM":
        inits += [NH.from_array(np.zeros((1, 16, 8), np.float32), "W"),
                  NH.from_array(np.zeros((1, 16, 4), np.float32), "R")]
        nodes.append(H.make_node("LSTM", ["xf", "W", "R"], ["h"], name="my_lstm", hidden_size=4))
        outputs.append(H.make_tensor_value_info("h", TP.FLOAT, [1, 1, 1, 4]))
    graph = H.make_graph(nodes, "g", [H.make_tensor_value_info("x", TP.INT8, shape)],
                              outputs, inits)
    model = H.make_model(graph, opset_imports=[H.make_opsetid("", 13)])
    path = tmp_path / f"with_{extra_op}.onnx"
    onnx.save(model, path)
    return path
