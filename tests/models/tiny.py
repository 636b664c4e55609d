"""Small hand-built ONNX models (onnx.helper) shared by the tests: the seeds of tests/test_fuzz.py,
the inputs of tests/test_golden_files.py (committed as .onnx beside their goldens), the hostile-model
bases of tests/test_robustness.py, and mixed models with unsupported nodes for tests/test_cli.py."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto as TP
from onnx import helper as H
from onnx import numpy_helper as NH

from tests.harness.bundles import shared_model

HELLO = shared_model("tflm_hello_world")


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
