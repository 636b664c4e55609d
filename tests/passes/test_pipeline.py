"""The pass list after lowering (compiler.passes): Graph.verify() holds after lowering and after each
pass, and a Relu/Clip chain behind any op computes what onnxruntime computes, whether the fusion
pass folds it into the op or leaves it a standalone clamp."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import helper as H

from emitter.compiler import compile_model, golden_run, passes
from emitter.ir import IRError
from emitter.lower import lower
from emitter.passes.fuse import fuse_activations
from emitter.passes.tables import fold_tables
from tests.passes.graphs import act, clamp, graph, init, load, node, qdq_op


def clip(src: str = "o") -> list[onnx.NodeProto]:
    return [H.make_node("Clip", [src, "lo", "hi"], ["a"], name="clip")]


BOUNDS = [init("lo", -0.5), init("hi", 1.5)]
Y_Q = (0.05, 0)

# id -> (model, IR ops after lowering and fusion): the clamp is fused where the op can take it
CASES = {
    "mul+relu": (qdq_op(H.make_node("Mul", ["xf", "xf"], ["o"], name="op"), [1, 8], [1, 8], y_q=(0.05, -3),
                        after=[H.make_node("Relu", ["o"], ["a"], name="relu")]), ["mul"]),
    "add+clip": (qdq_op(H.make_node("Add", ["xf", "xf"], ["o"], name="op"), [1, 8], [1, 8], y_q=Y_Q,
                        after=clip(), extra_inits=BOUNDS), ["add"]),
    "sigmoid+clip": (qdq_op(H.make_node("Sigmoid", ["xf"], ["o"], name="op"), [1, 8], [1, 8], y_q=(0.01, -50),
                            after=clip(), extra_inits=[init("lo", 0.2), init("hi", 0.7)]), ["lut"]),
    "avgpool+clip (requantized)": (qdq_op(H.make_node("AveragePool", ["xf"], ["o"], name="op", kernel_shape=[2, 2],
                                                      pads=[1, 1, 1, 1]), [1, 2, 4, 4], [1, 2, 5, 5],
                                          y_q=(0.03, 5), after=clip(), extra_inits=BOUNDS),
                                   ["avgpool", "requantize"]),
    "reducemean keepdims=0+clip": (qdq_op(H.make_node("ReduceMean", ["xf"], ["o"], name="op", axes=[2, 3], keepdims=0),
                                          [1, 2, 4, 4], [1, 2], y_q=Y_Q, after=clip(), extra_inits=BOUNDS),
                                   ["avgpool", "reshape"]),
    "max of 3+clip": (qdq_op(H.make_node("Max", ["xf", "xf", "xf"], ["o"], name="op"), [1, 8], [1, 8], y_q=Y_Q,
                             after=clip(), extra_inits=BOUNDS), ["minmax", "minmax"]),
    "relu alone": (qdq_op(H.make_node("Relu", ["xf"], ["o"], name="op"), [1, 8], [1, 8], y_q=Y_Q), ["requantize"]),
    "clip alone": (qdq_op(H.make_node("Clip", ["xf", "lo", "hi"], ["o"], name="op"), [1, 8], [1, 8], y_q=Y_Q,
                          extra_inits=BOUNDS), ["requantize"]),
    # ops that cannot take a clamp: it stays a layer of its own (the clamp used to be lost here)
    "softmax+clip": (qdq_op(H.make_node("Softmax", ["xf"], ["o"], name="op"), [1, 8], [1, 8], y_q=(1 / 256, -128),
                            after=clip(), extra_inits=[init("lo", 0.0), init("hi", 0.3)]), ["softmax", "requantize"]),
    "pad+clip": (qdq_op(H.make_node("Pad", ["xf", "pads"], ["o"], name="op"), [1, 8], [1, 10], y_q=Y_Q, after=clip(),
                        extra_inits=BOUNDS + [init("pads", [0, 1, 0, 1], np.int64)]), ["pad", "requantize"]),
    "concat+clip": (qdq_op(H.make_node("Concat", ["xf", "xf"], ["o"], name="op", axis=1), [1, 8], [1, 16], y_q=Y_Q,
                           after=clip(), extra_inits=BOUNDS), ["concat", "requantize"]),
    "reshape+clip": (qdq_op(H.make_node("Reshape", ["xf", "shape"], ["o"], name="op"), [1, 2, 4], [1, 8], y_q=Y_Q,
                            after=clip(), extra_inits=BOUNDS + [init("shape", [1, 8], np.int64)]),
                     ["reshape", "requantize"]),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_verify_after_lowering_and_each_pass(case: str, tmp_path: Path) -> None:
    m, _ = CASES[case]
    g = lower(load(m, tmp_path))
    g.verify()
    for p in passes(io_nhwc=False):
        g = p(g)
        g.verify()
    assert all(n.layout is not None for n in (g.t(o) for n2 in g.nodes for o in n2.outputs))


def test_table_folding_then_fusion_lead_the_pass_list() -> None:
    # fold_tables reads the chains' own requantize/lut nodes before fusion merges any of them;
    # fusion then sees the folded table like any other lut
    assert passes(io_nhwc=False)[:2] == [fold_tables, fuse_activations]


@pytest.mark.parametrize("case", sorted(CASES))
def test_clamped_ops_match_onnxruntime(case: str, tmp_path: Path) -> None:
    m, want_ops = CASES[case]
    path = tmp_path / "m.onnx"
    onnx.save(m, path)
    fused = fuse_activations(lower(load(m, tmp_path)))
    assert [n.op for n in fused.nodes] == want_ops
    if want_ops[-1] != "requantize":  # the op took the clamp
        assert any(n.attrs.get("act_min", -128) > -128 or n.attrs.get("act_max", 127) < 127 or n.op == "lut"
                   for n in fused.nodes)
    c = compile_model(path)
    g = c.graph
    sess = ort.InferenceSession(str(path))
    x = np.random.default_rng(0).uniform(-3, 3, sess.get_inputs()[0].shape).astype(np.float32)
    want = sess.run(None, {"x": x})[0]
    xq = g.t(g.inputs[0]).quant
    y = golden_run(c, [np.clip(np.round(x / xq.s) + xq.zp, -128, 127).astype(np.int8)])[0]
    yq = g.t(g.outputs[0]).quant
    got = (y.astype(np.float64) - yq.zp) * yq.s
    assert np.abs(got.reshape(want.shape) - want).max() <= yq.s * 1.01


def test_verify_catches_what_a_bad_fusion_would_leave() -> None:
    # a node that reads the tensor a fusion removed
    g = graph([act("x"), act("y")], [node("a", "fc", ["x"], "y", act_min=0, act_max=127),
                                     clamp("b", "t", "y", 0, 10)], ["x"], ["y"])
    with pytest.raises(IRError, match="reads 't' before it is defined"):
        g.verify()
