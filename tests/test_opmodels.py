"""Sanity of the single-op model factory (tests/models/ops.py): every case quantizes in both formats,
onnxruntime runs it, and the quantized graph has the form the case claims.

Run with -s to see which node types onnxruntime produced per case.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import numpy_helper

from tests.models.ops import (
    ALL_CASES,
    CASES,
    OpCase,
    case_model,
    make_float_model,
    quantize,
)

logging.getLogger().setLevel(logging.ERROR)  # quantize_static's "consider pre-processing" hint

QDQ_OPS = {"QuantizeLinear", "DequantizeLinear"}
SEEN: dict[tuple[str, str], list[str]] = {}


@pytest.fixture(scope="module", autouse=True)
def _print_node_types() -> Iterator[None]:
    yield
    if SEEN:
        print("\nnode types per case (Q/DQ omitted):")
        for (cid, fmt), ops in sorted(SEEN.items()):
            print(f"  {cid:24s} {fmt}: {', '.join(ops)}")


def _session(path: Path | bytes) -> ort.InferenceSession:
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return ort.InferenceSession(
        str(path) if isinstance(path, Path) else path, so, providers=["CPUExecutionProvider"]
    )


def _run(sess: ort.InferenceSession, xs: list[np.ndarray]) -> np.ndarray:
    feed = {i.name: x for i, x in zip(sess.get_inputs(), xs, strict=True)}
    return np.asarray(sess.run(None, feed)[0])


def _op_name(n: onnx.NodeProto) -> str:
    return n.op_type if n.domain in ("", "ai.onnx") else f"{n.domain}:{n.op_type}"


def _output_quant(m: onnx.ModelProto) -> tuple[float, int]:
    """Scale and zero point of the DequantizeLinear that produces the graph output."""
    inits = {t.name: numpy_helper.to_array(t) for t in m.graph.initializer}
    out = m.graph.output[0].name
    (dq,) = [n for n in m.graph.node if n.op_type == "DequantizeLinear" and n.output[0] == out]
    return float(inits[dq.input[1]]), int(inits[dq.input[2]])


@pytest.mark.parametrize("fmt", ["qdq", "qop"])
@pytest.mark.parametrize("case", ALL_CASES, ids=lambda c: c.id)
def test_case_quantizes_and_runs(case: OpCase, fmt: str, tmp_path: Path) -> None:
    path, xs = case_model(case, fmt, tmp_path)
    m = onnx.load(str(path))
    SEEN[(case.id, fmt)] = [_op_name(n) for n in m.graph.node if n.op_type not in QDQ_OPS]

    y = _run(_session(path), xs)
    y_float = _run(_session(case.float_model(fmt).SerializeToString()), xs)
    assert y.shape == y_float.shape
    assert np.isfinite(y).all()

    produced = {o for n in m.graph.node for o in n.output}
    graph_out = m.graph.output[0].name
    dq_outs = [
        n.output[0]
        for n in m.graph.node
        if n.op_type == "DequantizeLinear" and n.input[0] in produced
    ]
    if fmt == "qop":
        # case.qop <=> integer from the boundary Q to the boundary DQ, with the op (or its
        # QLinear*/Q* form) present; otherwise onnxruntime left it float or folded it away
        fully_int = dq_outs == [graph_out]
        names = {case.op_type, "QLinear" + case.op_type, "Q" + case.op_type}
        has_op = any(n.op_type in names for n in m.graph.node)
        assert (fully_int and has_op) == case.qop, (
            f"{case.id}: DequantizeLinear outputs {dq_outs}, has op {has_op}"
        )
    else:
        # QDQ: every compute node reads DequantizeLinear outputs (or int64 shape/pad constants, or
        # Clip's float bounds) and every compute output goes through a QuantizeLinear
        src = {o: n for n in m.graph.node for o in n.output}
        consumers: dict[str, list[onnx.NodeProto]] = {}
        for n in m.graph.node:
            for i in n.input:
                consumers.setdefault(i, []).append(n)
        inits = {t.name: t for t in m.graph.initializer}
        for n in m.graph.node:
            if n.op_type in QDQ_OPS:
                continue
            for k, i in enumerate(n.input):
                if i in inits:
                    bound = (n.op_type == "Clip" and k > 0) or (n.op_type == "Resize" and k in (1, 2))
                    assert bound or inits[i].data_type == onnx.TensorProto.INT64, (
                        f"{case.id}: {i} not quantized"
                    )
                elif i:
                    assert src[i].op_type == "DequantizeLinear", (
                        f"{case.id}: {n.op_type} reads {i} unquantized"
                    )
            for o in n.output:
                assert [c.op_type for c in consumers.get(o, [])] == ["QuantizeLinear"], (
                    f"{case.id}: {o}"
                )

    # loose numeric sanity against the float model (the exact contract is tested elsewhere)
    scale = _output_quant(m)[0] if graph_out in dq_outs else 0.0  # all-float model: no output DQ
    err = float(np.max(np.abs(y - y_float)))
    assert err <= 6 * scale + 0.02 * float(np.max(np.abs(y_float))), (
        f"{case.id}: max |q - f| = {err}"
    )


def test_tables_cover_the_requested_ops() -> None:
    want = {
        "Conv", "Gemm", "MatMul", "Add", "Mul", "AveragePool", "MaxPool", "GlobalAveragePool",
        "ReduceMean", "Relu", "Clip", "Softmax", "Sigmoid", "Tanh", "Concat", "Pad", "Transpose",
        "Reshape", "Flatten",
    }  # fmt: skip
    assert want <= set(CASES)
    assert all(CASES[k] for k in want)


def test_cases_are_deterministic(tmp_path: Path) -> None:
    case = CASES["Conv"][1]
    a, xa = case_model(case, "qdq", tmp_path / "a")
    b, xb = case_model(case, "qdq", tmp_path / "b")
    assert a.read_bytes() == b.read_bytes()
    assert all(np.array_equal(p, q) for p, q in zip(xa, xb, strict=True))


def test_uint8_activations_shift_zero_point_by_128(tmp_path: Path) -> None:
    """uint8 and int8 quantization of the same case differ only by zp + 128 (same scales)."""
    case = CASES["Conv"][0]
    p8, _ = case_model(case, "qdq", tmp_path)
    pu8, _ = case_model(case, "qdq", tmp_path, activation_type="uint8")
    (s8, z8), (su8, zu8) = _output_quant(onnx.load(str(p8))), _output_quant(onnx.load(str(pu8)))
    assert s8 == su8 and zu8 == z8 + 128


def test_make_float_model_rejects_unknown_lead() -> None:
    with pytest.raises(ValueError, match="lead"):
        make_float_model("Relu", [(1, 4)], {}, lead="nope")


def test_quantize_rejects_unknown_format(tmp_path: Path) -> None:
    model = make_float_model("Relu", [(1, 4)], {})
    with pytest.raises(ValueError, match="fmt"):
        quantize(model, [], fmt="qlinear", out_path=tmp_path / "m.onnx")
