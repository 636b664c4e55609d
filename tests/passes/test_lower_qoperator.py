"""emitter/lower/qoperator.py: QLinear* nodes lower to the same IR as their QDQ form."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from onnx import TensorProto as TP
from onnx import helper as H

from emitter.errors import NodeUnsupported, UnsupportedError
from emitter.lower import lower
from emitter.lower.qoperator import QOP_SIGNATURES, check_qop_arity, complete_qop_shapes, float_op_shape
from emitter.ops import onnx_lowering
from tests.passes.graphs import init, load, model


def qlinear_conv(tmp_path: Path, with_bias: bool = True):  # type: ignore[no-untyped-def]
    w = np.arange(-9, 9, dtype=np.int8).reshape(3, 2, 1, 3)
    inits = [init("xs", 0.05), init("xz", 10, np.uint8), init("w", w, np.int8),
             init("ws", [0.01, 0.02, 0.03]), init("wz", [0, 0, 0], np.int8),
             init("ys", 0.2), init("yz", 120, np.uint8), init("b", [5, -6, 7], np.int32)]
    ins = ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz"] + (["b"] if with_bias else [])
    nodes = [H.make_node("QLinearConv", ins, ["y"], name="qconv", pads=[0, 1, 0, 1])]
    return load(model(nodes, inits, [("x", "uint8", [1, 2, 4, 4])], [("y", "uint8", [1, 3, 4, 4])]), tmp_path)


def test_qlinear_conv_is_a_conv(tmp_path: Path) -> None:
    g = lower(qlinear_conv(tmp_path))
    (conv,) = g.nodes
    assert (conv.name, conv.op, conv.source) == ("qconv", "conv", "QLinearConv")
    x, w, b = (g.t(n) for n in conv.inputs)
    assert x.quant.zp == 10 - 128 and g.t("y").quant.zp == 120 - 128  # uint8 activations -> int8
    assert w.quant.axis == 0 and np.allclose(w.quant.scale, [0.01, 0.02, 0.03])
    assert b.data.tolist() == [5, -6, 7] and conv.attr("pads") == (0, 1, 0, 1)
    assert (conv.attr("act_min"), conv.attr("act_max")) == (-128, 127)


def test_qlinear_add_and_concat_with_shapes_from_the_float_op(tmp_path: Path) -> None:
    inits = [init("a_s", 0.05), init("a_z", 3, np.int8), init("b_s", 0.04), init("b_z", -5, np.int8),
             init("s_s", 0.08), init("s_z", 1, np.int8), init("y_s", 0.1), init("y_z", 0, np.int8)]
    nodes = [H.make_node("QLinearAdd", ["a", "a_s", "a_z", "b", "b_s", "b_z", "s_s", "s_z"], ["s"],
                         name="add", domain="com.microsoft"),
             H.make_node("QLinearConcat", ["y_s", "y_z", "s", "s_s", "s_z", "a", "a_s", "a_z"], ["y"],
                         name="concat", axis=1, domain="com.microsoft")]
    m = model(nodes, inits, [("a", "int8", [1, 6]), ("b", "int8", [1, 6])], [("y", "int8", [1, 12])],
              ms_domain=True)
    om = load(m, tmp_path)
    assert "s" not in om.shapes  # com.microsoft ops: no ONNX shape inference
    complete_qop_shapes(om)
    assert om.shapes["s"] == (1, 6) and om.dtypes["s"] == np.dtype(np.int8)
    g = lower(om)
    assert [(n.name, n.op) for n in g.nodes][0] == ("add", "add") and g.nodes[-1].op == "concat"
    assert g.t("s").shape == (1, 6) and g.t("s").quant.s == pytest.approx(0.08)


def test_every_signature_names_an_op_some_module_lowers() -> None:
    lowering = onnx_lowering()
    for qop, sig in QOP_SIGNATURES.items():
        assert sig["op"] in lowering, qop


def test_arity_is_checked() -> None:
    with pytest.raises(NodeUnsupported, match="QLinearConv has 5 inputs, expects 8"):
        check_qop_arity(H.make_node("QLinearConv", ["x", "a", "b", "c", "d"], ["y"]))
    with pytest.raises(NodeUnsupported, match="QLinearConcat has 7 inputs, expects 2 \\+ 3 per input"):
        check_qop_arity(H.make_node("QLinearConcat", list("abcdefg"), ["y"]))


def test_bias_must_be_constant(tmp_path: Path) -> None:
    m = qlinear_conv(tmp_path).model
    m.graph.node[0].input[8] = "bias_in"  # the bias is a graph input
    m.graph.input.append(H.make_tensor_value_info("bias_in", TP.INT32, [3]))
    with pytest.raises(UnsupportedError) as e:
        lower(load(m, tmp_path, "m2"))
    assert ("qconv", "QLinearConv", 13, "bias is not a constant") in e.value.problems


def test_float_op_shape() -> None:
    assert float_op_shape("Conv", [(1, 2, 8, 8), (4, 2, 3, 3)], {"strides": [2, 2]}, 13) == (1, 4, 3, 3)
    assert float_op_shape("GlobalAveragePool", [(1, 5, 7, 7)], {"channels_last": 0}, 13) == (1, 5, 1, 1)
    assert float_op_shape("Conv", [(1, 2, 8, 8), (4, 2, 3)], {}, 13) is None  # weights of the wrong rank
