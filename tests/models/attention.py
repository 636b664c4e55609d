"""A small self-attention block, float, for tests/test_batch_matmul.py to quantize with
onnxruntime quantize_static:

    x [T, D] -> Q = x Wq, K = x Wk, V = x Wv          (constant-weight MatMuls: fc layers)
    heads: Reshape [T, H, d] -> Transpose [H, T, d]   (Q, V; K as [H, d, T], i.e. K^T)
    S = MatMul(Q, K^T) [H, T, T]; Mul(S, 1/sqrt(d)); P = Softmax(S, axis -1); O = MatMul(P, V)

`scale` / `softmax` leave the Mul / the Softmax out (to test the MatMuls alone where those ops are
refused over these shapes).
"""
from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from tests.models.ops import IR_VERSION


def attention_model(tokens: int = 8, dim: int = 16, heads: int = 2, *, scale: bool = True,
                    softmax: bool = True, seed: int = 0) -> onnx.ModelProto:
    rng = np.random.default_rng(seed)
    d = dim // heads
    inits = [numpy_helper.from_array((rng.standard_normal((dim, dim)) / np.sqrt(dim)).astype(np.float32), f"W{n}")
             for n in "qkv"]
    inits += [numpy_helper.from_array(np.array([tokens, heads, d], np.int64), "split_shape"),
              numpy_helper.from_array(np.array(1.0 / np.sqrt(d), np.float32), "scale")]
    nodes = [helper.make_node("MatMul", ["x", f"W{n}"], [n], name=f"proj_{n}") for n in "qkv"]
    for n in "qkv":
        nodes.append(helper.make_node("Reshape", [n, "split_shape"], [f"{n}_split"], name=f"split_{n}"))
    nodes += [helper.make_node("Transpose", ["q_split"], ["qh"], name="heads_q", perm=[1, 0, 2]),
              helper.make_node("Transpose", ["k_split"], ["kt"], name="heads_kt", perm=[1, 2, 0]),
              helper.make_node("Transpose", ["v_split"], ["vh"], name="heads_v", perm=[1, 0, 2]),
              helper.make_node("MatMul", ["qh", "kt"], ["s"], name="scores")]
    s = "s"
    if scale:
        nodes.append(helper.make_node("Mul", [s, "scale"], ["s_scaled"], name="scale"))
        s = "s_scaled"
    if softmax:
        nodes.append(helper.make_node("Softmax", [s], ["p"], name="softmax", axis=-1))
        s = "p"
    nodes.append(helper.make_node("MatMul", [s, "vh"], ["o"], name="context"))
    graph = helper.make_graph(nodes, "attention",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [tokens, dim])],
                              [helper.make_tensor_value_info("o", TensorProto.FLOAT, [heads, tokens, d])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="mcugen-tests")
    model.ir_version = IR_VERSION
    onnx.checker.check_model(model, full_check=True)
    return model


def attention_feeds(tokens: int = 8, dim: int = 16, n: int = 8, seed: int = 1) -> list[dict[str, np.ndarray]]:
    rng = np.random.default_rng(seed)
    return [{"x": rng.uniform(-1.0, 1.0, (tokens, dim)).astype(np.float32)} for _ in range(n)]
