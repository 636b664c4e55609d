"""emitter/lower/qdq.py: DQ, lone Q, and every row of the QDQ rule table, on hand-built models.
The assertions are on the IR lowering returns (and, for clamps, on what passes/fuse.py makes of it)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from onnx import helper as H

from emitter.errors import UnsupportedError
from emitter.lower import lower
from emitter.lower.qdq import RULES
from emitter.passes.fuse import fuse_activations
from tests.passes.graphs import dq, init, load, model, q, qdq_op, scale_zp


def ops(g):  # type: ignore[no-untyped-def]
    return [(n.name, n.op) for n in g.nodes]


def conv_model(after: list, y_q: tuple[float, int] = (0.1, 0)):  # type: ignore[no-untyped-def]
    """x [1,2,4,4] -> Conv 1x1 (per-channel int8 weights, int32 bias) -> after -> Q(y_q)."""
    w = np.array([[[[3]], [[-2]]], [[[1]], [[4]]], [[[-5]], [[2]]]], np.int8)
    ws = np.array([0.01, 0.02, 0.03], np.float32)
    inits = [init("w_q", w, np.int8), init("w_s", ws), init("w_z", np.zeros(3), np.int8),
             init("b_q", [7, -9, 11], np.int32), init("b_s", ws * np.float32(0.05)),
             init("b_z", np.zeros(3), np.int32)]
    conv = H.make_node("Conv", ["xf", "wf", "bf"], ["o"], name="conv")
    m = qdq_op(conv, [1, 2, 4, 4], [1, 3, 4, 4], y_q=y_q, after=after, extra_inits=inits)
    m.graph.node.insert(2, dq("w_q", "w_s", "w_z", "wf", axis=0))
    m.graph.node.insert(3, dq("b_q", "b_s", "b_z", "bf", axis=0))
    return m


def test_rule_table_rows_are_documented() -> None:
    import inspect

    import emitter.lower.qdq as qdq

    src = inspect.getsource(qdq)
    table = src[src.index("RULES: tuple"):src.index("def lower_qdq")]
    assert table.count("#") == len(RULES) and table.count("=>") == len(RULES)


def test_dq_of_initializers_become_constants_and_dq_of_activations_their_tensor(tmp_path: Path) -> None:
    # DQ(initializer) -> constant QIn;  DQ(x) -> x
    g = lower(load(conv_model([]), tmp_path))
    (conv,) = g.nodes
    x, w, b = (g.t(n) for n in conv.inputs)
    assert x.name == "xq" and not x.is_const and x.quant.s == pytest.approx(0.05)
    assert w.is_const and w.data.dtype == np.int8 and w.quant.axis == 0
    assert np.allclose(w.quant.scale, [0.01, 0.02, 0.03])
    assert b.is_const and b.data.dtype == np.int32
    assert conv.outputs == ("yq",) and g.t("yq").quant.s == pytest.approx(0.1)


def test_lone_q_is_a_requantize(tmp_path: Path) -> None:
    # DQ(x) -> Q  =>  requantize(x) into Q's scale and zero point, full range
    m = model([q("x", "x_s", "x_z", "xq"), dq("xq", "x_s", "x_z", "xf"), q("xf", "y_s", "y_z", "yq"),
               dq("yq", "y_s", "y_z", "y")],
              scale_zp("x", 0.05, 3) + scale_zp("y", 0.2, -7), [("x", "float", [1, 4])], [("y", "float", [1, 4])])
    g = lower(load(m, tmp_path))
    assert ops(g) == [("q_yq", "requantize")]
    n = g.nodes[0]
    assert (n.attr("act_min"), n.attr("act_max")) == (-128, 127)
    assert g.t(n.inputs[0]).quant.zp == 3 and g.t(n.outputs[0]).quant.zp == -7


def test_split_with_a_q_per_output(tmp_path: Path) -> None:
    # DQ -> Split -> Q per output  =>  slice per output
    nodes = [q("x", "s", "z", "xq"), dq("xq", "s", "z", "xf"),
             H.make_node("Split", ["xf"], ["a", "b"], name="split", axis=1),
             q("a", "s", "z", "aq"), q("b", "s", "z", "bq"), dq("aq", "s", "z", "ya"), dq("bq", "s", "z", "yb")]
    m = model(nodes, [init("s", 0.1), init("z", 0, np.int8)], [("x", "float", [1, 6])],
              [("ya", "float", [1, 3]), ("yb", "float", [1, 3])])
    g = lower(load(m, tmp_path))
    assert [(n.op, n.outputs, n.attr("starts")) for n in g.nodes] == [("slice", ("aq",), (0,)),
                                                                     ("slice", ("bq",), (3,))]
    assert g.outputs == ("aq", "bq")


def test_matmul_add_bias_relu_is_fc_with_bias_then_a_clamp(tmp_path: Path) -> None:
    # DQ -> MatMul -> Add(DQ(int32 bias)) -> [Relu|Clip]* -> Q  =>  fc(bias) ; clamp
    w = np.arange(12, dtype=np.int8).reshape(4, 3) - 6
    inits = [init("w_q", w, np.int8), init("w_s", 0.02), init("w_z", 0, np.int8),
             init("b_q", [100, -50, 25], np.int32), init("b_s", 0.001), init("b_z", 0, np.int32)]
    mm = H.make_node("MatMul", ["xf", "wf"], ["o"], name="mm")
    after = [H.make_node("Add", ["o", "bf"], ["o2"], name="bias"), H.make_node("Relu", ["o2"], ["a"], name="relu")]
    m = qdq_op(mm, [1, 4], [1, 3], y_q=(0.1, -20), after=after, extra_inits=inits)
    m.graph.node.insert(2, dq("w_q", "w_s", "w_z", "wf"))
    m.graph.node.insert(3, dq("b_q", "b_s", "b_z", "bf"))
    g = lower(load(m, tmp_path))
    assert ops(g) == [("mm", "fc"), ("relu", "requantize")]
    fc, cl = g.nodes
    assert fc.source == cl.source == "MatMul+Add+Relu+QuantizeLinear"
    assert (fc.attr("act_min"), fc.attr("act_max")) == (-128, 127)  # the op is lowered unclamped
    assert np.array_equal(g.t(fc.inputs[2]).data, [100, -50, 25])
    assert fc.outputs == cl.inputs and cl.outputs == ("yq",)
    assert (cl.attr("act_min"), cl.attr("act_max")) == (-20, 127)  # Relu: real 0 is code -20
    g2 = fuse_activations(g)
    g2.verify()
    assert ops(g2) == [("mm", "fc")] and g2.nodes[0].outputs == ("yq",)
    assert (g2.nodes[0].attr("act_min"), g2.nodes[0].attr("act_max")) == (-20, 127)


def test_op_relu_clip_chain_is_op_then_one_clamp(tmp_path: Path) -> None:
    # DQ -> op -> [Relu|Clip]* -> Q  =>  op ; clamp (the chain's ranges intersected)
    after = [H.make_node("Relu", ["o"], ["r"], name="relu"),
             H.make_node("Clip", ["r", "", "hi"], ["a"], name="clip6")]
    m = conv_model(after, y_q=(0.1, -30))
    m.graph.initializer.append(init("hi", 6.0))
    g = lower(load(m, tmp_path))
    assert ops(g) == [("conv", "conv"), ("relu", "requantize")]
    assert g.nodes[1].source == "Conv+Relu+Clip+QuantizeLinear"
    assert (g.nodes[1].attr("act_min"), g.nodes[1].attr("act_max")) == (-30, 30)
    g2 = fuse_activations(g)
    assert ops(g2) == [("conv", "conv")] and (g2.nodes[0].attr("act_min"), g2.nodes[0].attr("act_max")) == (-30, 30)


def test_full_range_chain_emits_no_clamp(tmp_path: Path) -> None:
    # Relu before a Q whose zero point is -128: the range is all of int8, nothing to clamp
    g = lower(load(conv_model([H.make_node("Relu", ["o"], ["a"], name="relu")], y_q=(0.1, -128)), tmp_path))
    assert ops(g) == [("conv", "conv")] and g.nodes[0].source == "Conv+Relu+QuantizeLinear"
    assert (g.nodes[0].attr("act_min"), g.nodes[0].attr("act_max")) == (-128, 127)


def test_standalone_relu_clamps(tmp_path: Path) -> None:
    # DQ -> Relu|Clip -> [Relu|Clip]* -> Q  =>  requantize ; clamp (the Relu's own range counts)
    m = qdq_op(H.make_node("Relu", ["xf"], ["o"], name="relu"), [1, 8], [1, 8], x_q=(0.05, 0), y_q=(0.05, 0))
    g = fuse_activations(lower(load(m, tmp_path)))
    assert ops(g) == [("relu", "requantize")]
    assert (g.nodes[0].attr("act_min"), g.nodes[0].attr("act_max")) == (0, 127)


def test_float_chain_gets_an_exact_int8_form(tmp_path: Path) -> None:
    # DQ -> movement|pooling|unary op, no Q after  =>  op into an exact int8 form
    nodes = [q("x", "x_s", "x_z", "xq"), dq("xq", "x_s", "x_z", "xf"),
             H.make_node("Reshape", ["xf", "shape"], ["y"], name="reshape")]
    m = model(nodes, scale_zp("x", 0.05, 3) + [init("shape", [1, 8], np.int64)],
              [("x", "float", [2, 4])], [("y", "float", [1, 8])])
    g = lower(load(m, tmp_path))
    assert ops(g) == [("reshape", "reshape")] and g.nodes[0].source == "Reshape (float chain)"
    y = g.t(g.outputs[0])
    assert y.quant.same_as(g.t("xq").quant) and g.boundaries[y.name].float_io


def test_no_q_after_an_op_is_reported(tmp_path: Path) -> None:
    m = conv_model([])
    del m.graph.node[-2:]  # drop Q, DQ: the conv's float output is the graph output
    m.graph.output[0].name = "o"
    with pytest.raises(UnsupportedError) as e:
        lower(load(m, tmp_path))
    assert ("conv", "Conv", 13, "output 'o' is not quantized (no QuantizeLinear after it); float islands "
            "are not supported yet") in e.value.problems


def test_empty_clamp_range_is_reported(tmp_path: Path) -> None:
    m = conv_model([H.make_node("Clip", ["o", "lo", "hi"], ["a"], name="clip")], y_q=(0.1, 0))
    m.graph.initializer.extend([init("lo", 1000.0), init("hi", 2000.0)])
    with pytest.raises(UnsupportedError) as e:
        lower(load(m, tmp_path))
    assert e.value.problems == [("conv", "Conv", 13, "the fused clamp range [1000.0, 2000.0] is empty after "
                                 "quantization")]
