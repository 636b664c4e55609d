"""emitter/lower/float_chains.py: exact int8 forms for float tensors, and ops on int8 data."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from onnx import helper as H

from emitter.lower import lower
from tests.passes.graphs import dq, init, load, model, q, scale_zp


def test_unary_function_without_q_spans_its_256_values(tmp_path: Path) -> None:
    # DQ -> Sigmoid, no Q after: a LUT into the scale that spans sigmoid's outputs [0, 1)
    nodes = [q("x", "x_s", "x_z", "xq"), dq("xq", "x_s", "x_z", "xf"),
             H.make_node("Sigmoid", ["xf"], ["y"], name="sig")]
    g = lower(load(model(nodes, scale_zp("x", 0.05, 0), [("x", "float", [1, 8])], [("y", "float", [1, 8])]),
                   tmp_path))
    (lut,) = g.nodes
    assert lut.op == "lut" and lut.source == "Sigmoid (float chain)"
    yq = g.t(lut.outputs[0]).quant
    top = 1 / (1 + np.exp(-0.05 * 127))
    assert yq.zp == -128 and yq.s == pytest.approx(top / 255)
    assert g.boundaries[lut.outputs[0]].float_io


def test_chain_of_float_ops_ends_in_q(tmp_path: Path) -> None:
    # DQ -> MaxPool (keeps the input's scale) -> Sigmoid -> Q: the pool runs on int8, the LUT requantizes
    nodes = [q("x", "x_s", "x_z", "xq"), dq("xq", "x_s", "x_z", "xf"),
             H.make_node("MaxPool", ["xf"], ["p"], name="pool", kernel_shape=[2, 2]),
             H.make_node("Sigmoid", ["p"], ["s"], name="sig"), q("s", "y_s", "y_z", "yq")]
    m = model(nodes, scale_zp("x", 0.05, 3) + scale_zp("y", 1 / 256, -128), [("x", "float", [1, 1, 4, 4])],
              [("yq", "int8", [1, 1, 3, 3])])
    g = lower(load(m, tmp_path))
    assert [(n.name, n.op) for n in g.nodes] == [("pool", "maxpool"), ("sig", "lut")]
    assert g.t(g.nodes[0].outputs[0]).quant.same_as(g.t("xq").quant)
    assert g.nodes[1].outputs == ("yq",)


def test_int8_movement_runs_directly_and_passes_quant_through(tmp_path: Path) -> None:
    # int8 x -> Reshape -> Transpose -> DQ: no Q/DQ around the movement ops, quant from the DQ after
    nodes = [H.make_node("Reshape", ["x", "shape"], ["r"], name="reshape"),
             H.make_node("Transpose", ["r"], ["t"], name="transpose", perm=[1, 0]), dq("t", "s", "z", "y")]
    m = model(nodes, [init("shape", [4, 2], np.int64), init("s", 0.1), init("z", 7, np.int8)],
              [("x", "int8", [2, 4])], [("y", "float", [2, 4])])
    g = lower(load(m, tmp_path))
    assert [(n.op, n.source) for n in g.nodes] == [("reshape", "Reshape"), ("transpose", "Transpose")]
    for name in ("x", "r", "t"):  # propagated backwards to the graph input, forwards to r
        assert g.t(name).quant.zp == 7 and g.t(name).quant.s == pytest.approx(0.1)
    assert g.t("t").shape == (2, 4) and g.nodes[1].attr("perm") == (1, 0)


def test_int8_split_has_more_outputs(tmp_path: Path) -> None:
    nodes = [H.make_node("Split", ["x"], ["a", "b"], name="split", axis=1), dq("a", "s", "z", "ya"),
             dq("b", "s", "z", "yb")]
    m = model(nodes, [init("s", 0.1), init("z", 0, np.int8)], [("x", "int8", [1, 6])],
              [("ya", "float", [1, 3]), ("yb", "float", [1, 3])])
    g = lower(load(m, tmp_path))
    assert [(n.name, n.op, n.outputs) for n in g.nodes] == [("split", "slice", ("a",)),
                                                            ("split_1", "slice", ("b",))]
