"""emitter/lower/qparams.py: reading scales and zero points, uint8 -> int8, DQ of constants."""
from __future__ import annotations

import numpy as np
import pytest
from onnx import helper as H

from emitter.errors import NodeUnsupported, QuantError
from emitter.ir import QuantParams
from emitter.lower.qparams import dequantized_const, dq_axis, onnx_attrs, read_qparams, to_int8

NODE = H.make_node("DequantizeLinear", ["t", "s", "z"], ["f"], name="dq")


def read(inits: dict, scale: str = "s", zp: str | None = "z", axis: int | None = None):  # type: ignore[no-untyped-def]
    zp_dtype: dict = {}
    return read_qparams(inits, zp_dtype, NODE, scale, zp, axis, "t"), zp_dtype


def test_uint8_becomes_int8_with_the_same_real_values() -> None:
    quant = QuantParams(np.array([0.5]), np.array([128], np.int32))
    data, q8 = to_int8(np.array([0, 128, 255], np.uint8), quant)
    assert data.dtype == np.int8 and data.tolist() == [-128, 0, 127] and q8.zp == 0
    real = lambda d, q: (d.astype(np.float64) - q.zp) * q.s  # noqa: E731
    assert np.array_equal(real(np.array([0, 128, 255]), quant), real(data, q8))
    same, q_same = to_int8(np.array([-3, 4], np.int8), quant)
    assert same.tolist() == [-3, 4] and q_same is quant


def test_per_tensor_and_per_axis() -> None:
    q, zp_dtype = read({"s": np.array(0.25, np.float32), "z": np.array(-3, np.int8)})
    assert (q.s, q.zp, q.axis) == (0.25, -3, None) and zp_dtype == {"t": np.dtype(np.int8)}
    q, _ = read({"s": np.array([0.1, 0.2], np.float32), "z": np.array([0, 0], np.int8)}, axis=1)
    assert q.axis == 1 and q.zero_point.tolist() == [0, 0] and q.zero_point.dtype == np.int32
    q, _ = read({"s": np.array([0.1], np.float32), "z": np.array([5], np.uint8)}, axis=1)
    assert q.axis is None  # one scale: per-tensor whatever the axis
    # DequantizeLinear's zero point has its scale's shape (the spec; onnxruntime refuses it too): a
    # scalar one with per-axis scales is refused by name (QLinear ops, where it may broadcast, accept it)
    with pytest.raises(QuantError, match="broadcasts only in QLinearConv/QLinearMatMul/QGemm"):
        read({"s": np.array([0.1, 0.2], np.float32), "z": np.array(7, np.int8)}, axis=0)


def test_missing_zero_point_is_zero_and_uint8() -> None:
    q, zp_dtype = read({"s": np.array(0.5, np.float32)}, zp=None)
    assert q.zp == 0 and zp_dtype["t"] == np.dtype(np.uint8)


@pytest.mark.parametrize("inits, zp, err, text", [
    ({}, "z", NodeUnsupported, "scale 's' of 't' is not a constant"),
    ({"s": np.array(0.5, np.float32)}, "z", NodeUnsupported, "zero point 'z' of 't' is not a constant"),
    ({"s": np.array(-0.5, np.float32)}, None, QuantError, "must be finite and > 0"),
    ({"s": np.array(np.inf, np.float32)}, None, QuantError, "must be finite and > 0"),
    ({"s": np.array([], np.float32)}, None, QuantError, "scales must be non-empty float tensors"),
    ({"s": np.array(0.5, np.float32), "z": np.array(0.0, np.float32)}, "z", QuantError,
     "zero points must be integers"),
    ({"s": np.array([0.5, 0.25, 1.0], np.float32), "z": np.array([0, 0], np.int8)}, "z", QuantError,
     "2 zero points for 3 scales"),
])
def test_bad_parameters_name_the_tensor_and_what_to_do(inits, zp, err, text) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(err, match=text.replace("(", r"\(").replace(")", r"\)")):
        read(inits, zp=zp)


def test_dq_axis_and_attrs() -> None:
    n = H.make_node("DequantizeLinear", ["t", "s"], ["f"], axis=-1)
    assert onnx_attrs(n) == {"axis": -1} and dq_axis(n, (4, 3)) == 1
    assert dq_axis(H.make_node("DequantizeLinear", ["t", "s"], ["f"]), (4, 3)) == 1  # ONNX default


def const(data: np.ndarray, scale: np.ndarray, zp: np.ndarray, axis: int = 0):  # type: ignore[no-untyped-def]
    node = H.make_node("DequantizeLinear", ["t", "s", "z"], ["f"], name="dq", axis=axis)
    return dequantized_const({"t": data, "s": scale, "z": zp}, {}, node)


def test_dq_of_per_channel_int8_weights() -> None:
    w = np.arange(6, dtype=np.int8).reshape(3, 2)
    qi = const(w, np.array([0.1, 0.2, 0.3], np.float32), np.zeros(3, np.int8))
    assert qi.is_const and qi.name is None and np.array_equal(qi.data, w) and qi.quant.axis == 0
    assert qi.shape == (3, 2)


def test_dq_of_int32_bias_folds_its_zero_point() -> None:
    qi = const(np.array([10, 20], np.int32), np.array([0.5, 0.5], np.float32), np.array([1, -2], np.int32))
    assert qi.data.dtype == np.int32 and qi.data.tolist() == [9, 22] and qi.quant.zero_point.tolist() == [0, 0]


def test_dq_of_uint8_weights_is_int8() -> None:
    qi = const(np.array([[128, 130]], np.uint8), np.array(0.1, np.float32), np.array(128, np.uint8))
    assert qi.data.dtype == np.int8 and qi.data.tolist() == [[0, 2]] and qi.quant.zp == 0


def test_dq_const_errors() -> None:
    with pytest.raises(QuantError, match="3 per-axis scales for axis 0 of length 2"):
        const(np.zeros((2, 2), np.int8), np.array([0.1, 0.2, 0.3], np.float32), np.zeros(3, np.int8))
    with pytest.raises(QuantError, match="is empty"):
        const(np.zeros((0, 2), np.int8), np.array(0.1, np.float32), np.array(0, np.int8))
    with pytest.raises(QuantError, match="overflow int32"):
        const(np.array([-(2 ** 31)], np.int32), np.array(0.1, np.float32), np.array(5, np.int32))
