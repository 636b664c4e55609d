"""passes/fuse.py on IR graphs built directly: each rule row folds a clamp into its producer, and
every condition that must stop a fusion stops it. Graph.verify() holds after every fusion."""
from __future__ import annotations

import numpy as np

from emitter.passes.fuse import fuse_activations
from tests.passes.graphs import act, clamp, graph, node, qp

X, Y = act("x"), act("y")


def fused(g):  # type: ignore[no-untyped-def]
    out = fuse_activations(g)
    out.verify()
    return out


def test_op_with_clamp_attrs_takes_the_clamp() -> None:
    # op(act_min a, act_max b) -> clamp(c, d)  =>  op(max(a, c), min(b, d))
    g = graph([X, act("t"), Y], [node("conv", "fc", ["x"], "t", act_min=-128, act_max=100),
                                 clamp("relu", "t", "y", -3, 127)], ["x"], ["y"])
    out = fused(g)
    assert [(n.name, n.op, n.inputs, n.outputs) for n in out.nodes] == [("conv", "fc", ("x",), ("y",))]
    assert (out.nodes[0].attr("act_min"), out.nodes[0].attr("act_max")) == (-3, 100)
    assert "t" not in out.tensors and set(out.tensors) == {"x", "y"}
    assert out.nodes[0].source == "conv"  # the producer's name and source stay


def test_lut_takes_the_clamp_into_its_table() -> None:
    # lut(table) -> clamp(c, d)  =>  lut(clip(table, c, d))
    table = np.arange(-128, 128).astype(np.int8)
    g = graph([X, act("t"), Y], [node("sig", "lut", ["x"], "t", table=table, function="Sigmoid"),
                                 clamp("clip", "t", "y", -10, 20)], ["x"], ["y"])
    out = fused(g)
    assert [n.op for n in out.nodes] == ["lut"] and out.nodes[0].outputs == ("y",)
    assert np.array_equal(out.nodes[0].attr("table"), np.clip(table, -10, 20))
    assert out.nodes[0].attr("table").dtype == np.int8


def test_clamp_moves_before_views() -> None:
    # X -> reshape -> clamp  =>  X(clamp) -> reshape (the view now writes the clamp's output)
    g = graph([act("x", (1, 2, 4)), act("p", (1, 2, 1)), act("v", (1, 2)), act("y", (1, 2))],
              [node("pool", "avgpool", ["x"], "p", act_min=-128, act_max=127),
               node("squeeze", "reshape", ["p"], "v"), clamp("relu", "v", "y", 0, 127)], ["x"], ["y"])
    out = fused(g)
    assert [(n.op, n.inputs, n.outputs) for n in out.nodes] == [("avgpool", ("x",), ("p",)),
                                                                ("reshape", ("p",), ("y",))]
    assert out.nodes[0].attr("act_min") == 0 and "v" not in out.tensors


def test_chained_clamps_all_fuse() -> None:
    g = graph([X, act("t"), act("u"), Y], [node("add", "add", ["x", "x"], "t", act_min=-128, act_max=127),
                                           clamp("relu", "t", "u", 0, 127), clamp("clip", "u", "y", -128, 60)],
              ["x"], ["y"])
    out = fused(g)
    assert len(out.nodes) == 1 and (out.nodes[0].attr("act_min"), out.nodes[0].attr("act_max")) == (0, 60)


def test_what_stops_a_fusion() -> None:
    cases = {
        # the producer's output has a second reader
        "two readers": graph([X, act("t"), Y, act("z")],
                             [node("conv", "fc", ["x"], "t", act_min=-128, act_max=127),
                              clamp("relu", "t", "y", 0, 127), node("other", "requantize", ["t"], "z",
                                                                     act_min=-128, act_max=127)],
                             ["x"], ["y", "z"]),
        # the producer's output is a graph output
        "graph output": graph([X, act("t"), Y], [node("conv", "fc", ["x"], "t", act_min=-128, act_max=127),
                                                 clamp("relu", "t", "y", 0, 127)], ["x"], ["t", "y"]),
        # softmax has no clamp: nothing can take it
        "no rule": graph([X, act("t"), Y], [node("sm", "softmax", ["x"], "t", row_size=8),
                                            clamp("relu", "t", "y", 0, 127)], ["x"], ["y"]),
        # a requantize into another scale is not a clamp
        "other quant": graph([X, act("t"), act("y", quant=qp(0.2, 0))],
                             [node("conv", "fc", ["x"], "t", act_min=-128, act_max=127),
                              clamp("relu", "t", "y", 0, 127)], ["x"], ["y"]),
        # a full-range requantize is a copy, not a clamp
        "full range": graph([X, act("t"), Y], [node("conv", "fc", ["x"], "t", act_min=-128, act_max=127),
                                               clamp("copy", "t", "y", -128, 127)], ["x"], ["y"]),
        # disjoint ranges: clamping twice is not clamping to the (empty) intersection
        "disjoint": graph([X, act("t"), Y], [node("conv", "fc", ["x"], "t", act_min=50, act_max=127),
                                             clamp("clip", "t", "y", -128, 10)], ["x"], ["y"]),
        # the clamp reads a graph input: no producer
        "graph input": graph([X, Y], [clamp("relu", "x", "y", 0, 127)], ["x"], ["y"]),
    }
    for why, g in cases.items():
        out = fused(g)
        assert out.nodes == g.nodes and dict(out.tensors) == dict(g.tensors), why


def test_graph_without_clamps_is_unchanged() -> None:
    g = graph([X, act("t"), Y], [node("a", "fc", ["x"], "t", act_min=-128, act_max=127),
                                 node("b", "fc", ["t"], "y", act_min=0, act_max=127)], ["x"], ["y"])
    assert fused(g).nodes == g.nodes
