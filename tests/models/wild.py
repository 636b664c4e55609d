"""Quantized ONNX as other tools write it (issue #13): small models built with onnx.helper in the
forms that onnxruntime's quantizer, exporters and other projects' test suites produce.

WILD_CASES: models mcugen must build and run exactly (host C == golden, golden within one quantum
of onnxruntime). WILD_REFUSALS: models it must refuse with one clear error (exit 2) naming the
cause. Each builder returns a ModelProto; everything is seeded, so a case is the same every run.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import onnx
from onnx import TensorProto as TP
from onnx import helper as H
from onnx import numpy_helper as NH

from tests.models.onnx_backend import backend_models

MS = ("com.microsoft", 1)


def model(nodes: list[onnx.NodeProto], inputs: list[onnx.ValueInfoProto], outputs: list[onnx.ValueInfoProto],
          inits: list[onnx.TensorProto], opset: int = 13, *domains: tuple[str, int]) -> onnx.ModelProto:
    opsets = ([H.make_opsetid("", opset)] if opset else []) + [H.make_opsetid(d, v) for d, v in domains]
    m = H.make_model(H.make_graph(nodes, "wild", inputs, outputs, inits), opset_imports=opsets,
                     producer_name="mcugen-tests-wild")
    m.ir_version = 8 if opset <= 19 else 10 if opset <= 22 else 11
    return m


def vi(name: str, elem: int, shape: list[int]) -> onnx.ValueInfoProto:
    return H.make_tensor_value_info(name, elem, shape)


def scalars(**values: float | int | np.ndarray) -> list[onnx.TensorProto]:
    """Initializers from keyword values: floats as float32, ints as given by a numpy scalar."""
    out = []
    for name, v in values.items():
        dtype = np.float32 if isinstance(v, float) else np.int8
        arr = np.asarray(v) if isinstance(v, np.ndarray) else np.array(v, dtype)
        out.append(NH.from_array(arr, name))
    return out


# ---- Gemm / QGemm bias shapes ----------------------------------------------------------------------

M, K, N = 3, 8, 5


def qgemm(c_shape: tuple[int, ...] | None, m: int = M, n: int = N, trans_b: int = 1,
          c_values: tuple[int, int] = (-30000, 30000), seed: int = 1) -> onnx.ModelProto:
    """com.microsoft QGemm int8 a [m, K] x const int8 B (per-tensor) + int32 C of c_shape -> int8 y."""
    rng = np.random.default_rng(seed)
    w = rng.integers(-127, 128, (n, K) if trans_b else (K, n)).astype(np.int8)
    inits = scalars(a_s=0.02, a_z=np.array(3, np.int8), b_s=0.01, b_z=np.array(0, np.int8),
                    y_s=0.05, y_z=np.array(-2, np.int8)) + [NH.from_array(w, "B")]
    ins = ["a", "a_s", "a_z", "B", "b_s", "b_z", "", "y_s", "y_z"]
    if c_shape is not None:
        inits.append(NH.from_array(rng.integers(*c_values, c_shape).astype(np.int32), "C"))
        ins[6] = "C"
    node = H.make_node("QGemm", ins, ["y"], name="qgemm", domain="com.microsoft", transB=trans_b)
    return model([node], [vi("a", TP.INT8, [m, K])], [vi("y", TP.INT8, [m, n])], inits, 13, MS)


def qdq_gemm(c_shape: tuple[int, ...], float_c: bool = False, seed: int = 2) -> onnx.ModelProto:
    """QDQ: float x [M, K] -> Q -> DQ -> Gemm(transB=1, DQ(int8 W per channel), C) -> Q -> DQ -> y.
    C is DQ(int32, scale x_s * w_s, per tensor when w is per tensor) or a float initializer."""
    rng = np.random.default_rng(seed)
    w = rng.integers(-127, 128, (N, K)).astype(np.int8)
    x_s, w_s = 0.03, 0.008
    inits = scalars(x_s=x_s, x_z=np.array(-4, np.int8), w_s=w_s, w_z=np.array(0, np.int8),
                    y_s=0.06, y_z=np.array(5, np.int8)) + [NH.from_array(w, "w_q")]
    nodes = [H.make_node("QuantizeLinear", ["x", "x_s", "x_z"], ["xq"], name="q_x"),
             H.make_node("DequantizeLinear", ["xq", "x_s", "x_z"], ["xf"], name="dq_x"),
             H.make_node("DequantizeLinear", ["w_q", "w_s", "w_z"], ["wf"], name="dq_w")]
    if float_c:
        inits.append(NH.from_array(rng.uniform(-2, 2, c_shape).astype(np.float32), "cf"))
    else:
        inits += [NH.from_array(rng.integers(-6000, 6000, c_shape).astype(np.int32), "c_q"),
                  NH.from_array(np.array(x_s * w_s, np.float32), "c_s"),
                  NH.from_array(np.array(0, np.int32), "c_z")]
        nodes.append(H.make_node("DequantizeLinear", ["c_q", "c_s", "c_z"], ["cf"], name="dq_c"))
    nodes += [H.make_node("Gemm", ["xf", "wf", "cf"], ["g"], name="gemm", transB=1),
              H.make_node("QuantizeLinear", ["g", "y_s", "y_z"], ["gq"], name="q_y"),
              H.make_node("DequantizeLinear", ["gq", "y_s", "y_z"], ["y"], name="dq_y")]
    return model(nodes, [vi("x", TP.FLOAT, [M, K])], [vi("y", TP.FLOAT, [M, N])], inits)


def qdq_matmul_add(bias_shape: tuple[int, ...], seed: int = 3) -> onnx.ModelProto:
    """QDQ: int8 x [M, K] -> DQ -> MatMul(DQ W [K, N]) -> Add(DQ(int32 bias of bias_shape)) -> Q."""
    rng = np.random.default_rng(seed)
    x_s, w_s = 0.05, np.linspace(0.004, 0.01, N).astype(np.float32)
    inits = scalars(x_s=x_s, x_z=np.array(7, np.int8), y_s=0.07, y_z=np.array(-3, np.int8)) + [
        NH.from_array(rng.integers(-127, 128, (K, N)).astype(np.int8), "w_q"),
        NH.from_array(w_s, "w_s"), NH.from_array(np.zeros(N, np.int8), "w_z"),
        NH.from_array(rng.integers(-3000, 3000, bias_shape).astype(np.int32), "b_q"),
        NH.from_array(np.array(x_s * 0.007, np.float32), "b_s")]
    nodes = [H.make_node("DequantizeLinear", ["x", "x_s", "x_z"], ["xf"], name="dq_x"),
             H.make_node("DequantizeLinear", ["w_q", "w_s", "w_z"], ["wf"], name="dq_w", axis=1),
             H.make_node("DequantizeLinear", ["b_q", "b_s"], ["bf"], name="dq_b"),
             H.make_node("MatMul", ["xf", "wf"], ["mm"], name="matmul"),
             H.make_node("Add", ["mm", "bf"], ["s"], name="add_bias"),
             H.make_node("QuantizeLinear", ["s", "y_s", "y_z"], ["y"], name="q_y")]
    return model(nodes, [vi("x", TP.INT8, [M, K])], [vi("y", TP.INT8, [M, N])], inits)


# ---- a graph of one QuantizeLinear / DequantizeLinear ------------------------------------------------

def only_quantize(out_type: int = TP.INT8) -> onnx.ModelProto:
    zp = np.array(3 if out_type == TP.INT8 else 131, np.int8 if out_type == TP.INT8 else np.uint8)
    node = H.make_node("QuantizeLinear", ["x", "s", "z"], ["y"], name="quantize")
    return model([node], [vi("x", TP.FLOAT, [1, 2, 3])], [vi("y", out_type, [1, 2, 3])],
                 scalars(s=0.03, z=zp))


def only_dequantize(in_type: int = TP.INT8) -> onnx.ModelProto:
    zp = np.array(-9 if in_type == TP.INT8 else 100, np.int8 if in_type == TP.INT8 else np.uint8)
    node = H.make_node("DequantizeLinear", ["x", "s", "z"], ["y"], name="dequantize")
    return model([node], [vi("x", in_type, [2, 7])], [vi("y", TP.FLOAT, [2, 7])], scalars(s=0.11, z=zp))


def int8_in_and_out() -> onnx.ModelProto:
    """int8 x given out twice: as y1 directly and, dequantized, as y2."""
    node = H.make_node("DequantizeLinear", ["x", "s", "z"], ["y2"], name="dequantize")
    return model([node], [vi("x", TP.INT8, [4])], [vi("x", TP.INT8, [4]), vi("y2", TP.FLOAT, [4])],
                 scalars(s=0.5, z=np.array(1, np.int8)))


def dq_without_zero_point() -> onnx.ModelProto:
    """int8 x -> DQ(scale only: zero point 0) -> Relu -> Q(int8) -> y."""
    nodes = [H.make_node("DequantizeLinear", ["x", "s"], ["xf"], name="dq"),
             H.make_node("Relu", ["xf"], ["r"], name="relu"),
             H.make_node("QuantizeLinear", ["r", "s", "z"], ["y"], name="q")]
    return model(nodes, [vi("x", TP.INT8, [6])], [vi("y", TP.INT8, [6])], scalars(s=0.1, z=np.array(0, np.int8)))


def qgemm_uint8_input_int8_zero_point() -> onnx.ModelProto:
    """A com.microsoft QGemm (no ONNX type check) whose uint8 input has an int8 zero point."""
    m = qgemm((N,))
    m.graph.input[0].type.tensor_type.elem_type = TP.UINT8
    return m


# ---- opsets 22-25, Q/DQ attributes, com.microsoft-only models ----------------------------------

def at_opset(m: onnx.ModelProto, opset: int) -> onnx.ModelProto:
    """The same model importing the default domain at `opset` (IR version to match)."""
    out = onnx.ModelProto()
    out.CopyFrom(m)
    for o in out.opset_import:
        if o.domain in ("", "ai.onnx"):
            o.version = opset
    out.ir_version = 8 if opset <= 19 else 10 if opset <= 22 else 11
    return out


def with_attrs(m: onnx.ModelProto, op_type: str, **attrs: object) -> onnx.ModelProto:
    """Every op_type node of m with these attributes set."""
    for node in m.graph.node:
        if node.op_type == op_type:
            node.attribute.extend(H.make_attribute(k, v) for k, v in attrs.items())
    return m


def qdq_conv_relu_pool(opset: int) -> onnx.ModelProto:
    """tests/models/tiny.py's QDQ Conv -> Relu -> AveragePool, written at `opset`."""
    from tests.models.tiny import tiny_qdq_conv

    return at_opset(tiny_qdq_conv(), opset)


def qlinear_pool(channels_last: int) -> onnx.ModelProto:
    """com.microsoft QLinearAveragePool / QLinearGlobalAveragePool with channels_last set, and no
    default-domain opset import at all (as onnxruntime's QOperator tests write them)."""
    inits = scalars(x_s=0.05, x_z=np.array(-3, np.int8), p_s=0.04, p_z=np.array(2, np.int8),
                    g_s=0.03, g_z=np.array(-1, np.int8))
    nodes = [H.make_node("QLinearAveragePool", ["x", "x_s", "x_z", "p_s", "p_z"], ["p"], name="pool",
                         domain="com.microsoft", kernel_shape=[2, 2], strides=[2, 2], channels_last=channels_last),
             H.make_node("QLinearGlobalAveragePool", ["p", "p_s", "p_z", "g_s", "g_z"], ["y"], name="gap",
                         domain="com.microsoft", channels_last=channels_last)]
    return model(nodes, [vi("x", TP.INT8, [1, 3, 6, 6])], [vi("y", TP.INT8, [1, 3, 1, 1])], inits, 0, MS)


def dq_block_weights() -> onnx.ModelProto:
    """QDQ MatMul whose weight DequantizeLinear uses block quantization (block_size=4)."""
    m = qdq_matmul_add((N,))
    for node in m.graph.node:
        if node.name == "dq_w":
            del node.attribute[:]
            node.attribute.extend([H.make_attribute("axis", 0), H.make_attribute("block_size", 4)])
    inits = {t.name: t for t in m.graph.initializer}
    inits["w_s"].CopyFrom(NH.from_array(np.full((K // 4, N), 0.007, np.float32), "w_s"))
    inits["w_z"].CopyFrom(NH.from_array(np.zeros((K // 4, N), np.int8), "w_z"))
    return at_opset(m, 21)


def int4_weights() -> onnx.ModelProto:
    """QDQ MatMul with int4 weights (opset 21), as onnxruntime's quantize_static QInt4 writes them."""
    m = at_opset(qdq_matmul_add((N,)), 21)
    inits = {t.name: t for t in m.graph.initializer}
    w = np.random.default_rng(9).integers(-8, 8, (K, N))
    inits["w_q"].CopyFrom(H.make_tensor("w_q", TP.INT4, [K, N], w.ravel().tolist()))
    inits["w_z"].CopyFrom(H.make_tensor("w_z", TP.INT4, [N], [0] * N))
    return m


def conv_integer() -> onnx.ModelProto:
    """onnxruntime quantize_dynamic's form: DynamicQuantizeLinear -> ConvInteger -> Cast -> Mul."""
    rng = np.random.default_rng(11)
    inits = [NH.from_array(rng.integers(-127, 128, (2, 3, 3, 3)).astype(np.int8), "w"),
             NH.from_array(np.array(0, np.int8), "w_z"), NH.from_array(np.array(0.01, np.float32), "w_s")]
    nodes = [H.make_node("DynamicQuantizeLinear", ["x"], ["xq", "x_s", "x_z"], name="dql"),
             H.make_node("ConvInteger", ["xq", "w", "x_z", "w_z"], ["acc"], name="conv_integer"),
             H.make_node("Cast", ["acc"], ["accf"], to=TP.FLOAT, name="cast"),
             H.make_node("Mul", ["x_s", "w_s"], ["s"], name="scale"),
             H.make_node("Mul", ["accf", "s"], ["y"], name="rescale")]
    return model(nodes, [vi("x", TP.FLOAT, [1, 3, 5, 5])], [vi("y", TP.FLOAT, [1, 2, 3, 3])], inits)


def matmul_integer() -> onnx.ModelProto:
    """MatMulInteger on a uint8 graph input: int32 out."""
    rng = np.random.default_rng(12)
    inits = [NH.from_array(rng.integers(0, 256, (K, N)).astype(np.uint8), "w"),
             NH.from_array(np.array(3, np.uint8), "a_z"), NH.from_array(np.array(128, np.uint8), "w_z")]
    node = H.make_node("MatMulInteger", ["a", "w", "a_z", "w_z"], ["y"], name="mmi")
    return model([node], [vi("a", TP.UINT8, [M, K])], [vi("y", TP.INT32, [M, N])], inits)


def qdq_gemm_bias_overflowing() -> onnx.ModelProto:
    """QDQ Gemm whose int32 bias has a scale 10^6 times x_s * w_s: requantized into the
    accumulator's units it leaves no room for the products (the kernel would wrap around)."""
    m = qdq_gemm((N,))
    c_s = next(t for t in m.graph.initializer if t.name == "c_s")
    c_s.CopyFrom(NH.from_array(np.array(0.03 * 0.008 * 1e6, np.float32), "c_s"))
    return m


# ---- constant DequantizeLinear -> Unsqueeze/Reshape chains; Transpose before the first Q ------------

def dq_unsqueeze_mul(per_channel: bool = True) -> onnx.ModelProto:
    """QDQ x [1, C, 4, 4] * DQ(int8 c [C], per channel or per tensor) -> Unsqueeze(axes 1, 2) -> Mul
    (a per-channel scale as PyTorch exporters write it)."""
    c = 4
    rng = np.random.default_rng(13)
    c_s = np.linspace(0.01, 0.02, c).astype(np.float32) if per_channel else np.array(0.015, np.float32)
    inits = scalars(x_s=0.04, x_z=np.array(2, np.int8), y_s=0.05, y_z=np.array(-6, np.int8)) + [
        NH.from_array(rng.integers(-127, 128, c).astype(np.int8), "c_q"), NH.from_array(c_s, "c_s"),
        NH.from_array(np.zeros(c_s.shape, np.int8), "c_z"), NH.from_array(np.array([1, 2], np.int64), "axes")]
    nodes = [H.make_node("QuantizeLinear", ["x", "x_s", "x_z"], ["xq"], name="q_x"),
             H.make_node("DequantizeLinear", ["xq", "x_s", "x_z"], ["xf"], name="dq_x"),
             H.make_node("DequantizeLinear", ["c_q", "c_s", "c_z"], ["cf"], name="dq_c", axis=0),
             H.make_node("Unsqueeze", ["cf", "axes"], ["cu"], name="unsqueeze_c"),
             H.make_node("Mul", ["xf", "cu"], ["m"], name="mul"),
             H.make_node("QuantizeLinear", ["m", "y_s", "y_z"], ["yq"], name="q_y"),
             H.make_node("DequantizeLinear", ["yq", "y_s", "y_z"], ["y"], name="dq_y")]
    return model(nodes, [vi("x", TP.FLOAT, [1, c, 4, 4])], [vi("y", TP.FLOAT, [1, c, 4, 4])], inits)


def dq_reshape_matmul() -> onnx.ModelProto:
    """QDQ MatMul whose weight is DQ(int8 [K*N] per tensor) -> Reshape [K, N] (tf2onnx's form)."""
    m = qdq_matmul_add((N,))
    inits = {t.name: t for t in m.graph.initializer}
    w = NH.to_array(inits["w_q"])
    inits["w_q"].CopyFrom(NH.from_array(w.ravel(), "w_q"))
    inits["w_s"].CopyFrom(NH.from_array(np.array(0.007, np.float32), "w_s"))
    inits["w_z"].CopyFrom(NH.from_array(np.array(0, np.int8), "w_z"))
    m.graph.initializer.append(NH.from_array(np.array([K, N], np.int64), "w_shape"))
    nodes = list(m.graph.node)
    for node in nodes:
        if node.name == "dq_w":
            del node.attribute[:]
            node.output[0] = "wflat"
    k = next(i for i, n in enumerate(nodes) if n.name == "dq_w")
    nodes.insert(k + 1, H.make_node("Reshape", ["wflat", "w_shape"], ["wf"], name="reshape_w"))
    del m.graph.node[:]
    m.graph.node.extend(nodes)
    return m


def dq_transpose_matmul() -> onnx.ModelProto:
    """QDQ MatMul whose weight is DQ(int8 W [N, K], per output channel: axis 0) -> Transpose:
    the per-channel axis moves to 1, as MatMul wants it."""
    m = qdq_matmul_add((N,))
    inits = {t.name: t for t in m.graph.initializer}
    inits["w_q"].CopyFrom(NH.from_array(np.ascontiguousarray(NH.to_array(inits["w_q"]).T), "w_q"))
    nodes = list(m.graph.node)
    k = next(i for i, n in enumerate(nodes) if n.name == "dq_w")
    nodes[k] = H.make_node("DequantizeLinear", ["w_q", "w_s", "w_z"], ["wt"], name="dq_w", axis=0)
    nodes.insert(k + 1, H.make_node("Transpose", ["wt"], ["wf"], name="transpose_w", perm=[1, 0]))
    del m.graph.node[:]
    m.graph.node.extend(nodes)
    return m


def transpose_then_quantize() -> onnx.ModelProto:
    """float NHWC x -> Transpose to NCHW -> QuantizeLinear -> DQ -> Conv (QDQ) -> Q -> DQ -> y:
    a channels-last float input, as TF-converted models take it."""
    from tests.models.tiny import tiny_qdq_conv

    m = tiny_qdq_conv()
    g = m.graph
    g.input[0].CopyFrom(vi("x_nhwc", TP.FLOAT, [1, 8, 8, 3]))
    g.node.insert(0, H.make_node("Transpose", ["x_nhwc"], ["x"], name="to_nchw", perm=[0, 3, 1, 2]))
    return m


# ---- asymmetric (uint8, zero point != 0) weights ---------------------------------------------------

def ort_quantized(case_id: str, fmt: str, activation_type: str = "uint8", weight_type: str = "uint8",
                  per_channel: bool = True, reduce_range: bool = False,
                  **extra: object) -> onnx.ModelProto:
    """An op case of tests/models/ops.py quantized by onnxruntime quantize_static with these types
    (extra: more extra_options, e.g. WeightSymmetric=False)."""
    import tempfile
    from pathlib import Path

    from tests.models.ops import CASES, quantize

    case = next(c for cases in CASES.values() for c in cases if c.id == case_id)
    with tempfile.TemporaryDirectory(prefix="mcugen-wild-") as tmp:
        out = quantize(case.float_model(fmt), case.calib_feeds(), fmt=fmt, per_channel=per_channel,
                       activation_type=activation_type, weight_type=weight_type, reduce_range=reduce_range,
                       out_path=Path(tmp) / "q.onnx", extra_options={**(case.quant_options or {}), **extra})
        return onnx.load(out)


def qlinear_matmul_u8_weights_255() -> onnx.ModelProto:
    """QLinearMatMul, uint8 weights with zero point 0 and values up to 255 (w - zw = 255 needs three
    int8 parts), uint8 activations."""
    rng = np.random.default_rng(14)
    w = rng.integers(0, 256, (K, N)).astype(np.uint8)
    w[0, :] = 255
    inits = scalars(a_s=0.02, a_z=np.array(120, np.uint8), w_s=0.004, w_z=np.array(0, np.uint8),
                    y_s=0.3, y_z=np.array(10, np.uint8)) + [NH.from_array(w, "w")]
    node = H.make_node("QLinearMatMul", ["a", "a_s", "a_z", "w", "w_s", "w_z", "y_s", "y_z"], ["y"], name="qmm")
    return model([node], [vi("a", TP.UINT8, [M, K])], [vi("y", TP.UINT8, [M, N])], inits)


def u8_depthwise_asymmetric() -> onnx.ModelProto:
    """onnxruntime's u8u8 QDQ depthwise conv with its weight zero points moved off 128."""
    m = ort_quantized("dwconv3x3_m1", "qdq")
    zp = next(t for t in m.graph.initializer if t.name == "W_zero_point")
    zp.CopyFrom(NH.from_array(np.full(NH.to_array(zp).shape, 100, np.uint8), "W_zero_point"))
    return m


# ---- QOperator graphs whose int8/uint8 graph input has no QuantizeLinear (issue 26 item 3a) ------

def qlinear_input_graph(elem: int = TP.UINT8, add_scale: float | None = None, seed: int = 15) -> onnx.ModelProto:
    """x (uint8 or int8 graph input, no QuantizeLinear: the QLinear nodes' own x_scale/x_zero_point
    quantize it) -> QLinearConv 3x3 pad 1 -> y; com.microsoft QLinearAdd(x, y) -> z, as onnxruntime's
    QOperator tests and C++ exporters write it. add_scale: QLinearAdd reads x with another scale."""
    rng = np.random.default_rng(seed)
    u8 = elem == TP.UINT8
    dt, zx, zy, zw, zz = (np.uint8, 131, 120, 128, 126) if u8 else (np.int8, 3, -8, 0, -2)
    w = rng.integers(0, 256, (3, 3, 3, 3)) if u8 else rng.integers(-127, 128, (3, 3, 3, 3))
    inits = scalars(x_s=0.02, w_s=0.005, y_s=0.04, z_s=0.05, xa_s=add_scale or 0.02) + [
        NH.from_array(np.array(zx, dt), "x_z"), NH.from_array(np.array(zy, dt), "y_z"),
        NH.from_array(np.array(zw, dt), "w_z"), NH.from_array(np.array(zz, dt), "z_z"),
        NH.from_array(w.astype(dt), "w"),
        NH.from_array(rng.integers(-2000, 2000, 3).astype(np.int32), "b")]
    nodes = [H.make_node("QLinearConv", ["x", "x_s", "x_z", "w", "w_s", "w_z", "y_s", "y_z", "b"], ["y"],
                         name="qconv", pads=[1, 1, 1, 1]),
             H.make_node("QLinearAdd", ["x", "xa_s", "x_z", "y", "y_s", "y_z", "z_s", "z_z"], ["z"],
                         name="qadd", domain="com.microsoft")]
    return model(nodes, [vi("x", elem, [1, 3, 5, 5])], [vi("z", elem, [1, 3, 5, 5])], inits, 13, MS)


def qlinear_add_inputs(elem: int = TP.UINT8, n_inputs: int = 8) -> onnx.ModelProto:
    """com.microsoft QLinearAdd of two graph inputs, neither behind a QuantizeLinear; n_inputs=7:
    the optional C_zero_point left out (0, of the inputs' type)."""
    dt, za, zb, zc = (np.uint8, 100, 140, 128) if elem == TP.UINT8 else (np.int8, -28, 12, 0)
    inits = scalars(a_s=0.03, b_s=0.02, c_s=0.04) + [
        NH.from_array(np.array(za, dt), "a_z"), NH.from_array(np.array(zb, dt), "b_z"),
        NH.from_array(np.array(zc, dt), "c_z")]
    node = H.make_node("QLinearAdd", ["a", "a_s", "a_z", "b", "b_s", "b_z", "c_s", "c_z"][:n_inputs], ["c"],
                       name="qadd", domain="com.microsoft")
    return model([node], [vi("a", elem, [1, 4, 3, 3]), vi("b", elem, [1, 4, 3, 3])],
                 [vi("c", elem, [1, 4, 3, 3])], inits, 13, MS)


def untyped_value_info() -> onnx.ModelProto:
    """QDQ Gemm with value_info entries that have a name and no type (some exporters and graph
    editors write them; onnx.checker refuses them): dropped with a warning."""
    m = qdq_gemm((N,))
    m.graph.value_info.extend([onnx.ValueInfoProto(name="g"), onnx.ValueInfoProto(name="xf", doc_string="x")])
    return m


# ---- int8 weights with a non-zero zero point (issue 26 item 3b) -------------------------------------

def s8_asymmetric(case_id: str, fmt: str, per_channel: bool = True, reduce_range: bool = False) -> onnx.ModelProto:
    """onnxruntime quantize_static, int8 activations and weights, extra_options WeightSymmetric=False:
    int8 weights with a non-zero zero point (per channel in QOperator form; QDQ per channel stays
    symmetric, so per tensor there)."""
    return ort_quantized(case_id, fmt, "int8", "int8", per_channel, reduce_range, WeightSymmetric=False)


def s8_weights_zp_minus128(op: str = "matmul") -> onnx.ModelProto:
    """int8 weights with zero point -128 (uint8 data stored as int8 - 128 by converters that keep
    the uint8 zero point's meaning): QLinearMatMul [M, K] x [K, N], or a QDQ Conv 3x3 per tensor.
    w - zw reaches 255: three stacked parts."""
    rng = np.random.default_rng(16)
    if op == "matmul":
        w = rng.integers(-128, 128, (K, N)).astype(np.int8)
        w[0, :] = 127
        inits = scalars(a_s=0.02, a_z=np.array(-5, np.int8), w_s=0.002, w_z=np.array(-128, np.int8),
                        y_s=0.2, y_z=np.array(3, np.int8)) + [NH.from_array(w, "w")]
        node = H.make_node("QLinearMatMul", ["a", "a_s", "a_z", "w", "w_s", "w_z", "y_s", "y_z"], ["y"], name="qmm")
        return model([node], [vi("a", TP.INT8, [M, K])], [vi("y", TP.INT8, [M, N])], inits)
    w = rng.integers(-128, 128, (4, 3, 3, 3)).astype(np.int8)
    inits = scalars(x_s=0.03, x_z=np.array(4, np.int8), w_s=0.003, w_z=np.array(-128, np.int8),
                    y_s=0.4, y_z=np.array(-7, np.int8)) + [NH.from_array(w, "w_q")]
    nodes = [H.make_node("QuantizeLinear", ["x", "x_s", "x_z"], ["xq"], name="q_x"),
             H.make_node("DequantizeLinear", ["xq", "x_s", "x_z"], ["xf"], name="dq_x"),
             H.make_node("DequantizeLinear", ["w_q", "w_s", "w_z"], ["wf"], name="dq_w"),
             H.make_node("Conv", ["xf", "wf"], ["c"], name="conv", pads=[1, 1, 1, 1]),
             H.make_node("QuantizeLinear", ["c", "y_s", "y_z"], ["yq"], name="q_y"),
             H.make_node("DequantizeLinear", ["yq", "y_s", "y_z"], ["y"], name="dq_y")]
    return model(nodes, [vi("x", TP.FLOAT, [1, 3, 6, 6])], [vi("y", TP.FLOAT, [1, 4, 6, 6])], inits)


def u8_depthwise_weights_255(dilation_w: int = 1, dilation_h: int = 1) -> onnx.ModelProto:
    """QLinearConv depthwise 3x3 (stride 2 along W, pads 1 0 2 1), uint8 weights of zero point 0
    reaching 255 (w - zw = 255: three interleaved parts), uint8 activations; dilated as given."""
    rng = np.random.default_rng(18)
    w = rng.integers(0, 256, (6, 1, 3, 3)).astype(np.uint8)
    w[:, 0, 0, 0] = 255
    inits = scalars(x_s=0.02, w_s=0.001, y_s=0.1) + [
        NH.from_array(np.array(110, np.uint8), "x_z"), NH.from_array(np.array(0, np.uint8), "w_z"),
        NH.from_array(np.array(90, np.uint8), "y_z"), NH.from_array(w, "w"),
        NH.from_array(rng.integers(-3000, 3000, 6).astype(np.int32), "b")]
    node = H.make_node("QLinearConv", ["x", "x_s", "x_z", "w", "w_s", "w_z", "y_s", "y_z", "b"], ["y"],
                       name="qdw", group=3, pads=[1, 0, 2, 1], strides=[1, 2], dilations=[dilation_h, dilation_w])
    out_h = 6 + 3 - dilation_h * 2
    out_w = (7 + 1 - dilation_w * 2 - 1) // 2 + 1
    return model([node], [vi("x", TP.UINT8, [1, 3, 6, 7])], [vi("y", TP.UINT8, [1, 6, out_h, out_w])], inits)


def s8_asym_matmul_per_channel() -> onnx.ModelProto:
    """QDQ MatMul + bias, int8 weights per output channel with zero points across int8 (-128 to 127)."""
    m = qdq_matmul_add((N,))
    inits = {t.name: t for t in m.graph.initializer}
    inits["w_z"].CopyFrom(NH.from_array(np.array([-128, -40, 0, 77, 127], np.int8), "w_z"))
    return m


@dataclass(frozen=True)
class Refusal:
    build: Callable[[], onnx.ModelProto]
    fragments: tuple[str, ...]  # what the one-line error must say


def int16_input_q() -> onnx.ModelProto:
    """float x -> QuantizeLinear(int16) -> DQ -> Relu -> Q(int8): 16-bit activations at the input."""
    inits = scalars(s=0.001, z=np.array(0, np.int16), s8=0.01, z8=np.array(0, np.int8))
    nodes = [H.make_node("QuantizeLinear", ["x", "s", "z"], ["xq"], name="q16"),
             H.make_node("DequantizeLinear", ["xq", "s", "z"], ["xf"], name="dq16"),
             H.make_node("Relu", ["xf"], ["r"], name="relu"),
             H.make_node("QuantizeLinear", ["r", "s8", "z8"], ["y"], name="q8")]
    return model(nodes, [vi("x", TP.FLOAT, [1, 8])], [vi("y", TP.INT8, [1, 8])], inits, 21)


def int16_input_direct() -> onnx.ModelProto:
    """int16 graph input x -> DQ -> Relu -> Q(int8)."""
    inits = scalars(s=0.001, z=np.array(0, np.int16), s8=0.01, z8=np.array(0, np.int8))
    nodes = [H.make_node("DequantizeLinear", ["x", "s", "z"], ["xf"], name="dq16"),
             H.make_node("Relu", ["xf"], ["r"], name="relu"),
             H.make_node("QuantizeLinear", ["r", "s8", "z8"], ["y"], name="q8")]
    return model(nodes, [vi("x", TP.INT16, [1, 8])], [vi("y", TP.INT8, [1, 8])], inits, 21)


def uint16_direct() -> onnx.ModelProto:
    """uint16 graph input x (zero point 32768) -> DQ -> Relu -> Q(uint16, 32768) -> uint16 y, as
    onnx's uint16 Q/DQ tests and symmetric QUInt16 models write the edges: int16 with zero point 0."""
    inits = scalars(s=0.001, s2=0.0008) + [NH.from_array(np.array(32768, np.uint16), "z")]
    nodes = [H.make_node("DequantizeLinear", ["x", "s", "z"], ["xf"], name="dq16"),
             H.make_node("Relu", ["xf"], ["r"], name="relu"),
             H.make_node("QuantizeLinear", ["r", "s2", "z"], ["y"], name="q16")]
    return model(nodes, [vi("x", TP.UINT16, [1, 8])], [vi("y", TP.UINT16, [1, 8])], inits, 21)


def uint16_ort(symmetric: bool = True) -> onnx.ModelProto:
    """onnxruntime quantize_static(activation_type=QUInt16, ActivationSymmetric), int8 weights:
    Conv 3x3 + Relu -> Conv 1x1, QDQ; symmetric uint16 activations have zero point 32768."""
    import tempfile
    from pathlib import Path

    from onnxruntime.quantization import QuantFormat, QuantType, quantize_static

    from tests.models.a16 import _Feeds, feeds

    rng = np.random.default_rng(17)
    inits = [NH.from_array(rng.normal(0, 0.3, (6, 3, 3, 3)).astype(np.float32), "w1"),
             NH.from_array(rng.normal(0, 0.1, 6).astype(np.float32), "b1"),
             NH.from_array(rng.normal(0, 0.3, (4, 6, 1, 1)).astype(np.float32), "w2")]
    nodes = [H.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]), H.make_node("Relu", ["c1"], ["r1"]),
             H.make_node("Conv", ["r1", "w2"], ["y"])]
    f32 = model(nodes, [vi("x", TP.FLOAT, [1, 3, 6, 6])], [vi("y", TP.FLOAT, [1, 4, 6, 6])], inits, 21)
    with tempfile.TemporaryDirectory(prefix="mcugen-wild-") as tmp:
        src, out = Path(tmp) / "f.onnx", Path(tmp) / "q.onnx"
        onnx.save(f32, src)
        quantize_static(str(src), str(out), _Feeds(feeds((1, 3, 6, 6))), quant_format=QuantFormat.QDQ,
                        activation_type=QuantType.QUInt16, weight_type=QuantType.QInt8, per_channel=True,
                        extra_options={"ActivationSymmetric": symmetric})
        return onnx.load(out)


def backend_uint16(name: str, zero_point: int | None = None) -> onnx.ModelProto:
    """onnx's backend test model `name` (tests/models/onnx_backend.py), its uint16 zero point set to
    zero_point when given."""
    m = onnx.load_model_from_string(backend_models()[name])
    if zero_point is not None:
        for t in m.graph.initializer:
            if t.data_type == TP.UINT16:
                t.CopyFrom(NH.from_array(np.full(NH.to_array(t).shape, zero_point, np.uint16), t.name))
    return m


WILD_CASES: dict[str, Callable[[], onnx.ModelProto]] = {
    **{f"qgemm_c{'x'.join(map(str, s)) or 'scalar'}": (lambda s=s: qgemm(s))
       for s in [(), (1,), (N,), (1, N), (M, 1), (M, N), (1, 1)]},
    "qgemm_c4x1_square": lambda: qgemm((4, 1), m=4, n=4),
    "qgemm_no_c": lambda: qgemm(None),
    "int16_input_quantize": int16_input_q,  # int16 activations, zero point 0 (emitter/ops/a16.py)
    "int4_weights": int4_weights,  # packed 4-bit weights, mcu_fully_connected_s4 (docs/int4.md)
    "int16_input": int16_input_direct,
    "qgemm_transb0_c3x1": lambda: qgemm((M, 1), trans_b=0),
    **{f"qdq_gemm_c{'x'.join(map(str, s)) or 'scalar'}": (lambda s=s: qdq_gemm(s))
       for s in [(), (N,), (1, N), (M, 1), (M, N)]},
    "qdq_gemm_float_c3x1": lambda: qdq_gemm((M, 1), float_c=True),
    "qdq_matmul_add_b3x5": lambda: qdq_matmul_add((M, N)),
    "qdq_matmul_add_b3x1": lambda: qdq_matmul_add((M, 1)),
    "qdq_matmul_add_b5": lambda: qdq_matmul_add((N,)),
    "only_quantize": only_quantize,
    "only_quantize_u8": lambda: only_quantize(TP.UINT8),
    "only_dequantize": only_dequantize,
    "only_dequantize_u8": lambda: only_dequantize(TP.UINT8),
    "int8_in_and_out": int8_in_and_out,
    "dq_without_zero_point": dq_without_zero_point,
    **{f"qdq_conv_opset{v}": (lambda v=v: qdq_conv_relu_pool(v)) for v in (21, 22, 23, 24, 25)},
    "qdq_gemm_opset25": lambda: at_opset(qdq_gemm((N,)), 25),
    "qdq_matmul_add_opset24": lambda: at_opset(qdq_matmul_add((M, 1)), 24),
    "only_quantize_opset23_attrs": lambda: with_attrs(at_opset(only_quantize(), 23), "QuantizeLinear",
                                                      saturate=1, output_dtype=TP.INT8, precision=TP.FLOAT),
    "only_dequantize_opset23_attrs": lambda: with_attrs(at_opset(only_dequantize(), 23), "DequantizeLinear",
                                                        output_dtype=TP.FLOAT, block_size=0),
    "qlinear_pool_ms_only_channels_last0": lambda: qlinear_pool(0),
    "dq_unsqueeze_mul": lambda: dq_unsqueeze_mul(False),
    "dq_transpose_matmul_per_channel": dq_transpose_matmul,
    "dq_reshape_matmul": dq_reshape_matmul,
    "transpose_then_quantize": transpose_then_quantize,
    "u8u8_conv_qdq_per_channel": lambda: ort_quantized("conv3x3_p1", "qdq"),
    "u8u8_conv_qop_per_tensor": lambda: ort_quantized("conv3x3_s2", "qop", per_channel=False),
    "u8u8_gemm_qop": lambda: ort_quantized("gemm_transb1", "qop"),
    "u8u8_gemm_transb0_qdq": lambda: ort_quantized("gemm_transb0", "qdq", per_channel=False),
    "u8u8_matmul_add_qdq": lambda: ort_quantized("matmul_add_bias", "qdq"),
    "u8u8_conv1x1_qdq": lambda: ort_quantized("conv1x1", "qdq"),
    "u8_weights_255_qlinear_matmul": qlinear_matmul_u8_weights_255,
    "u8u8_depthwise_symmetric": lambda: ort_quantized("dwconv3x3_m1", "qdq"),
    "s8_asym_conv_qop_per_channel": lambda: s8_asymmetric("conv3x3_s2", "qop"),  # issue 26 item 3b
    "s8_asym_conv1x1_qop_per_channel": lambda: s8_asymmetric("conv1x1", "qop"),
    "s8_asym_gemm_qop_per_channel": lambda: s8_asymmetric("gemm_transb1", "qop"),
    "s8_asym_gemm_qdq_per_tensor": lambda: s8_asymmetric("gemm_transb1", "qdq", per_channel=False),
    "s8_asym_matmul_add_qdq_per_tensor": lambda: s8_asymmetric("matmul_add_bias", "qdq", per_channel=False),
    "s8_weights_zp_minus128_qlinear_matmul": s8_weights_zp_minus128,
    "s8_asym_matmul_per_channel_qdq": s8_asym_matmul_per_channel,
    "s8_weights_zp_minus128_qdq_conv": lambda: s8_weights_zp_minus128("conv"),
    "s8_asym_depthwise_reduce_range_qop": lambda: s8_asymmetric("dwconv3x3_m1", "qop", reduce_range=True),
    "s8_asym_depthwise_qop_per_channel": lambda: s8_asymmetric("dwconv3x3_m1", "qop"),
    "u8_depthwise_asymmetric": u8_depthwise_asymmetric,
    "s8_asym_depthwise_m2_qop_per_channel": lambda: s8_asymmetric("dwconv3x3_m2", "qop"),
    "s8_asym_depthwise_s2_qdq_per_tensor": lambda: s8_asymmetric("dwconv3x3_s2_nobias", "qdq", per_channel=False),
    "u8_depthwise_weights_255_qlinear": u8_depthwise_weights_255,
    "u8_depthwise_weights_255_dilated_w": lambda: u8_depthwise_weights_255(2),  # rows repeated instead
    "u8_depthwise_weights_255_dilated_h": lambda: u8_depthwise_weights_255(1, 2),
    "uint16_input_output": uint16_direct,  # issue 26 item 3c: uint16, zero point 32768 = int16
    "uint16_ort_qdq_symmetric": uint16_ort,
    "onnx_dequantizelinear_uint16_zp32768": lambda: backend_uint16("test_dequantizelinear_uint16", 32768),
    "onnx_quantizelinear_uint16_zp32768": lambda: backend_uint16("test_quantizelinear_uint16", 32768),
    "value_info_without_type": untyped_value_info,  # issue 26 item 3d: dropped with a warning
    "qlinear_conv_add_u8_input": qlinear_input_graph,  # issue 26 item 3a: no QuantizeLinear at the input
    "qlinear_conv_add_s8_input": lambda: qlinear_input_graph(TP.INT8),
    "qlinear_add_two_u8_inputs": qlinear_add_inputs,
    "qlinear_add_no_output_zero_point_u8": lambda: qlinear_add_inputs(n_inputs=7),
    "qlinear_add_no_output_zero_point_s8": lambda: qlinear_add_inputs(TP.INT8, n_inputs=7),
    **{f"onnx_{name[5:]}": (lambda raw=raw: onnx.load_model_from_string(raw))  # batched, asymmetric
       for name, raw in backend_models().items() if name.startswith("test_qlinearmatmul_3D")},
}

WILD_REFUSALS: dict[str, Refusal] = {
    "qgemm_c_bad_shape": Refusal(lambda: qgemm((N + 1,)), ("bias 'C'", "[6]", "does not broadcast")),
    "qgemm_c_rank3": Refusal(lambda: qgemm((2, M, N)), ("bias 'C'", "[2, 3, 5]")),
    "zero_point_of_another_type": Refusal(qgemm_uint8_input_int8_zero_point,
                                          ("tensor 'a' is uint8", "zero point", "int8")),
    "opset_26": Refusal(lambda: at_opset(only_quantize(), 26), ("model opset 26", "10-25", "version_converter")),
    "block_quantized_weights": Refusal(dq_block_weights, ("node 'dq_w' (DequantizeLinear", "block_size=4")),
    "quantize_to_int16_output_dtype": Refusal(
        lambda: with_attrs(at_opset(qdq_gemm((N,)), 21), "QuantizeLinear", output_dtype=TP.INT16),
        ("node 'q_x' (QuantizeLinear", "output_dtype=INT16")),
    "dequantize_to_float16": Refusal(
        lambda: with_attrs(at_opset(qdq_gemm((N,)), 23), "DequantizeLinear", output_dtype=TP.FLOAT16),
        ("(DequantizeLinear, opset 23)", "output_dtype=FLOAT16")),
    "quantize_precision_float16": Refusal(
        lambda: with_attrs(at_opset(qdq_gemm((N,)), 23), "QuantizeLinear", precision=TP.FLOAT16),
        ("precision=FLOAT16",)),
    "conv_integer": Refusal(conv_integer, ("(ConvInteger", "dynamic quantization", "mcugen quantize")),
    "matmul_integer": Refusal(matmul_integer, ("(MatMulInteger", "dynamic quantization", "mcugen quantize")),
    "bias_overflowing_the_accumulator": Refusal(qdq_gemm_bias_overflowing,
                                                ("node 'gemm' (Gemm", "bias values reach", "int32 accumulator")),
    "dq_unsqueeze_mul_per_channel": Refusal(dq_unsqueeze_mul, ("node 'mul' (Mul", "per-axis quantization")),
    "qlinear_input_scales_disagree": Refusal(lambda: qlinear_input_graph(add_scale=0.03),
                                             ("'x'", "'qconv'", "'qadd'", "disagree")),
    "qlinear_add_six_inputs": Refusal(lambda: qlinear_add_inputs(n_inputs=6),
                                      ("graph input 'a'", "node 'qadd' (QLinearAdd)", "6 inputs, expects 7")),
    "onnx_quantizelinear_uint16": Refusal(lambda: backend_uint16("test_quantizelinear_uint16"),
                                          ("uint16 activation 'y'", "zero point [32767]", "32768")),
    "onnx_dequantizelinear_uint16": Refusal(lambda: backend_uint16("test_dequantizelinear_uint16"),
                                            ("uint16 activation 'x'", "zero point [32767]", "32768")),
    "uint16_asymmetric": Refusal(lambda: uint16_ort(False), ("uint16 activation", "zero point",
                                                            "32768", "ActivationSymmetric")),
    "u8_depthwise_asymmetric_dilated_hw": Refusal(lambda: u8_depthwise_weights_255(2, 2),
                                                  ("node 'qdw'", "non-zero zero points", "dilated along both")),
    "qlinear_pool_channels_last1": Refusal(lambda: qlinear_pool(1), ("channels_last=1", "channels_last=0")),
}
